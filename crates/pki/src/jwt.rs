//! Compact JSON Web Tokens signed by the service-account signing key: what bound
//! service-account tokens are made of. As Kubernetes signs them: ES256 (ECDSA P-256,
//! SHA-256) with an EC key — the key `kyb` generates — and RS256 (RSASSA-PKCS1-v1_5,
//! SHA-256) with an RSA key (PKCS#8 or PKCS#1 PEM), as a key file from a Kubernetes
//! cluster may hold.
//!
//! Only the signature and the header are handled here; what the claims mean (issuer,
//! audiences, expiry, the objects a token is bound to) is the API server's business.
//!
//! Verification is go-jose's, which Kubernetes uses (the header's `alg` must be the key's, a
//! `crit` header naming anything but `b64` is refused), and stricter in one point: an ES256
//! signature must be low-S. Go's `ecdsa.Verify` accepts either of a signature's two valid
//! `s` values, so a token rewritten to (r, n−s) would be a second, different token with
//! the same claims; here signatures are made low-S and only those verify, which makes a
//! token's bytes its only form (RSA signatures have one form already). The key ID is Kubernetes' (`keyIDFromPublicKey`): the unpadded URL-safe
//! base64 of the SHA-256 of the public key's DER `SubjectPublicKeyInfo`; [`Signer::jwk`]
//! is the key as `/openid/v1/jwks` publishes it.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair,
    RSA_PKCS1_2048_8192_SHA256, RSA_PKCS1_SHA256, RsaKeyPair, UnparsedPublicKey,
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
    key: Key,
    /// The EC public point (uncompressed), or the DER `RSAPublicKey`.
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

/// The private key and the algorithm it signs with.
enum Key {
    Es256(EcdsaKeyPair),
    Rs256(RsaKeyPair),
}

/// The DER `AlgorithmIdentifier` of `rsaEncryption` (with its NULL parameters).
const RSA_ALGORITHM: [u8; 15] = [
    0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
];

/// A DER tag, length and contents.
fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = contents.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(contents);
    out
}

impl Signer {
    /// A signer from a PEM private key: PKCS#8 P-256 (the service-account key `kyb`
    /// makes) or RSA (PKCS#8 or PKCS#1).
    pub fn from_pem(pem: &str) -> Result<Signer, JwtError> {
        let der_key = PrivateKeyDer::from_pem_slice(pem.as_bytes())
            .map_err(|e| JwtError::Key(e.to_string()))?;
        let rng = SystemRandom::new();
        let key = match &der_key {
            PrivateKeyDer::Pkcs8(pkcs8) => {
                match EcdsaKeyPair::from_pkcs8(
                    &ECDSA_P256_SHA256_FIXED_SIGNING,
                    pkcs8.secret_pkcs8_der(),
                    &rng,
                ) {
                    Ok(key) => Key::Es256(key),
                    Err(ec) => Key::Rs256(
                        RsaKeyPair::from_pkcs8(pkcs8.secret_pkcs8_der())
                            .map_err(|rsa| JwtError::Key(format!("{ec}; as RSA: {rsa}")))?,
                    ),
                }
            }
            PrivateKeyDer::Pkcs1(pkcs1) => Key::Rs256(
                RsaKeyPair::from_der(pkcs1.secret_pkcs1_der())
                    .map_err(|e| JwtError::Key(e.to_string()))?,
            ),
            _ => {
                return Err(JwtError::Key(
                    "expected a PKCS#8 P-256 or an RSA private key".into(),
                ));
            }
        };
        // The key ID, as Kubernetes computes it: a digest of the DER public key
        // (`SubjectPublicKeyInfo`).
        let (public, spki) = match &key {
            Key::Es256(key) => {
                let public = key.public_key().as_ref().to_vec();
                let mut spki = P256_SPKI_PREFIX.to_vec();
                spki.extend_from_slice(&public);
                (public, spki)
            }
            Key::Rs256(key) => {
                let public = key.public().as_ref().to_vec();
                let mut bits = vec![0u8];
                bits.extend_from_slice(&public);
                let mut contents = RSA_ALGORITHM.to_vec();
                contents.extend(der(0x03, &bits));
                (public, der(0x30, &contents))
            }
        };
        let digest = ring::digest::digest(&ring::digest::SHA256, &spki);
        let key_id = URL_SAFE_NO_PAD.encode(digest.as_ref());
        Ok(Signer {
            key,
            public,
            key_id,
            rng,
        })
    }

