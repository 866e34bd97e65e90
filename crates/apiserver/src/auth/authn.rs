//! Authentication: the user behind a request, from the client certificate the TLS
//! handshake verified, else a bearer token (the static token file, then service-account
//! tokens), else anonymous. A bearer token nobody issued is `401 Unauthorized`, not
//! anonymous.

use super::service_account::{self, ServiceAccountTokens};
use super::tokens::TokenFile;
use crate::cache::WatchCache;
use http::HeaderMap;
use kyb_api::Status;
use serde_json::{Value, json};
use std::collections::BTreeMap;

pub const AUTHENTICATED: &str = "system:authenticated";
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
pub const ANONYMOUS: &str = "system:anonymous";

/// An authenticated (or anonymous) user.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    /// Extra attributes (a bound service-account token's pod, impersonated extras).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    pub fn anonymous() -> User {
        User {
            name: ANONYMOUS.to_string(),
            groups: vec![UNAUTHENTICATED.to_string()],
            ..User::default()
        }
    }

    /// The user a verified client certificate names (CN user, O groups).
    pub fn from_certificate(identity: &kyb_pki::Identity) -> User {
        let mut groups = identity.groups.clone();
        groups.push(AUTHENTICATED.to_string());
        User {
            name: identity.user.clone(),
            groups,
            ..User::default()
        }
    }

    /// The identity the API server uses for its own writes (bootstrap objects, status it
    /// keeps), as Kubernetes' loopback client does.
    pub fn apiserver() -> User {
        User {
            name: "system:apiserver".to_string(),
            uid: String::new(),
            groups: vec!["system:masters".to_string(), AUTHENTICATED.to_string()],
            extra: BTreeMap::new(),
        }
    }

    /// `authentication.k8s.io/v1` UserInfo.
    pub fn to_json(&self) -> Value {
        let mut info = json!({"username": self.name, "groups": self.groups});
        if !self.uid.is_empty() {
            info["uid"] = self.uid.clone().into();
        }
        if !self.extra.is_empty() {
            info["extra"] = json!(self.extra);
        }
        info
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// The authenticators of this server.
#[derive(Debug, Default)]
pub struct Authenticator {
    pub tokens: TokenFile,
    pub service_accounts: Option<ServiceAccountTokens>,
}

impl Authenticator {
    /// The user of a request on a connection whose client certificate named `certified`.
    pub fn authenticate(
        &self,
        certified: Option<&User>,
        headers: &HeaderMap,
        cache: &WatchCache,
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
        let api = [service_account::ISSUER.to_string()];
        match token.map(|t| self.review_token(t, &api, cache)) {
            Some(Ok((user, _))) => Ok(user),
            Some(Err(error)) => {
                tracing::debug!(%error, "bearer token refused");
                Err(Status::unauthorized("Unauthorized"))
            }
            None => Err(Status::unauthorized("Unauthorized")),
        }
    }

    /// The user a bearer token stands for and the audiences it was accepted for (what a
    /// TokenReview asks; requests ask for the API server's own audience).
    pub fn review_token(
        &self,
        token: &str,
        audiences: &[String],
        cache: &WatchCache,
    ) -> Result<(User, Vec<String>), String> {
        let audiences = if audiences.is_empty() {
            vec![service_account::ISSUER.to_string()]
        } else {
            audiences.to_vec()
        };
        if let Some(user) = self.tokens.get(token) {
            return Ok((user.clone(), audiences));
        }
        if let Some(accounts) = &self.service_accounts
            && let Some(found) =
                accounts.authenticate(token, &audiences, cache, crate::util::unix_now())?
        {
            return Ok(found);
        }
        Err("invalid bearer token".into())
    }
}
