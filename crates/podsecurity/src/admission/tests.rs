//! Decisions of the plugin for pods and workloads.

#![allow(clippy::unwrap_used)]

use serde_json::{Map, Value, json};

use super::*;

fn labels(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

const NO_EXEMPTIONS: &Exemptions = &Exemptions {
    usernames: Vec::new(),
    runtime_classes: Vec::new(),
    namespaces: Vec::new(),
};

fn pod_request<'a>(
    operation: Operation,
    ns_labels: Option<&'a Map<String, Value>>,
    object: Option<&'a Value>,
) -> Request<'a> {
    Request {
        operation,
        group: "",
        resource: "pods",
        subresource: None,
        kind: "Pod",
        name: "p",
        namespace: "ns",
        namespace_labels: ns_labels,
        namespace_lookup_error: None,
        object,
        old_object: None,
        username: "alice",
        groups: &[],
        exemptions: NO_EXEMPTIONS,
        defaults: NamespacePolicy::default(),
    }
}

fn annotations(d: &Decision) -> Vec<(&str, &str)> {
    d.audit_annotations
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// A pod that violates restricted only by not setting allowPrivilegeEscalation=false.
fn escalating_pod() -> Value {
    json!({
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "image": "nginx", "securityContext": {"capabilities": {"drop": ["ALL"]}}}],
        },
    })
}

const ESCALATION: &str = r#"allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)"#;

