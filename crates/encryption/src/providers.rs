//! The encryption providers and their wire format, byte for byte as kube-apiserver writes
//! it, so that data moves between the two and reads the same with `etcdctl get`:
//!
//! - `aesgcm`: `k8s:enc:aesgcm:v1:<key name>:` + nonce (12 random bytes) + AES-GCM
//!   ciphertext and 16-byte tag, with the storage key (`/registry/secrets/ns/name`) as
//!   additional authenticated data, so a value copied under another key does not decrypt.
//!   16- and 32-byte keys use `ring`; 24-byte keys (AES-192, which `ring` lacks) RustCrypto's
//!   `aes-gcm`.
//! - `secretbox`: `k8s:enc:secretbox:v1:<key name>:` + nonce (24 random bytes) + NaCl
//!   secretbox (16-byte Poly1305 tag, then the XSalsa20 ciphertext). No authenticated data.
//! - `identity`: the value as it is; on reads it refuses values with the `k8s:enc:` prefix.
//!
//! A provider holds its keys in configuration order: writes use the first, reads try every
//! key whose name follows the provider prefix.

use aes_gcm::aead::consts::U12;
use aes_gcm::aead::generic_array::GenericArray;
use aes_gcm::aead::{AeadInPlace, KeyInit};
use ring::aead::{AES_128_GCM, AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::rand::SecureRandom;
use std::fmt;

/// What every encrypted value starts with; `identity` refuses to read such values.
pub(crate) const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";
/// The `aesgcm` provider's prefix; the key name and a colon follow.
pub(crate) const AESGCM_PREFIX: &[u8] = b"k8s:enc:aesgcm:v1:";
/// The `secretbox` provider's prefix; the key name and a colon follow.
pub(crate) const SECRETBOX_PREFIX: &[u8] = b"k8s:enc:secretbox:v1:";

const GCM_NONCE_LEN: usize = 12;
const SECRETBOX_NONCE_LEN: usize = 24;
/// AES-GCM's and Poly1305's tag length.
const TAG_LEN: usize = 16;

/// Kubernetes' messages for values a provider recognises but cannot read.
pub(crate) const TOO_SHORT: &str = "the stored data was shorter than the required size";
pub(crate) const GCM_AUTHENTICATION: &str = "cipher: message authentication failed";
pub(crate) const SECRETBOX_AUTHENTICATION: &str = "secretbox: message authentication failed";
pub(crate) const NO_AES_KEY: &str = "no matching key was found for the provided AES transformer";
pub(crate) const NO_SECRETBOX_KEY: &str =
    "no matching key was found for the provided Secretbox transformer";

type Aes192Gcm = aes_gcm::AesGcm<aes_gcm::aes::Aes192, U12>;

/// Why a value could not be written or read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransformError {
    /// No provider of the resource recognises the value: it has no `k8s:enc:` prefix and
    /// `identity` is not configured, or it was written by a provider that is not.
    #[error("no matching prefix found")]
    NoMatchingPrefix,
    /// Providers recognised the value but could not read it (unknown key name, failed
    /// authentication, truncated value); their messages, each once, printed as
    /// Kubernetes' aggregate error prints them.
    #[error("{}", crate::validation::aggregate(.0))]
    Unreadable(Vec<&'static str>),
    /// Encrypting failed (the system's random number generator failed).
    #[error("{0}")]
    Encrypt(&'static str),
}

/// One provider of a resource entry.
pub(crate) enum Provider {
    Identity,
    AesGcm(Vec<AesGcmKey>),
    Secretbox(Vec<SecretboxKey>),
}

/// What a provider made of a stored value.
pub(crate) enum Opened {
    /// The value is not this provider's (another prefix), or `identity` saw an encrypted
    /// value: try the next provider.
    NotMine,
    /// `identity`: the value is plaintext as it is.
    Plain,
    /// Decrypted with the key at this index of the provider's keys.
    Decrypted(Vec<u8>, usize),
    /// The value carries this provider's prefix but cannot be read.
    Failed(Vec<&'static str>),
}

impl Provider {
    /// The provider's name in the configuration.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Identity => "identity",
            Self::AesGcm(_) => "aesgcm",
            Self::Secretbox(_) => "secretbox",
        }
    }

    /// The name of the key writes use (`None` for `identity`).
    pub fn write_key_name(&self) -> Option<&str> {
        match self {
            Self::Identity => None,
            Self::AesGcm(keys) => keys.first().map(|k| k.name.as_str()),
            Self::Secretbox(keys) => keys.first().map(|k| k.name.as_str()),
        }
    }

    /// The stored form of `plaintext` (under the storage key `aad`), written with the
    /// provider's first key; `None` for `identity`, which stores the value as it is.
    pub fn seal(
        &self,
        rng: &dyn SecureRandom,
        aad: &[u8],
        plaintext: &[u8],
    ) -> Result<Option<Vec<u8>>, TransformError> {
        match self {
            Self::Identity => Ok(None),
            Self::AesGcm(keys) => match keys.first() {
                Some(key) => key.seal(rng, aad, plaintext).map(Some),
                None => Err(TransformError::Encrypt(NO_AES_KEY)),
            },
            Self::Secretbox(keys) => match keys.first() {
                Some(key) => key.seal(rng, plaintext).map(Some),
                None => Err(TransformError::Encrypt(NO_SECRETBOX_KEY)),
            },
        }
    }

    /// Reads a stored value written under the storage key `aad`.
    pub fn open(&self, aad: &[u8], data: &[u8]) -> Opened {
        match self {
            Self::Identity if data.starts_with(ENCRYPTED_PREFIX) => Opened::NotMine,
            Self::Identity => Opened::Plain,
            Self::AesGcm(keys) => match data.strip_prefix(AESGCM_PREFIX) {
                None => Opened::NotMine,
                Some(rest) => {
                    open_with_keys(keys, rest, NO_AES_KEY, |key, sealed| key.open(aad, sealed))
                }
            },
            Self::Secretbox(keys) => match data.strip_prefix(SECRETBOX_PREFIX) {
                None => Opened::NotMine,
                Some(rest) => {
                    open_with_keys(keys, rest, NO_SECRETBOX_KEY, |key, sealed| key.open(sealed))
                }
            },
        }
    }
}

/// A key of a provider, as far as choosing it by name goes.
trait Named {
    /// `<name>:`, what follows the provider prefix in values it wrote.
    fn name_tag(&self) -> &[u8];
}

/// Tries, in order, every key whose `<name>:` starts `rest`; the first that decrypts wins.
fn open_with_keys<K: Named>(
    keys: &[K],
    rest: &[u8],
    no_key: &'static str,
    open: impl Fn(&K, &[u8]) -> Result<Vec<u8>, &'static str>,
) -> Opened {
    let mut errors = Vec::new();
    for (index, key) in keys.iter().enumerate() {
        if let Some(sealed) = rest.strip_prefix(key.name_tag()) {
            match open(key, sealed) {
                Ok(plaintext) => return Opened::Decrypted(plaintext, index),
                Err(error) => errors.push(error),
            }
        }
    }
    if errors.is_empty() {
        errors.push(no_key);
    }
    Opened::Failed(errors)
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Names only: never the secrets.
        let names: Vec<&str> = match self {
            Self::Identity => Vec::new(),
            Self::AesGcm(keys) => keys.iter().map(|k| k.name.as_str()).collect(),
            Self::Secretbox(keys) => keys.iter().map(|k| k.name.as_str()).collect(),
        };
        write!(f, "{}{names:?}", self.name())
    }
}

