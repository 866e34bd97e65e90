//! A loaded encryption configuration: the file read, decoded ([`crate::decode`]) and
//! validated ([`crate::validation`]) as kube-apiserver does it, its providers built, and its
//! resources resolved to storage key prefixes ([`crate::resources`]). [`EncryptionConfig`]
//! then answers, for a storage key, how its values are written and read.
//!
//! Beyond Kubernetes' validation, building refuses what kube-apiserver also refuses when it
//! builds its transformers (a rule masked by an earlier wildcard) and the providers this
//! implementation does not offer (`aescbc`, `kms`).

use crate::decode::{RawConfig, RawResourceConfig, decode};
use crate::providers::{AesGcmKey, Provider, SecretboxKey, TransformError};
use crate::resources::{GroupResource, resolve};
use crate::transformer::{Read, Transformer};
use crate::validation::{FieldError, aggregate, decode_secret, validate};
use bytes::Bytes;
use ring::rand::SystemRandom;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a configuration could not be loaded. The messages are kube-apiserver's.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error(
        "error while parsing file: error while loading file: error reading encryption provider configuration file {}: {source}",
        quote_path(path)
    )]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file (or the document) is empty.
    #[error(
        "error while parsing file: error while loading file: encryption provider configuration {} is empty",
        source_name(path.as_deref())
    )]
    Empty { path: Option<PathBuf> },
    /// Not YAML or JSON, not an `apiserver.config.k8s.io/v1` `EncryptionConfiguration`, a
    /// field of the wrong type, or unknown fields.
    #[error(
        "error while parsing file: error decoding encryption provider configuration {}: {message}",
        source_name(path.as_deref())
    )]
    Decode {
        path: Option<PathBuf>,
        message: String,
    },
    /// Validation failed; every failure, each naming its field.
    #[error("error while parsing file: {}", aggregate(.0))]
    Invalid(Vec<FieldError>),
    /// The providers could not be built: a rule masked by an earlier wildcard
    /// (`resource "secrets" is masked by earlier rule "*."`), or a provider this
    /// implementation does not offer (`aescbc`, `kms`).
    #[error("error while building transformers: {0}")]
    Build(String),
}

fn quote_path(path: &Path) -> String {
    kyb_apimachinery::gofmt::quote(&path.display().to_string())
}

/// `file "<path>"`, or `document` for one given as bytes.
fn source_name(path: Option<&Path>) -> String {
    match path {
        Some(path) => format!("file {}", quote_path(path)),
        None => "document".to_string(),
    }
}

impl ConfigError {
    /// The validation failures, when that is what went wrong.
    pub fn field_errors(&self) -> &[FieldError] {
        match self {
            Self::Invalid(errors) => errors,
            _ => &[],
        }
    }
}

/// Reads, validates and builds the configuration in the file at `path`, as
/// `--encryption-provider-config` does.
pub fn from_file(path: impl AsRef<Path>) -> Result<EncryptionConfig, ConfigError> {
    let path = path.as_ref();
    let data = std::fs::read(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    EncryptionConfig::load(&data, Some(path))
}

/// A validated encryption configuration, ready to encrypt and decrypt values by storage
/// key. Cheap to clone (shared).
#[derive(Clone)]
pub struct EncryptionConfig {
    inner: Arc<Inner>,
}

struct Inner {
    /// Longest prefix first: the first a key starts with governs it.
    routes: Vec<Route>,
    rng: SystemRandom,
}

struct Route {
    prefix: Box<[u8]>,
    /// The rule that governs the prefix, as written (`secrets`, `*.apps`, `*.*`).
    rule: Arc<str>,
    transformer: Arc<Transformer>,
}

/// A value read back from storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decrypted {
    pub value: Bytes,
    /// Read with a provider or key other than the one writes use (or read as plaintext
    /// while writes encrypt): rewriting the object moves it to the current write key, as
    /// `kubectl get secrets -A -o json | kubectl replace -f -` does after a key rotation.
    pub stale: bool,
}

