//! Service-account tokens for projected volumes, cached per pod and request and renewed
//! by kubelet's rule: when 80% of the token's lifetime has passed, or when it is older than
//! 24 hours (kubelet also adds up to 10 s of jitter; renewal here is deterministic).

use crate::sources::{IssuedToken, SourceError, Sources};
use k8s_openapi::api::core::v1::Pod;
use std::collections::HashMap;
use std::sync::Mutex;

/// The longest a token is used before it is renewed, whatever its lifetime.
const MAX_TTL_SECONDS: i64 = 24 * 60 * 60;
/// `expirationSeconds` when a projection does not say.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;

/// Which token: the pod, its service account, the audience and the requested lifetime.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Key {
    pod_uid: String,
    service_account: String,
    audience: String,
    expiration_seconds: i64,
}

/// The tokens issued for this node's pods.
#[derive(Default)]
pub struct TokenCache {
    tokens: Mutex<HashMap<Key, IssuedToken>>,
}

/// Whether a token valid `expiration_seconds` that expires at `token.expiration` must be
/// renewed at `now`.
pub fn requires_refresh(
    now: jiff::Timestamp,
    token: &IssuedToken,
    expiration_seconds: i64,
) -> bool {
    let expires = token.expiration.as_second();
    let issued = expires - expiration_seconds;
    let now = now.as_second();
    now > issued + MAX_TTL_SECONDS || now > expires - expiration_seconds * 20 / 100
}

impl TokenCache {
    /// The cached token for the request, or a new one from `sources` when there is none or
    /// it needs renewing.
    pub async fn get(
        &self,
        sources: &dyn Sources,
        pod: &Pod,
        service_account: &str,
        audience: &str,
        expiration_seconds: i64,
    ) -> Result<IssuedToken, SourceError> {
        let key = Key {
            pod_uid: pod.metadata.uid.clone().unwrap_or_default(),
            service_account: service_account.to_string(),
            audience: audience.to_string(),
            expiration_seconds,
        };
        let cached = self.lock().get(&key).cloned();
        if let Some(token) = cached
            && !requires_refresh(jiff::Timestamp::now(), &token, expiration_seconds)
        {
            return Ok(token);
        }
        let token = sources
            .service_account_token(pod, service_account, audience, expiration_seconds)
            .await?;
        self.lock().insert(key, token.clone());
        Ok(token)
    }

    /// Drops the tokens of a pod that is gone.
    pub fn forget_pod(&self, pod_uid: &str) {
        self.lock().retain(|key, _| key.pod_uid != pod_uid);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, IssuedToken>> {
        self.tokens.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn token(expires_at: i64) -> IssuedToken {
        IssuedToken {
            token: "t".into(),
            expiration: jiff::Timestamp::from_second(expires_at).unwrap(),
        }
    }

    fn at(second: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(second).unwrap()
    }

    #[test]
    fn renewed_after_eighty_percent_of_the_lifetime() {
        // Issued at 1_000_000 for an hour.
        let t = token(1_000_000 + 3600);
        assert!(!requires_refresh(at(1_000_000), &t, 3600));
        assert!(!requires_refresh(at(1_000_000 + 2880), &t, 3600));
        assert!(requires_refresh(at(1_000_000 + 2881), &t, 3600));
    }

    #[test]
    fn renewed_after_a_day_whatever_the_lifetime() {
        let week = 7 * 24 * 3600;
        let t = token(1_000_000 + week);
        assert!(!requires_refresh(at(1_000_000 + MAX_TTL_SECONDS), &t, week));
        assert!(requires_refresh(
            at(1_000_000 + MAX_TTL_SECONDS + 1),
            &t,
            week
        ));
    }
}
