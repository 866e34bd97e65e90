//! The error every patch function returns, classified the way the Kubernetes API server
//! answers it: each variant is one HTTP status code and `metav1.Status` reason.

use std::fmt;

/// The `message` Kubernetes puts in the `Status` of a `422` patch failure. It builds that
/// answer from the status code alone and does not pass on why the patch failed, so
/// clients (kubectl: "The request is invalid: ...") only ever see this text.
pub const INVALID_MESSAGE: &str = "the server rejected our request due to an error in our request";

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchError {
    /// `400 BadRequest`: the patch is malformed (the wrong JSON shape, a malformed
    /// directive key, a document nested too deeply).
    BadRequest(String),
    /// `422 Invalid`: a well-formed patch that cannot be applied to this object (a JSON
    /// patch whose `test` fails or whose path does not exist; a strategic merge patch
    /// with a list of lists). Kubernetes answers with [`INVALID_MESSAGE`] and no causes;
    /// the text here says what went wrong, for logs.
    Invalid(String),
    /// `413 RequestEntityTooLarge`: a JSON patch with too many operations.
    TooLarge(String),
    /// `415 UnsupportedMediaType`: strategic merge patch on a type that has none
    /// (custom resources).
    UnsupportedMediaType(String),
    /// `500` with an empty reason (`StatusReasonUnknown`) and this text as message: how
    /// Kubernetes answers the strategic merge patch errors it does not classify (a list
    /// item without its merge key, an unknown `$patch` directive, a `$setElementOrder`
    /// list that does not match the patch's list, ...).
    Unknown(String),
}

impl PatchError {
    /// The HTTP status code Kubernetes answers with.
    pub fn code(&self) -> u16 {
        match self {
            PatchError::BadRequest(_) => 400,
            PatchError::Invalid(_) => 422,
            PatchError::TooLarge(_) => 413,
            PatchError::UnsupportedMediaType(_) => 415,
            PatchError::Unknown(_) => 500,
        }
    }

    /// The `reason` of the `Status` (empty for [`PatchError::Unknown`]).
    pub fn reason(&self) -> &'static str {
        match self {
            PatchError::BadRequest(_) => "BadRequest",
            PatchError::Invalid(_) => "Invalid",
            PatchError::TooLarge(_) => "RequestEntityTooLarge",
            PatchError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            PatchError::Unknown(_) => "",
        }
    }

    /// What went wrong, in Kubernetes' words where it has them.
    pub fn message(&self) -> &str {
        match self {
            PatchError::BadRequest(m)
            | PatchError::Invalid(m)
            | PatchError::TooLarge(m)
            | PatchError::UnsupportedMediaType(m)
            | PatchError::Unknown(m) => m,
        }
    }

    /// The `message` of the `Status` Kubernetes answers with, which is not always
    /// [`PatchError::message`]: `422` hides the cause behind [`INVALID_MESSAGE`], `413`
    /// prefixes "Request entity too large: ".
    pub fn status_message(&self) -> String {
        match self {
            PatchError::Invalid(_) => INVALID_MESSAGE.to_string(),
            PatchError::TooLarge(m) => format!("Request entity too large: {m}"),
            other => other.message().to_string(),
        }
    }
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for PatchError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_reasons_and_status_messages() {
        let bad = PatchError::BadRequest("invalid JSON document".into());
        assert_eq!((bad.code(), bad.reason()), (400, "BadRequest"));
        assert_eq!(bad.status_message(), "invalid JSON document");

        let invalid = PatchError::Invalid("testing value /a failed: test failed".into());
        assert_eq!((invalid.code(), invalid.reason()), (422, "Invalid"));
        assert_eq!(invalid.status_message(), INVALID_MESSAGE);
        assert_eq!(invalid.message(), "testing value /a failed: test failed");

        let large = PatchError::TooLarge("too many".into());
        assert_eq!(
            (large.code(), large.reason()),
            (413, "RequestEntityTooLarge")
        );
        assert_eq!(large.status_message(), "Request entity too large: too many");

        let media = PatchError::UnsupportedMediaType("no".into());
        assert_eq!(
            (media.code(), media.reason()),
            (415, "UnsupportedMediaType")
        );

        let unknown =
            PatchError::Unknown("map: map[] does not contain declared merge key: name".into());
        assert_eq!((unknown.code(), unknown.reason()), (500, ""));
        assert_eq!(unknown.to_string(), unknown.message());
    }
}
