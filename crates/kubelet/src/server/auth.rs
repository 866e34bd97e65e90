//! Authentication and authorization of the kubelet's API, as kubelet's webhook mode does
//! them: a client certificate verified against `--client-ca-file` names the user (CN, O
//! groups); otherwise a bearer token is reviewed by the API server (`TokenReview`, cached
//! 2 min when valid, 10 s when not); anonymous requests are refused (`401 Unauthorized`).
//! Every request is then authorized by a `SubjectAccessReview` on the node
//! (`nodes/<subresource>`, cached 5 min when allowed, 30 s when denied; `/pods`,
//! `/healthz` and `/configz` first as `nodes/pods`, `nodes/healthz`, `nodes/configz`, then
//! as `nodes/proxy`, as kubelet 1.33's fine-grained authorization does); a denial is
//! kubelet's `403 Forbidden (user=…, verb=…, resource=nodes, subresource=…)`.

use super::body::{self, Body, Response};
use http::{Method, Request, StatusCode};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use kyb_serving::User;
use kyb_serving::filters::{Filter, Next};
use sha2::Digest as _;
use std::collections::HashMap;
use std::convert::Infallible;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tower::Service;

const TOKEN_TTL: Duration = Duration::from_secs(120);
const TOKEN_FAILURE_TTL: Duration = Duration::from_secs(10);
const ALLOWED_TTL: Duration = Duration::from_secs(300);
const DENIED_TTL: Duration = Duration::from_secs(30);
/// Past this many entries, a cache drops its expired ones.
const PRUNE_AT: usize = 1024;

/// What a request asks of the node, as kubelet's `GetRequestAttributes` computes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Attributes {
    pub verb: &'static str,
    pub subresource: &'static str,
}

/// Whether `path` is `prefix` or below it (kubelet's `isSubpath`).
fn is_subpath(path: &str, prefix: &str) -> bool {
    path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The attributes of a request: the verb from the method, the subresource from the path
/// (`/stats` → stats, `/metrics` → metrics, `/logs` → log, anything else → proxy).
pub fn attributes(method: &Method, path: &str) -> Attributes {
    let verb = match *method {
        Method::GET | Method::HEAD => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "",
    };
    let subresource = if is_subpath(path, "/stats") {
        "stats"
    } else if is_subpath(path, "/metrics") {
        "metrics"
    } else if is_subpath(path, "/logs") {
        "log"
    } else {
        "proxy"
    };
    Attributes { verb, subresource }
}

/// The finer subresource kubelet 1.33 (`KubeletFineGrainedAuthz`, on by default) checks
/// first for some paths, before falling back to [`attributes`]' own: `/pods` → pods,
/// `/healthz` → healthz, `/configz` → configz, `/runningpods` → pods.
pub fn fine_grained(path: &str) -> Option<&'static str> {
    if is_subpath(path, "/pods") || is_subpath(path, "/runningpods") {
        Some("pods")
    } else if is_subpath(path, "/healthz") {
        Some("healthz")
    } else if is_subpath(path, "/configz") {
        Some("configz")
    } else {
        None
    }
}

/// kubelet's refusal.
pub fn forbidden_message(user: &str, attributes: &Attributes) -> String {
    format!(
        "Forbidden (user={user}, verb={}, resource=nodes, subresource={})",
        attributes.verb, attributes.subresource
    )
}

/// A map whose entries expire.
struct TtlCache<K, V> {
    entries: Mutex<HashMap<K, (V, Instant)>>,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    fn new() -> Self {
        TtlCache {
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, key: &K) -> Option<V> {
        let entries = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        entries
            .get(key)
            .filter(|(_, expires)| *expires > Instant::now())
            .map(|(value, _)| value.clone())
    }

    fn insert(&self, key: K, value: V, ttl: Duration) {
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        if entries.len() >= PRUNE_AT {
            entries.retain(|_, (_, expires)| *expires > now);
        }
        entries.insert(key, (value, now + ttl));
    }
}

/// The user and attributes an authorization decision is cached under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct DecisionKey {
    name: String,
    uid: String,
    groups: Vec<String>,
    extra: Vec<(String, Vec<String>)>,
    attributes: Attributes,
}

