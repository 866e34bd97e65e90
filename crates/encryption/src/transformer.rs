//! The providers that apply to one resource, in configuration order (the providers of
//! every `resources[]` entry naming it, entry after entry), and the rules kube-apiserver
//! applies with them: writes use the first provider (its first key); reads try each
//! provider whose prefix the value carries, in order, and take the first that decrypts.
//! `identity` reads any value without the `k8s:enc:` prefix. A read by any provider or key
//! but the first is *stale*: the value should be rewritten to move it to the write key.

use crate::providers::{Opened, Provider, TransformError};
use ring::rand::SecureRandom;
use std::sync::Arc;

/// One resource's providers.
#[derive(Debug)]
pub(crate) struct Transformer {
    providers: Vec<Arc<Provider>>,
}

/// A value read from storage.
pub(crate) enum Read {
    /// Plaintext as stored (read by `identity`).
    Plain { stale: bool },
    /// Decrypted.
    Decrypted { plaintext: Vec<u8>, stale: bool },
}

impl Transformer {
    pub fn new(providers: Vec<Arc<Provider>>) -> Self {
        Self { providers }
    }

    /// The provider writes use.
    pub fn write_provider(&self) -> Option<&Provider> {
        self.providers.first().map(|p| &**p)
    }

    /// The stored form of `plaintext` under `key`; `None` when it is stored as it is.
    pub fn seal(
        &self,
        rng: &dyn SecureRandom,
        key: &[u8],
        plaintext: &[u8],
    ) -> Result<Option<Vec<u8>>, TransformError> {
        match self.write_provider() {
            Some(provider) => provider.seal(rng, key, plaintext),
            None => Ok(None),
        }
    }

    /// The plaintext of the value stored under `key`.
    pub fn open(&self, key: &[u8], stored: &[u8]) -> Result<Read, TransformError> {
        let mut errors: Vec<&'static str> = Vec::new();
        for (index, provider) in self.providers.iter().enumerate() {
            match provider.open(key, stored) {
                Opened::NotMine => {}
                Opened::Plain => return Ok(Read::Plain { stale: index != 0 }),
                Opened::Decrypted(plaintext, key_index) => {
                    return Ok(Read::Decrypted {
                        plaintext,
                        stale: index != 0 || key_index != 0,
                    });
                }
                // Keep trying: a later provider of the same kind may hold the key (rotation).
                Opened::Failed(messages) => {
                    for message in messages {
                        if !errors.contains(&message) {
                            errors.push(message);
                        }
                    }
                }
            }
        }
        if errors.is_empty() {
            Err(TransformError::NoMatchingPrefix)
        } else {
            Err(TransformError::Unreadable(errors))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::providers::{AesGcmKey, GCM_AUTHENTICATION, NO_AES_KEY, SecretboxKey};
    use ring::rand::SystemRandom;

    const KEY: &[u8] = b"/registry/secrets/ns/s";

    fn aes(name: &str, byte: u8) -> Arc<Provider> {
        Arc::new(Provider::AesGcm(vec![
            AesGcmKey::new(name, &[byte; 32]).unwrap(),
        ]))
    }

    fn transformer(providers: &[&Arc<Provider>]) -> Transformer {
        Transformer::new(providers.iter().map(|p| Arc::clone(p)).collect())
    }

    fn plaintext(read: Read) -> Option<(Vec<u8>, bool)> {
        match read {
            Read::Decrypted { plaintext, stale } => Some((plaintext, stale)),
            Read::Plain { .. } => None,
        }
    }

    #[test]
    fn writes_with_the_first_provider_and_reads_with_any() {
        let rng = SystemRandom::new();
        let (key1, key2) = (aes("key1", 1), aes("key2", 2));
        let old = transformer(&[&key1]);
        let written = old.seal(&rng, KEY, b"{}").unwrap().unwrap();
        // Rotation: [key2, key1] reads key1's data (stale) and writes key2.
        let rotated = transformer(&[&key2, &key1]);
        assert_eq!(
            plaintext(rotated.open(KEY, &written).unwrap()),
            Some((b"{}".to_vec(), true))
        );
        let rewritten = rotated.seal(&rng, KEY, b"{}").unwrap().unwrap();
        assert!(rewritten.starts_with(b"k8s:enc:aesgcm:v1:key2:"));
        assert_eq!(
            plaintext(rotated.open(KEY, &rewritten).unwrap()),
            Some((b"{}".to_vec(), false))
        );
    }

    #[test]
    fn identity_first_writes_plaintext_and_still_reads_encrypted_values() {
        let rng = SystemRandom::new();
        let key1 = aes("key1", 1);
        let identity = Arc::new(Provider::Identity);
        let encrypted = transformer(&[&key1])
            .seal(&rng, KEY, b"{}")
            .unwrap()
            .unwrap();
        let decrypting = transformer(&[&identity, &key1]);
        assert_eq!(decrypting.seal(&rng, KEY, b"{}").unwrap(), None);
        assert_eq!(
            plaintext(decrypting.open(KEY, &encrypted).unwrap()),
            Some((b"{}".to_vec(), true))
        );
        assert!(matches!(
            decrypting.open(KEY, b"{}").unwrap(),
            Read::Plain { stale: false }
        ));
    }

    #[test]
    fn plaintext_needs_identity() {
        let key1 = aes("key1", 1);
        let identity = Arc::new(Provider::Identity);
        assert!(matches!(
            transformer(&[&key1, &identity]).open(KEY, b"{}").unwrap(),
            Read::Plain { stale: true }
        ));
        let error = transformer(&[&key1]).open(KEY, b"{}").err().unwrap();
        assert_eq!(error, TransformError::NoMatchingPrefix);
        assert_eq!(error.to_string(), "no matching prefix found");
    }

    #[test]
    fn failures_of_every_provider_are_reported() {
        let rng = SystemRandom::new();
        let written = transformer(&[&aes("key1", 1)])
            .seal(&rng, KEY, b"{}")
            .unwrap()
            .unwrap();
        // Unknown key name.
        let error = transformer(&[&aes("key2", 2)])
            .open(KEY, &written)
            .err()
            .unwrap();
        assert_eq!(error.to_string(), NO_AES_KEY);
        // Same name, wrong secret, and an unknown name: both messages, as Kubernetes lists them.
        let error = transformer(&[&aes("key1", 3), &aes("key9", 9)])
            .open(KEY, &written)
            .err()
            .unwrap();
        assert_eq!(
            error.to_string(),
            format!("[{GCM_AUTHENTICATION}, {NO_AES_KEY}]")
        );
        // A secretbox-only resource does not recognise an aesgcm value at all.
        let secretbox = Arc::new(Provider::Secretbox(vec![
            SecretboxKey::new("key1", &[1; 32]).unwrap(),
        ]));
        assert_eq!(
            transformer(&[&secretbox]).open(KEY, &written).err(),
            Some(TransformError::NoMatchingPrefix)
        );
    }
}
