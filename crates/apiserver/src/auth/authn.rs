//! Authentication: the user behind a request, from the client certificate the TLS
//! handshake verified, else a bearer token (the static token file, then service-account
//! tokens), else anonymous. A bearer token nobody issued is `401 Unauthorized`, not
//! anonymous.

use super::service_account::{self, ServiceAccountTokens};
use super::tokens::TokenFile;
use crate::cache::WatchCache;
use http::HeaderMap;
use kyb_api::Status;
use kyb_serving::{Connection, User};
use std::sync::Arc;

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
        let api = self.api_audiences();
        match token.map(|t| self.review_token(t, &api, cache)) {
            Some(Ok((user, _))) => Ok(user),
            Some(Err(error)) => {
                tracing::debug!(%error, "bearer token refused");
                Err(Status::unauthorized("Unauthorized"))
            }
            None => Err(Status::unauthorized("Unauthorized")),
        }
    }

    /// The API server's own audiences: the service-account issuers.
    pub fn api_audiences(&self) -> Vec<String> {
        self.service_accounts.as_ref().map_or_else(
            || vec![service_account::ISSUER.to_string()],
            ServiceAccountTokens::api_audiences,
        )
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
            self.api_audiences()
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

/// The API server's authenticator as a filter layer sees it: the connection's verified
/// client certificate, else the request's bearer token checked against the live cache.
pub struct RequestAuthenticator {
    pub authenticator: Arc<Authenticator>,
    pub cache: Arc<WatchCache>,
}

impl kyb_serving::filters::Authenticate for RequestAuthenticator {
    async fn authenticate(&self, parts: &http::request::Parts) -> Result<User, Status> {
        let certified = parts
            .extensions
            .get::<Connection>()
            .and_then(|connection| connection.certificate.as_deref());
        self.authenticator
            .authenticate(certified, &parts.headers, &self.cache)
    }
}
