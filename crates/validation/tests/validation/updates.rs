//! Update rules: immutable fields, what may change, status updates and update-time
//! preparation.

use crate::fixtures::{UID, admit, template, texts};
use kyb_validation::{
    ErrorKind, FieldError, prepare_for_status_update, prepare_for_update,
    validate_namespace_finalize, validate_status_update, validate_update,
};
use serde_json::{Value, json};

/// A stored object: defaulted, prepared, with the bookkeeping the engine adds.
fn stored(group: &str, version: &str, kind: &str, object: Value) -> Value {
    let mut o = object;
    admit(group, version, kind, &mut o);
    o["metadata"]["resourceVersion"] = "7".into();
    o["metadata"]["uid"] = UID.into();
    o["metadata"]["creationTimestamp"] = "2025-01-01T00:00:00Z".into();
    o
}

fn update(
    group: &str,
    version: &str,
    kind: &str,
    namespaced: bool,
    old: &Value,
    change: impl FnOnce(&mut Value),
) -> Vec<FieldError> {
    let mut new = old.clone();
    change(&mut new);
    kyb_validation::default_object(group, version, kind, &mut new);
    validate_update(group, version, kind, namespaced, &new, old)
}

fn stored_pod() -> Value {
    stored(
        "",
        "v1",
        "Pod",
        json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [{"name": "c", "image": "nginx:1.26"}]}}),
    )
}

