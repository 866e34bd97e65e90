//! Compact JSON Web Tokens signed with ES256 (ECDSA P-256, SHA-256) by the
//! service-account signing key: what bound service-account tokens are made of.
//!
//! Only the signature and the header are handled here; what the claims mean (issuer,
//! audiences, expiry, the objects a token is bound to) is the API server's business.
//!
//! Verification is go-jose's, which Kubernetes uses: the header's `alg` must be ES256, a
//! `crit` header naming anything but `b64` is refused, and the signature is checked as
//! Go's `ecdsa.Verify` checks it — which accepts either of a signature's two valid `s`
//! values (no low-S rule), so a token rewritten to (r, n−s) verifies as it does on
//! Kubernetes. The key ID is Kubernetes' (`keyIDFromPublicKey`): the unpadded URL-safe
//! base64 of the SHA-256 of the public key's DER `SubjectPublicKeyInfo`; [`Signer::jwk`]
//! is the key as `/openid/v1/jwks` publishes it.

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
    #[error("token has an unsupported critical header")]
    Critical,
}

/// The DER `SubjectPublicKeyInfo` of a P-256 key, up to its uncompressed point:
/// `id-ecPublicKey` with the `prime256v1` parameters, and the bit string's header.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

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
        // The key ID, as Kubernetes computes it: a digest of the DER public key.
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(&public);
        let digest = ring::digest::digest(&ring::digest::SHA256, &spki);
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

    /// The public key as a JSON Web Key, as Kubernetes publishes it in `/openid/v1/jwks`.
    pub fn jwk(&self) -> Value {
        // The uncompressed point: 0x04, then the coordinates.
        let (x, y) = self
            .public
            .get(1..)
            .unwrap_or_default()
            .split_at(self.public.len().saturating_sub(1) / 2);
        json!({
            "use": "sig",
            "kty": "EC",
            "kid": self.key_id,
            "crv": "P-256",
            "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(x),
            "y": URL_SAFE_NO_PAD.encode(y),
        })
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
        if !header.is_object() {
            return Err(JwtError::Malformed);
        }
        if header.get("alg").and_then(Value::as_str) != Some("ES256") {
            return Err(JwtError::Algorithm);
        }
        if let Some(critical) = header.get("crit") {
            // go-jose understands `b64` alone; and only its default (encoded payloads).
            let names = critical.as_array().ok_or(JwtError::Malformed)?;
            let understood = names.iter().all(|name| name.as_str() == Some("b64"))
                && header
                    .get("b64")
                    .is_none_or(|b64| b64 == &Value::Bool(true));
            if !understood {
                return Err(JwtError::Critical);
            }
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

    /// A token re-signed over `header` and `claims` (JSON), with the signer's key.
    fn with_header(signer: &Signer, header: &str, claims: &str) -> String {
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(claims)
        );
        let signature = signer.key.sign(&signer.rng, input.as_bytes()).unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }

    #[test]
    fn refuses_unknown_critical_headers() {
        let signer = signer();
        let claims = r#"{"sub":"x"}"#;
        for header in [
            r#"{"alg":"ES256","crit":["exp"],"exp":1}"#,
            r#"{"alg":"ES256","crit":["b64"],"b64":false}"#,
        ] {
            assert_eq!(
                signer.verify(&with_header(&signer, header, claims)),
                Err(JwtError::Critical),
                "{header}"
            );
        }
        assert_eq!(
            signer.verify(&with_header(
                &signer,
                r#"{"alg":"ES256","crit":"exp"}"#,
                claims
            )),
            Err(JwtError::Malformed)
        );
        assert!(
            signer
                .verify(&with_header(
                    &signer,
                    r#"{"alg":"ES256","crit":["b64"],"b64":true}"#,
                    claims
                ))
                .is_ok()
        );
        assert!(
            signer
                .verify(&with_header(
                    &signer,
                    r#"{"alg":"ES256","kid":"k"}"#,
                    claims
                ))
                .is_ok()
        );
    }

    /// The P-256 group order.
    const N: [u8; 32] = [
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63,
        0x25, 0x51,
    ];

    /// n − s, big-endian.
    fn negate(s: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; 32];
        let mut borrow = 0i16;
        for i in (0..32).rev() {
            let mut d = i16::from(N[i]) - i16::from(s[i]) - borrow;
            borrow = 0;
            if d < 0 {
                d += 256;
                borrow = 1;
            }
            out[i] = d as u8;
        }
        out
    }

    #[test]
    fn the_other_s_verifies_as_go_ecdsa_verify_lets_it() {
        let signer = signer();
        let token = signer.sign(&json!({"sub": "x"})).unwrap();
        let (input, signature) = token.rsplit_once('.').unwrap();
        let signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
        let mut other = signature[..32].to_vec();
        other.extend(negate(&signature[32..]));
        assert_ne!(other, signature);
        let rewritten = format!("{input}.{}", URL_SAFE_NO_PAD.encode(&other));
        assert_eq!(signer.verify(&rewritten).unwrap(), json!({"sub": "x"}));
        // Anything else in place of s does not.
        let mut wrong = other.clone();
        wrong[63] ^= 1;
        let wrong = format!("{input}.{}", URL_SAFE_NO_PAD.encode(&wrong));
        assert_eq!(signer.verify(&wrong), Err(JwtError::Signature));
    }

    #[test]
    fn key_id_and_jwk_as_kubernetes_publishes_them() {
        let key = rcgen::KeyPair::generate().unwrap();
        let signer = Signer::from_pem(&key.serialize_pem()).unwrap();
        // rcgen's DER public key is the SubjectPublicKeyInfo Go marshals.
        let spki = rustls_pki_types::SubjectPublicKeyInfoDer::from_pem_slice(
            key.public_key_pem().as_bytes(),
        )
        .unwrap();
        let digest = ring::digest::digest(&ring::digest::SHA256, spki.as_ref());
        assert_eq!(signer.key_id(), URL_SAFE_NO_PAD.encode(digest.as_ref()));
        let jwk = signer.jwk();
        assert_eq!(
            (
                jwk["use"].as_str(),
                jwk["kty"].as_str(),
                jwk["alg"].as_str()
            ),
            (Some("sig"), Some("EC"), Some("ES256"))
        );
        let x = URL_SAFE_NO_PAD.decode(jwk["x"].as_str().unwrap()).unwrap();
        let y = URL_SAFE_NO_PAD.decode(jwk["y"].as_str().unwrap()).unwrap();
        assert_eq!((x.len(), y.len()), (32, 32));
        assert_eq!([&[4u8][..], &x, &y].concat(), signer.public);
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
