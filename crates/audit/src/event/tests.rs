//! Tests of the event builder: the JSON of events at each level and stage.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::attributes::ResourceAttributes;
use crate::level::StageSet;
use serde_json::json;

/// 2026-11-23T10:00:00.123456Z
const RECEIVED: i64 = 1_795_428_000 * 1_000_000 + 123_456;
/// 2026-11-23T10:00:00.250000Z
const COMPLETED: i64 = 1_795_428_000 * 1_000_000 + 250_000;

fn decision(level: Level) -> RuleDecision {
    RuleDecision {
        level,
        omit_stages: StageSet::EMPTY,
        omit_managed_fields: false,
    }
}

fn create_pod(decision: RuleDecision) -> AuditContext {
    let groups = vec![
        "system:masters".to_string(),
        "system:authenticated".to_string(),
    ];
    let ips = vec!["10.0.0.1".to_string()];
    AuditContext::new(
        decision,
        &RequestAttributes {
            user: "admin",
            groups: &groups,
            verb: "create",
            resource: Some(ResourceAttributes {
                group: "",
                version: "v1",
                resource: "pods",
                subresource: "",
                namespace: "default",
                name: "",
            }),
            path: "/api/v1/namespaces/default/pods",
        },
        &RequestMetadata {
            audit_id: "6f1d3a52-8f0c-4a43-9a77-1e1b1f0c2d3e",
            request_uri: "/api/v1/namespaces/default/pods?fieldManager=kubectl-client-side-apply",
            source_ips: &ips,
            user_agent: "kubectl/v1.33.0 (linux/amd64) kubernetes/abcdef",
            received: MicroTime::from_unix_micros(RECEIVED),
        },
    )
}

const POD: &[u8] = br#"{
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {"name": "web", "namespace": "default", "managedFields": [{"manager": "kubectl"}]},
  "spec": {"containers": [{"name": "c", "image": "nginx"}]}
}"#;

const CREATED: &[u8] = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default","uid":"u-1","resourceVersion":"42","managedFields":[{"manager":"kubectl"}]},"spec":{"containers":[{"name":"c","image":"nginx"}]}}"#;

/// Runs a create through the builder and returns the ResponseComplete event.
fn complete(ctx: &mut AuditContext) -> Option<String> {
    ctx.set_authorization_decision(true, "");
    ctx.set_request_object_value(&serde_json::from_slice(POD).unwrap());
    ctx.set_response(201, None, Some(CREATED));
    ctx.event_at(
        Stage::ResponseComplete,
        MicroTime::from_unix_micros(COMPLETED),
    )
    .map(|bytes| String::from_utf8(bytes).unwrap())
}

const HEAD: &str = r#""auditID":"6f1d3a52-8f0c-4a43-9a77-1e1b1f0c2d3e","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods?fieldManager=kubectl-client-side-apply","verb":"create","user":{"username":"admin","groups":["system:masters","system:authenticated"]},"sourceIPs":["10.0.0.1"],"userAgent":"kubectl/v1.33.0 (linux/amd64) kubernetes/abcdef","objectRef":{"resource":"pods","namespace":"default","name":"web","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201}"#;
const TAIL: &str = r#""requestReceivedTimestamp":"2026-11-23T10:00:00.123456Z","stageTimestamp":"2026-11-23T10:00:00.250000Z","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}"#;

#[test]
fn metadata_level_has_no_objects() {
    let event = complete(&mut create_pod(decision(Level::Metadata))).unwrap();
    assert_eq!(
        event,
        format!(
            r#"{{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata",{HEAD},{TAIL}"#
        )
    );
}

#[test]
fn request_level_has_the_request_object() {
    let event = complete(&mut create_pod(decision(Level::Request))).unwrap();
    // The object comes from a decoded value, whose key order depends on serde_json's
    // features: compare it parsed, and the rest of the line exactly.
    let head = format!(
        r#"{{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request",{HEAD},"requestObject":"#
    );
    let tail = format!(",{TAIL}");
    assert!(event.starts_with(&head), "{event}");
    assert!(event.ends_with(&tail), "{event}");
    let object: Value = serde_json::from_str(&event[head.len()..event.len() - tail.len()]).unwrap();
    assert_eq!(object, serde_json::from_slice::<Value>(POD).unwrap());
    assert!(!event.contains("responseObject"));
}

