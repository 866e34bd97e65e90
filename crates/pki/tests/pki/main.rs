//! The PKI directory through the public API: creation and reuse, reissuing, identities,
//! TLS handshakes between the generated configurations, kubeconfigs.

#![allow(clippy::unwrap_used)]

use kyb_pki::{Pki, Sans, identity, kubeconfig, tls};
use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

fn sans() -> Sans {
    Sans {
        dns: vec!["localhost".into(), "kubernetes.default.svc".into()],
        ips: vec![IpAddr::from([127, 0, 0, 1]), IpAddr::from([10, 43, 0, 1])],
    }
}

#[test]
fn created_once_then_reused() {
    let dir = tempfile::tempdir().unwrap();
    let pki_dir = dir.path().join("pki");
    let first = Pki::load_or_create(&pki_dir, &sans()).unwrap();
    let admin = first
        .client("admin", "kubernetes-admin", &["system:masters"])
        .unwrap();
    let second = Pki::load_or_create(&pki_dir, &sans()).unwrap();
    assert_eq!(first.ca_pem(), second.ca_pem());
    assert_eq!(first.serving().cert_pem, second.serving().cert_pem);
    assert_eq!(
        first.service_account_key_pem(),
        second.service_account_key_pem()
    );
    let again = second
        .client("admin", "kubernetes-admin", &["system:masters"])
        .unwrap();
    assert_eq!(admin.cert_pem, again.cert_pem);

    // Private files are private.
    for file in ["ca.key", "server.key", "admin.key", "service-account.key"] {
        let mode = std::fs::metadata(pki_dir.join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}");
    }
    // Another subject for the same file is a new certificate.
    let renamed = second.client("admin", "someone-else", &[]).unwrap();
    assert_ne!(renamed.cert_pem, admin.cert_pem);
}

#[test]
fn new_names_reissue_the_serving_certificate_from_the_same_ca() {
    let dir = tempfile::tempdir().unwrap();
    let first = Pki::load_or_create(dir.path(), &sans()).unwrap();
    let mut more = sans();
    more.ips.push(IpAddr::from([192, 168, 1, 10]));
    let second = Pki::load_or_create(dir.path(), &more).unwrap();
    assert_eq!(first.ca_pem(), second.ca_pem());
    assert_ne!(first.serving().cert_pem, second.serving().cert_pem);
    // The new certificate is served and trusted for the new address.
    let (server, client) = (second.serving().clone(), second.ca_pem().to_string());
    let served = handshake(
        tls::server_config(&server, &client).unwrap(),
        tls::client_config(&client, None).unwrap(),
        "192.168.1.10",
    );
    assert_eq!(served.unwrap(), None);
}

#[test]
fn client_certificates_name_user_and_groups() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::load_or_create(dir.path(), &sans()).unwrap();
    let node = pki
        .client("node-a", "system:node:a", &["system:nodes"])
        .unwrap();
    let der = tls::pem_certificates(&node.cert_pem).unwrap();
    let identity = identity(&der[0]).unwrap();
    assert_eq!(identity.user, "system:node:a");
    assert_eq!(identity.groups, ["system:nodes"]);
    assert!(kyb_pki::identity(b"not a certificate").is_none());
    assert!(pki.client("../escape", "x", &[]).is_err());
}

/// Runs one TLS handshake and one byte each way; the identity the server saw.
fn handshake(
    server: Arc<rustls::ServerConfig>,
    client: Arc<rustls::ClientConfig>,
    name: &str,
) -> Result<Option<kyb_pki::Identity>, String> {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accept = std::thread::spawn(move || -> Result<Option<kyb_pki::Identity>, String> {
        let (socket, _) = listener.accept().map_err(|e| e.to_string())?;
        let connection = rustls::ServerConnection::new(server).map_err(|e| e.to_string())?;
        let mut stream = rustls::StreamOwned::new(connection, socket);
        let mut byte = [0u8; 1];
        stream.read_exact(&mut byte).map_err(|e| e.to_string())?;
        stream.write_all(&byte).map_err(|e| e.to_string())?;
        stream.flush().map_err(|e| e.to_string())?;
        Ok(stream
            .conn
            .peer_certificates()
            .and_then(|certs| certs.first())
            .and_then(|cert| identity(cert)))
    });
    let name = rustls_pki_types::ServerName::try_from(name.to_string()).unwrap();
    let socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let connection = rustls::ClientConnection::new(client, name).unwrap();
    let mut stream = rustls::StreamOwned::new(connection, socket);
    let sent = stream
        .write_all(b"x")
        .and_then(|()| stream.flush())
        .and_then(|()| {
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte)
        });
    let served = accept.join().unwrap();
    sent.map_err(|e| e.to_string())?;
    served
}

#[test]
fn handshakes_with_and_without_client_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::load_or_create(dir.path(), &sans()).unwrap();
    let server = tls::server_config(pki.serving(), pki.ca_pem()).unwrap();
    let admin = pki
        .client("admin", "kubernetes-admin", &["system:masters"])
        .unwrap();

    let seen = handshake(
        server.clone(),
        tls::client_config(pki.ca_pem(), Some(&admin)).unwrap(),
        "localhost",
    );
    let seen = seen.unwrap().unwrap();
    assert_eq!(
        (seen.user.as_str(), seen.groups.as_slice()),
        ("kubernetes-admin", &["system:masters".to_string()][..])
    );
    let anonymous = handshake(
        server.clone(),
        tls::client_config(pki.ca_pem(), None).unwrap(),
        "127.0.0.1",
    );
    assert_eq!(anonymous.unwrap(), None);

    // A client trusting another CA refuses the server; a server refuses client
    // certificates from another CA; a name the certificate does not cover is refused.
    let other_dir = tempfile::tempdir().unwrap();
    let other = Pki::load_or_create(other_dir.path(), &sans()).unwrap();
    let stranger = other
        .client("admin", "kubernetes-admin", &["system:masters"])
        .unwrap();
    assert!(
        handshake(
            server.clone(),
            tls::client_config(other.ca_pem(), None).unwrap(),
            "localhost"
        )
        .is_err()
    );
    assert!(
        handshake(
            server.clone(),
            tls::client_config(pki.ca_pem(), Some(&stranger)).unwrap(),
            "localhost"
        )
        .is_err()
    );
    assert!(
        handshake(
            server,
            tls::client_config(pki.ca_pem(), None).unwrap(),
            "example.com"
        )
        .is_err()
    );
}

#[test]
fn kubeconfigs_embed_the_ca_and_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::load_or_create(dir.path(), &sans()).unwrap();
    let admin = pki
        .client("admin", "kubernetes-admin", &["system:masters"])
        .unwrap();
    let text = kubeconfig::render(
        "https://127.0.0.1:6443",
        pki.ca_pem(),
        "admin",
        &kubeconfig::User::Certificate(&admin),
    );
    assert!(text.contains("server: https://127.0.0.1:6443"));
    assert!(text.contains("certificate-authority-data: LS0t"), "{text}");
    assert!(text.contains("client-certificate-data: LS0t"));
    assert!(text.contains("client-key-data: LS0t"));
    let token = kubeconfig::render(
        "https://x",
        pki.ca_pem(),
        "bob",
        &kubeconfig::User::Token("abc\"d"),
    );
    assert!(token.contains(r#"token: "abc\"d""#), "{token}");
    let path = dir.path().join("kubeconfig.yaml");
    kubeconfig::write(&path, &text).unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
}