/// An `aesgcm` key.
pub(crate) struct AesGcmKey {
    name: String,
    /// `k8s:enc:aesgcm:v1:<name>:`, written before every value.
    prefix: Vec<u8>,
    cipher: GcmCipher,
}

/// Boxed: both key schedules are large (0.5–0.9 KiB) and of different sizes.
enum GcmCipher {
    /// AES-128 and AES-256.
    Ring(Box<LessSafeKey>),
    /// AES-192.
    Aes192(Box<Aes192Gcm>),
}

impl Named for AesGcmKey {
    fn name_tag(&self) -> &[u8] {
        self.prefix.get(AESGCM_PREFIX.len()..).unwrap_or_default()
    }
}

fn prefixed(provider: &[u8], name: &str) -> Vec<u8> {
    let mut prefix = Vec::with_capacity(provider.len() + name.len() + 1);
    prefix.extend_from_slice(provider);
    prefix.extend_from_slice(name.as_bytes());
    prefix.push(b':');
    prefix
}

impl AesGcmKey {
    /// A key from its name and its decoded secret of 16, 24 or 32 bytes.
    pub fn new(name: &str, secret: &[u8]) -> Result<Self, String> {
        let invalid = || format!("crypto/aes: invalid key size {}", secret.len());
        let cipher = match secret.len() {
            16 | 32 => {
                let algorithm = if secret.len() == 16 {
                    &AES_128_GCM
                } else {
                    &AES_256_GCM
                };
                let key = UnboundKey::new(algorithm, secret).map_err(|_| invalid())?;
                GcmCipher::Ring(Box::new(LessSafeKey::new(key)))
            }
            24 => GcmCipher::Aes192(Box::new(
                Aes192Gcm::new_from_slice(secret).map_err(|_| invalid())?,
            )),
            _ => return Err(invalid()),
        };
        Ok(Self {
            name: name.to_string(),
            prefix: prefixed(AESGCM_PREFIX, name),
            cipher,
        })
    }

