//! rustls configurations: the API server's (its serving certificate; client certificates
//! from the cluster CA optional, since tokens and anonymous requests are allowed too) and
//! a client's (trusting the cluster CA, optionally presenting a client certificate).

use crate::{Credentials, Error};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The DER certificates in a PEM text.
pub fn pem_certificates(pem: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::certificate("PEM", e))
}

fn private_key(pem: &str) -> Result<PrivateKeyDer<'static>, Error> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| Error::certificate("private key", e))
}

/// Trust in the certificates of `ca_pem`.
pub fn roots(ca_pem: &str) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    for cert in pem_certificates(ca_pem)? {
        roots.add(cert)?;
    }
    Ok(roots)
}

/// The API server's TLS: `serving` presented, client certificates verified against
/// `client_ca_pem` when offered, HTTP/2 and HTTP/1.1 offered by ALPN.
pub fn server_config(
    serving: &Credentials,
    client_ca_pem: &str,
) -> Result<Arc<rustls::ServerConfig>, Error> {
    let provider = provider();
    let verifier = WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots(client_ca_pem)?),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()
    .map_err(|e| Error::certificate("client CA", e))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            pem_certificates(&serving.cert_pem)?,
            private_key(&serving.key_pem)?,
        )?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A client's TLS: trusting `ca_pem`, presenting `identity` if given, HTTP/1.1.
pub fn client_config(
    ca_pem: &str,
    identity: Option<&Credentials>,
) -> Result<Arc<rustls::ClientConfig>, Error> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots(ca_pem)?);
    let mut config = match identity {
        Some(credentials) => builder.with_client_auth_cert(
            pem_certificates(&credentials.cert_pem)?,
            private_key(&credentials.key_pem)?,
        )?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A client's TLS that accepts any server certificate (Go's `InsecureSkipVerify`, as
/// kube-apiserver talks to kubelets without `--kubelet-certificate-authority`), still
/// checking the handshake's signatures; presenting `identity` if given, HTTP/1.1.
pub fn insecure_client_config(
    identity: Option<&Credentials>,
) -> Result<Arc<rustls::ClientConfig>, Error> {
    let provider = provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)));
    let mut config = match identity {
        Some(credentials) => builder.with_client_auth_cert(
            pem_certificates(&credentials.cert_pem)?,
            private_key(&credentials.key_pem)?,
        )?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Accepts every certificate; verifies signatures with the provider's algorithms.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
