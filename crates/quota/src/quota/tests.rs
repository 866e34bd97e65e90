//! Tests of ResourceQuota admission and recalculation against Kubernetes' documented
//! behaviour and texts.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::*;

fn now() -> Timestamp {
    "2025-06-01T12:00:00Z".parse().unwrap()
}

/// A quota as the status keeper leaves it: `status.hard` a copy of `spec.hard`.
fn quota(name: &str, hard: Value, used: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns", "resourceVersion": "7"},
           "spec": {"hard": hard}, "status": {"hard": hard, "used": used}})
}

fn pod(name: &str, cpu: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns"},
           "spec": {"containers": [{"name": "nginx", "image": "nginx",
               "resources": {"requests": {"cpu": cpu, "memory": "64Mi"},
                             "limits": {"cpu": cpu, "memory": "64Mi"}}}]}})
}

fn create(
    quotas: &[Value],
    group: &str,
    resource: &str,
    obj: &Value,
) -> Result<Vec<QuotaUpdate>, QuotaError> {
    check_at(
        quotas,
        group,
        resource,
        Operation::Create,
        Some(obj),
        None,
        now(),
    )
}

#[test]
fn admits_and_returns_the_new_usage() {
    let q = quota(
        "compute",
        json!({"pods": "4", "requests.cpu": "2", "requests.memory": "1Gi"}),
        json!({"pods": "1", "requests.cpu": "500m", "requests.memory": "64Mi"}),
    );
    let updates = create(&[q], "", "pods", &pod("p", "500m")).unwrap();
    assert_eq!(updates.len(), 1);
    let u = &updates[0];
    assert_eq!(
        (
            u.namespace.as_str(),
            u.name.as_str(),
            u.resource_version.as_str()
        ),
        ("ns", "compute", "7")
    );
    assert_eq!(
        u.used_json(),
        json!({"pods": "2", "requests.cpu": "1", "requests.memory": "128Mi"})
    );
    let mut stored = quota("compute", json!({}), json!({}));
    u.apply_to(&mut stored);
    assert_eq!(stored["status"]["used"]["requests.cpu"], json!("1"));
}

#[test]
fn exceeded_quota_message() {
    let q = quota(
        "compute",
        json!({"pods": "2", "requests.cpu": "1", "requests.memory": "1Gi"}),
        json!({"pods": "2", "requests.cpu": "1", "requests.memory": "128Mi"}),
    );
    let err = create(&[q], "", "pods", &pod("p", "500m")).unwrap_err();
    assert_eq!(
        err,
        QuotaError::Forbidden(
            "exceeded quota: compute, requested: pods=1,requests.cpu=500m, used: pods=2,requests.cpu=1, limited: pods=2,requests.cpu=1".into()
        )
    );
    assert_eq!(err.code(), 403);
    assert_eq!(
        err.status_message("", "pods", "p"),
        "pods \"p\" is forbidden: exceeded quota: compute, requested: pods=1,requests.cpu=500m, used: pods=2,requests.cpu=1, limited: pods=2,requests.cpu=1"
    );
}

#[test]
fn must_specify_message() {
    let q = quota(
        "q",
        json!({"limits.cpu": "4", "limits.memory": "4Gi", "pods": "10"}),
        json!({"limits.cpu": "0", "limits.memory": "0", "pods": "0"}),
    );
    let p = json!({"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "nginx", "resources": {"requests": {"cpu": "1"}}}]}});
    assert_eq!(
        create(&[q], "", "pods", &p).unwrap_err(),
        QuotaError::Forbidden(
            "failed quota: q: must specify limits.cpu for: nginx; limits.memory for: nginx".into()
        )
    );
}

#[test]
fn status_unknown_until_the_status_keeper_ran() {
    let q = json!({"metadata": {"name": "q", "namespace": "ns"},
        "spec": {"hard": {"pods": "1", "services": "1"}},
        "status": {"hard": {"pods": "1", "services": "1"}, "used": {"services": "0"}}});
    assert_eq!(
        create(&[q], "", "pods", &pod("p", "1")).unwrap_err(),
        QuotaError::Forbidden("status unknown for quota: q, resources: pods".into())
    );
    // A quota with no status at all is not enforced yet (Kubernetes reads status.hard).
    let fresh = json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "0"}}});
    assert_eq!(
        create(&[fresh], "", "pods", &pod("p", "1")).unwrap(),
        vec![]
    );
}

