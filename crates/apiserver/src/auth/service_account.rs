//! Service-account tokens: bound, expiring JWTs issued through the TokenRequest API
//! (`serviceaccounts/<name>/token`, `kubectl create token`) and signed with the cluster's
//! service-account key; and their authentication, which checks the signature, issuer,
//! audiences and lifetime, and then that the service account (and the pod, secret or node
//! the token is bound to) still exists with the UID the token names. Also the issuer
//! discovery documents (`/.well-known/openid-configuration`, `/openid/v1/jwks`) as
//! Kubernetes publishes them.

use crate::cache::WatchCache;
use kyb_pki::jwt::Signer;
use kyb_serving::User;
use kyb_serving::user::AUTHENTICATED;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The issuer of the tokens, and the API server's own audience, unless configured.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// Where the issuer's public keys are published.
pub const JWKS_PATH: &str = "/openid/v1/jwks";
/// `spec.expirationSeconds` when the request names none.
pub const DEFAULT_EXPIRATION: i64 = 3600;
/// The shortest lifetime a token may ask for.
pub const MIN_EXPIRATION: i64 = 600;
/// Clock skew tolerated on `exp`, `nbf` and `iat` (go-jose's `DefaultLeeway`).
const LEEWAY: i64 = 60;

/// The object a token is bound to: it is valid only while that object exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundObject {
    /// `Pod`, `Secret` or `Node`.
    pub kind: String,
    pub name: String,
    pub uid: String,
}

/// What a token is issued for.
#[derive(Clone, Debug)]
pub struct TokenSpec {
    pub namespace: String,
    pub service_account: String,
    pub service_account_uid: String,
    pub audiences: Vec<String>,
    pub expiration_seconds: i64,
    pub bound: Option<BoundObject>,
    /// The node of a pod-bound token's pod.
    pub node: Option<(String, String)>,
}

/// Issues and authenticates service-account tokens.
pub struct ServiceAccountTokens {
    signer: Signer,
    /// `--service-account-issuer`: the first is written in tokens and published; tokens of
    /// any are accepted.
    issuers: Vec<String>,
    /// `--service-account-jwks-uri`.
    jwks_uri: Option<String>,
}

impl std::fmt::Debug for ServiceAccountTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountTokens")
            .finish_non_exhaustive()
    }
}

impl ServiceAccountTokens {
    pub fn new(signer: Signer) -> ServiceAccountTokens {
        ServiceAccountTokens {
            signer,
            issuers: vec![ISSUER.to_string()],
            jwks_uri: None,
        }
    }

    /// With the issuers of `--service-account-issuer` (none given: the default one) and
    /// the `jwks_uri` of `--service-account-jwks-uri`.
    pub fn with_issuers(mut self, issuers: Vec<String>, jwks_uri: Option<String>) -> Self {
        if !issuers.is_empty() {
            self.issuers = issuers;
        }
        self.jwks_uri = jwks_uri;
        self
    }

    /// The issuer written in new tokens.
    pub fn issuer(&self) -> &str {
        self.issuers.first().map_or(ISSUER, String::as_str)
    }

    /// The API server's own audiences (Kubernetes' default `--api-audiences`: the issuers).
    pub fn api_audiences(&self) -> Vec<String> {
        self.issuers.clone()
    }