    /// prefix + nonce + ciphertext + tag, with a random nonce.
    fn seal(
        &self,
        rng: &dyn SecureRandom,
        aad: &[u8],
        plaintext: &[u8],
    ) -> Result<Vec<u8>, TransformError> {
        let mut nonce = [0u8; GCM_NONCE_LEN];
        rng.fill(&mut nonce)
            .map_err(|_| TransformError::Encrypt("failed to write nonce for AES-GCM"))?;
        self.seal_with_nonce(nonce, aad, plaintext)
    }

    /// prefix + nonce + ciphertext + tag, in one allocation.
    fn seal_with_nonce(
        &self,
        nonce: [u8; GCM_NONCE_LEN],
        aad: &[u8],
        plaintext: &[u8],
    ) -> Result<Vec<u8>, TransformError> {
        let mut out =
            Vec::with_capacity(self.prefix.len() + GCM_NONCE_LEN + plaintext.len() + TAG_LEN);
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(&nonce);
        let start = out.len();
        out.extend_from_slice(plaintext);
        let failed = TransformError::Encrypt("failed to encrypt with AES-GCM");
        let in_out = out.get_mut(start..).unwrap_or_default();
        match &self.cipher {
            GcmCipher::Ring(key) => {
                let tag = key
                    .seal_in_place_separate_tag(
                        Nonce::assume_unique_for_key(nonce),
                        Aad::from(aad),
                        in_out,
                    )
                    .map_err(|_| failed)?;
                out.extend_from_slice(tag.as_ref());
            }
            GcmCipher::Aes192(cipher) => {
                let tag = cipher
                    .encrypt_in_place_detached(GenericArray::from_slice(&nonce), aad, in_out)
                    .map_err(|_| failed)?;
                out.extend_from_slice(&tag);
            }
        }
        Ok(out)
    }

    /// nonce + ciphertext + tag → plaintext.
    fn open(&self, aad: &[u8], data: &[u8]) -> Result<Vec<u8>, &'static str> {
        let (Some(nonce), Some(sealed)) = (data.get(..GCM_NONCE_LEN), data.get(GCM_NONCE_LEN..))
        else {
            return Err(TOO_SHORT);
        };
        let Some(text_len) = sealed.len().checked_sub(TAG_LEN) else {
            return Err(GCM_AUTHENTICATION);
        };
        let mut buffer = sealed.to_vec();
        match &self.cipher {
            GcmCipher::Ring(key) => {
                let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| TOO_SHORT)?;
                key.open_in_place(nonce, Aad::from(aad), &mut buffer)
                    .map_err(|_| GCM_AUTHENTICATION)?;
            }
            GcmCipher::Aes192(cipher) => {
                let (text, tag) = buffer.split_at_mut(text_len);
                cipher
                    .decrypt_in_place_detached(
                        GenericArray::from_slice(nonce),
                        aad,
                        text,
                        GenericArray::from_slice(tag),
                    )
                    .map_err(|_| GCM_AUTHENTICATION)?;
            }
        }
        buffer.truncate(text_len);
        Ok(buffer)
    }
}

/// A `secretbox` key.
pub(crate) struct SecretboxKey {
    name: String,
    /// `k8s:enc:secretbox:v1:<name>:`, written before every value.
    prefix: Vec<u8>,
    cipher: crypto_secretbox::XSalsa20Poly1305,
}

impl Named for SecretboxKey {
    fn name_tag(&self) -> &[u8] {
        self.prefix
            .get(SECRETBOX_PREFIX.len()..)
            .unwrap_or_default()
    }
}

impl SecretboxKey {
    /// A key from its name and its decoded 32-byte secret.
    pub fn new(name: &str, secret: &[u8]) -> Result<Self, String> {
        let cipher = crypto_secretbox::XSalsa20Poly1305::new_from_slice(secret).map_err(|_| {
            format!(
                "expected key size 32 for secretbox provider, got {}",
                secret.len()
            )
        })?;
        Ok(Self {
            name: name.to_string(),
            prefix: prefixed(SECRETBOX_PREFIX, name),
            cipher,
        })
    }