#[test]
fn best_effort_scope() {
    let q = json!({"metadata": {"name": "be", "namespace": "ns"},
        "spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]},
        "status": {"hard": {"pods": "1"}, "used": {"pods": "1"}}});
    let best_effort = json!({"spec": {"containers": [{"name": "a"}]}});
    assert_eq!(
        create(std::slice::from_ref(&q), "", "pods", &best_effort)
            .unwrap_err()
            .message(),
        "exceeded quota: be, requested: pods=1, used: pods=1, limited: pods=1"
    );
    assert_eq!(
        create(std::slice::from_ref(&q), "", "pods", &pod("p", "1")).unwrap(),
        vec![]
    );
    assert!(matches_scopes(&q, "", "pods", &best_effort).unwrap());
    assert!(!matches_scopes(&q, "", "pods", &pod("p", "1")).unwrap());
    assert!(!matches_scopes(&q, "", "services", &json!({})).unwrap());
}

#[test]
fn terminating_scope() {
    let q = json!({"metadata": {"name": "t", "namespace": "ns"},
        "spec": {"hard": {"requests.cpu": "1"}, "scopes": ["Terminating"]},
        "status": {"hard": {"requests.cpu": "1"}, "used": {"requests.cpu": "0"}}});
    let mut job_pod = pod("j", "2");
    job_pod["spec"]["activeDeadlineSeconds"] = json!(600);
    assert_eq!(
        create(std::slice::from_ref(&q), "", "pods", &job_pod)
            .unwrap_err()
            .message(),
        "exceeded quota: t, requested: requests.cpu=2, used: requests.cpu=0, limited: requests.cpu=1"
    );
    assert_eq!(
        create(std::slice::from_ref(&q), "", "pods", &pod("p", "2")).unwrap(),
        vec![]
    );
}

#[test]
fn priority_class_scope_selector() {
    let q = json!({"metadata": {"name": "high", "namespace": "ns"},
        "spec": {"hard": {"pods": "10"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}},
        "status": {"hard": {"pods": "10"}, "used": {"pods": "3"}}});
    let mut high = pod("h", "1");
    high["spec"]["priorityClassName"] = json!("high");
    let updates = create(std::slice::from_ref(&q), "", "pods", &high).unwrap();
    assert_eq!(updates[0].used_json(), json!({"pods": "4"}));
    assert_eq!(
        create(std::slice::from_ref(&q), "", "pods", &pod("p", "1")).unwrap(),
        vec![]
    );

    let mut broken = q.clone();
    broken["spec"]["scopeSelector"]["matchExpressions"][0]["operator"] = json!("Gt");
    let err = create(&[broken], "", "pods", &high).unwrap_err();
    assert_eq!(err.code(), 500);
    assert_eq!(
        err,
        QuotaError::Internal(
            "error matching scopes of quota high, err: error on matching scope {PriorityClass Gt [high]}: failed to parse and convert selector: \"Gt\" is not a valid scope selector operator".into()
        )
    );
}

#[test]
fn object_count_of_any_resource() {
    let q = quota(
        "objects",
        json!({"count/deployments.apps": "2", "count/configmaps": "5", "configmaps": "5"}),
        json!({"count/deployments.apps": "2", "count/configmaps": "1", "configmaps": "1"}),
    );
    assert_eq!(
        create(
            std::slice::from_ref(&q),
            "apps",
            "deployments",
            &json!({"metadata": {"name": "d"}})
        )
        .unwrap_err()
        .message(),
        "exceeded quota: objects, requested: count/deployments.apps=1, used: count/deployments.apps=2, limited: count/deployments.apps=2"
    );
    let u = create(std::slice::from_ref(&q), "", "configmaps", &json!({})).unwrap();
    assert_eq!(
        u[0].used_json(),
        json!({"configmaps": "2", "count/configmaps": "2", "count/deployments.apps": "2"})
    );
    // Updates and deletes of counted objects do not touch the count.
    let upd = check_at(
        std::slice::from_ref(&q),
        "apps",
        "deployments",
        Operation::Update,
        Some(&json!({})),
        Some(&json!({"metadata": {"resourceVersion": "1"}})),
        now(),
    );
    assert_eq!(upd.unwrap(), vec![]);
    assert_eq!(
        usage("apps", "deployments", &json!({})).pretty(),
        "count/deployments.apps=1"
    );
    assert!(usage("", "events", &json!({})).is_empty());
}