#[test]
fn enforce_denies_with_forbidden_status() {
    let l = labels(json!({"pod-security.kubernetes.io/enforce": "restricted"}));
    let pod = escalating_pod();
    let request = pod_request(Operation::Create, Some(&l), Some(&pod));
    let d = admit(&request);
    assert!(!d.allowed);
    assert_eq!(d.denial, Some(Denial::Forbidden));
    let message = format!(r#"violates PodSecurity "restricted:latest": {ESCALATION}"#);
    assert_eq!(d.message.as_deref(), Some(message.as_str()));
    // No warnings on a refused request, even though warn defaults to restricted here.
    assert!(d.warnings.is_empty());
    assert_eq!(
        annotations(&d),
        [(
            "pod-security.kubernetes.io/enforce-policy",
            "restricted:latest"
        )]
    );
    let status = d.status(&request).unwrap();
    assert_eq!(status.code, 403);
    assert_eq!(status.reason, "Forbidden");
    assert_eq!(
        status.message,
        format!(r#"pods "p" is forbidden: {message}"#)
    );
    assert_eq!(status.details, Some(json!({"name": "p", "kind": "pods"})));
}

#[test]
fn audit_and_warn_on_allowed_pods() {
    let l = labels(json!({
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/enforce-version": "v1.29",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/warn-version": "v1.30",
    }));
    let pod = escalating_pod();
    let d = admit(&pod_request(Operation::Create, Some(&l), Some(&pod)));
    assert!(d.allowed);
    assert_eq!(d.denial, None);
    assert_eq!(d.status(&pod_request(Operation::Create, None, None)), None);
    assert_eq!(
        d.warnings,
        [format!(
            r#"would violate PodSecurity "restricted:v1.30": {ESCALATION}"#
        )]
    );
    assert_eq!(
        annotations(&d),
        [
            (
                "pod-security.kubernetes.io/audit-violations",
                format!(r#"would violate PodSecurity "restricted:latest": {ESCALATION}"#).as_str()
            ),
            (
                "pod-security.kubernetes.io/enforce-policy",
                "baseline:v1.29"
            ),
        ]
    );
}

#[test]
fn compliant_pod_gets_only_the_enforce_policy_annotation() {
    let l = labels(
        json!({"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/audit": "baseline"}),
    );
    let pod = escalating_pod();
    let d = admit(&pod_request(Operation::Create, Some(&l), Some(&pod)));
    assert!(d.allowed && d.warnings.is_empty());
    assert_eq!(
        annotations(&d),
        [(
            "pod-security.kubernetes.io/enforce-policy",
            "baseline:latest"
        )]
    );
}

#[test]
fn privileged_namespaces_short_circuit() {
    let pod = json!({"metadata": {"name": "p"}, "spec": {"hostPID": true, "containers": [{"name": "c"}]}});
    for l in [
        None,
        Some(labels(
            json!({"pod-security.kubernetes.io/enforce": "privileged", "pod-security.kubernetes.io/enforce-version": "v1.20"}),
        )),
    ] {
        let d = admit(&pod_request(Operation::Create, l.as_ref(), Some(&pod)));
        assert!(d.allowed);
        assert!(d.warnings.is_empty());
        assert_eq!(
            annotations(&d),
            [(
                "pod-security.kubernetes.io/enforce-policy",
                "privileged:latest"
            )]
        );
    }
    // Configured defaults apply to unlabeled namespaces.
    let mut request = pod_request(Operation::Create, None, Some(&pod));
    request.defaults =
        NamespacePolicy::uniform(LevelVersion::new(Level::Baseline, crate::Version::Latest));
    let d = admit(&request);
    assert_eq!(
        d.message.as_deref(),
        Some(r#"violates PodSecurity "baseline:latest": host namespaces (hostPID=true)"#)
    );
}

#[test]
fn invalid_labels_fail_closed_and_are_recorded() {
    let l = labels(json!({"pod-security.kubernetes.io/enforce": "strict"}));
    let pod = escalating_pod();
    let d = admit(&pod_request(Operation::Create, Some(&l), Some(&pod)));
    assert!(!d.allowed);
    assert_eq!(
        d.message.as_deref(),
        Some(format!(r#"violates PodSecurity "restricted:latest": {ESCALATION}"#).as_str())
    );
    assert_eq!(
        annotations(&d),
        [
            (
                "pod-security.kubernetes.io/enforce-policy",
                "restricted:latest"
            ),
            (
                "pod-security.kubernetes.io/error",
                r#"Failed to parse policy: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted"#
            ),
        ]
    );
    // Invalid labels are evaluated even when they resolve to privileged.
    let l = labels(
        json!({"pod-security.kubernetes.io/warn": "x", "pod-security.kubernetes.io/audit": "y"}),
    );
    let d = admit(&pod_request(Operation::Create, Some(&l), Some(&pod)));
    assert!(d.allowed);
    assert_eq!(d.audit_annotations.len(), 2);
    assert!(d.audit_annotations[1].1.starts_with(
        "Failed to parse policy: [metadata.labels[pod-security.kubernetes.io/audit]: "
    ));
}

#[test]
fn pod_updates_evaluated_only_when_significant() {
    let l = labels(json!({"pod-security.kubernetes.io/enforce": "restricted"}));
    let old = escalating_pod();
    let mut relabeled = old.clone();
    relabeled["metadata"]["labels"] = json!({"x": "y"});
    let mut request = pod_request(Operation::Update, Some(&l), Some(&relabeled));
    request.old_object = Some(&old);
    let d = admit(&request);
    assert!(d.allowed);
    assert!(d.audit_annotations.is_empty());

    let mut new_image = old.clone();
    new_image["spec"]["containers"][0]["image"] = json!("nginx:2");
    request.object = Some(&new_image);
    assert!(!admit(&request).allowed);

    // An update without the old object cannot be decoded.
    request.old_object = None;
    let d = admit(&request);
    assert_eq!(d.denial, Some(Denial::BadRequest));
    assert_eq!(d.message.as_deref(), Some("failed to decode old object"));
    assert_eq!(d.status(&request).unwrap().code, 400);
}

#[test]
fn ephemeral_containers_subresource_is_evaluated() {
    let l = labels(json!({"pod-security.kubernetes.io/enforce": "baseline"}));
    let old = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let mut new = old.clone();
    new["spec"]["ephemeralContainers"] =
        json!([{"name": "debug", "image": "busybox", "securityContext": {"privileged": true}}]);
    let mut request = pod_request(Operation::Update, Some(&l), Some(&new));
    request.old_object = Some(&old);
    request.subresource = Some("ephemeralcontainers");
    let d = admit(&request);
    assert_eq!(
        d.message.as_deref(),
        Some(
            r#"violates PodSecurity "baseline:latest": privileged (container "debug" must not set securityContext.privileged=true)"#
        )
    );
    for ignored in [
        "status",
        "binding",
        "eviction",
        "exec",
        "attach",
        "log",
        "portforward",
        "proxy",
    ] {
        request.subresource = Some(ignored);
        let d = admit(&request);
        assert!(d.allowed && d.audit_annotations.is_empty(), "{ignored}");
    }
}

#[test]
fn other_operations_and_resources_are_not_looked_at() {
    let l = labels(json!({"pod-security.kubernetes.io/enforce": "restricted"}));
    let pod = escalating_pod();
    for op in [Operation::Delete, Operation::Connect] {
        assert_eq!(
            admit(&pod_request(op, Some(&l), Some(&pod))),
            Decision::allow()
        );
    }
    let mut request = pod_request(Operation::Create, Some(&l), Some(&pod));
    request.resource = "services";
    assert_eq!(admit(&request), Decision::allow());
}

#[test]
fn exemptions() {
    let l = labels(json!({"pod-security.kubernetes.io/enforce": "restricted"}));
    let pod = escalating_pod();
    let mut sandboxed = pod.clone();
    sandboxed["spec"]["runtimeClassName"] = json!("kata");
    let exemptions = Exemptions {
        usernames: vec!["system:serviceaccount:kube-system:replicaset-controller".into()],
        runtime_classes: vec!["kata".into()],
        namespaces: vec!["kube-system".into()],
    };
    let mut request = pod_request(Operation::Create, Some(&l), Some(&pod));
    request.exemptions = &exemptions;
    assert!(!admit(&request).allowed);

    request.namespace = "kube-system";
    let d = admit(&request);
    assert!(d.allowed);
    assert_eq!(
        annotations(&d),
        [("pod-security.kubernetes.io/exempt", "namespace")]
    );

    request.namespace = "ns";
    request.username = "system:serviceaccount:kube-system:replicaset-controller";
    assert_eq!(
        annotations(&admit(&request)),
        [("pod-security.kubernetes.io/exempt", "user")]
    );

    request.username = "alice";
    request.object = Some(&sandboxed);
    let d = admit(&request);
    assert!(d.allowed);
    assert_eq!(
        annotations(&d),
        [("pod-security.kubernetes.io/exempt", "runtimeClass")]
    );

    // Nothing is exempt by default.
    let d = admit(&pod_request(Operation::Create, Some(&l), Some(&sandboxed)));
    assert!(!d.allowed);
    let mut request = pod_request(Operation::Create, Some(&l), Some(&pod));
    request.namespace = "kube-system";
    assert!(!admit(&request).allowed);
}

#[test]
fn namespace_lookup_failures() {
    let pod = escalating_pod();
    let mut request = pod_request(Operation::Create, None, Some(&pod));
    request.namespace_lookup_error = Some("namespace \"ns\" not found");
    let d = admit(&request);
    assert_eq!(d.denial, Some(Denial::InternalError));
    let status = d.status(&request).unwrap();
    assert_eq!(status.code, 500);
    assert_eq!(
        status.message,
        r#"Internal error occurred: failed to lookup namespace "ns""#
    );
    assert_eq!(
        annotations(&d),
        [(
            "pod-security.kubernetes.io/error",
            r#"Internal error occurred: failed to lookup namespace "ns": namespace "ns" not found"#
        )]
    );

    let deployment = json!({"spec": {"template": {"spec": {}}}});
    let mut request = workload_request("apps", "deployments", None, &deployment);
    request.namespace_lookup_error = Some("boom");
    let d = admit(&request);
    assert!(d.allowed);
    assert_eq!(
        annotations(&d),
        [(
            "pod-security.kubernetes.io/error",
            r#"failed to lookup namespace "ns": boom"#
        )]
    );
}

fn workload_request<'a>(
    group: &'a str,
    resource: &'a str,
    ns_labels: Option<&'a Map<String, Value>>,
    object: &'a Value,
) -> Request<'a> {
    Request {
        group,
        resource,
        kind: "",
        name: "w",
        ..pod_request(Operation::Create, ns_labels, Some(object))
    }
}

#[test]
fn workloads_warn_and_audit_but_never_enforce() {
    let template = escalating_pod();
    let l = labels(
        json!({"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/audit": "restricted"}),
    );
    let objects = [
        (
            "apps",
            "deployments",
            json!({"spec": {"template": template}}),
        ),
        (
            "apps",
            "replicasets",
            json!({"spec": {"template": template}}),
        ),
        (
            "apps",
            "statefulsets",
            json!({"spec": {"template": template}}),
        ),
        (
            "apps",
            "daemonsets",
            json!({"spec": {"template": template}}),
        ),
        ("batch", "jobs", json!({"spec": {"template": template}})),
        (
            "batch",
            "cronjobs",
            json!({"spec": {"jobTemplate": {"spec": {"template": template}}}}),
        ),
        (
            "",
            "replicationcontrollers",
            json!({"spec": {"template": template}}),
        ),
        ("", "podtemplates", json!({"template": template})),
    ];
    let warning = format!(r#"would violate PodSecurity "restricted:latest": {ESCALATION}"#);
    for (group, resource, object) in &objects {
        let d = admit(&workload_request(group, resource, Some(&l), object));
        assert!(d.allowed, "{resource}");
        // warn defaults to the enforce level
        assert_eq!(d.warnings, std::slice::from_ref(&warning), "{resource}");
        assert_eq!(
            annotations(&d),
            [(
                "pod-security.kubernetes.io/audit-violations",
                warning.as_str()
            )],
            "{resource}"
        );
    }

    // Subresources (scale, status) are not evaluated.
    let (group, resource, object) = &objects[0];
    let mut request = workload_request(group, resource, Some(&l), object);
    request.subresource = Some("scale");
    assert_eq!(admit(&request), Decision::allow());

    // Only enforce set to a level no stricter than warn: nothing to do.
    let enforce_only = labels(
        json!({"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "privileged"}),
    );
    assert_eq!(
        admit(&workload_request(
            group,
            resource,
            Some(&enforce_only),
            object
        )),
        Decision::allow()
    );

    // Updates are evaluated whatever changed.
    let mut request = workload_request(group, resource, Some(&l), object);
    request.operation = Operation::Update;
    request.old_object = Some(object);
    assert_eq!(admit(&request).warnings.len(), 1);
}

#[test]
fn workloads_without_a_template() {
    let l = labels(json!({"pod-security.kubernetes.io/warn": "restricted"}));
    let rc = json!({"spec": {"replicas": 1}});
    assert_eq!(
        admit(&workload_request(
            "",
            "replicationcontrollers",
            Some(&l),
            &rc
        )),
        Decision::allow()
    );
    // An empty template is evaluated (and an empty pod passes).
    let deployment = json!({"spec": {}});
    let d = admit(&workload_request(
        "apps",
        "deployments",
        Some(&l),
        &deployment,
    ));
    assert!(d.allowed && d.warnings.is_empty() && d.audit_annotations.is_empty());
    let garbage = json!([1]);
    let d = admit(&workload_request("apps", "deployments", Some(&l), &garbage));
    assert!(d.allowed);
    assert_eq!(
        annotations(&d),
        [(
            "pod-security.kubernetes.io/error",
            "failed to decode object"
        )]
    );
}

#[test]
fn hostile_pod_objects() {
    let l = labels(json!({"pod-security.kubernetes.io/enforce": "restricted"}));
    let d = admit(&pod_request(Operation::Create, Some(&l), None));
    assert_eq!(d.message.as_deref(), Some("failed to decode object"));
    assert_eq!(
        annotations(&d),
        [(
            "pod-security.kubernetes.io/error",
            "failed to decode object"
        )]
    );
    for object in [json!("x"), json!(null), json!([])] {
        let d = admit(&pod_request(Operation::Create, Some(&l), Some(&object)));
        assert_eq!(d.message.as_deref(), Some("failed to decode pod"));
    }
    for object in [
        json!({}),
        json!({"spec": 1}),
        json!({"metadata": [], "spec": {"containers": [1, "x", null]}}),
    ] {
        let d = admit(&pod_request(Operation::Create, Some(&l), Some(&object)));
        let _ = d.status(&pod_request(Operation::Create, None, None));
    }
    // A pod with no containers passes every level.
    let empty = json!({});
    assert!(admit(&pod_request(Operation::Create, Some(&l), Some(&empty))).allowed);
}

#[test]
fn forbidden_status_names() {
    let d = Decision::deny(Denial::Forbidden, "x".into());
    let mut request = pod_request(Operation::Create, None, None);
    request.name = "";
    assert_eq!(d.status(&request).unwrap().message, "pods is forbidden: x");
    request.group = "apps";
    request.resource = "deployments";
    request.name = "d";
    assert_eq!(
        d.status(&request).unwrap().message,
        r#"deployments.apps "d" is forbidden: x"#
    );
}