/// The authentication and authorization filter of the kubelet's API.
#[derive(Clone)]
pub struct KubeletAuth {
    inner: Arc<Inner>,
}

struct Inner {
    node_name: String,
    client: kube::Client,
    /// Token digests → the user (None: refused).
    tokens: TtlCache<[u8; 32], Option<User>>,
    decisions: TtlCache<DecisionKey, bool>,
}

impl KubeletAuth {
    /// Reviews tokens and access through the API server at `client` (the node's own
    /// credentials), for the node `node_name`.
    pub fn new(node_name: &str, client: kube::Client) -> KubeletAuth {
        KubeletAuth {
            inner: Arc::new(Inner {
                node_name: node_name.to_string(),
                client,
                tokens: TtlCache::new(),
                decisions: TtlCache::new(),
            }),
        }
    }

    /// The user of a request, if it proved one: its verified client certificate's, or its
    /// bearer token's.
    async fn authenticate(
        &self,
        certificate: Option<User>,
        authorization: Option<String>,
    ) -> Result<Option<User>, String> {
        if let Some(user) = certificate {
            return Ok(Some(user));
        }
        let Some(token) = authorization.as_deref().and_then(bearer_token) else {
            return Ok(None);
        };
        let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        if let Some(user) = self.inner.tokens.get(&digest) {
            return Ok(user);
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: None,
            },
            ..Default::default()
        };
        let reviewed = Api::<TokenReview>::all(self.inner.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| format!("TokenReview: {e}"))?;
        let user = reviewed
            .status
            .filter(|s| s.authenticated == Some(true))
            .and_then(|s| s.user)
            .map(|info| User {
                name: info.username.unwrap_or_default(),
                uid: info.uid.unwrap_or_default(),
                groups: info.groups.unwrap_or_default(),
                extra: info.extra.unwrap_or_default().into_iter().collect(),
            });
        let ttl = if user.is_some() {
            TOKEN_TTL
        } else {
            TOKEN_FAILURE_TTL
        };
        self.inner.tokens.insert(digest, user.clone(), ttl);
        Ok(user)
    }

    /// Whether `user` may do `attributes` on this node.
    async fn authorize(&self, user: &User, attributes: &Attributes) -> Result<bool, String> {
        let key = DecisionKey {
            name: user.name.clone(),
            uid: user.uid.clone(),
            groups: user.groups.clone(),
            extra: user
                .extra
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            attributes: attributes.clone(),
        };
        if let Some(allowed) = self.inner.decisions.get(&key) {
            return Ok(allowed);
        }
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.name.clone()),
                uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
                groups: Some(user.groups.clone()),
                extra: (!user.extra.is_empty()).then(|| user.extra.clone().into_iter().collect()),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(attributes.verb.to_string()),
                    group: Some(String::new()),
                    version: Some("v1".to_string()),
                    resource: Some("nodes".to_string()),
                    subresource: Some(attributes.subresource.to_string()),
                    name: Some(self.inner.node_name.clone()),
                    ..Default::default()
                }),
                non_resource_attributes: None,
            },
            ..Default::default()
        };
        let reviewed = Api::<SubjectAccessReview>::all(self.inner.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| format!("SubjectAccessReview: {e}"))?;
        let allowed = reviewed.status.is_some_and(|s| s.allowed);
        let ttl = if allowed { ALLOWED_TTL } else { DENIED_TTL };
        self.inner.decisions.insert(key, allowed, ttl);
        Ok(allowed)
    }
}

/// The token of `Authorization: Bearer <token>`.
fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

