//! Namespace label validation, exempt-namespace warnings and checks of existing pods.

#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;
use crate::admission::admit;
use crate::level::Version;

fn namespace(name: &str, labels: Value) -> Value {
    json!({"metadata": {"name": name, "labels": labels}})
}

fn request<'a>(
    operation: Operation,
    url_namespace: &'a str,
    object: &'a Value,
    old: Option<&'a Value>,
    exemptions: &'a Exemptions,
) -> Request<'a> {
    Request {
        operation,
        group: "",
        resource: "namespaces",
        subresource: None,
        kind: "Namespace",
        name: name_of(object),
        namespace: url_namespace,
        namespace_labels: None,
        namespace_lookup_error: None,
        object: Some(object),
        old_object: old,
        username: "admin",
        groups: &[],
        exemptions,
        defaults: NamespacePolicy::default(),
    }
}

#[test]
fn invalid_labels_are_refused_on_create() {
    let ns = namespace(
        "team",
        json!({"pod-security.kubernetes.io/enforce": "strict", "pod-security.kubernetes.io/warn-version": "v2"}),
    );
    let exemptions = Exemptions::default();
    let r = request(Operation::Create, "", &ns, None, &exemptions);
    let d = admit(&r);
    assert!(!d.allowed);
    assert!(matches!(&d.denial, Some(Denial::Invalid(errors)) if errors.len() == 2));
    let status = d.status(&r).unwrap();
    assert_eq!(status.code, 422);
    assert_eq!(status.reason, "Invalid");
    assert_eq!(
        status.message,
        concat!(
            r#"Namespace "team" is invalid: ["#,
            r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted, "#,
            r#"metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "v2": must be "latest" or "v1.x"]"#
        )
    );
    let details = status.details.unwrap();
    assert_eq!(details["kind"], "Namespace");
    assert_eq!(
        details["causes"][0]["field"],
        "metadata.labels[pod-security.kubernetes.io/enforce]"
    );
    assert_eq!(details["causes"][0]["reason"], "FieldValueInvalid");
    assert_eq!(
        details["causes"][0]["message"],
        r#"Invalid value: "strict": must be one of privileged, baseline, restricted"#
    );

    let ok = namespace(
        "team",
        json!({"pod-security.kubernetes.io/enforce": "baseline"}),
    );
    assert_eq!(
        admit(&request(Operation::Create, "", &ok, None, &exemptions)),
        Decision::allow()
    );
}

#[test]
fn updates_keep_old_invalid_labels_but_refuse_new_ones() {
    let exemptions = Exemptions::default();
    let bad = namespace("n", json!({"pod-security.kubernetes.io/audit": "x"}));
    let mut relabeled = bad.clone();
    relabeled["metadata"]["labels"]["team"] = json!("a");
    let d = admit(&request(
        Operation::Update,
        "n",
        &relabeled,
        Some(&bad),
        &exemptions,
    ));
    assert!(d.allowed);

    let good = namespace("n", json!({}));
    let d = admit(&request(
        Operation::Update,
        "n",
        &bad,
        Some(&good),
        &exemptions,
    ));
    assert_eq!(d.denial.as_ref().map(Denial::code), Some(422));

    let worse = namespace("n", json!({"pod-security.kubernetes.io/audit": "y"}));
    let d = admit(&request(
        Operation::Update,
        "n",
        &worse,
        Some(&bad),
        &exemptions,
    ));
    assert_eq!(
        d.message.as_deref(),
        Some(
            r#"metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "y": must be one of privileged, baseline, restricted"#
        )
    );

    // Status updates and deletes are not looked at.
    let mut r = request(Operation::Update, "n", &worse, Some(&bad), &exemptions);
    r.subresource = Some("status");
    assert_eq!(admit(&r), Decision::allow());
    assert_eq!(
        admit(&request(Operation::Delete, "n", &worse, None, &exemptions)),
        Decision::allow()
    );

    // An update without the old object.
    let d = admit(&request(Operation::Update, "n", &good, None, &exemptions));
    assert_eq!(d.message.as_deref(), Some("failed to decode  old object"));
}