    /// The JWS algorithm of the tokens: `ES256` or `RS256`.
    pub fn algorithm(&self) -> &'static str {
        match self.key {
            Key::Es256(_) => "ES256",
            Key::Rs256(_) => "RS256",
        }
    }

    /// The `kid` of the tokens this signer makes.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The public key as a JSON Web Key, as Kubernetes publishes it in `/openid/v1/jwks`.
    pub fn jwk(&self) -> Value {
        if let Key::Rs256(key) = &self.key {
            let components = ring::rsa::PublicKeyComponents::<Vec<u8>>::from(key.public());
            return json!({
                "use": "sig",
                "kty": "RSA",
                "kid": self.key_id,
                "alg": "RS256",
                "n": URL_SAFE_NO_PAD.encode(&components.n),
                "e": URL_SAFE_NO_PAD.encode(&components.e),
            });
        }
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
        let header = json!({"alg": self.algorithm(), "kid": self.key_id});
        let encode = |v: &Value| {
            serde_json::to_vec(v)
                .map(|bytes| URL_SAFE_NO_PAD.encode(bytes))
                .map_err(|_| JwtError::Malformed)
        };
        let signing_input = format!("{}.{}", encode(&header)?, encode(claims)?);
        let signature = self.signature(signing_input.as_bytes())?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        ))
    }

    fn signature(&self, input: &[u8]) -> Result<Vec<u8>, JwtError> {
        match &self.key {
            Key::Es256(key) => key
                .sign(&self.rng, input)
                .map(|s| low_s(s.as_ref().to_vec()))
                .map_err(|e| JwtError::Key(e.to_string())),
            Key::Rs256(key) => {
                let mut signature = vec![0u8; key.public().modulus_len()];
                key.sign(&RSA_PKCS1_SHA256, &self.rng, input, &mut signature)
                    .map_err(|e| JwtError::Key(e.to_string()))?;
                Ok(signature)
            }
        }
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
        if header.get("alg").and_then(Value::as_str) != Some(self.algorithm()) {
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
        let verified = match self.key {
            Key::Es256(_) if signature.len() == 64 && is_high_s(&signature[32..]) => {
                return Err(JwtError::Signature);
            }
            Key::Es256(_) => UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &self.public)
                .verify(signed.as_bytes(), &signature),
            Key::Rs256(_) => UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, &self.public)
                .verify(signed.as_bytes(), &signature),
        };
        verified.map_err(|_| JwtError::Signature)?;
        serde_json::from_slice(&decode(claims)?).map_err(|_| JwtError::Malformed)
    }
}

/// The order n of the P-256 group, big-endian.
const P256_ORDER: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
];

/// ⌊n/2⌋ of P-256, big-endian: the largest low `s`.
const P256_HALF_ORDER: [u8; 32] = [
    0x7f, 0xff, 0xff, 0xff, 0x80, 0x00, 0x00, 0x00, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xde, 0x73, 0x7d, 0x56, 0xd3, 0x8b, 0xcf, 0x42, 0x79, 0xdc, 0xe5, 0x61, 0x7e, 0x31, 0x92, 0xa8,
];

/// Whether a fixed-width (32-byte, big-endian) `s` is above n/2.
fn is_high_s(s: &[u8]) -> bool {
    s > P256_HALF_ORDER.as_slice()
}

/// n − s, for a fixed-width `s` below n (big-endian subtraction).
fn negate_s(s: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut borrow = 0u16;
    for i in (0..32).rev() {
        let subtrahend = u16::from(s.get(i).copied().unwrap_or(0)) + borrow;
        let minuend = u16::from(P256_ORDER[i]);
        let (digit, next) = if minuend >= subtrahend {
            (minuend - subtrahend, 0)
        } else {
            (minuend + 256 - subtrahend, 1)
        };
        out[i] = u8::try_from(digit).unwrap_or(0);
        borrow = next;
    }
    out
}