#[test]
fn request_response_level_has_both_objects() {
    let mut ctx = create_pod(decision(Level::RequestResponse));
    ctx.set_request_object(POD);
    ctx.set_response(201, None, Some(CREATED));
    let event = ctx
        .event_at(
            Stage::ResponseComplete,
            MicroTime::from_unix_micros(COMPLETED),
        )
        .unwrap();
    let event: Value = serde_json::from_slice(&event).unwrap();
    assert_eq!(event["level"], "RequestResponse");
    assert_eq!(
        event["requestObject"],
        serde_json::from_slice::<Value>(POD).unwrap()
    );
    assert_eq!(
        event["responseObject"],
        serde_json::from_slice::<Value>(CREATED).unwrap()
    );
    assert_eq!(
        event["responseStatus"],
        json!({"metadata": {}, "code": 201})
    );
    // A raw body does not complete the reference: that needs the decoded object.
    assert_eq!(
        event["objectRef"],
        json!({"resource": "pods", "namespace": "default", "apiVersion": "v1"})
    );
}

#[test]
fn managed_fields_omitted_from_both_objects() {
    let mut ctx = create_pod(RuleDecision {
        omit_managed_fields: true,
        ..decision(Level::RequestResponse)
    });
    ctx.set_request_object(POD);
    ctx.set_response(201, None, Some(CREATED));
    let event = ctx.event(Stage::ResponseComplete).unwrap();
    let event: Value = serde_json::from_slice(&event).unwrap();
    assert_eq!(
        event["requestObject"]["metadata"],
        json!({"name": "web", "namespace": "default"})
    );
    assert_eq!(
        event["responseObject"]["metadata"],
        json!({"name": "web", "namespace": "default", "uid": "u-1", "resourceVersion": "42"})
    );
}

#[test]
fn level_none_records_nothing() {
    let mut ctx = create_pod(RuleDecision::NONE);
    assert!(!ctx.is_enabled());
    assert_eq!(ctx.audit_id(), None);
    assert!(!ctx.wants_request_object());
    ctx.add_annotation("a", "b");
    ctx.set_request_object(POD);
    assert_eq!(complete(&mut ctx), None);
    assert_eq!(ctx.panic_event("x"), None);
}

#[test]
fn omitted_stages_write_no_event() {
    let mut ctx = create_pod(RuleDecision {
        omit_stages: [Stage::RequestReceived].into_iter().collect(),
        ..decision(Level::Metadata)
    });
    assert_eq!(ctx.event(Stage::RequestReceived), None);
    assert!(ctx.event(Stage::ResponseComplete).is_some());
}

#[test]
fn request_received_is_stamped_when_received() {
    let mut ctx = create_pod(decision(Level::Request));
    let event = ctx
        .event_at(
            Stage::RequestReceived,
            MicroTime::from_unix_micros(COMPLETED),
        )
        .unwrap();
    let event: Value = serde_json::from_slice(&event).unwrap();
    assert_eq!(event["stage"], "RequestReceived");
    assert_eq!(
        event["requestReceivedTimestamp"],
        "2026-11-23T10:00:00.123456Z"
    );
    assert_eq!(event["stageTimestamp"], "2026-11-23T10:00:00.123456Z");
    // Nothing is known of the response or the body yet.
    assert!(event.get("responseStatus").is_none());
    assert!(event.get("requestObject").is_none());
    assert!(event.get("annotations").is_none());
}

#[test]
fn timestamps_have_microseconds_in_utc() {
    let mut ctx = create_pod(decision(Level::Metadata));
    let event = ctx.event(Stage::ResponseComplete).unwrap();
    let event: Value = serde_json::from_slice(&event).unwrap();
    let stamp = event["stageTimestamp"].as_str().unwrap();
    let bytes = stamp.as_bytes();
    assert_eq!(stamp.len(), 27, "{stamp}");
    assert_eq!(
        (bytes[4], bytes[10], bytes[19], bytes[26]),
        (b'-', b'T', b'.', b'Z')
    );
    assert!(bytes[20..26].iter().all(u8::is_ascii_digit));
}

#[test]
fn failure_status_and_annotations() {
    let mut ctx = create_pod(decision(Level::Metadata));
    ctx.set_authorization_decision(false, "");
    ctx.add_annotation(
        "pod-security.kubernetes.io/enforce-policy",
        "restricted:latest",
    );
    ctx.add_annotation(DECISION_ANNOTATION, "allow");
    let status = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "pods is forbidden: User \"admin\" cannot create resource \"pods\" in API group \"\" in the namespace \"default\"",
        "reason": "Forbidden", "details": {"kind": "pods"}, "code": 403
    });
    ctx.set_response(403, Some(&status), Some(status.to_string().as_bytes()));
    let event = String::from_utf8(ctx.event(Stage::ResponseComplete).unwrap()).unwrap();
    assert!(event.contains(
        r#""responseStatus":{"metadata":{},"status":"Failure","message":"pods is forbidden: User \"admin\" cannot create resource \"pods\" in API group \"\" in the namespace \"default\"","reason":"Forbidden","details":{"kind":"pods"},"code":403}"#
    ));
    assert!(event.ends_with(
        r#""annotations":{"authorization.k8s.io/decision":"forbid","authorization.k8s.io/reason":"","pod-security.kubernetes.io/enforce-policy":"restricted:latest"}}"#
    ));
    assert!(!event.contains("responseObject"));
}