#[test]
fn service_node_ports_on_update() {
    let q = quota(
        "svc",
        json!({"services": "10", "services.nodeports": "2"}),
        json!({"services": "3", "services.nodeports": "1"}),
    );
    let cluster_ip = json!({"metadata": {"name": "s", "resourceVersion": "5"},
        "spec": {"type": "ClusterIP", "ports": [{"port": 80}, {"port": 81}]}});
    let mut node_port = cluster_ip.clone();
    node_port["spec"]["type"] = json!("NodePort");
    let err = check_at(
        std::slice::from_ref(&q),
        "",
        "services",
        Operation::Update,
        Some(&node_port),
        Some(&cluster_ip),
        now(),
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        "exceeded quota: svc, requested: services.nodeports=2, used: services.nodeports=1, limited: services.nodeports=2"
    );
    // Going back to ClusterIP frees nothing at admission (no negative delta)...
    let back = check_at(
        std::slice::from_ref(&q),
        "",
        "services",
        Operation::Update,
        Some(&cluster_ip),
        Some(&node_port),
        now(),
    )
    .unwrap();
    assert_eq!(back, vec![]);
    // ...and creating a NodePort service with one port fits.
    let mut one_port = node_port.clone();
    one_port["spec"]["ports"] = json!([{"port": 80}]);
    let u = create(&[q], "", "services", &one_port).unwrap();
    assert_eq!(
        u[0].used_json(),
        json!({"services": "4", "services.nodeports": "2"})
    );
}

#[test]
fn claims_by_storage_class() {
    let q = quota(
        "storage",
        json!({"requests.storage": "10Gi", "gold.storageclass.storage.k8s.io/requests.storage": "1Gi",
               "persistentvolumeclaims": "5"}),
        json!({"requests.storage": "1Gi", "gold.storageclass.storage.k8s.io/requests.storage": "0",
               "persistentvolumeclaims": "1"}),
    );
    let claim = |class: &str, size: &str| {
        json!({"metadata": {"name": "c", "resourceVersion": "3"},
        "spec": {"storageClassName": class, "resources": {"requests": {"storage": size}}}})
    };
    assert_eq!(
        create(
            std::slice::from_ref(&q),
            "",
            "persistentvolumeclaims",
            &claim("gold", "2Gi")
        )
        .unwrap_err()
        .message(),
        "exceeded quota: storage, requested: gold.storageclass.storage.k8s.io/requests.storage=2Gi, used: gold.storageclass.storage.k8s.io/requests.storage=0, limited: gold.storageclass.storage.k8s.io/requests.storage=1Gi"
    );
    let u = create(
        std::slice::from_ref(&q),
        "",
        "persistentvolumeclaims",
        &claim("silver", "2Gi"),
    )
    .unwrap();
    assert_eq!(
        u[0].used_json(),
        json!({"requests.storage": "3Gi", "gold.storageclass.storage.k8s.io/requests.storage": "0",
               "persistentvolumeclaims": "2"})
    );
    // Expanding a claim charges only the growth.
    let grown = check_at(
        std::slice::from_ref(&q),
        "",
        "persistentvolumeclaims",
        Operation::Update,
        Some(&claim("silver", "3Gi")),
        Some(&claim("silver", "2Gi")),
        now(),
    )
    .unwrap();
    assert_eq!(grown[0].used_json()["requests.storage"], json!("2Gi"));
}

#[test]
fn pod_resize_charges_the_delta() {
    let q = quota(
        "compute",
        json!({"requests.cpu": "4", "pods": "10"}),
        json!({"requests.cpu": "1", "pods": "1"}),
    );
    let mut old = pod("p", "1");
    old["metadata"]["resourceVersion"] = json!("9");
    let bigger = {
        let mut p = old.clone();
        p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("2500m");
        p["spec"]["containers"][0]["resources"]["limits"]["cpu"] = json!("2500m");
        p
    };
    let u = check_at(
        std::slice::from_ref(&q),
        "",
        "pods",
        Operation::Update,
        Some(&bigger),
        Some(&old),
        now(),
    )
    .unwrap();
    assert_eq!(
        u[0].used_json(),
        json!({"requests.cpu": "2500m", "pods": "1"})
    );
    assert!(quota_update_is_stable(&q, &bigger, &old));
    // Without the old object Kubernetes refuses the update.
    assert_eq!(
        check_at(
            &[q],
            "",
            "pods",
            Operation::Update,
            Some(&bigger),
            None,
            now()
        )
        .unwrap_err()
        .message(),
        "unable to get previous usage since prior version of object was not found"
    );
}