#[test]
fn pod_allows_image_deadline_and_new_tolerations() {
    let old = stored_pod();
    let errs = update("", "v1", "Pod", true, &old, |p| {
        p["spec"]["containers"][0]["image"] = "nginx:1.27".into();
        p["spec"]["activeDeadlineSeconds"] = 600.into();
        p["spec"]["tolerations"] =
            json!([{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]);
        p["metadata"]["labels"] = json!({"tier": "web"});
    });
    assert_eq!(texts(&errs), Vec::<String>::new());
}

#[test]
fn pod_forbids_other_spec_changes() {
    let old = stored_pod();
    let errs = update("", "v1", "Pod", true, &old, |p| {
        p["spec"]["containers"][0]["name"] = "d".into()
    });
    assert_eq!(errs.len(), 1, "{:?}", texts(&errs));
    assert_eq!(
        (errs[0].kind, errs[0].field.as_str()),
        (ErrorKind::Forbidden, "spec")
    );
    assert!(
        errs[0].detail.starts_with(
            "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
        ),
        "{}",
        errs[0].detail
    );
    // The image may not be emptied.
    let errs = update("", "v1", "Pod", true, &old, |p| {
        p["spec"]["containers"][0]["image"] = "".into()
    });
    assert!(
        texts(&errs).contains(&"spec.containers[0].image: Required value".to_string()),
        "{:?}",
        texts(&errs)
    );
    // Tolerations may only be added.
    let mut tolerated = old.clone();
    tolerated["spec"]["tolerations"] = json!([{"key": "k", "operator": "Exists"}]);
    let errs = update("", "v1", "Pod", true, &tolerated, |p| {
        p["spec"]["tolerations"] = json!([])
    });
    assert_eq!(errs.len(), 1, "{:?}", texts(&errs));
    assert_eq!(errs[0].field, "spec.tolerations");
}

#[test]
fn metadata_identity_is_immutable() {
    let old = stored_pod();
    let errs = update("", "v1", "Pod", true, &old, |p| {
        p["metadata"]["name"] = "q".into()
    });
    assert_eq!(
        texts(&errs),
        vec!["metadata.name: Invalid value: \"q\": field is immutable"]
    );
    let errs = update("", "v1", "Pod", true, &old, |p| {
        p["metadata"]["namespace"] = "other".into()
    });
    assert_eq!(
        texts(&errs),
        vec!["metadata.namespace: Invalid value: \"other\": field is immutable"]
    );
    let errs = update("", "v1", "Pod", true, &old, |p| {
        p["metadata"]["uid"] = "another".into()
    });
    assert_eq!(
        texts(&errs),
        vec!["metadata.uid: Invalid value: \"another\": field is immutable"]
    );
}

#[test]
fn workload_selectors_are_immutable() {
    let old = stored(
        "apps",
        "v1",
        "Deployment",
        json!({"metadata": {"name": "d", "namespace": "default"}, "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": template("a")}}),
    );
    let errs = update("apps", "v1", "Deployment", true, &old, |d| {
        d["spec"]["replicas"] = 5.into();
        d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28".into();
    });
    assert_eq!(texts(&errs), Vec::<String>::new());
    let errs = update("apps", "v1", "Deployment", true, &old, |d| {
        d["spec"]["selector"] = json!({"matchLabels": {"app": "a", "v": "2"}});
        d["spec"]["template"]["metadata"]["labels"] = json!({"app": "a", "v": "2"});
    });
    assert_eq!(errs.len(), 1, "{:?}", texts(&errs));
    assert_eq!(
        (errs[0].kind, errs[0].field.as_str()),
        (ErrorKind::Invalid, "spec.selector")
    );
    assert_eq!(errs[0].detail, "field is immutable");

    let ss = stored(
        "apps",
        "v1",
        "StatefulSet",
        json!({"metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"matchLabels": {"app": "a"}}, "serviceName": "s", "template": template("a")}}),
    );
    let errs = update("apps", "v1", "StatefulSet", true, &ss, |s| {
        s["spec"]["replicas"] = 3.into()
    });
    assert_eq!(texts(&errs), Vec::<String>::new());
    let errs = update("apps", "v1", "StatefulSet", true, &ss, |s| {
        s["spec"]["serviceName"] = "other".into()
    });
    assert_eq!(
        texts(&errs),
        vec![
            "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
        ]
    );
}

#[test]
fn job_template_is_immutable_unless_suspended() {
    let old = stored(
        "batch",
        "v1",
        "Job",
        json!({"metadata": {"name": "j", "namespace": "default", "uid": UID}, "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
    );
    let errs = update("batch", "v1", "Job", true, &old, |j| {
        j["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:1.36".into();
    });
    assert_eq!(errs.len(), 1, "{:?}", texts(&errs));
    assert_eq!(
        (errs[0].kind, errs[0].field.as_str()),
        (ErrorKind::Invalid, "spec.template")
    );
    assert_eq!(errs[0].detail, "field is immutable");
    let errs = update("batch", "v1", "Job", true, &old, |j| {
        j["spec"]["completions"] = 3.into()
    });
    assert_eq!(errs.len(), 1, "{:?}", texts(&errs));
    assert_eq!(errs[0].field, "spec.completions");
    let errs = update("batch", "v1", "Job", true, &old, |j| {
        j["spec"]["suspend"] = true.into()
    });
    assert_eq!(texts(&errs), Vec::<String>::new());
}

#[test]
fn immutable_config_maps_and_secrets() {
    let old = stored(
        "",
        "v1",
        "ConfigMap",
        json!({"metadata": {"name": "cm", "namespace": "default"}, "data": {"k": "v"}, "immutable": true}),
    );
    let errs = update("", "v1", "ConfigMap", true, &old, |c| {
        c["data"]["k"] = "w".into()
    });
    assert_eq!(
        texts(&errs),
        vec!["data: Forbidden: field is immutable when `immutable` is set"]
    );
    let errs = update("", "v1", "ConfigMap", true, &old, |c| {
        c["immutable"] = false.into()
    });
    assert_eq!(
        texts(&errs),
        vec!["immutable: Forbidden: field is immutable when `immutable` is set"]
    );

    let secret = stored(
        "",
        "v1",
        "Secret",
        json!({"metadata": {"name": "s", "namespace": "default"}, "data": {"k": "dg=="}}),
    );
    let errs = update("", "v1", "Secret", true, &secret, |s| {
        s["data"]["k"] = "dw==".into()
    });
    assert_eq!(texts(&errs), Vec::<String>::new());
    let errs = update("", "v1", "Secret", true, &secret, |s| {
        s["type"] = "kubernetes.io/basic-auth".into();
    });
    assert!(
        texts(&errs).contains(
            &"type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable".to_string()
        ),
        "{:?}",
        texts(&errs)
    );
}

#[test]
fn service_cluster_ip_and_role_ref_are_immutable() {
    let mut svc = stored(
        "",
        "v1",
        "Service",
        json!({"metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}}),
    );
    // What the engine's allocator writes on create.
    svc["spec"]["clusterIP"] = "10.96.0.10".into();
    svc["spec"]["clusterIPs"] = json!(["10.96.0.10"]);
    svc["spec"]["ipFamilies"] = json!(["IPv4"]);
    svc["spec"]["ipFamilyPolicy"] = "SingleStack".into();
    let errs = update("", "v1", "Service", true, &svc, |s| {
        s["spec"]["ports"][0]["port"] = 8080.into()
    });
    assert_eq!(texts(&errs), Vec::<String>::new());
    let errs = update("", "v1", "Service", true, &svc, |s| {
        s["spec"]["clusterIP"] = "10.96.0.11".into();
        s["spec"]["clusterIPs"] = json!(["10.96.0.11"]);
    });
    assert!(!errs.is_empty());
    assert!(
        errs.iter().all(|e| e.field.starts_with("spec.clusterIP")),
        "{:?}",
        texts(&errs)
    );
    // A client that leaves the allocated IPs out keeps them (PrepareForUpdate).
    let mut new = svc.clone();
    new["spec"].as_object_mut().unwrap().remove("clusterIP");
    new["spec"].as_object_mut().unwrap().remove("clusterIPs");
    prepare_for_update("", "v1", "Service", &mut new, &svc);
    assert_eq!(new["spec"]["clusterIPs"], json!(["10.96.0.10"]));
    assert_eq!(
        texts(&validate_update("", "v1", "Service", true, &new, &svc)),
        Vec::<String>::new()
    );

    let rb = stored(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        json!({"metadata": {"name": "rb", "namespace": "default"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}, "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}),
    );
    let errs = update(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        true,
        &rb,
        |b| b["roleRef"]["name"] = "other".into(),
    );
    assert_eq!(errs.len(), 1, "{:?}", texts(&errs));
    assert_eq!(
        (
            errs[0].kind,
            errs[0].field.as_str(),
            errs[0].detail.as_str()
        ),
        (ErrorKind::Invalid, "roleRef", "cannot change roleRef")
    );
}

#[test]
fn persistent_volume_claim_spec_is_immutable() {
    let old = stored(
        "",
        "v1",
        "PersistentVolumeClaim",
        json!({"metadata": {"name": "c", "namespace": "default"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    );
    let errs = update("", "v1", "PersistentVolumeClaim", true, &old, |c| {
        c["spec"]["accessModes"] = json!(["ReadWriteMany"])
    });
    assert_eq!(errs.len(), 1, "{:?}", texts(&errs));
    assert_eq!(
        (errs[0].kind, errs[0].field.as_str()),
        (ErrorKind::Forbidden, "spec")
    );
    assert!(
        errs[0]
            .detail
            .starts_with("spec is immutable after creation except resources.requests"),
        "{}",
        errs[0].detail
    );
}

#[test]
fn status_updates() {
    let old = stored(
        "apps",
        "v1",
        "Deployment",
        json!({"metadata": {"name": "d", "namespace": "default"}, "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": template("a")}}),
    );
    // A status write cannot change the spec: preparation takes it from the stored object.
    let mut new = old.clone();
    new["spec"]["replicas"] = 9.into();
    new["status"] = json!({"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "updatedReplicas": 1, "observedGeneration": 1});
    prepare_for_status_update("apps", "v1", "Deployment", &mut new, &old);
    assert_eq!(new["spec"], old["spec"]);
    assert_eq!(new["status"]["readyReplicas"], 1);
    assert_eq!(
        texts(&validate_status_update(
            "apps",
            "v1",
            "Deployment",
            true,
            &new,
            &old
        )),
        Vec::<String>::new()
    );
    new["status"] = json!({"replicas": -1});
    assert_eq!(
        texts(&validate_status_update(
            "apps",
            "v1",
            "Deployment",
            true,
            &new,
            &old
        )),
        vec!["status.replicas: Invalid value: -1: must be greater than or equal to 0"]
    );
    // A main-resource write cannot change the status.
    let mut new = old.clone();
    new["status"] = json!({"replicas": 4});
    prepare_for_update("apps", "v1", "Deployment", &mut new, &old);
    assert_eq!(new["status"], old["status"]);

    let pod = stored_pod();
    let mut new = pod.clone();
    new["status"] = json!({"phase": "Running", "podIP": "10.244.0.5", "podIPs": [{"ip": "10.244.0.5"}], "qosClass": "BestEffort"});
    assert_eq!(
        texts(&validate_status_update("", "v1", "Pod", true, &new, &pod)),
        Vec::<String>::new()
    );
}

#[test]
fn namespace_finalize() {
    let old = stored(
        "",
        "v1",
        "Namespace",
        json!({"metadata": {"name": "team-a"}}),
    );
    let mut new = old.clone();
    new["spec"]["finalizers"] = json!([]);
    assert_eq!(
        texts(&validate_namespace_finalize(&new, &old)),
        Vec::<String>::new()
    );
    new["spec"]["finalizers"] = json!(["bad finalizer"]);
    let errs = validate_namespace_finalize(&new, &old);
    // Not a qualified name, and not a standard finalizer either.
    assert_eq!(errs.len(), 2, "{:?}", texts(&errs));
    assert!(errs.iter().all(|e| e.field == "spec.finalizers[0]"));
    assert_eq!(
        errs[1].detail,
        "name is neither a standard finalizer name nor is it fully qualified"
    );
}