    /// prefix + nonce + tag + ciphertext (NaCl's layout), with a random nonce.
    fn seal(&self, rng: &dyn SecureRandom, plaintext: &[u8]) -> Result<Vec<u8>, TransformError> {
        let mut nonce = [0u8; SECRETBOX_NONCE_LEN];
        rng.fill(&mut nonce)
            .map_err(|_| TransformError::Encrypt("unable to read sufficient random bytes"))?;
        self.seal_with_nonce(nonce, plaintext)
    }

    /// prefix + nonce + tag + ciphertext, in one allocation.
    fn seal_with_nonce(
        &self,
        nonce: [u8; SECRETBOX_NONCE_LEN],
        plaintext: &[u8],
    ) -> Result<Vec<u8>, TransformError> {
        let mut out =
            Vec::with_capacity(self.prefix.len() + SECRETBOX_NONCE_LEN + TAG_LEN + plaintext.len());
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(&nonce);
        let tag_at = out.len();
        out.extend_from_slice(&[0u8; TAG_LEN]);
        out.extend_from_slice(plaintext);
        let (head, text) = out.split_at_mut(tag_at + TAG_LEN);
        let tag = self
            .cipher
            .encrypt_in_place_detached(GenericArray::from_slice(&nonce), &[], text)
            .map_err(|_| TransformError::Encrypt("failed to encrypt with secretbox"))?;
        if let Some(slot) = head.get_mut(tag_at..) {
            slot.copy_from_slice(&tag);
        }
        Ok(out)
    }

    /// nonce + tag + ciphertext → plaintext.
    fn open(&self, data: &[u8]) -> Result<Vec<u8>, &'static str> {
        let (Some(nonce), Some(tag), Some(text)) = (
            data.get(..SECRETBOX_NONCE_LEN),
            data.get(SECRETBOX_NONCE_LEN..SECRETBOX_NONCE_LEN + TAG_LEN),
            data.get(SECRETBOX_NONCE_LEN + TAG_LEN..),
        ) else {
            return Err(TOO_SHORT);
        };
        let mut buffer = text.to_vec();
        self.cipher
            .decrypt_in_place_detached(
                GenericArray::from_slice(nonce),
                &[],
                &mut buffer,
                GenericArray::from_slice(tag),
            )
            .map_err(|_| SECRETBOX_AUTHENTICATION)?;
        Ok(buffer)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use ring::rand::SystemRandom;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    const AAD: &[u8] = b"/registry/secrets/default/s1";
    const PLAINTEXT: &[u8] =
        br#"{"kind":"Secret","apiVersion":"v1","data":{"password":"aHVudGVyMg=="}}"#;

    /// nonce (00..0b) + ciphertext + tag of PLAINTEXT under AAD, computed independently
    /// (Python's `cryptography` AESGCM, the layout Go's `cipher.AEAD.Seal` produces), with
    /// the key bytes `(i * 7 + len) & 0xff`.
    const GCM_VECTORS: [(usize, &str); 3] = [
        (
            16,
            "000102030405060708090a0b2aeda6f38dd56c431759e27e5ad821faf467deb145ace429d249916a62b8a2a4537fbf3864abc98a2fce34ec99823a5d5402113aa061c50adcf5f6b6abb8ce6b8896df9061514788b0192a1b1051a77f1da354164259",
        ),
        (
            24,
            "000102030405060708090a0b4fa46b2e826cde105d4d68017c658ce75c9dcf136b2467df3ce12222799239f8f1bbfa1358c7f45043256f026051f5e2d72defc7282072353b0fef67b98662f7d8e7fbc98b0a142db157c5d8c6c5abc58ef44a0e7ed2",
        ),
        (
            32,
            "000102030405060708090a0b9931afb3df448d3d77882672724e28f89a8c7ef77fb5afdd47a5b4a2036d8a1b59d9a8c4ca3e3b54b3436f8f7078741ffe70002badcf4d60cd90e95538558f8383c5867d9e203743eb3757dce9da060ad8a647c882ab",
        ),
    ];

    fn gcm_key(len: usize) -> AesGcmKey {
        let secret: Vec<u8> = (0..len).map(|i| ((i * 7 + len) & 0xff) as u8).collect();
        AesGcmKey::new("key1", &secret).unwrap()
    }

