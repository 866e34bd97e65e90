//! The request path under hostile or sloppy clients, as kube-apiserver behaves: connections
//! that never finish their handshake or headers, or sit idle, are closed; one address
//! cannot hold more than its share of connections; slow requests get 504 Timeout; every
//! path segment is percent-decoded; bad query parameters get Kubernetes' codes and words.

use crate::cluster::{Cluster, DEADLINE};
use serde_json::Value;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::time::{Duration, Instant};

fn status(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not a Status ({e}): {body}"))
}

/// A TCP connection to the server from another loopback address (the server counts
/// connections per client address), reads timing out after 200 ms so that waits can look
/// at the clock.
fn connect_from(runtime: &tokio::runtime::Runtime, source: Ipv4Addr, port: u16) -> TcpStream {
    let stream = runtime
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind((source, 0).into())?;
            socket.connect((Ipv4Addr::LOCALHOST, port).into()).await
        })
        .unwrap()
        .into_std()
        .unwrap();
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    stream
}

/// A TLS connection from `source` that has sent `bytes` (a request's beginning, or all
/// of it) and has read what came back within a moment.
fn tls_from(
    runtime: &tokio::runtime::Runtime,
    cluster: &Cluster,
    source: Ipv4Addr,
    bytes: &[u8],
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let socket = connect_from(runtime, source, cluster.port);
    let pki = cluster.dir.path().join("pki");
    let ca = std::fs::read_to_string(pki.join("ca.crt")).unwrap();
    let config = kyb_pki::tls::client_config(&ca, None).unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let connection = rustls::ClientConnection::new(config, name).unwrap();
    let mut stream = rustls::StreamOwned::new(connection, socket);
    stream.write_all(bytes).unwrap();
    stream.flush().unwrap();
    stream
}

