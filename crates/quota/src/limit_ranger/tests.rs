//! Tests of the LimitRanger plugin against Kubernetes' documented behaviour and texts.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::*;

fn lr(name: &str, limits: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns"}, "spec": {"limits": limits}})
}

fn pod(containers: Value) -> Value {
    json!({"metadata": {"name": "nginx", "namespace": "ns"}, "spec": {"containers": containers}})
}

fn annotation(pod: &Value) -> Option<&str> {
    pod["metadata"]["annotations"][LIMIT_RANGER_ANNOTATION].as_str()
}

#[test]
fn defaults_are_applied_and_annotated() {
    let ranges = [lr(
        "defaults",
        json!([{"type": "Container",
                "default": {"cpu": "500m", "memory": "512Mi"},
                "defaultRequest": {"cpu": "0.1", "memory": "256Mi"}}]),
    )];
    let mut p = pod(json!([{"name": "nginx", "image": "nginx"}]));
    admit_pod(&mut p, &ranges).unwrap();
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "500m", "memory": "512Mi"},
               "requests": {"cpu": "100m", "memory": "256Mi"}})
    );
    assert_eq!(
        annotation(&p),
        Some(
            "LimitRanger plugin set: cpu, memory request for container nginx; cpu, memory limit for container nginx"
        )
    );
}

#[test]
fn only_a_limit_means_the_request_equals_the_limit() {
    let ranges = [lr(
        "defaults",
        json!([{"type": "Container",
                "default": {"cpu": "1", "memory": "512Mi"},
                "defaultRequest": {"cpu": "500m", "memory": "256Mi"}}]),
    )];
    let mut p = pod(json!([{"name": "app", "resources": {"limits": {"cpu": "2"}}}]));
    admit_pod(&mut p, &ranges).unwrap();
    let res = &p["spec"]["containers"][0]["resources"];
    assert_eq!(res["requests"]["cpu"], json!("2"));
    assert_eq!(res["requests"]["memory"], json!("256Mi"));
    assert_eq!(res["limits"], json!({"cpu": "2", "memory": "512Mi"}));
    assert_eq!(
        annotation(&p),
        Some(
            "LimitRanger plugin set: memory request for container app; memory limit for container app"
        )
    );
}

#[test]
fn init_containers_and_untouched_pods() {
    let ranges = [lr(
        "d",
        json!([{"type": "Container", "defaultRequest": {"cpu": "100m"}}]),
    )];
    let mut p = json!({"spec": {
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
        "initContainers": [{"name": "init"}]
    }});
    mutate_pod(&mut p, &ranges);
    assert_eq!(
        annotation(&p),
        Some("LimitRanger plugin set: cpu request for init container init")
    );
    // Nothing to set: no annotation, and no empty `resources` maps appear.
    let mut full = pod(json!([{"name": "a", "resources": {"requests": {"cpu": "1"}}}]));
    let before = full.clone();
    mutate_pod(&mut full, &ranges);
    assert_eq!(full, before);
}

#[test]
fn later_limit_ranges_fill_only_what_is_still_missing() {
    let ranges = [
        lr("a", json!([{"type": "Container", "default": {"cpu": "1"}}])),
        lr(
            "b",
            json!([{"type": "Container", "default": {"cpu": "2", "memory": "1Gi"}}]),
        ),
    ];
    let mut p = pod(json!([{"name": "c"}]));
    mutate_pod(&mut p, &ranges);
    assert_eq!(
        p["spec"]["containers"][0]["resources"]["limits"],
        json!({"cpu": "1", "memory": "1Gi"})
    );
    assert_eq!(
        annotation(&p),
        Some(
            "LimitRanger plugin set: memory request for container c; memory limit for container c"
        )
    );
}