#[test]
fn non_resource_request() {
    let groups = vec!["system:unauthenticated".to_string()];
    let mut ctx = AuditContext::new(
        decision(Level::RequestResponse),
        &RequestAttributes {
            user: "system:anonymous",
            groups: &groups,
            verb: "get",
            resource: None,
            path: "/healthz",
        },
        &RequestMetadata {
            audit_id: "id",
            request_uri: "/healthz?verbose",
            source_ips: &[],
            user_agent: "",
            received: MicroTime::from_unix_micros(RECEIVED),
        },
    );
    ctx.set_response(200, None, Some(b"ok"));
    let event = String::from_utf8(
        ctx.event_at(
            Stage::ResponseComplete,
            MicroTime::from_unix_micros(COMPLETED),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        event,
        r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"id","stage":"ResponseComplete","requestURI":"/healthz?verbose","verb":"get","user":{"username":"system:anonymous","groups":["system:unauthenticated"]},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-23T10:00:00.123456Z","stageTimestamp":"2026-11-23T10:00:00.250000Z"}"#
    );
}

#[test]
fn users_impersonation_and_object_ref() {
    let mut ctx = create_pod(decision(Level::Metadata));
    let extra = BTreeMap::from([("scopes".to_string(), vec!["a".to_string()])]);
    let groups = vec!["system:masters".to_string()];
    ctx.set_user(&UserInfo {
        username: "admin",
        uid: "1",
        groups: &groups,
        extra: &extra,
    });
    let no_extra = BTreeMap::new();
    ctx.set_impersonated_user(&UserInfo {
        username: "bob",
        uid: "",
        groups: &[],
        extra: &no_extra,
    });
    ctx.complete_object_ref(&ObjectRef {
        name: "web",
        uid: "u-1",
        resource: "ignored",
        ..ObjectRef::default()
    });
    let event: Value =
        serde_json::from_slice(&ctx.event(Stage::ResponseComplete).unwrap()).unwrap();
    assert_eq!(
        event["user"],
        json!({"username": "admin", "uid": "1", "groups": ["system:masters"], "extra": {"scopes": ["a"]}})
    );
    assert_eq!(event["impersonatedUser"], json!({"username": "bob"}));
    assert_eq!(
        event["objectRef"],
        json!({"resource": "pods", "namespace": "default", "name": "web", "uid": "u-1", "apiVersion": "v1"})
    );
    ctx.set_object_ref(&ObjectRef {
        resource: "pods",
        subresource: "log",
        ..ObjectRef::default()
    });
    let event: Value =
        serde_json::from_slice(&ctx.event(Stage::ResponseComplete).unwrap()).unwrap();
    assert_eq!(
        event["objectRef"],
        json!({"resource": "pods", "subresource": "log"})
    );
}

#[test]
fn stand_in_status_and_panic() {
    let mut ctx = create_pod(decision(Level::Metadata));
    let event: Value =
        serde_json::from_slice(&ctx.event(Stage::ResponseComplete).unwrap()).unwrap();
    assert_eq!(
        event["responseStatus"],
        json!({"metadata": {}, "status": "Success", "message": "Connection closed early", "code": 200})
    );
    let event: Value =
        serde_json::from_slice(&ctx.panic_event("index out of range").unwrap()).unwrap();
    assert_eq!(event["stage"], "Panic");
    assert_eq!(
        event["responseStatus"],
        json!({"metadata": {}, "status": "Failure", "message": "APIServer panic'd: index out of range", "reason": "InternalError", "code": 500})
    );
}

#[test]
fn long_running_response_started() {
    let mut ctx = create_pod(decision(Level::Metadata));
    ctx.set_response_code(200);
    let event: Value = serde_json::from_slice(&ctx.event(Stage::ResponseStarted).unwrap()).unwrap();
    assert_eq!(
        event["responseStatus"],
        json!({"metadata": {}, "code": 200})
    );
}

#[test]
fn bodies_that_are_not_json_are_left_out_and_lines_stay_single() {
    let mut ctx = create_pod(decision(Level::RequestResponse));
    ctx.set_request_object(b"apiVersion: v1\nkind: Pod\n");
    ctx.set_response(200, None, Some(b"{\n \"a\": \"line\\nbreak <b>\"\n}\n"));
    let event = String::from_utf8(ctx.event(Stage::ResponseComplete).unwrap()).unwrap();
    assert!(!event.contains("requestObject"));
    assert!(event.contains(r#""responseObject":{"a":"line\nbreak \u003cb\u003e"}"#));
    assert!(!event.contains('\n'));
}
