//! Security at the door: TLS only, the generated credentials, authentication (client
//! certificates, bearer tokens, anonymous) and the answers to the unauthenticated and the
//! unauthorized.

use crate::cluster::{Cluster, Who};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;

fn status(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not a Status ({e}): {body}"))
}

#[test]
fn plain_http_and_strangers_are_refused() {
    let cluster = Cluster::start();
    // Plain HTTP gets no HTTP answer.
    use std::io::{Read, Write};
    let mut plain = std::net::TcpStream::connect(("127.0.0.1", cluster.port)).unwrap();
    plain
        .set_read_timeout(Some(crate::cluster::DEADLINE))
        .unwrap();
    plain
        .write_all(b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(
        !answer.starts_with(b"HTTP/"),
        "{}",
        String::from_utf8_lossy(&answer)
    );

    // A client trusting another CA refuses the server; a certificate from another CA is
    // refused by the server.
    let elsewhere = tempfile::tempdir().unwrap();
    let other = kyb_pki::Pki::load_or_create(elsewhere.path(), &kyb_pki::Sans::default()).unwrap();
    let stranger = other
        .client("admin", "kubernetes-admin", &["system:masters"])
        .unwrap();
    let ca = std::fs::read_to_string(cluster.dir.path().join("pki/ca.crt")).unwrap();
    for config in [
        kyb_pki::tls::client_config(other.ca_pem(), None).unwrap(),
        kyb_pki::tls::client_config(&ca, Some(&stranger)).unwrap(),
    ] {
        let socket = std::net::TcpStream::connect(("127.0.0.1", cluster.port)).unwrap();
        socket
            .set_read_timeout(Some(crate::cluster::DEADLINE))
            .unwrap();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let mut stream =
            rustls::StreamOwned::new(rustls::ClientConnection::new(config, name).unwrap(), socket);
        let sent = stream
            .write_all(b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .and_then(|()| stream.flush());
        let mut response = Vec::new();
        let read = stream.read_to_end(&mut response);
        assert!(
            sent.is_err() || read.is_err() || response.is_empty(),
            "{}",
            String::from_utf8_lossy(&response)
        );
    }

    // kubectl with a kubeconfig naming another CA fails.
    let kubeconfig = std::fs::read_to_string(cluster.kubeconfig()).unwrap();
    let forged = kubeconfig.replace(
        kubeconfig
            .lines()
            .find_map(|l| l.trim().strip_prefix("certificate-authority-data: "))
            .unwrap(),
        &crate::webhook_server::base64(other.ca_pem().as_bytes()),
    );
    let path = cluster.write_file("forged.yaml", &forged);
    let output = std::process::Command::new("kubectl")
        .args(["--kubeconfig", path.to_str().unwrap(), "get", "namespaces"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("certificate"),
        "{output:?}"
    );
}

#[test]
fn credentials_are_generated_once_and_private() {
    let mut cluster = Cluster::start();
    let pki = cluster.dir.path().join("pki");
    let ca = std::fs::read_to_string(pki.join("ca.crt")).unwrap();
    let kubeconfig = cluster.kubeconfig();
    let mode = std::fs::metadata(&kubeconfig).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(
        text.contains(&format!("server: https://127.0.0.1:{}", cluster.port)),
        "{text}"
    );
    for file in ["ca.key", "server.key", "admin.key", "service-account.key"] {
        let mode = std::fs::metadata(pki.join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}");
    }
    // The server prints how to use the kubeconfig (on stdout, read apart from the log).
    let export = format!("export KUBECONFIG={}", kubeconfig.display());
    cluster
        .process
        .wait_for_line(&export, crate::cluster::DEADLINE)
        .unwrap();
    // A restart reuses everything.
    let dir = cluster.stop();
    let cluster = Cluster::start_in(dir);
    assert_eq!(std::fs::read_to_string(pki.join("ca.crt")).unwrap(), ca);
    cluster.kubectl_ok(&["get", "namespaces"]);
}

#[test]
fn anonymous_tokens_and_certificates() {
    let dir = kyb_testkit::temp_dir("cluster").unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "# users\nsecret-alice,alice,1001,\"dev,ops\"\n").unwrap();
    let cluster = Cluster::start_with(dir, &["--token-auth-file", tokens.to_str().unwrap()]);

    // Anonymous: health and version only.
    for path in ["/healthz", "/livez", "/readyz", "/version"] {
        let (code, _, body) = cluster.http_as(Who::Anonymous, "GET", path, &[], b"");
        assert_eq!(code, 200, "{path}: {body}");
    }
    let (code, _, body) = cluster.http_as(Who::Anonymous, "GET", "/api/v1/namespaces", &[], b"");
    assert_eq!(code, 403, "{body}");
    let body = status(&body);
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        r#"namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope"#
    );
    let (code, _, body) = cluster.http_as(Who::Anonymous, "GET", "/api", &[], b"");
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        status(&body)["message"],
        r#"forbidden: User "system:anonymous" cannot get path "/api""#
    );

    // A token nobody issued: 401, whatever the path.
    for path in ["/api/v1/namespaces", "/healthz"] {
        let (code, _, body) = cluster.http_as(Who::Token("wrong"), "GET", path, &[], b"");
        assert_eq!(code, 401, "{body}");
        assert_eq!(status(&body)["reason"], "Unauthorized");
    }
    // A token from the file authenticates its user (who holds no permissions yet).
    let (code, _, body) = cluster.http_as(
        Who::Token("secret-alice"),
        "GET",
        "/api/v1/namespaces/default/pods",
        &[],
        b"",
    );
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        status(&body)["message"],
        r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#
    );
    // The admin certificate may do anything.
    let (code, _, _) = cluster.http_as(Who::Admin, "GET", "/api/v1/namespaces", &[], b"");
    assert_eq!(code, 200);
}

