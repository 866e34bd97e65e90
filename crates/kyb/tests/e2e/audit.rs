//! The audit log: JSON lines written by policy (levels, omitted stages), with the user,
//! the impersonated user, the authorization decision, admission's annotations and, at the
//! higher levels, the request and response objects.

use crate::cluster::Cluster;
use serde_json::Value;

const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["system:apiserver"]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
- level: Metadata
  resources: [{group: "", resources: ["secrets"]}]
- level: Request
  resources: [{group: "", resources: ["pods"]}]
- level: Metadata
  nonResourceURLs: ["/version"]
- level: None
"#;

fn events(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

#[test]
fn audit_log_follows_the_policy() {
    let dir = kyb_testkit::temp_dir("cluster").unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let log = dir.path().join("audit").join("audit.log");
    let cluster = Cluster::start_with(
        dir,
        &[
            "--audit-policy-file",
            policy.to_str().unwrap(),
            "--audit-log-path",
            log.to_str().unwrap(),
        ],
    );
    cluster.kubectl_ok(&[
        "create",
        "configmap",
        "settings",
        "--from-literal=color=blue",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "password",
        "--from-literal=pw=hunter2",
    ]);
    cluster.kubectl_ok(&["get", "namespaces"]);
    let denied = cluster.kubectl(&["get", "configmaps", "--as", "mallory"]);
    assert!(!denied.status.success());
    cluster.kubectl_ok(&["create", "namespace", "secure"]);
    cluster.kubectl_ok(&[
        "label",
        "namespace",
        "secure",
        "pod-security.kubernetes.io/audit=restricted",
    ]);
    cluster.kubectl_ok(&["run", "p", "--image=busybox", "-n", "secure"]);
    // A stranger's token is refused, and that is on record too.
    let (code, _, _) = cluster.http_as(
        crate::cluster::Who::Token("not-a-token"),
        "GET",
        "/version",
        &[],
        b"",
    );
    assert_eq!(code, 401);
    let dir = cluster.stop();
    let events = events(&dir.path().join("audit").join("audit.log"));
    assert!(!events.is_empty());
    for event in &events {
        assert_eq!(event["apiVersion"], "audit.k8s.io/v1");
        assert_eq!(event["kind"], "Event");
        // Long-running requests (the scheduler's watch on pods) also have a
        // ResponseStarted stage; everything else is recorded once, when complete.
        if event["verb"] == "watch" {
            assert!(
                matches!(
                    event["stage"].as_str(),
                    Some("ResponseStarted" | "ResponseComplete")
                ),
                "{event}"
            );
        } else {
            assert_eq!(event["stage"], "ResponseComplete", "{event}");
        }
        assert_ne!(event["user"]["username"], "system:apiserver");
        let resource = event["objectRef"]["resource"].as_str().unwrap_or_default();
        assert!(
            matches!(resource, "configmaps" | "secrets" | "pods")
                || event["requestURI"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("/version")),
            "the policy records nothing else: {event}"
        );
    }
    let find = |verb: &str, resource: &str, name: &str| {
        events
            .iter()
            .find(|e| {
                e["verb"] == verb
                    && e["objectRef"]["resource"] == resource
                    && e["objectRef"]["name"] == name
            })
            .unwrap_or_else(|| panic!("no {verb} {resource}/{name}: {events:#?}"))
    };
    // RequestResponse: both objects.
    let created = find("create", "configmaps", "settings");
    assert_eq!(created["level"], "RequestResponse");
    assert_eq!(created["requestObject"]["data"]["color"], "blue");
    assert_eq!(created["responseObject"]["metadata"]["name"], "settings");
    assert_eq!(created["responseStatus"]["code"], 201);
    assert_eq!(created["user"]["username"], "kubernetes-admin");
    assert_eq!(
        created["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert!(
        created["requestReceivedTimestamp"]
            .as_str()
            .is_some_and(|t| t.len() == "2026-11-23T10:00:00.123456Z".len()),
        "{created}"
    );
    // Metadata: no objects, never the secret's value.
    let secret = find("create", "secrets", "password");
    assert_eq!(secret["level"], "Metadata");
    assert!(secret.get("requestObject").is_none());
    assert!(!secret.to_string().contains("aHVudGVyMg"), "{secret}");
    // The impersonated, refused list.
    let refused = events
        .iter()
        .find(|e| e["impersonatedUser"]["username"] == "mallory")
        .unwrap_or_else(|| panic!("no impersonated request: {events:#?}"));
    assert_eq!(refused["responseStatus"]["code"], 403);
    assert_eq!(refused["responseStatus"]["reason"], "Forbidden");
    assert_eq!(
        refused["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    assert_eq!(refused["user"]["username"], "kubernetes-admin");
    // The refused stranger.
    let stranger = events
        .iter()
        .find(|e| e["requestURI"] == "/version" && e["responseStatus"]["code"] == 401)
        .unwrap_or_else(|| panic!("no failed authentication: {events:#?}"));
    assert_eq!(stranger["user"], serde_json::json!({}), "{stranger}");
    // Admission's findings are annotations: PodSecurity in audit mode.
    let pod = find("create", "pods", "p");
    assert_eq!(pod["level"], "Request");
    assert!(pod.get("responseObject").is_none());
    assert!(
        pod["annotations"]["pod-security.kubernetes.io/audit-violations"]
            .as_str()
            .is_some_and(|v| v.contains("would violate PodSecurity \"restricted:latest\"")),
        "{pod}"
    );
}