/// Reads until the server closes the connection (the socket's read timeout set short
/// enough to look at the clock); how long that took from `since`, or `None` if it was
/// still open at the deadline.
fn closed_within(read: &mut dyn Read, since: Instant, deadline: Duration) -> Option<Duration> {
    let mut buf = [0u8; 4096];
    while since.elapsed() < deadline {
        match read.read(&mut buf) {
            Ok(0) => return Some(since.elapsed()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            // Reset, or a TLS stream cut without close_notify: closed all the same.
            Err(_) => return Some(since.elapsed()),
        }
    }
    None
}

/// Asserts that the server closes the connection no sooner than `at_least` after `since`,
/// and within 15 s.
fn assert_closed(read: &mut dyn Read, since: Instant, at_least: Duration, what: &str) {
    let closed = closed_within(read, since, Duration::from_secs(15))
        .unwrap_or_else(|| panic!("{what} stayed open"));
    assert!(closed >= at_least, "{what} closed after {closed:?}");
}

/// The admin's GET, timed.
fn admin_get(cluster: &Cluster) -> (u16, Duration) {
    let started = Instant::now();
    let (code, _) = cluster.http("GET", "/api/v1/namespaces/default", "application/json", b"");
    (code, started.elapsed())
}

#[test]
fn idle_and_half_sent_connections_are_closed_and_capped() {
    const CAP: usize = 150;
    let cluster = Cluster::start_with(
        kyb_testkit::temp_dir("hardening").unwrap(),
        &[
            "--read-header-timeout",
            "3s",
            "--idle-connection-timeout",
            "4s",
            "--max-connections-per-client",
            &CAP.to_string(),
            "--request-timeout",
            "1s",
        ],
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let flooder = Ipv4Addr::new(127, 0, 0, 2);
    let other = Ipv4Addr::new(127, 0, 0, 3);
    let opened = Instant::now();
    // From one address: connections that never send a byte, and ones that stop in the
    // middle of the TLS ClientHello — as many as it may hold.
    let mut raw: Vec<TcpStream> = (0..CAP)
        .map(|i| {
            let mut stream = connect_from(&runtime, flooder, cluster.port);
            if i % 2 == 0 {
                stream
                    .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
                    .unwrap();
            }
            stream
        })
        .collect();
    // More from the same address are closed at once.
    let refused_at = Instant::now();
    let mut refused: Vec<TcpStream> = (0..50)
        .map(|_| connect_from(&runtime, flooder, cluster.port))
        .collect();
    for stream in &mut refused {
        let closed = closed_within(stream, refused_at, Duration::from_secs(3));
        assert!(closed.is_some(), "a connection over the cap was kept open");
    }
    // From another address: TLS done, then headers that never end, or one whole request
    // and then nothing (an idle keep-alive connection).
    let mut partial: Vec<_> = (0..40)
        .map(|_| {
            tls_from(
                &runtime,
                &cluster,
                other,
                b"GET /api/v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",
            )
        })
        .collect();
    let idle_started = Instant::now();
    let mut idle: Vec<_> = (0..40)
        .map(|_| {
            let mut stream = tls_from(
                &runtime,
                &cluster,
                other,
                b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            );
            // The response arrives; the connection then stays open, idle.
            stream.sock.set_read_timeout(Some(DEADLINE)).unwrap();
            let mut head = [0u8; 12];
            stream.read_exact(&mut head).unwrap();
            assert_eq!(&head, b"HTTP/1.1 200");
            stream
                .sock
                .set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            stream
        })
        .collect();
    // With all of them open the admin is served at once.
    for _ in 0..5 {
        let (code, took) = admin_get(&cluster);
        assert_eq!(code, 200);
        assert!(took < Duration::from_secs(1), "an admin GET took {took:?}");
    }
    // Every half-sent connection is closed after the read-header timeout (3 s), not
    // before; the idle ones after the idle timeout (4 s).
    let half_sent = Duration::from_millis(2900);
    for stream in &mut raw {
        assert_closed(
            stream,
            opened,
            half_sent,
            "a silent or half-handshaken connection",
        );
    }
    for stream in &mut partial {
        assert_closed(
            stream,
            opened,
            half_sent,
            "a connection with unfinished headers",
        );
    }
    for stream in &mut idle {
        assert_closed(
            stream,
            idle_started,
            Duration::from_millis(3500),
            "an idle connection",
        );
    }
    // The address's connections are gone, so it may connect again.
    let mut again = tls_from(
        &runtime,
        &cluster,
        flooder,
        b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    let mut response = String::new();
    let _ = again.read_to_string(&mut response);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");

    // A request that is not answered within --request-timeout (1 s) is a 504; a watch is
    // not cut off.
    let started = Instant::now();
    let (code, body) = cluster.http(
        "GET",
        "/api/v1/namespaces/default/configmaps/x?resourceVersion=999999999",
        "application/json",
        b"",
    );
    let took = started.elapsed();
    assert_eq!(code, 504, "{body}");
    assert!(took < Duration::from_millis(2500), "took {took:?}");
    let status = status(&body);
    assert_eq!(status["reason"], "Timeout");
    assert_eq!(
        status["message"],
        "Timeout: request did not complete within requested timeout - context deadline exceeded"
    );
    let started = Instant::now();
    let (code, body) = cluster.http(
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=2",
        "application/json",
        b"",
    );
    assert_eq!(code, 200, "{body}");
    assert!(started.elapsed() >= Duration::from_millis(1900));
}

/// `(code, Status)` of a request as the admin.
fn ask(cluster: &Cluster, method: &str, path: &str, body: &[u8]) -> (u16, Value) {
    let (code, text) = cluster.http(method, path, "application/json", body);
    let value = serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.clone()));
    (code, value)
}

#[test]
fn paths_parameters_and_fixed_messages_as_kubernetes() {
    let cluster = Cluster::start();
    // Every path segment is percent-decoded: names, namespaces, subresources.
    let (code, role) = ask(
        &cluster,
        "GET",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Aaggregate-to-admin",
        b"",
    );
    assert_eq!(code, 200, "{role}");
    assert_eq!(role["metadata"]["name"], "system:aggregate-to-admin");
    let (code, account) = ask(
        &cluster,
        "GET",
        "/api/v1/namespaces/%64efault/serviceaccounts/d%65fault",
        b"",
    );
    assert_eq!(code, 200, "{account}");
    // A malformed escape is refused as Go's server refuses the request line.
    let (code, text) = cluster.http("GET", "/api/v1/namespaces/%zz", "application/json", b"");
    assert_eq!((code, text.as_str()), (400, "400 Bad Request"));

    // ListOptions and DeleteOptions, with Kubernetes' codes and words.
    let cases: &[(&str, &str, u16, &str, &str)] = &[
        (
            "GET",
            "/api/v1/namespaces/default/configmaps?resourceVersion=0&resourceVersionMatch=Exact",
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps?resourceVersionMatch=NotOlderThan",
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersionMatch=NotOlderThan",
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=abc",
            400,
            "BadRequest",
            "strconv.ParseInt: parsing \"abc\": invalid syntax",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps?limit=x",
            400,
            "BadRequest",
            "strconv.ParseInt: parsing \"x\": invalid syntax",
        ),
        (
            "DELETE",
            "/api/v1/namespaces/default/configmaps/kube-root-ca.crt?orphanDependents=true&propagationPolicy=Foreground",
            422,
            "Invalid",
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Foreground\": orphanDependents and deletionPropagation cannot be both set",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps/x?timeout=abc",
            400,
            "BadRequest",
            "invalid timeout specified in the request URL - time: invalid duration \"abc\"",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/foos",
            404,
            "NotFound",
            "the server could not find the requested resource",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps/x",
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        ),
        (
            "PUT",
            "/api/v1/namespaces/default/configmaps",
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps?dryRun=Some",
            422,
            "Invalid",
            "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Some\"]: supported values: \"All\"",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps?fieldValidation=Loud",
            422,
            "Invalid",
            "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Loud\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
        ),
        (
            "DELETE",
            "/api/v1/namespaces/default/configmaps/kube-root-ca.crt?dryRun=All&dryRun=Later",
            422,
            "Invalid",
            "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"All\",\"Later\"]: supported values: \"All\"",
        ),
        (
            "POST",
            "/api/v1/namespaces/nowhere/configmaps",
            404,
            "NotFound",
            "namespaces \"nowhere\" not found",
        ),
    ];
    for (method, path, code, reason, message) in cases {
        let body: &[u8] = if *method == "POST" {
            br#"{"metadata":{"name":"x"}}"#
        } else {
            b""
        };
        let (got, status) = ask(&cluster, method, path, body);
        assert_eq!(
            (got, status["reason"].as_str(), status["message"].as_str()),
            (*code, Some(*reason), Some(*message)),
            "{method} {path}: {status}"
        );
    }
    // The refused delete deleted nothing.
    assert_eq!(
        ask(
            &cluster,
            "GET",
            "/api/v1/namespaces/default/configmaps/kube-root-ca.crt",
            b""
        )
        .0,
        200
    );
    // A body over the limit: Kubernetes' 413.
    let big = vec![b' '; (3 << 20) + 1];
    let (code, status) = ask(
        &cluster,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &big,
    );
    assert_eq!(
        (code, status["reason"].as_str(), status["message"].as_str()),
        (
            413,
            Some("RequestEntityTooLarge"),
            Some("Request entity too large: limit is 3145728")
        )
    );
    // A watch with a negative timeout ends at once.
    let started = Instant::now();
    let (code, text) = cluster.http(
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=-1",
        "application/json",
        b"",
    );
    // (the chunked body's last chunk, and no event before it)
    assert_eq!((code, text.as_str()), (200, "0\r\n\r\n"));
    assert!(started.elapsed() < Duration::from_secs(5));
    // A request's own shorter ?timeout= gets the 504.
    let started = Instant::now();
    let (code, status) = ask(
        &cluster,
        "GET",
        "/api/v1/namespaces/default/configmaps/x?resourceVersion=999999999&timeout=500ms",
        b"",
    );
    assert_eq!((code, status["reason"].as_str()), (504, Some("Timeout")));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn service_account_issuer_discovery_and_strict_token_checks() {
    use crate::cluster::Who;
    use serde_json::json;
    let issuer = "https://kyb.example/issuer";
    let cluster = Cluster::start_with(
        kyb_testkit::temp_dir("issuer").unwrap(),
        &[
            "--service-account-issuer",
            issuer,
            "--service-account-jwks-uri",
            "https://kyb.example/keys",
        ],
    );
    let key = std::fs::read_to_string(cluster.dir.path().join("pki/service-account.key")).unwrap();
    let signer = kyb_pki::jwt::Signer::from_pem(&key).unwrap();

    let (code, head, body) = cluster.http_with_headers(
        "GET",
        "/.well-known/openid-configuration",
        "application/json",
        b"",
    );
    assert_eq!(code, 200, "{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json\r"),
        "{head}"
    );
    assert_eq!(
        status(&body),
        json!({
            "issuer": issuer,
            "jwks_uri": "https://kyb.example/keys",
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        })
    );
    let (code, head, body) =
        cluster.http_with_headers("GET", "/openid/v1/jwks", "application/json", b"");
    assert_eq!(code, 200, "{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/jwk-set+json"),
        "{head}"
    );
    assert_eq!(status(&body), json!({"keys": [signer.jwk()]}));
    // Readable by service accounts (system:service-account-issuer-discovery), not by
    // anonymous users.
    let (code, _, _) = cluster.http_as(Who::Anonymous, "GET", "/openid/v1/jwks", &[], b"");
    assert_eq!(code, 403);
    let token = cluster.kubectl_ok(&["create", "token", "default"]);
    let token = token.trim();
    let claims = signer.verify(token).unwrap();
    assert_eq!(
        (&claims["iss"], &claims["aud"]),
        (&json!(issuer), &json!([issuer]))
    );
    let (code, _, body) = cluster.http_as(
        Who::Token(token),
        "GET",
        "/.well-known/openid-configuration",
        &[],
        b"",
    );
    assert_eq!(code, 200, "{body}");

    // Forged tokens, signed with the real key: issued in the future, or by another issuer,
    // are refused; the same claims issued now are not.
    let (_, account) = ask(
        &cluster,
        "GET",
        "/api/v1/namespaces/default/serviceaccounts/default",
        b"",
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let forged = |iat: i64, iss: &str| {
        signer
            .sign(&json!({
                "aud": [issuer],
                "exp": now + 600,
                "iat": iat,
                "iss": iss,
                "kubernetes.io": {
                    "namespace": "default",
                    "serviceaccount": {"name": "default", "uid": account["metadata"]["uid"]},
                },
                "nbf": now,
                "sub": "system:serviceaccount:default:default",
            }))
            .unwrap()
    };
    let answer = |token: &str| {
        cluster
            .http_as(Who::Token(token), "GET", "/openid/v1/jwks", &[], b"")
            .0
    };
    assert_eq!(answer(&forged(now, issuer)), 200);
    assert_eq!(answer(&forged(now + 3600, issuer)), 401);
    assert_eq!(
        answer(&forged(now, "https://kubernetes.default.svc.cluster.local")),
        401
    );
}