#[test]
fn container_min_max_errors_are_collected() {
    let ranges = [lr(
        "cpu-bounds",
        json!([{"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "2"}}]),
    )];
    // Stored LimitRanges are defaulted, so `max` also became the default limit; a pod
    // checked without the mutating phase shows the raw constraint errors.
    let p = pod(json!([{"name": "a", "resources": {"requests": {"cpu": "50m"}}}]));
    let err = validate_pod(&p, &ranges).unwrap_err();
    assert_eq!(err.limit_range, "cpu-bounds");
    assert_eq!(
        err.message(),
        "[minimum cpu usage per Container is 100m, but request is 50m, maximum cpu usage per Container is 2, but no limit is specified]"
    );
    assert_eq!(
        err.forbidden_message("", "pods", "nginx"),
        "pods \"nginx\" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m, maximum cpu usage per Container is 2, but no limit is specified]"
    );
    // With the mutating phase the default limit (the max) is filled in.
    let mut p = p;
    let err = admit_pod(&mut p, &ranges).unwrap_err();
    assert_eq!(
        err.message(),
        "minimum cpu usage per Container is 100m, but request is 50m"
    );
}

#[test]
fn pod_totals_are_checked_against_pod_items() {
    let ranges = [lr(
        "pod-max",
        json!([{"type": "Pod", "max": {"memory": "1Gi"}}]),
    )];
    let p = pod(json!([
        {"name": "a", "resources": {"limits": {"memory": "1Gi"}, "requests": {"memory": "512Mi"}}},
        {"name": "b", "resources": {"limits": {"memory": "1Gi"}, "requests": {"memory": "512Mi"}}}
    ]));
    assert_eq!(
        validate_pod(&p, &ranges).unwrap_err().message(),
        "maximum memory usage per Pod is 1Gi, but limit is 2Gi"
    );
    let init_heavy = json!({"spec": {
        "containers": [{"name": "a", "resources": {"limits": {"memory": "100Mi"}}}],
        "initContainers": [{"name": "i", "resources": {"limits": {"memory": "3Gi"}}}]
    }});
    assert_eq!(
        validate_pod(&init_heavy, &ranges).unwrap_err().message(),
        "maximum memory usage per Pod is 1Gi, but limit is 3Gi"
    );
}

#[test]
fn ratio_errors() {
    let ranges = [lr(
        "ratio",
        json!([{"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}}]),
    )];
    let p = pod(
        json!([{"name": "a", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "250m"}}}]),
    );
    assert_eq!(
        validate_pod(&p, &ranges).unwrap_err().message(),
        "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000"
    );
    let ok = pod(
        json!([{"name": "a", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}}}]),
    );
    assert!(validate_pod(&ok, &ranges).is_ok());
}

#[test]
fn the_first_offending_limit_range_answers() {
    let ranges = [
        lr(
            "fine",
            json!([{"type": "Container", "max": {"memory": "8Gi"}}]),
        ),
        lr(
            "strict",
            json!([{"type": "Container", "min": {"memory": "1Gi"}}]),
        ),
        lr(
            "stricter",
            json!([{"type": "Container", "min": {"memory": "2Gi"}}]),
        ),
    ];
    let p = pod(
        json!([{"name": "a", "resources": {"limits": {"memory": "512Mi"}, "requests": {"memory": "512Mi"}}}]),
    );
    let err = validate_pod(&p, &ranges).unwrap_err();
    assert_eq!(err.limit_range, "strict");
    assert_eq!(
        err.to_string(),
        "minimum memory usage per Container is 1Gi, but request is 512Mi"
    );
}

#[test]
fn claims_are_checked_against_claim_items() {
    let ranges = [lr(
        "storage",
        json!([{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "2Gi"}},
               {"type": "Container", "max": {"cpu": "1"}}]),
    )];
    let claim = |size: Value| json!({"spec": {"resources": {"requests": {"storage": size}}}});
    assert!(admit_pvc(&claim(json!("1Gi")), &ranges).is_ok());
    assert_eq!(
        admit_pvc(&claim(json!("5Gi")), &ranges)
            .unwrap_err()
            .message(),
        "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"
    );
    assert_eq!(
        admit_pvc(&claim(json!("500Mi")), &ranges)
            .unwrap_err()
            .message(),
        "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"
    );
    assert_eq!(
        admit_pvc(&json!({"spec": {}}), &ranges)
            .unwrap_err()
            .message(),
        "[minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified, maximum storage usage per PersistentVolumeClaim is 2Gi.  No request is specified]"
    );
}

#[test]
fn which_requests_are_looked_at() {
    assert!(applies(Operation::Create, "", "pods", ""));
    assert!(!applies(Operation::Update, "", "pods", ""));
    assert!(applies(Operation::Update, "", "pods", "resize"));
    assert!(!applies(Operation::Update, "", "pods", "status"));
    assert!(applies(Operation::Create, "", "persistentvolumeclaims", ""));
    assert!(applies(Operation::Update, "", "persistentvolumeclaims", ""));
    assert!(!applies(
        Operation::Update,
        "",
        "persistentvolumeclaims",
        "status"
    ));
    assert!(!applies(Operation::Delete, "", "pods", ""));
    assert!(!applies(Operation::Create, "apps", "deployments", ""));
    assert!(skips_update_of(
        &json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}})
    ));
    assert!(!skips_update_of(&json!({"metadata": {}})));
    let ranges = [lr(
        "x",
        json!([{"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}}]),
    )];
    assert!(has_limits_for(&ranges, "persistentvolumeclaims"));
    assert!(!has_limits_for(&ranges, "pods"));
}

#[test]
fn hostile_inputs_do_not_panic() {
    let ranges = [
        lr(
            "bad",
            json!([{"type": "Container", "min": {"cpu": "lots"}, "default": {"memory": "1x"},
                          "max": "not a map"}, "not an item", {"type": 7}]),
        ),
        json!("not a limit range"),
        json!({"spec": {"limits": "nope"}}),
    ];
    for mut p in [
        json!(null),
        json!("pod"),
        json!({"spec": {"containers": "nope"}}),
        json!({"spec": {"containers": [7, null, {"resources": "x"}, {"resources": {"limits": 3}}]}}),
        json!({"metadata": "x", "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "??"}}}]}}),
    ] {
        let _ = admit_pod(&mut p, &ranges);
        let _ = admit_pvc(&p, &ranges);
    }
    // A container whose own quantity does not parse is treated as lacking it.
    let strict = [lr("m", json!([{"type": "Container", "min": {"cpu": "1"}}]))];
    let p = pod(json!([{"name": "a", "resources": {"requests": {"cpu": "??"}}}]));
    assert_eq!(
        validate_pod(&p, &strict).unwrap_err().message(),
        "minimum cpu usage per Container is 1.  No request is specified"
    );
}
