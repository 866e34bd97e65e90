//! Turning redb's errors into storage errors, with what the store was doing.

use crate::error::Error;

pub(super) trait Context<T> {
    fn context(self, doing: &str) -> Result<T, Error>;
}

impl<T, E: Into<redb::Error>> Context<T> for Result<T, E> {
    fn context(self, doing: &str) -> Result<T, Error> {
        self.map_err(|error| match error.into() {
            redb::Error::Corrupted(detail) => {
                Error::Corrupt(format!("the store file is corrupt ({doing}): {detail}"))
            }
            other => Error::backend(doing, other),
        })
    }
}
