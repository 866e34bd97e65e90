//! Bad requests over plain HTTP: every failure is a `Status` with the right code and
//! reason, and nothing half-written is left behind.

use crate::cluster::{Cluster, Who};
use serde_json::Value;

fn status(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not a Status ({e}): {body}"))
}

#[test]
fn malformed_and_mismatched_bodies() {
    let cluster = Cluster::start();
    let path = "/api/v1/namespaces/default/configmaps";
    let cases: &[(&str, &str, &[u8], u16, &str)] = &[
        ("POST", "application/json", b"{not json", 400, "BadRequest"),
        (
            "POST",
            "application/json",
            br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}"#,
            400,
            "BadRequest",
        ),
        (
            "POST",
            "application/json",
            br#"{"kind":"Secret","metadata":{"name":"x"}}"#,
            400,
            "BadRequest",
        ),
        (
            "POST",
            "application/json",
            br#"{"metadata":{"name":"x","namespace":"other"}}"#,
            400,
            "BadRequest",
        ),
        ("POST", "text/plain", b"hello", 415, "UnsupportedMediaType"),
        (
            "POST",
            "application/vnd.kubernetes.protobuf",
            b"k8s\x00garbage",
            400,
            "BadRequest",
        ),
        (
            "POST",
            "application/json",
            br#"{"metadata":{"name":"x"},"data":{"a":1}}"#,
            400,
            "BadRequest",
        ),
    ];
    for (method, content_type, body, code, reason) in cases {
        let (got, text) = cluster.http(method, path, content_type, body);
        assert_eq!(
            got,
            *code,
            "{content_type} {}: {text}",
            String::from_utf8_lossy(body)
        );
        let status = status(&text);
        assert_eq!(
            (status["kind"].as_str(), status["reason"].as_str()),
            (Some("Status"), Some(*reason)),
            "{text}"
        );
        assert_eq!(status["code"], *code);
    }
    // None of them left anything behind (besides the cluster CA's ConfigMap, which every
    // namespace holds).
    let (_, list) = cluster.http(
        "GET",
        &format!("{path}?fieldSelector=metadata.name!%3Dkube-root-ca.crt"),
        "application/json",
        b"",
    );
    assert_eq!(status(&list)["items"], serde_json::json!([]));
}

#[test]
fn bodies_over_3_mib_are_refused() {
    let cluster = Cluster::start();
    let big = format!(
        r#"{{"metadata":{{"name":"big"}},"data":{{"a":"{}"}}}}"#,
        "x".repeat(3 << 20)
    );
    let (code, text) = cluster.http(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        big.as_bytes(),
    );
    assert_eq!(
        (code, status(&text)["reason"].as_str()),
        (413, Some("RequestEntityTooLarge"))
    );
    // ConfigMaps stop at 1 MiB (422); a kind without such a rule stops at the storage
    // limit of 1.5 MiB: 413 as well, and nothing is stored.
    let large = format!(
        r#"{{"metadata":{{"name":"large"}},"data":{{"a":"{}"}}}}"#,
        "x".repeat(2 << 20)
    );
    let (code, _) = cluster.http(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        large.as_bytes(),
    );
    assert_eq!(code, 422);
    let revision = format!(
        r#"{{"metadata":{{"name":"large"}},"revision":1,"data":{{"a":"{}"}}}}"#,
        "x".repeat(2 << 20)
    );
    let path = "/apis/apps/v1/namespaces/default/controllerrevisions";
    let (code, text) = cluster.http("POST", path, "application/json", revision.as_bytes());
    assert_eq!(
        (code, status(&text)["reason"].as_str()),
        (413, Some("RequestEntityTooLarge")),
        "{text}"
    );
    let (code, _) = cluster.http("GET", &format!("{path}/large"), "application/json", b"");
    assert_eq!(code, 404);
}

#[test]
fn unknown_paths_methods_and_media_types() {
    let cluster = Cluster::start();
    let (code, text) = cluster.http(
        "GET",
        "/api/v1/namespaces/default/widgets",
        "application/json",
        b"",
    );
    assert_eq!(
        (code, status(&text)["reason"].as_str()),
        (404, Some("NotFound"))
    );
    let (code, text) = cluster.http("GET", "/apis/apps/v9/deployments", "application/json", b"");
    assert_eq!(
        (code, status(&text)["reason"].as_str()),
        (404, Some("NotFound"))
    );
    let (code, text) = cluster.http(
        "PUT",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        b"{}",
    );
    assert_eq!(
        (code, status(&text)["reason"].as_str()),
        (405, Some("MethodNotAllowed"))
    );
    let (code, text) = cluster.http("POST", "/version", "application/json", b"{}");
    assert_eq!(code, 405, "{text}");
    let (code, text) = cluster.http(
        "GET",
        "/api/v1/namespaces/default/configmaps/nope",
        "application/json",
        b"",
    );
    assert_eq!(status(&text)["message"], "configmaps \"nope\" not found");
    assert_eq!(code, 404);
}

#[test]
fn protobuf_clients_get_protobuf_and_unknown_media_types_406() {
    let cluster = Cluster::start();
    let response = cluster.connector(Who::Admin).send(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nAccept: application/vnd.kubernetes.protobuf\r\nConnection: close\r\n\r\n");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response.contains("content-type: application/vnd.kubernetes.protobuf\r\n"),
        "{response}"
    );
    let response = cluster.connector(Who::Admin).send(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nAccept: text/html\r\nConnection: close\r\n\r\n");
    assert!(response.starts_with("HTTP/1.1 406"), "{response}");
}

#[test]
fn too_many_requests_in_flight_get_429() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let cluster = Cluster::start_with(
        kyb_testkit::temp_dir("cluster").unwrap(),
        &["--max-requests-inflight", "2"],
    );
    // Reads at a future resourceVersion wait (3 s) for the cache, holding their slot; two
    // threads keep such reads going until the server has said 429.
    let stop = Arc::new(AtomicBool::new(false));
    let slow: Vec<_> = (0..2)
        .map(|_| {
            let (connector, stop) = (cluster.connector(Who::Admin), stop.clone());
            std::thread::spawn(move || {
                let mut answers = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let response = connector.send(b"GET /api/v1/namespaces/default/configmaps/x?resourceVersion=999999 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
                    answers.push(response.get(..12).unwrap_or_default().to_string());
                }
                answers
            })
        })
        .collect();
    let deadline = std::time::Instant::now() + crate::cluster::DEADLINE;
    let (code, text) = loop {
        let (code, text) = cluster.http("GET", "/api/v1/namespaces", "application/json", b"");
        if code == 429 || std::time::Instant::now() > deadline {
            break (code, text);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    stop.store(true, Ordering::Relaxed);
    assert_eq!(
        (code, status(&text)["reason"].as_str()),
        (429, Some("TooManyRequests")),
        "{text}"
    );
    for thread in slow {
        for answer in thread.join().unwrap() {
            // Each slow read ends with 504 (too large resource version), or 429 itself.
            assert!(
                answer == "HTTP/1.1 504" || answer == "HTTP/1.1 429",
                "{answer}"
            );
        }
    }
    // Once the slow reads are done, everything is served again.
    let (code, _) = cluster.http("GET", "/api/v1/namespaces", "application/json", b"");
    assert_eq!(code, 200);
}
