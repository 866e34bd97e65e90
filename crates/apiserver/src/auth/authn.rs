//! Authentication: the user behind a request, from the client certificate the TLS
//! handshake verified, else a bearer token, else anonymous. A bearer token nobody issued
//! is `401 Unauthorized`, not anonymous.

use super::tokens::TokenFile;
use http::HeaderMap;
use kyb_api::Status;

pub const AUTHENTICATED: &str = "system:authenticated";
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
pub const ANONYMOUS: &str = "system:anonymous";

/// An authenticated (or anonymous) user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl User {
    pub fn anonymous() -> User {
        User {
            name: ANONYMOUS.to_string(),
            uid: String::new(),
            groups: vec![UNAUTHENTICATED.to_string()],
        }
    }

    /// The user a verified client certificate names (CN user, O groups).
    pub fn from_certificate(identity: &kyb_pki::Identity) -> User {
        let mut groups = identity.groups.clone();
        groups.push(AUTHENTICATED.to_string());
        User {
            name: identity.user.clone(),
            uid: String::new(),
            groups,
        }
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// The authenticators of this server.
#[derive(Debug, Default)]
pub struct Authenticator {
    pub tokens: TokenFile,
}

impl Authenticator {
    /// The user of a request on a connection whose client certificate named `certified`.
    pub fn authenticate(
        &self,
        certified: Option<&User>,
        headers: &HeaderMap,
    ) -> Result<User, Status> {
        if let Some(user) = certified {
            return Ok(user.clone());
        }
        let Some(authorization) = headers.get(http::header::AUTHORIZATION) else {
            return Ok(User::anonymous());
        };
        let token = authorization
            .to_str()
            .ok()
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            })
            .filter(|t| !t.is_empty());
        match token.and_then(|t| self.tokens.get(t)) {
            Some(user) => Ok(user.clone()),
            None => Err(Status::unauthorized("Unauthorized")),
        }
    }
}
