//! Encryption of resources at rest, as kube-apiserver does it with
//! `--encryption-provider-config` ("Encrypting Confidential Data at Rest").
//!
//! Entry points:
//! - [`from_file`] (or [`EncryptionConfig::parse`] for a document in memory): reads an
//!   `apiserver.config.k8s.io/v1` `EncryptionConfiguration` (YAML or JSON), validates it
//!   with kube-apiserver's rules and messages ([`ConfigError`], [`FieldError`]), builds its
//!   providers (`aesgcm`, `secretbox`, `identity`; `aescbc` and `kms` are refused) and
//!   resolves its resources (`secrets`, `deployments.apps`, `*.`, `*.apps`, `*.*`) to
//!   storage key prefixes (`/registry/secrets/`).
//! - [`wrap`] / [`EncryptedStore`]: a [`kyb_storage::Store`] decorator that encrypts the
//!   values of governed keys when they are written and decrypts every value it hands back,
//!   watch events included. Other keys pass through untouched.
//! - [`EncryptionConfig::encrypt`] / [`EncryptionConfig::decrypt`]: one value, for tools
//!   (the decrypted value says whether it is [`stale`](Decrypted::stale), i.e. should be
//!   rewritten after a key rotation).
//!
//! Values are stored byte for byte as kube-apiserver stores them
//! (`k8s:enc:aesgcm:v1:<key>:` + nonce + ciphertext + tag, the storage key authenticated;
//! `k8s:enc:secretbox:v1:<key>:` + nonce + NaCl secretbox), so a store moves between the
//! two and `etcdctl get` shows the same bytes.
//!
//! Modules: `decode` (the document's fields, strictly), `validation` (Kubernetes' rules),
//! `resources` (names and wildcards to key prefixes), `providers` (the ciphers and the wire
//! format), `transformer` (one resource's providers: write with the first, read with any),
//! `config` (loading, [`EncryptionConfig`]), `store` ([`EncryptedStore`]).

mod config;
mod decode;
mod providers;
mod resources;
mod store;
mod transformer;
mod validation;

pub use config::{ConfigError, Decrypted, EncryptedPrefix, EncryptionConfig, from_file};
pub use decode::{API_VERSION, KIND};
pub use providers::TransformError;
pub use store::{EncryptedStore, wrap};
pub use validation::{FieldError, FieldErrorKind};