#[test]
fn rbac_decides_for_everyone_but_system_masters() {
    let dir = kyb_testkit::temp_dir("cluster").unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "token-vera,vera,1\ntoken-eddie,eddie,2\n").unwrap();
    let cluster = Cluster::start_with(dir, &["--token-auth-file", tokens.to_str().unwrap()]);
    // The bootstrap policy exists, with the aggregated roles filled in.
    let view = cluster.kubectl_ok(&[
        "get",
        "clusterrole",
        "view",
        "-o",
        "jsonpath={.rules[*].resources}",
    ]);
    assert!(view.contains("pods"), "{view}");
    cluster.kubectl_ok(&["create", "namespace", "team"]);
    cluster.kubectl_ok(&[
        "create",
        "rolebinding",
        "vera-views",
        "--clusterrole=view",
        "--user=vera",
        "-n",
        "default",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "rolebinding",
        "eddie-edits",
        "--clusterrole=edit",
        "--user=eddie",
        "-n",
        "team",
    ]);

    let as_user = |token: &str, method: &str, path: &str, body: &str| {
        let (code, _, text) = cluster.http_as(
            Who::Token(token),
            method,
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        (code, text)
    };
    let configmap = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#;
    // Discovery for every authenticated user.
    assert_eq!(as_user("token-vera", "GET", "/api", "").0, 200);
    // view: read, not write, only where bound.
    assert_eq!(
        as_user("token-vera", "GET", "/api/v1/namespaces/default/pods", "").0,
        200
    );
    let (code, text) = as_user(
        "token-vera",
        "POST",
        "/api/v1/namespaces/default/configmaps",
        configmap,
    );
    assert_eq!(code, 403, "{text}");
    assert_eq!(
        status(&text)["message"],
        r#"configmaps is forbidden: User "vera" cannot create resource "configmaps" in API group "" in the namespace "default""#
    );
    assert_eq!(
        as_user("token-vera", "GET", "/api/v1/namespaces/team/pods", "").0,
        403
    );
    assert_eq!(as_user("token-vera", "GET", "/api/v1/secrets", "").0, 403);
    // edit: write in its namespace, nothing in another, no RBAC objects.
    assert_eq!(
        as_user(
            "token-eddie",
            "POST",
            "/api/v1/namespaces/team/configmaps",
            configmap
        )
        .0,
        201
    );
    assert_eq!(
        as_user(
            "token-eddie",
            "POST",
            "/api/v1/namespaces/default/configmaps",
            configmap
        )
        .0,
        403
    );
    assert_eq!(
        as_user(
            "token-eddie",
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles",
            ""
        )
        .0,
        403
    );
    // Deleting the binding takes the permission away.
    cluster.kubectl_ok(&["delete", "rolebinding", "eddie-edits", "-n", "team"]);
    let deadline = std::time::Instant::now() + crate::cluster::DEADLINE;
    loop {
        let (code, _) = as_user(
            "token-eddie",
            "GET",
            "/api/v1/namespaces/team/configmaps",
            "",
        );
        if code == 403 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the binding still grants"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