/// A fixed-width ES256 signature (r ‖ s) with its low-S form.
fn low_s(mut signature: Vec<u8>) -> Vec<u8> {
    if signature.len() == 64 && is_high_s(&signature[32..]) {
        let negated = negate_s(&signature[32..]);
        signature[32..].copy_from_slice(&negated);
    }
    signature
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
        let signature = signer.signature(input.as_bytes()).unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
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

    #[test]
    fn signatures_are_low_s_and_the_other_s_is_refused() {
        let signer = signer();
        for i in 0..32 {
            let token = signer.sign(&json!({"sub": "x", "i": i})).unwrap();
            let (input, signature) = token.rsplit_once('.').unwrap();
            let signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
            assert!(!is_high_s(&signature[32..]), "token {i} has a high s");
            assert_eq!(signer.verify(&token).unwrap()["i"], i);
            // (r, n−s) is as valid to ECDSA, and refused.
            let mut other = signature[..32].to_vec();
            other.extend(negate_s(&signature[32..]));
            assert_ne!(other, signature);
            assert!(is_high_s(&other[32..]));
            let rewritten = format!("{input}.{}", URL_SAFE_NO_PAD.encode(&other));
            assert_eq!(signer.verify(&rewritten), Err(JwtError::Signature));
        }
    }

    #[test]
    fn negation_in_the_group_order() {
        let one = {
            let mut s = [0u8; 32];
            s[31] = 1;
            s
        };
        let mut n_minus_one = P256_ORDER;
        n_minus_one[31] -= 1;
        assert_eq!(negate_s(&one), n_minus_one);
        assert_eq!(negate_s(&n_minus_one), one);
        assert!(!is_high_s(&P256_HALF_ORDER));
        let mut above = P256_HALF_ORDER;
        above[31] += 1;
        assert!(is_high_s(&above));
        assert_eq!(negate_s(&above), P256_HALF_ORDER);
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

    /// A 2048-bit RSA test key, in PKCS#8 and PKCS#1 PEM, and its key ID as computed by
    /// `openssl pkey -pubout -outform DER | openssl dgst -sha256 -binary | base64url`.
    const RSA_PKCS8: &str = include_str!("../testdata/rsa-pkcs8.pem");
    const RSA_PKCS1: &str = include_str!("../testdata/rsa-pkcs1.pem");
    const RSA_KEY_ID: &str = "h7RA7jdoZRwqbSbpcsxpbVWFSQzvJH8YqucwGqLGyXI";

    #[test]
    fn rsa_keys_sign_rs256_as_kubernetes_does() {
        let signer = Signer::from_pem(RSA_PKCS8).unwrap();
        let pkcs1 = Signer::from_pem(RSA_PKCS1).unwrap();
        assert_eq!((signer.key_id(), pkcs1.key_id()), (RSA_KEY_ID, RSA_KEY_ID));
        assert_eq!(signer.algorithm(), "RS256");
        let token = signer.sign(&json!({"sub": "x"})).unwrap();
        let header = token.split('.').next().unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap(),
            json!({"alg": "RS256", "kid": RSA_KEY_ID})
        );
        assert_eq!(pkcs1.verify(&token).unwrap(), json!({"sub": "x"}));
        // An ES256 header on an RSA-signed token is refused.
        let es256 = with_header(&signer, r#"{"alg":"ES256"}"#, r#"{"sub":"x"}"#);
        assert_eq!(signer.verify(&es256), Err(JwtError::Algorithm));
        let (input, _) = token.rsplit_once('.').unwrap();
        let forged = format!("{input}.{}", URL_SAFE_NO_PAD.encode([0u8; 256]));
        assert_eq!(signer.verify(&forged), Err(JwtError::Signature));
        let jwk = signer.jwk();
        assert_eq!(
            (jwk["kty"].as_str(), jwk["alg"].as_str(), jwk["e"].as_str()),
            (Some("RSA"), Some("RS256"), Some("AQAB"))
        );
        assert_eq!(
            URL_SAFE_NO_PAD
                .decode(jwk["n"].as_str().unwrap())
                .unwrap()
                .len(),
            256
        );
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