    #[test]
    fn aes_gcm_reads_values_laid_out_as_kubernetes_writes_them() {
        for (len, vector) in GCM_VECTORS {
            let provider = Provider::AesGcm(vec![gcm_key(len)]);
            let mut stored = b"k8s:enc:aesgcm:v1:key1:".to_vec();
            stored.extend_from_slice(&hex(vector));
            match provider.open(AAD, &stored) {
                Opened::Decrypted(plaintext, 0) => assert_eq!(plaintext, PLAINTEXT, "{len}"),
                _ => panic!("AES-{} vector did not decrypt", len * 8),
            }
            // Writing with that nonce gives the same bytes.
            let written = gcm_key(len)
                .seal_with_nonce(std::array::from_fn(|i| i as u8), AAD, PLAINTEXT)
                .unwrap();
            assert_eq!(written, stored, "AES-{}", len * 8);
            // Under another key (the authenticated data), the same bytes do not decrypt.
            assert!(matches!(
                provider.open(b"/registry/secrets/default/s2", &stored),
                Opened::Failed(e) if e == [GCM_AUTHENTICATION]
            ));
        }
    }

    #[test]
    fn aes_gcm_round_trips_with_every_key_size() {
        let rng = SystemRandom::new();
        for len in [16, 24, 32] {
            let provider = Provider::AesGcm(vec![gcm_key(len)]);
            let stored = provider.seal(&rng, AAD, PLAINTEXT).unwrap().unwrap();
            assert!(stored.starts_with(b"k8s:enc:aesgcm:v1:key1:"));
            assert_eq!(stored.len(), 23 + 12 + PLAINTEXT.len() + 16);
            assert!(!stored.windows(8).any(|w| w == b"password"));
            match provider.open(AAD, &stored) {
                Opened::Decrypted(plaintext, 0) => assert_eq!(plaintext, PLAINTEXT),
                _ => panic!("did not decrypt"),
            }
            // Two writes of the same value differ (random nonces).
            let again = provider.seal(&rng, AAD, PLAINTEXT).unwrap().unwrap();
            assert_ne!(stored, again);
        }
    }

    #[test]
    fn secretbox_matches_nacl() {
        // NaCl's secretbox test vector (tests/secretbox.c): the box is tag + ciphertext.
        let key = hex("1b27556473e985d462cd51197a9a46c76009549eac6474f206c4ee0844f68389");
        let nonce = hex("69696ee955b62b73cd62bda875fc73d68219e0036b7a0b37");
        let message = hex(concat!(
            "be075fc53c81f2d5cf141316ebeb0c7b5228c52a4c62cbd44b66849b64244ffce5ecbaaf33bd751a",
            "1ac728d45e6c61296cdc3c01233561f41db66cce314adb310e3be8250c46f06dceea3a7fa1348057",
            "e2f6556ad6b1318a024a838f21af1fde048977eb48f59ffd4924ca1c60902e52f0a089bc76897040",
            "e082f937763848645e0705"
        ));
        let sealed = hex(concat!(
            "f3ffc7703f9400e52a7dfb4b3d3305d98e993b9f48681273c29650ba32fc76ce48332ea7164d96a4",
            "476fb8c531a1186ac0dfc17c98dce87b4da7f011ec48c97271d2c20f9b928fe2270d6fb863d51738",
            "b48eeee314a7cc8ab932164548e526ae90224368517acfeabd6bb3732bc0e9da99832b61ca01b6de",
            "56244a9e88d5f9b37973f622a43d14a6599b1f654cb45a74e355a5"
        ));
        let provider = Provider::Secretbox(vec![SecretboxKey::new("k", &key).unwrap()]);
        let mut stored = b"k8s:enc:secretbox:v1:k:".to_vec();
        stored.extend_from_slice(&nonce);
        stored.extend_from_slice(&sealed);
        match provider.open(AAD, &stored) {
            Opened::Decrypted(plaintext, 0) => assert_eq!(plaintext, message),
            _ => panic!("NaCl vector did not decrypt"),
        }

        // Sealing with that nonce gives NaCl's bytes.
        let Provider::Secretbox(keys) = &provider else {
            unreachable!()
        };
        let written = keys[0]
            .seal_with_nonce(nonce.clone().try_into().unwrap(), &message)
            .unwrap();
        assert_eq!(written, stored);
    }