/// `check` is a pure function of its inputs: the same call gives the same answer.
fn quota_update_is_stable(q: &Value, new: &Value, old: &Value) -> bool {
    let a = check_at(
        std::slice::from_ref(q),
        "",
        "pods",
        Operation::Update,
        Some(new),
        Some(old),
        now(),
    );
    let b = check_at(
        std::slice::from_ref(q),
        "",
        "pods",
        Operation::Update,
        Some(new),
        Some(old),
        now(),
    );
    a == b
}

#[test]
fn all_matching_quotas_must_admit() {
    let roomy = quota("a-roomy", json!({"pods": "10"}), json!({"pods": "0"}));
    let tight = quota("b-tight", json!({"pods": "1"}), json!({"pods": "1"}));
    let unrelated = quota("c-svc", json!({"services": "1"}), json!({"services": "0"}));
    assert_eq!(
        create(
            &[roomy.clone(), tight, unrelated.clone()],
            "",
            "pods",
            &pod("p", "1")
        )
        .unwrap_err()
        .message(),
        "exceeded quota: b-tight, requested: pods=1, used: pods=1, limited: pods=1"
    );
    let u = create(&[roomy, unrelated], "", "pods", &pod("p", "1")).unwrap();
    assert_eq!(u.len(), 1);
    assert_eq!(u[0].name, "a-roomy");
}

#[test]
fn which_writes_quota_looks_at() {
    assert!(quota_handles_all());
    let q = quota(
        "q",
        json!({"pods": "1", "count/deployments.apps": "1"}),
        json!({}),
    );
    assert!(may_affect(std::slice::from_ref(&q), "", "pods"));
    assert!(may_affect(std::slice::from_ref(&q), "apps", "deployments"));
    assert!(!may_affect(std::slice::from_ref(&q), "", "services"));
    assert!(!may_affect(&[], "", "pods"));
    assert_eq!(
        affected_resources(&q).into_iter().collect::<Vec<_>>(),
        vec![
            GroupResource::new("", "pods"),
            GroupResource::new("apps", "deployments")
        ]
    );
    assert_eq!(
        tracked_resources(&q).into_iter().collect::<Vec<_>>(),
        vec!["count/deployments.apps", "pods"]
    );
}

fn quota_handles_all() -> bool {
    handles(Operation::Create, "", "pods", "")
        && handles(Operation::Update, "", "pods", "resize")
        && !handles(Operation::Update, "", "pods", "")
        && !handles(Operation::Update, "", "pods", "status")
        && handles(Operation::Update, "", "services", "")
        && handles(Operation::Create, "apps", "deployments", "")
        && !handles(Operation::Delete, "apps", "deployments", "")
        && !handles(Operation::Create, "", "events", "")
}