impl Filter<Body> for KubeletAuth {
    async fn filter<S>(&self, request: Request<kyb_serving::Body>, next: Next<S>) -> Response
    where
        S: Service<Request<kyb_serving::Body>, Response = Response, Error = Infallible>
            + Send
            + 'static,
        S::Future: Send,
    {
        let certificate = request
            .extensions()
            .get::<kyb_serving::Connection>()
            .and_then(|c| c.certificate.as_deref())
            .cloned();
        let authorization = request
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let user = match self.authenticate(certificate, authorization).await {
            Ok(Some(user)) => user,
            Ok(None) => return body::text(StatusCode::UNAUTHORIZED, "Unauthorized"),
            Err(error) => {
                tracing::warn!(%error, "unable to authenticate the request");
                return body::text(StatusCode::UNAUTHORIZED, "Unauthorized");
            }
        };
        let attributes = attributes(request.method(), request.uri().path());
        let finer = fine_grained(request.uri().path()).map(|subresource| Attributes {
            verb: attributes.verb,
            subresource,
        });
        let mut decision = Ok(false);
        for attributes in finer.iter().chain(std::iter::once(&attributes)) {
            decision = self.authorize(&user, attributes).await;
            if !matches!(decision, Ok(false)) {
                break;
            }
        }
        match decision {
            Ok(true) => next.run(request).await,
            Ok(false) => {
                tracing::debug!(user = %user.name, verb = attributes.verb, subresource = attributes.subresource, "forbidden");
                body::text(
                    StatusCode::FORBIDDEN,
                    forbidden_message(&user.name, &attributes),
                )
            }
            Err(error) => {
                tracing::warn!(%error, user = %user.name, "authorization error");
                body::text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!(
                        "Authorization error (user={}, verb={}, resource=nodes, subresource={})",
                        user.name, attributes.verb, attributes.subresource
                    ),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn attributes_follow_kubelet() {
        let cases = [
            (Method::GET, "/stats/summary", "get", "stats"),
            (Method::GET, "/stats", "get", "stats"),
            (Method::GET, "/statsfoo", "get", "proxy"),
            (Method::HEAD, "/metrics", "get", "metrics"),
            (Method::GET, "/metrics/probes", "get", "metrics"),
            (Method::GET, "/logs/", "get", "log"),
            (Method::GET, "/logs/syslog", "get", "log"),
            (Method::POST, "/exec/ns/pod/c", "create", "proxy"),
            (Method::GET, "/containerLogs/ns/pod/c", "get", "proxy"),
            (Method::PUT, "/pods", "update", "proxy"),
            (Method::PATCH, "/pods", "patch", "proxy"),
            (Method::DELETE, "/pods", "delete", "proxy"),
            (Method::OPTIONS, "/healthz", "", "proxy"),
        ];
        for (method, path, verb, subresource) in cases {
            assert_eq!(
                attributes(&method, path),
                Attributes { verb, subresource },
                "{method} {path}"
            );
        }
        assert_eq!(fine_grained("/pods"), Some("pods"));
        assert_eq!(fine_grained("/runningpods/"), Some("pods"));
        assert_eq!(fine_grained("/healthz"), Some("healthz"));
        assert_eq!(fine_grained("/configz"), Some("configz"));
        assert_eq!(fine_grained("/podsx"), None);
        assert_eq!(fine_grained("/exec/a/b/c"), None);
        assert_eq!(
            forbidden_message("bob", &attributes(&Method::GET, "/pods")),
            "Forbidden (user=bob, verb=get, resource=nodes, subresource=proxy)"
        );
    }

    #[test]
    fn bearer_tokens_are_read() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
    }

    #[test]
    fn cache_entries_expire() {
        let cache = TtlCache::new();
        cache.insert(1, "a", Duration::from_secs(60));
        cache.insert(2, "b", Duration::ZERO);
        assert_eq!(cache.get(&1), Some("a"));
        assert_eq!(cache.get(&2), None);
    }
}