#[test]
fn when_existing_pods_are_checked() {
    let exemptions = Exemptions::default();
    let ns = |labels: Value| namespace("n", labels);
    let enforce = |level: &str| json!({"pod-security.kubernetes.io/enforce": level});
    let check = |old: &Value, new: &Value| {
        admit(&request(
            Operation::Update,
            "n",
            new,
            Some(old),
            &exemptions,
        ))
        .check_existing_pods
    };
    let restricted = LevelVersion::new(Level::Restricted, Version::Latest);
    let baseline = LevelVersion::new(Level::Baseline, Version::Latest);

    // Set or tightened: checked.
    assert_eq!(
        check(&ns(json!({})), &ns(enforce("restricted"))),
        Some(restricted)
    );
    assert_eq!(
        check(&ns(enforce("baseline")), &ns(enforce("restricted"))),
        Some(restricted)
    );
    assert_eq!(
        check(&ns(enforce("privileged")), &ns(enforce("baseline"))),
        Some(baseline)
    );
    // Version changed: checked even when the level is relaxed.
    let pinned = ns(
        json!({"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "v1.24"}),
    );
    assert_eq!(check(&pinned, &ns(enforce("baseline"))), Some(baseline));
    // Unchanged, relaxed, or privileged: not checked.
    assert_eq!(
        check(&ns(enforce("restricted")), &ns(enforce("restricted"))),
        None
    );
    assert_eq!(
        check(&ns(enforce("restricted")), &ns(enforce("baseline"))),
        None
    );
    assert_eq!(check(&ns(enforce("restricted")), &ns(json!({}))), None);
    assert_eq!(
        check(
            &ns(json!({})),
            &ns(json!({"pod-security.kubernetes.io/warn": "restricted"}))
        ),
        None
    );
}

#[test]
fn exempt_namespaces_get_a_warning() {
    let exemptions = Exemptions {
        namespaces: vec!["kube-system".into()],
        ..Exemptions::default()
    };
    let old = namespace("kube-system", json!({}));
    let new = namespace(
        "kube-system",
        json!({"pod-security.kubernetes.io/enforce": "baseline"}),
    );
    let d = admit(&request(
        Operation::Update,
        "kube-system",
        &new,
        Some(&old),
        &exemptions,
    ));
    assert!(d.allowed);
    assert_eq!(d.check_existing_pods, None);
    assert_eq!(
        d.warnings,
        [
            r#"namespace "kube-system" is exempt from Pod Security, and the policy (enforce=baseline:latest) will be ignored"#
        ]
    );
    // On create, when the request names the namespace.
    let d = admit(&request(
        Operation::Create,
        "kube-system",
        &new,
        None,
        &exemptions,
    ));
    assert_eq!(d.warnings.len(), 1);

    let all = namespace(
        "kube-system",
        json!({
            "pod-security.kubernetes.io/enforce-version": "v1.25",
            "pod-security.kubernetes.io/audit": "restricted",
            "pod-security.kubernetes.io/warn": "baseline",
        }),
    );
    let d = admit(&request(
        Operation::Create,
        "kube-system",
        &all,
        None,
        &exemptions,
    ));
    assert_eq!(
        d.warnings,
        [
            r#"namespace "kube-system" is exempt from Pod Security, and the policy (audit=restricted:latest, warn=baseline:latest) will be ignored"#
        ]
    );
    // A fully privileged policy, or the defaults, is not worth a warning.
    let privileged = namespace(
        "kube-system",
        json!({"pod-security.kubernetes.io/enforce": "privileged"}),
    );
    assert!(
        admit(&request(
            Operation::Create,
            "kube-system",
            &privileged,
            None,
            &exemptions
        ))
        .warnings
        .is_empty()
    );
    let defaults = NamespacePolicy::uniform(LevelVersion::new(Level::Baseline, Version::Latest));
    let policy = effective_policy(labels_of(&new), &defaults).0;
    assert_eq!(
        exempt_namespace_warning("kube-system", &policy, labels_of(&new), &defaults),
        None
    );
}

fn pod(name: &str, controller: Option<&str>, spec: Value) -> Value {
    let mut pod = json!({"metadata": {"name": name}, "spec": spec});
    if let Some(uid) = controller {
        pod["metadata"]["ownerReferences"] = json!([
            {"kind": "Node", "uid": "not-a-controller"},
            {"kind": "ReplicaSet", "uid": uid, "controller": true},
        ]);
    }
    pod
}

fn host_network() -> Value {
    json!({"hostNetwork": true, "containers": [{"name": "c", "image": "x"}]})
}

fn privileged() -> Value {
    json!({"containers": [{"name": "c", "image": "x", "securityContext": {"privileged": true}}]})
}

#[test]
fn existing_pod_warnings() {
    let pods = vec![
        pod("web-b", Some("rs1"), host_network()),
        pod("web-a", Some("rs1"), host_network()),
        pod("web-c", Some("rs1"), host_network()),
        pod("solo", None, privileged()),
        pod(
            "fine",
            None,
            json!({"containers": [{"name": "c", "image": "x"}]}),
        ),
        pod(
            "both",
            Some("rs2"),
            json!({"hostNetwork": true, "containers": [{"name": "c", "securityContext": {"privileged": true}}]}),
        ),
        pod("also-priv", None, privileged()),
    ];
    let policy = NamespacePolicy {
        enforce: LevelVersion::new(Level::Baseline, Version::Latest),
        ..NamespacePolicy::default()
    };
    let warnings = check_namespace_update("team", &policy, &pods, &Exemptions::default());
    assert_eq!(
        warnings,
        [
            r#"existing pods in namespace "team" violate the new PodSecurity enforce level "baseline:latest""#,
            "also-priv (and 1 other pod): privileged",
            "both: host namespaces, privileged",
            "web-a (and 2 other pods): host namespaces",
        ]
    );
    // Nothing violates: no warnings at all.
    let fine = [pod("fine", None, json!({}))];
    assert!(check_namespace_update("team", &policy, &fine, &Exemptions::default()).is_empty());
}

#[test]
fn existing_pods_are_bounded_and_prioritized() {
    // Three replicas of one controller and two standalone pods; only three are checked, and
    // the standalone pods come before the second and third replica.
    let pods = vec![
        pod("r1", Some("rs"), host_network()),
        pod("r2", Some("rs"), host_network()),
        pod("r3", Some("rs"), host_network()),
        pod("s1", None, privileged()),
        pod("s2", None, privileged()),
    ];
    let limits = PodCheckLimits {
        max_pods: 3,
        ..PodCheckLimits::default()
    };
    let enforce = LevelVersion::new(Level::Baseline, Version::V(30));
    let warnings = check_namespace_pods("team", enforce, &pods, &Exemptions::default(), &limits);
    assert_eq!(
        warnings,
        [
            "new PodSecurity enforce level only checked against the first 3 of 5 existing pods",
            r#"existing pods in namespace "team" violate the new PodSecurity enforce level "baseline:v1.30""#,
            "r1: host namespaces",
            "s1 (and 1 other pod): privileged",
        ]
    );

    // Pods with an exempt runtime class are skipped and not counted.
    let exemptions = Exemptions {
        runtime_classes: vec!["kata".into()],
        ..Exemptions::default()
    };
    let mut sandboxed = privileged();
    sandboxed["runtimeClassName"] = json!("kata");
    let pods = vec![pod("k", None, sandboxed), pod("s", None, privileged())];
    assert_eq!(
        check_namespace_pods("team", enforce, &pods, &exemptions, &limits),
        [
            r#"existing pods in namespace "team" violate the new PodSecurity enforce level "baseline:v1.30""#,
            "s: privileged",
        ]
    );

    // A zero time budget stops after the first pod.
    let limits = PodCheckLimits {
        max_pods: 3000,
        timeout: Duration::ZERO,
    };
    let warnings = check_namespace_pods("team", enforce, &pods, &Exemptions::default(), &limits);
    assert_eq!(
        warnings[0],
        "new PodSecurity enforce level only checked against the first 1 of 2 existing pods"
    );
}

#[test]
fn many_pods_within_default_limits() {
    let pods: Vec<Value> = (0..3005)
        .map(|i| pod(&format!("p{i:04}"), Some("rs"), host_network()))
        .collect();
    let limits = PodCheckLimits {
        timeout: Duration::from_secs(600),
        ..PodCheckLimits::default()
    };
    let enforce = LevelVersion::new(Level::Restricted, Version::Latest);
    let warnings = check_namespace_pods("big", enforce, &pods, &Exemptions::default(), &limits);
    assert_eq!(warnings.len(), 3);
    assert_eq!(
        warnings[0],
        "new PodSecurity enforce level only checked against the first 3000 of 3005 existing pods"
    );
    assert!(warnings[2].starts_with(
        "p0000 (and 2999 other pods): host namespaces, allowPrivilegeEscalation != false"
    ));
}

#[test]
fn hostile_namespaces_and_pods() {
    let exemptions = Exemptions::default();
    for object in [
        json!(1),
        json!({"metadata": {"labels": "x"}}),
        json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": 5}}}),
    ] {
        let _ = admit(&request(Operation::Create, "", &object, None, &exemptions));
        let _ = admit(&request(
            Operation::Update,
            "",
            &object,
            Some(&json!([])),
            &exemptions,
        ));
    }
    let pods = [
        json!(null),
        json!([]),
        json!({"metadata": {"ownerReferences": "x"}, "spec": 3}),
        json!({"metadata": {"name": 7, "ownerReferences": [{"controller": true}]}}),
    ];
    let warnings = check_namespace_pods(
        "n",
        LevelVersion::new(Level::Restricted, Version::Latest),
        &pods,
        &exemptions,
        &PodCheckLimits::default(),
    );
    assert!(warnings.is_empty());
}