/// One storage key prefix the configuration governs, for logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncryptedPrefix<'a> {
    /// `/registry/secrets/`.
    pub prefix: &'a str,
    /// The configuration's rule for it: `secrets`, `*.`, `*.apps`, `*.*`.
    pub resource: &'a str,
    /// The provider writes use: `aesgcm`, `secretbox` or `identity`.
    pub write_provider: &'static str,
    /// The key writes use (`None` for `identity`).
    pub write_key: Option<&'a str>,
}

impl EncryptionConfig {
    /// Parses, validates and builds a configuration document (YAML or JSON).
    pub fn parse(data: &[u8]) -> Result<Self, ConfigError> {
        Self::load(data, None)
    }

    fn load(data: &[u8], path: Option<&Path>) -> Result<Self, ConfigError> {
        if data.is_empty() {
            return Err(ConfigError::Empty {
                path: path.map(Path::to_path_buf),
            });
        }
        let raw = decode(data).map_err(|message| ConfigError::Decode {
            path: path.map(Path::to_path_buf),
            message,
        })?;
        let errors = validate(&raw);
        if !errors.is_empty() {
            return Err(ConfigError::Invalid(errors));
        }
        build(&raw)
    }

    /// The transformer governing `key`, if any (a prefix comparison per configured prefix).
    fn transformer(&self, key: &[u8]) -> Option<&Transformer> {
        self.inner
            .routes
            .iter()
            .find(|route| key.starts_with(&route.prefix))
            .map(|route| &*route.transformer)
    }

    /// Whether values stored under `key` go through the configuration's providers (even if
    /// the provider writes use is `identity`). Other keys are stored as they are.
    pub fn governs(&self, key: &[u8]) -> bool {
        self.transformer(key).is_some()
    }

    /// Whether some key under `prefix` is governed by the configuration.
    pub fn governs_some_key_under(&self, prefix: &[u8]) -> bool {
        self.inner
            .routes
            .iter()
            .any(|route| route.prefix.starts_with(prefix) || prefix.starts_with(&route.prefix))
    }

    /// Whether no key at all is governed (every configured resource matched nothing).
    pub fn is_empty(&self) -> bool {
        self.inner.routes.is_empty()
    }

    /// The stored form of `value` written under `key`: encrypted with the first provider
    /// of the key's resource, or `value` itself (not copied) for keys the configuration
    /// does not govern and for `identity`.
    pub fn encrypt(&self, key: &[u8], value: Bytes) -> Result<Bytes, TransformError> {
        let Some(transformer) = self.transformer(key) else {
            return Ok(value);
        };
        Ok(match transformer.seal(&self.inner.rng, key, &value)? {
            Some(sealed) => Bytes::from(sealed),
            None => value,
        })
    }

    /// The plaintext of `stored`, read from under `key`; keys the configuration does not
    /// govern come back as they are (not copied).
    pub fn decrypt(&self, key: &[u8], stored: Bytes) -> Result<Decrypted, TransformError> {
        let Some(transformer) = self.transformer(key) else {
            return Ok(Decrypted {
                value: stored,
                stale: false,
            });
        };
        Ok(match transformer.open(key, &stored)? {
            Read::Plain { stale } => Decrypted {
                value: stored,
                stale,
            },
            Read::Decrypted { plaintext, stale } => Decrypted {
                value: Bytes::from(plaintext),
                stale,
            },
        })
    }

    /// The governed prefixes, most specific first, with how each is written.
    pub fn prefixes(&self) -> impl Iterator<Item = EncryptedPrefix<'_>> {
        self.inner.routes.iter().map(|route| {
            let provider = route.transformer.write_provider();
            EncryptedPrefix {
                prefix: std::str::from_utf8(&route.prefix).unwrap_or_default(),
                resource: &route.rule,
                write_provider: provider.map_or("identity", Provider::name),
                write_key: provider.and_then(Provider::write_key_name),
            }
        })
    }
}

/// Prefixes and providers, never keys.
impl fmt::Debug for EncryptionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for route in &self.inner.routes {
            map.entry(&String::from_utf8_lossy(&route.prefix), &route.transformer);
        }
        map.finish()
    }
}

