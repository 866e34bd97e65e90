//! Compact JSON Web Tokens signed with ES256 (ECDSA P-256, SHA-256) by the
//! service-account signing key: what bound service-account tokens are made of.
//!
//! Only the signature and the header are handled here; what the claims mean (issuer,
//! audiences, expiry, the objects a token is bound to) is the API server's business.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair,
    UnparsedPublicKey,
};
use rustls_pki_types::PrivateKeyDer;
use rustls_pki_types::pem::PemObject;
use serde_json::{Value, json};

/// Why a token was refused (or could not be made).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JwtError {
    #[error("the signing key is unusable: {0}")]
    Key(String),
    #[error("token is malformed")]
    Malformed,
    #[error("token signature is invalid")]
    Signature,
    #[error("token uses an unexpected algorithm")]
    Algorithm,
}

/// Signs and verifies ES256 tokens with one key.
pub struct Signer {
    key: EcdsaKeyPair,
    public: Vec<u8>,
    key_id: String,
    rng: SystemRandom,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// A signer from a PKCS#8 PEM P-256 private key (the service-account key).
    pub fn from_pem(pem: &str) -> Result<Signer, JwtError> {
        let der = PrivateKeyDer::from_pem_slice(pem.as_bytes())
            .map_err(|e| JwtError::Key(e.to_string()))?;
        let rng = SystemRandom::new();
        let key =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.secret_der(), &rng)
                .map_err(|e| JwtError::Key(e.to_string()))?;
        let public = key.public_key().as_ref().to_vec();
        // The key ID: a digest of the public key, stable across restarts.
        let digest = ring::digest::digest(&ring::digest::SHA256, &public);
        let key_id = URL_SAFE_NO_PAD.encode(digest.as_ref());
        Ok(Signer {
            key,
            public,
            key_id,
            rng,
        })
    }

    /// The `kid` of the tokens this signer makes.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// A signed token carrying `claims`.
    pub fn sign(&self, claims: &Value) -> Result<String, JwtError> {
        let header = json!({"alg": "ES256", "kid": self.key_id});
        let encode = |v: &Value| {
            serde_json::to_vec(v)
                .map(|bytes| URL_SAFE_NO_PAD.encode(bytes))
                .map_err(|_| JwtError::Malformed)
        };
        let signing_input = format!("{}.{}", encode(&header)?, encode(claims)?);
        let signature = self
            .key
            .sign(&self.rng, signing_input.as_bytes())
            .map_err(|e| JwtError::Key(e.to_string()))?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }

    /// The claims of a token this key signed; any other token is refused.
    pub fn verify(&self, token: &str) -> Result<Value, JwtError> {
        let mut parts = token.split('.');
        let (Some(header), Some(claims), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(JwtError::Malformed);
        };
        let decode = |part: &str| {
            URL_SAFE_NO_PAD
                .decode(part)
                .map_err(|_| JwtError::Malformed)
        };
        let header: Value =
            serde_json::from_slice(&decode(header)?).map_err(|_| JwtError::Malformed)?;
        if header.get("alg").and_then(Value::as_str) != Some("ES256") {
            return Err(JwtError::Algorithm);
        }
        let signature = decode(signature)?;
        let signed = &token[..header_and_claims_len(token)];
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &self.public)
            .verify(signed.as_bytes(), &signature)
            .map_err(|_| JwtError::Signature)?;
        serde_json::from_slice(&decode(claims)?).map_err(|_| JwtError::Malformed)
    }
}

/// The length of `header.claims`, the part a signature covers.
fn header_and_claims_len(token: &str) -> usize {
    token.rfind('.').unwrap_or(0)
}

/// Whether a bearer token looks like a JWT (three dot-separated parts, a JSON header):
/// cheap, so other authenticators are tried for anything else.
pub fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3 && token.starts_with("eyJ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn signer() -> Signer {
        let key = rcgen::KeyPair::generate().unwrap();
        Signer::from_pem(&key.serialize_pem()).unwrap()
    }

    #[test]
    fn signs_and_verifies() {
        let signer = signer();
        let token = signer.sign(&json!({"sub": "x", "n": 1})).unwrap();
        assert!(looks_like_jwt(&token));
        assert_eq!(signer.verify(&token).unwrap(), json!({"sub": "x", "n": 1}));
    }

    #[test]
    fn refuses_tampering_and_other_keys() {
        let signer = signer();
        let token = signer.sign(&json!({"sub": "x"})).unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        let forged_claims = URL_SAFE_NO_PAD.encode(br#"{"sub":"admin"}"#);
        let forged = format!("{}.{}.{}", parts[0], forged_claims, parts[2]);
        assert_eq!(signer.verify(&forged), Err(JwtError::Signature));
        assert_eq!(self::signer().verify(&token), Err(JwtError::Signature));
        let none = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#),
            parts[1]
        );
        assert_eq!(signer.verify(&none), Err(JwtError::Algorithm));
        for junk in ["", "a.b", "a.b.c.d", "!!.!!.!!", "eyJ.eyJ.x"] {
            assert!(signer.verify(junk).is_err(), "{junk}");
        }
    }
}