    #[test]
    fn secretbox_round_trips_and_detects_tampering() {
        let rng = SystemRandom::new();
        let provider = Provider::Secretbox(vec![SecretboxKey::new("k", &[7u8; 32]).unwrap()]);
        let mut stored = provider.seal(&rng, AAD, PLAINTEXT).unwrap().unwrap();
        assert!(stored.starts_with(b"k8s:enc:secretbox:v1:k:"));
        assert_eq!(stored.len(), 23 + 24 + 16 + PLAINTEXT.len());
        match provider.open(AAD, &stored) {
            Opened::Decrypted(plaintext, 0) => assert_eq!(plaintext, PLAINTEXT),
            _ => panic!("did not decrypt"),
        }
        let last = stored.len() - 1;
        stored[last] ^= 1;
        assert!(matches!(
            provider.open(AAD, &stored),
            Opened::Failed(e) if e == [SECRETBOX_AUTHENTICATION]
        ));
    }

    #[test]
    fn keys_are_chosen_by_name_and_unknown_names_fail() {
        let rng = SystemRandom::new();
        let old = Provider::AesGcm(vec![AesGcmKey::new("old", &[1u8; 32]).unwrap()]);
        let stored = old.seal(&rng, AAD, PLAINTEXT).unwrap().unwrap();
        let rotated = Provider::AesGcm(vec![
            AesGcmKey::new("new", &[2u8; 32]).unwrap(),
            AesGcmKey::new("old", &[1u8; 32]).unwrap(),
        ]);
        assert!(matches!(
            rotated.open(AAD, &stored),
            Opened::Decrypted(_, 1)
        ));
        let forgotten = Provider::AesGcm(vec![AesGcmKey::new("new", &[2u8; 32]).unwrap()]);
        assert!(matches!(
            forgotten.open(AAD, &stored),
            Opened::Failed(e) if e == [NO_AES_KEY]
        ));
        // A key of the same name but another secret fails authentication.
        let wrong = Provider::AesGcm(vec![AesGcmKey::new("old", &[3u8; 32]).unwrap()]);
        assert!(matches!(
            wrong.open(AAD, &stored),
            Opened::Failed(e) if e == [GCM_AUTHENTICATION]
        ));
        // Other providers' values are not this provider's business.
        let secretbox = Provider::Secretbox(vec![SecretboxKey::new("old", &[1u8; 32]).unwrap()]);
        assert!(matches!(secretbox.open(AAD, &stored), Opened::NotMine));
    }

    #[test]
    fn truncated_values_fail_cleanly() {
        let aes = Provider::AesGcm(vec![AesGcmKey::new("k", &[1u8; 16]).unwrap()]);
        assert!(matches!(
            aes.open(AAD, b"k8s:enc:aesgcm:v1:k:short"),
            Opened::Failed(e) if e == [TOO_SHORT]
        ));
        assert!(matches!(
            aes.open(AAD, b"k8s:enc:aesgcm:v1:k:0123456789ab"),
            Opened::Failed(e) if e == [GCM_AUTHENTICATION]
        ));
        let aes192 = Provider::AesGcm(vec![AesGcmKey::new("k", &[1u8; 24]).unwrap()]);
        assert!(matches!(
            aes192.open(AAD, b"k8s:enc:aesgcm:v1:k:0123456789abcdef"),
            Opened::Failed(e) if e == [GCM_AUTHENTICATION]
        ));
        let secretbox = Provider::Secretbox(vec![SecretboxKey::new("k", &[1u8; 32]).unwrap()]);
        assert!(matches!(
            secretbox.open(AAD, b"k8s:enc:secretbox:v1:k:tiny"),
            Opened::Failed(e) if e == [TOO_SHORT]
        ));
    }

    #[test]
    fn identity_reads_plaintext_only() {
        assert!(matches!(Provider::Identity.open(AAD, b"{}"), Opened::Plain));
        assert!(matches!(
            Provider::Identity.open(AAD, b"k8s:enc:aesgcm:v1:k:xyz"),
            Opened::NotMine
        ));
        let rng = SystemRandom::new();
        assert_eq!(Provider::Identity.seal(&rng, AAD, b"{}").unwrap(), None);
    }

    #[test]
    fn invalid_key_sizes_are_refused() {
        assert!(AesGcmKey::new("k", &[0u8; 20]).is_err());
        assert!(SecretboxKey::new("k", &[0u8; 16]).is_err());
    }

    #[test]
    fn debug_shows_key_names_only() {
        let provider = Provider::AesGcm(vec![AesGcmKey::new("key1", &[9u8; 16]).unwrap()]);
        assert_eq!(format!("{provider:?}"), r#"aesgcm["key1"]"#);
    }
}