/// Builds every entry's providers and resolves the resources, refusing rules masked by an
/// earlier wildcard, as kube-apiserver does.
fn build(raw: &RawConfig) -> Result<EncryptionConfig, ConfigError> {
    // Rules in the order first named; a resource named by several entries reads with the
    // providers of all of them, in entry order.
    let mut rules: Vec<(GroupResource<'_>, &str, Vec<Arc<Provider>>)> = Vec::new();
    for (i, entry) in raw.resources.iter().enumerate() {
        let providers = build_providers(entry, i)?;
        for name in &entry.resources {
            let gr = GroupResource::parse(name);
            for earlier in [gr.group_wildcard(), GroupResource::ANY] {
                if rules.iter().any(|(rule, _, _)| *rule == earlier) {
                    return Err(ConfigError::Build(format!(
                        "resource {} is masked by earlier rule {}",
                        kyb_apimachinery::gofmt::quote(&gr.to_string()),
                        kyb_apimachinery::gofmt::quote(&earlier.to_string())
                    )));
                }
            }
            match rules.iter_mut().find(|(rule, _, _)| *rule == gr) {
                Some((_, _, existing)) => existing.extend(providers.iter().cloned()),
                None => rules.push((gr, name, providers.clone())),
            }
        }
    }
    let names: Vec<GroupResource<'_>> = rules.iter().map(|(gr, _, _)| *gr).collect();
    let transformers: Vec<(Arc<str>, Arc<Transformer>)> = rules
        .into_iter()
        .map(|(_, name, providers)| (Arc::from(name), Arc::new(Transformer::new(providers))))
        .collect();
    let routes = resolve(&names, |gr| names.iter().position(|rule| *rule == gr))
        .into_iter()
        .filter_map(|(prefix, index)| {
            transformers.get(index).map(|(rule, transformer)| Route {
                prefix: prefix.into_bytes().into_boxed_slice(),
                rule: Arc::clone(rule),
                transformer: Arc::clone(transformer),
            })
        })
        .collect();
    Ok(EncryptionConfig {
        inner: Arc::new(Inner {
            routes,
            rng: SystemRandom::new(),
        }),
    })
}

fn build_providers(entry: &RawResourceConfig, i: usize) -> Result<Vec<Arc<Provider>>, ConfigError> {
    let mut providers = Vec::with_capacity(entry.providers.len());
    for (j, raw) in entry.providers.iter().enumerate() {
        let path = format!("resources[{i}].providers[{j}]");
        let provider = if raw.kms {
            return Err(ConfigError::Build(format!(
                "{path}.kms: KMS providers are not supported; use aesgcm or secretbox"
            )));
        } else if let Some(aesgcm) = &raw.aesgcm {
            let mut keys = Vec::with_capacity(aesgcm.keys.len());
            for key in &aesgcm.keys {
                let secret = secret(&key.name, &key.secret)?;
                keys.push(AesGcmKey::new(&key.name, &secret).map_err(|e| {
                    ConfigError::Build(format!(
                        "error while creating cipher for named key {}: {e}",
                        key.name
                    ))
                })?);
            }
            Provider::AesGcm(keys)
        } else if raw.aescbc.is_some() {
            return Err(ConfigError::Build(format!(
                "{path}.aescbc: the aescbc provider is not supported (Kubernetes recommends against it: CBC is vulnerable to padding oracle attacks); use aesgcm or secretbox"
            )));
        } else if let Some(secretbox) = &raw.secretbox {
            let mut keys = Vec::with_capacity(secretbox.keys.len());
            for key in &secretbox.keys {
                let secret = secret(&key.name, &key.secret)?;
                keys.push(SecretboxKey::new(&key.name, &secret).map_err(ConfigError::Build)?);
            }
            Provider::Secretbox(keys)
        } else {
            Provider::Identity
        };
        providers.push(Arc::new(provider));
    }
    Ok(providers)
}

fn secret(name: &str, secret: &str) -> Result<Vec<u8>, ConfigError> {
    decode_secret(secret)
        .map_err(|()| ConfigError::Build(format!("could not obtain secret for named key {name}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const KEY1: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const KEY2: &str = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";

    fn config(body: &str) -> Result<EncryptionConfig, ConfigError> {
        EncryptionConfig::parse(
            format!(
                "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n{body}"
            )
            .as_bytes(),
        )
    }

    #[test]
    fn round_trips_governed_keys_and_passes_others_through() {
        let config = config(&format!(
            "resources:\n- resources: [secrets]\n  providers:\n  - aesgcm: {{keys: [{{name: key1, secret: {KEY1}}}]}}\n"
        ))
        .unwrap();
        let key = b"/registry/secrets/default/s";
        let stored = config
            .encrypt(key, Bytes::from_static(b"{\"a\":1}"))
            .unwrap();
        assert!(stored.starts_with(b"k8s:enc:aesgcm:v1:key1:"));
        let read = config.decrypt(key, stored).unwrap();
        assert_eq!(read.value, Bytes::from_static(b"{\"a\":1}"));
        assert!(!read.stale);

        let other = b"/registry/configmaps/default/c";
        let value = Bytes::from_static(b"{}");
        let stored = config.encrypt(other, value.clone()).unwrap();
        assert_eq!(stored.as_ptr(), value.as_ptr(), "not copied");
        assert!(!config.governs(other));
        assert!(config.governs(key));
        assert!(config.governs_some_key_under(b"/registry/"));
        assert!(config.governs_some_key_under(b"/registry/secrets/default/"));
        assert!(!config.governs_some_key_under(b"/registry/configmaps/"));
    }

    #[test]
    fn lists_its_prefixes_without_secrets() {
        let config = config(&format!(
            "resources:
- resources: [events]
  providers: [{{identity: {{}}}}]
- resources: ['*.*']
  providers:
  - secretbox: {{keys: [{{name: box1, secret: {KEY1}}}]}}
"
        ))
        .unwrap();
        let prefixes: Vec<EncryptedPrefix<'_>> = config.prefixes().collect();
        assert_eq!(prefixes.last().unwrap().prefix, "/registry/");
        assert_eq!(prefixes.last().unwrap().resource, "*.*");
        let events = prefixes
            .iter()
            .find(|p| p.prefix == "/registry/events/")
            .unwrap();
        assert_eq!(
            (events.resource, events.write_provider),
            ("events", "identity")
        );
        let secrets = prefixes
            .iter()
            .find(|p| p.prefix == "/registry/secrets/")
            .unwrap();
        assert_eq!(
            (secrets.resource, secrets.write_provider, secrets.write_key),
            ("*.*", "secretbox", Some("box1"))
        );
        let debug = format!("{config:?}");
        assert!(debug.contains("secretbox[\"box1\"]"), "{debug}");
        assert!(!debug.contains(KEY1));
    }

    #[test]
    fn a_resource_in_several_entries_reads_with_all_their_providers() {
        let config = config(&format!(
            "resources:
- resources: [secrets]
  providers:
  - aesgcm: {{keys: [{{name: new, secret: {KEY2}}}]}}
- resources: [secrets, configmaps]
  providers:
  - aesgcm: {{keys: [{{name: old, secret: {KEY1}}}]}}
"
        ))
        .unwrap();
        let old_only = self::config(&format!(
            "resources:\n- resources: [secrets]\n  providers:\n  - aesgcm: {{keys: [{{name: old, secret: {KEY1}}}]}}\n"
        ))
        .unwrap();
        let key = b"/registry/secrets/ns/s";
        let old = old_only.encrypt(key, Bytes::from_static(b"{}")).unwrap();
        let read = config.decrypt(key, old).unwrap();
        assert_eq!((read.value.as_ref(), read.stale), (&b"{}"[..], true));
        let new = config.encrypt(key, Bytes::from_static(b"{}")).unwrap();
        assert!(new.starts_with(b"k8s:enc:aesgcm:v1:new:"));
    }

    #[test]
    fn errors_read_like_kube_apiserver() {
        let error = config(
            "resources:\n- resources: [secrets]\n  providers:\n  - aesgcm: {keys: [{name: k, secret: c2VjcmV0}]}\n",
        )
        .err()
        .unwrap();
        assert_eq!(
            error.to_string(),
            r#"error while parsing file: resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 6, expected one of [16 24 32]"#
        );
        assert_eq!(error.field_errors().len(), 1);
        assert_eq!(
            error.field_errors()[0].field,
            "resources[0].providers[0].aesgcm.keys[0].secret"
        );

        let error = config(
            "resources:\n- resources: [secrets]\n  providers: [{identity: {}}]\n  extra: 1\n",
        )
        .err()
        .unwrap();
        assert_eq!(
            error.to_string(),
            r#"error while parsing file: error decoding encryption provider configuration document: strict decoding error: unknown field "resources[0].extra""#
        );

        let error = EncryptionConfig::parse(b"").err().unwrap();
        assert_eq!(
            error.to_string(),
            "error while parsing file: error while loading file: encryption provider configuration document is empty"
        );
    }

    #[test]
    fn rules_masked_by_earlier_wildcards_are_refused() {
        let cases = [
            (
                &["*.", "secrets"][..],
                r#"resource "secrets" is masked by earlier rule "*.""#,
            ),
            (
                &["*.*", "deployments.apps"][..],
                r#"resource "deployments.apps" is masked by earlier rule "*.*""#,
            ),
            (
                &["*.apps", "deployments.apps"][..],
                r#"resource "deployments.apps" is masked by earlier rule "*.apps""#,
            ),
            (
                &["*.*", "*."][..],
                r#"resource "*." is masked by earlier rule "*.*""#,
            ),
            (
                &["*.", "*."][..],
                r#"resource "*." is masked by earlier rule "*.""#,
            ),
        ];
        for (resources, message) in cases {
            let body: String = resources
                .iter()
                .map(|r| format!("- resources: ['{r}']\n  providers: [{{identity: {{}}}}]\n"))
                .collect();
            let error = config(&format!("resources:\n{body}")).err().unwrap();
            assert_eq!(
                error.to_string(),
                format!("error while building transformers: {message}")
            );
        }
        // The other way round is fine: the earlier, narrower rule wins for its resource.
        assert!(
            config("resources:\n- resources: [secrets]\n  providers: [{identity: {}}]\n- resources: ['*.']\n  providers: [{identity: {}}]\n")
                .is_ok()
        );
    }

    #[test]
    fn aescbc_and_kms_are_refused_with_the_field() {
        let error = config(&format!(
            "resources:\n- resources: [secrets]\n  providers:\n  - identity: {{}}\n  - aescbc: {{keys: [{{name: k, secret: {KEY1}}}]}}\n"
        ))
        .err()
        .unwrap();
        let message = error.to_string();
        assert!(
            message.starts_with("error while building transformers: resources[0].providers[1].aescbc: the aescbc provider is not supported"),
            "{message}"
        );
        let error = config(
            "resources:\n- resources: [secrets]\n  providers:\n  - kms: {name: k, endpoint: unix:///tmp/kms.sock}\n",
        )
        .err()
        .unwrap();
        assert_eq!(
            error.to_string(),
            "error while building transformers: resources[0].providers[0].kms: KMS providers are not supported; use aesgcm or secretbox"
        );
    }

    #[test]
    fn from_file_names_the_file() {
        let dir = kyb_testkit::temp_dir("encryption").unwrap();
        let path = dir.path().join("missing.yaml");
        let error = from_file(&path).err().unwrap();
        let message = error.to_string();
        assert!(
            message.starts_with(&format!(
                "error while parsing file: error while loading file: error reading encryption provider configuration file \"{}\": ",
                path.display()
            )),
            "{message}"
        );
        let empty = dir.path().join("empty.yaml");
        std::fs::write(&empty, "").unwrap();
        assert_eq!(
            from_file(&empty).err().unwrap().to_string(),
            format!(
                "error while parsing file: error while loading file: encryption provider configuration file \"{}\" is empty",
                empty.display()
            )
        );
        let good = dir.path().join("good.yaml");
        std::fs::write(
            &good,
            format!("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesgcm: {{keys: [{{name: key1, secret: {KEY1}}}]}}\n"),
        )
        .unwrap();
        assert!(from_file(&good).unwrap().governs(b"/registry/secrets/a/b"));
    }
}