    /// The issuer discovery documents, as Kubernetes serves them; `None` when the issuer
    /// is not an `https` URL (Kubernetes then serves none). `external` is the `host:port`
    /// the server is reached at, for the default `jwks_uri`.
    pub fn discovery(&self, external: &str) -> Option<IssuerDiscovery> {
        let issuer = self.issuer();
        if !issuer.starts_with("https://") {
            return None;
        }
        let jwks_uri = self
            .jwks_uri
            .clone()
            .unwrap_or_else(|| format!("https://{external}{JWKS_PATH}"));
        Some(IssuerDiscovery {
            configuration: json!({
                "issuer": issuer,
                "jwks_uri": jwks_uri,
                "response_types_supported": ["id_token"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": [self.signer.algorithm()],
            }),
            jwks: json!({"keys": [self.signer.jwk()]}),
        })
    }

    /// A signed token for `spec`, issued at `now` (Unix seconds).
    pub fn issue(&self, spec: &TokenSpec, now: i64) -> Result<String, String> {
        let mut private = json!({
            "namespace": spec.namespace,
            "serviceaccount": {"name": spec.service_account, "uid": spec.service_account_uid},
        });
        if let Some(bound) = &spec.bound {
            private[bound.kind.to_ascii_lowercase()] =
                json!({"name": bound.name, "uid": bound.uid});
        }
        if let Some((name, uid)) = &spec.node
            && spec.bound.as_ref().is_none_or(|b| b.kind != "Node")
        {
            private["node"] = json!({"name": name, "uid": uid});
        }
        let claims = json!({
            "aud": spec.audiences,
            "exp": now + spec.expiration_seconds,
            "iat": now,
            "iss": self.issuer(),
            "jti": crate::util::new_uid(),
            "kubernetes.io": private,
            "nbf": now,
            "sub": kyb_rbac::service_account_username(&spec.namespace, &spec.service_account),
        });
        self.signer.sign(&claims).map_err(|e| e.to_string())
    }

    /// The user a token stands for, if this server issued it for one of `audiences`, it has
    /// not expired, and what it is bound to still exists. `Ok(None)`: not one of ours (not
    /// a JWT at all).
    pub fn authenticate(
        &self,
        token: &str,
        audiences: &[String],
        cache: &WatchCache,
        now: i64,
    ) -> Result<Option<(User, Vec<String>)>, String> {
        if !kyb_pki::jwt::looks_like_jwt(token) {
            return Ok(None);
        }
        let claims = self.signer.verify(token).map_err(|e| e.to_string())?;
        if !claims["iss"]
            .as_str()
            .is_some_and(|iss| self.issuers.iter().any(|i| i == iss))
        {
            return Err("token issuer is not recognised".into());
        }
        // go-jose's `Claims.Validate`, with its leeway, and Kubernetes' words for each.
        let number = |field: &str| claims[field].as_i64();
        if number("nbf").is_some_and(|nbf| now + LEEWAY < nbf) {
            return Err("service account token is not valid yet".into());
        }
        match number("exp") {
            Some(exp) if now - LEEWAY <= exp => {}
            _ => return Err("service account token has expired".into()),
        }
        if number("iat").is_some_and(|iat| now + LEEWAY < iat) {
            return Err("service account token is issued in the future".into());
        }
        let token_audiences: Vec<String> = match &claims["aud"] {
            Value::String(one) => vec![one.clone()],
            Value::Array(many) => many
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        let accepted: Vec<String> = token_audiences
            .iter()
            .filter(|a| audiences.contains(a))
            .cloned()
            .collect();
        if accepted.is_empty() {
            return Err(format!(
                "token audiences {token_audiences:?} is invalid for the target audiences {audiences:?}"
            ));
        }
        let private = &claims["kubernetes.io"];
        let namespace = private["namespace"].as_str().unwrap_or_default();
        let reference = |kind: &str| -> Option<(String, String)> {
            let r = private.get(kind)?;
            Some((
                r["name"].as_str()?.to_string(),
                r["uid"].as_str().unwrap_or_default().to_string(),
            ))
        };
        let Some((account, account_uid)) = reference("serviceaccount") else {
            return Err("token names no service account".into());
        };
        live(
            cache,
            "serviceaccounts",
            Some(namespace),
            &account,
            &account_uid,
            now,
        )?;
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        if let Some((pod, uid)) = reference("pod") {
            live(cache, "pods", Some(namespace), &pod, &uid, now)?;
            extra.insert("authentication.kubernetes.io/pod-name".into(), vec![pod]);
            extra.insert("authentication.kubernetes.io/pod-uid".into(), vec![uid]);
        }
        if let Some((secret, uid)) = reference("secret") {
            live(cache, "secrets", Some(namespace), &secret, &uid, now)?;
        }
        if let Some((node, uid)) = reference("node") {
            // A pod-bound token names its pod's node for information; a node-bound one
            // lives only as long as the node.
            if reference("pod").is_none() {
                live(cache, "nodes", None, &node, &uid, now)?;
            }
            extra.insert("authentication.kubernetes.io/node-name".into(), vec![node]);
            extra.insert("authentication.kubernetes.io/node-uid".into(), vec![uid]);
        }
        if let Some(jti) = claims["jti"].as_str() {
            extra.insert(
                "authentication.kubernetes.io/credential-id".into(),
                vec![format!("JTI={jti}")],
            );
        }
        let user = User {
            name: kyb_rbac::service_account_username(namespace, &account),
            uid: account_uid,
            groups: vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{namespace}"),
                AUTHENTICATED.to_string(),
            ],
            extra,
        };
        Ok(Some((user, accepted)))
    }
}

/// The service-account issuer's discovery documents.
#[derive(Clone, Debug)]
pub struct IssuerDiscovery {
    /// `/.well-known/openid-configuration`.
    pub configuration: Value,
    /// `/openid/v1/jwks`.
    pub jwks: Value,
}

/// The object a token names must exist with the same UID and not be gone.
fn live(
    cache: &WatchCache,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
    uid: &str,
    now: i64,
) -> Result<(), String> {
    let what = |kind: &str| match namespace {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    };
    let Some(object) = cache.lookup("", plural, namespace, name) else {
        return Err(format!("{} has been deleted", what(plural)));
    };
    let actual = kyb_apimachinery::meta::uid(&object).unwrap_or_default();
    if !uid.is_empty() && actual != uid {
        return Err(format!(
            "{} UID ({actual}) does not match claim ({uid})",
            what(plural)
        ));
    }
    if let Some(deleted) = kyb_apimachinery::meta::deletion_timestamp(&object)
        && crate::util::parse_timestamp(deleted).is_some_and(|t| t <= now)
    {
        return Err(format!("{} is being deleted", what(plural)));
    }
    Ok(())
}