#[test]
fn recalculation_after_delete() {
    let q = json!({"metadata": {"name": "compute", "namespace": "ns"},
        "spec": {"hard": {"pods": "10", "requests.cpu": "4", "count/pods": "10", "limits.memory": "1Gi",
                          "services": "5", "example.com/widgets": "3"}},
        "status": {"hard": {"pods": "10"}, "used": {"pods": "3", "requests.cpu": "3", "example.com/widgets": "2"}}});
    let mut finished = pod("done", "1");
    finished["status"] = json!({"phase": "Succeeded"});
    let pods = [pod("a", "500m"), finished];
    let mut calls = Vec::new();
    let used = recalculate_at(
        &q,
        |g: &str, r: &str| {
            calls.push(format!("{g}/{r}"));
            if r == "pods" {
                pods.iter().collect::<Vec<_>>()
            } else {
                Vec::new()
            }
        },
        now(),
    );
    assert_eq!(calls, vec!["/pods", "/services"]);
    assert_eq!(
        used.pretty(),
        "count/pods=2,limits.memory=64Mi,pods=1,requests.cpu=500m,services=0"
    );
    let st = status(&q, &used);
    assert_eq!(
        st,
        json!({
            "hard": {"pods": "10", "requests.cpu": "4", "count/pods": "10", "limits.memory": "1Gi",
                     "services": "5", "example.com/widgets": "3"},
            "used": {"pods": "1", "requests.cpu": "500m", "count/pods": "2", "limits.memory": "64Mi",
                     "services": "0", "example.com/widgets": "2"}
        })
    );
    assert!(status_changed(&q, &st));
    let mut synced = q.clone();
    synced["status"] = st.clone();
    assert!(!status_changed(&synced, &st));
    let mut stale = synced.clone();
    stale["status"]["used"]["requests.cpu"] = json!("1");
    assert!(status_changed(&stale, &st));
    // A quota with nothing to track has nothing to write.
    let empty = json!({"metadata": {"name": "e"}, "spec": {}});
    assert_eq!(status(&empty, &ResourceList::new()), json!({}));
    assert!(!status_changed(
        &empty,
        &status(&empty, &ResourceList::new())
    ));
}

#[test]
fn recalculation_respects_scopes() {
    let q = json!({"metadata": {"name": "be"},
        "spec": {"hard": {"pods": "5"}, "scopes": ["BestEffort"]}});
    let objects = [
        json!({"spec": {"containers": [{"name": "a"}]}}),
        pod("b", "1"),
    ];
    let used = recalculate_at(&q, |_: &str, _: &str| objects.iter(), now());
    assert_eq!(used.pretty(), "pods=1");
    let none = recalculate_at(
        &json!({"spec": {"hard": {"pods": "5"}}}),
        |_: &str, _: &str| Vec::<Value>::new(),
        now(),
    );
    assert_eq!(none.pretty(), "pods=0");
}

#[test]
fn hostile_inputs_do_not_panic() {
    let bad_quotas = [
        json!(null),
        json!("quota"),
        json!({"status": {"hard": {"pods": "lots"}, "used": {"pods": []}}}),
        json!({"spec": {"scopes": "BestEffort", "scopeSelector": {"matchExpressions": [7, {"values": "x"}]}},
               "status": {"hard": {"pods": "1"}, "used": {"pods": "zero"}}}),
        json!({"status": {"hard": "nope", "used": 5}}),
    ];
    let objects = [
        json!(null),
        json!(7),
        json!({"spec": {"containers": [{"resources": {"requests": {"cpu": "-1"}}}, 3]}}),
        json!({"spec": {"containers": [{"resources": {"requests": {"cpu": "1e999999999"}}}]}}),
        json!({"metadata": {"deletionTimestamp": "2025-01-01T00:00:00Z", "deletionGracePeriodSeconds": i64::MAX},
               "spec": {"ports": "x", "type": 3, "resources": {"requests": {"storage": {}}}}}),
    ];
    for o in &objects {
        for (g, r) in [
            ("", "pods"),
            ("", "services"),
            ("", "persistentvolumeclaims"),
            ("x", "y"),
        ] {
            for op in [Operation::Create, Operation::Update] {
                let _ = check_at(&bad_quotas, g, r, op, Some(o), Some(o), now());
            }
            let _ = usage_at(g, r, o, now());
            for q in &bad_quotas {
                let _ = matches_scopes(q, g, r, o);
                let _ = recalculate_at(q, |_: &str, _: &str| objects.iter(), now());
                let _ = status(q, &ResourceList::new());
            }
        }
    }
    // A quantity that does not parse in status.used makes the quota unusable until resynced.
    let q = json!({"metadata": {"name": "q"}, "status": {"hard": {"pods": "1"}, "used": {"pods": "zero"}}});
    assert_eq!(
        create(&[q], "", "pods", &pod("p", "1"))
            .unwrap_err()
            .message(),
        "status unknown for quota: q, resources: pods"
    );
    // A negative request is refused (validation normally stops it first).
    let q = quota(
        "q",
        json!({"requests.cpu": "1"}),
        json!({"requests.cpu": "0"}),
    );
    assert_eq!(
        create(&[q], "", "pods", &pod("p", "-1"))
            .unwrap_err()
            .message(),
        "quota usage is negative for resource(s): cpu,limits.cpu,requests.cpu"
    );
}
