//! The scenarios of Kubernetes' server-side apply documentation
//! (<https://kubernetes.io/docs/reference/using-api/server-side-apply/>), one test
//! each: field management and conflicts, the three ways out of a conflict, updates,
//! transferring ownership, merge strategies of lists, maps and structs, reset fields
//! of subresources, kinds without a schema and changes of a field's topology.

use crate::support::{
    CONFIG_MAP, DEPLOYMENT, Store, at, config_map, entries, entry, fields, managers, nginx,
};
use kyb_apply::{ApplyError, Conflict, conflict_message};
use serde_json::{Value, json};

const WIDGET: &str = "com.example.v1.Widget";

/// The documentation's ConfigMap: label `test-label: test`, `data.key`.
fn doc_cm(value: &str) -> Value {
    let mut cm = config_map(json!({ "key": value }));
    cm["metadata"]["labels"] = json!({"test-label": "test"});
    cm
}

/// A ConfigMap configuration without `data`.
fn cm_without_data() -> Value {
    let mut cm = config_map(json!({}));
    cm.as_object_mut().unwrap().remove("data");
    cm
}

/// A partial Deployment configuration: just `spec`.
fn deployment(spec: Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx-deployment"},
        "spec": spec
    })
}

/// A partial Deployment configuration setting the pod template's spec.
fn pod_template(pod_spec: Value) -> Value {
    deployment(json!({"template": {"spec": pod_spec}}))
}

fn widget(spec: Value) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": spec
    })
}

fn conflict(
    manager: &str,
    api_version: Option<&str>,
    subresource: Option<&str>,
    field: &str,
) -> Conflict {
    Conflict {
        manager: manager.into(),
        api_version: api_version.map(Into::into),
        subresource: subresource.map(Into::into),
        field: field.into(),
    }
}

fn conflicts_of(err: &ApplyError) -> &[Conflict] {
    match err {
        ApplyError::Conflicts(c) => c,
        other => panic!("expected conflicts, got {other:?}"),
    }
}

fn container_names(obj: &Value) -> Vec<String> {
    obj.pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .map(|c| c["name"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn first_apply_creates_the_object_with_one_apply_entry() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    let obj = s
        .apply("kubectl", doc_cm("some value"), false)
        .unwrap()
        .clone();
    assert_eq!(obj["data"], json!({"key": "some value"}));
    assert_eq!(obj["metadata"]["labels"], json!({"test-label": "test"}));
    assert_eq!(obj["metadata"]["name"], "test-cm");
    // Exactly the record the documentation shows.
    assert_eq!(
        obj["metadata"]["managedFields"],
        json!([{
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:key": {}}, "f:metadata": {"f:labels": {"f:test-label": {}}}},
            "manager": "kubectl",
            "operation": "Apply",
            "time": at(1)
        }])
    );
}

#[test]
fn reapplying_the_same_configuration_changes_nothing() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    let first = s
        .apply("kubectl", doc_cm("some value"), false)
        .unwrap()
        .clone();
    let second = s
        .apply("kubectl", doc_cm("some value"), false)
        .unwrap()
        .clone();
    assert_eq!(s.now(), at(2));
    // The entry keeps the time of the write that changed something.
    assert_eq!(first, second);
    assert_eq!(entry(&second, "kubectl", "Apply").unwrap()["time"], at(1));
    // A change moves the time.
    let third = s
        .apply("kubectl", doc_cm("other value"), false)
        .unwrap()
        .clone();
    assert_eq!(entry(&third, "kubectl", "Apply").unwrap()["time"], at(3));
}

#[test]
fn another_applier_setting_a_different_value_conflicts() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("kubectl", doc_cm("some value"), false).unwrap();
    let before = s.get().clone();
    let err = s.apply("other", doc_cm("other value"), false).unwrap_err();
    assert_eq!(err.code(), 409);
    assert_eq!(err.reason(), "Conflict");
    assert_eq!(
        conflicts_of(&err),
        [conflict("kubectl", None, None, ".data.key")]
    );
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "kubectl": .data.key"#
    );
    assert_eq!(err.to_string(), err.message());
    assert_eq!(
        conflicts_of(&err)[0].message(),
        r#"conflict with "kubectl""#
    );
    assert_eq!(Conflict::CAUSE_REASON, "FieldManagerConflict");
    // A refused apply changes nothing.
    assert_eq!(s.get(), &before);
}

#[test]
fn every_conflicting_field_is_reported() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("kubectl", doc_cm("some value"), false).unwrap();
    s.update("kube-controller-manager", None, &[], |o| {
        o["data"]["other"] = json!("x")
    });
    let mut config = doc_cm("changed");
    config["metadata"]["labels"]["test-label"] = json!("prod");
    config["data"]["other"] = json!("y");
    let err = s.apply("third", config, false).unwrap_err();
    let found = conflicts_of(&err);
    assert_eq!(found.len(), 3);
    assert!(found.contains(&conflict(
        "kube-controller-manager",
        Some("v1"),
        None,
        ".data.other"
    )));
    assert!(found.contains(&conflict("kubectl", None, None, ".data.key")));
    assert!(found.contains(&conflict(
        "kubectl",
        None,
        None,
        ".metadata.labels.test-label"
    )));
    assert_eq!(
        err.message(),
        "Apply failed with 3 conflicts: conflicts with \"kube-controller-manager\" using v1:\n- .data.other\n\
         conflicts with \"kubectl\":\n- .data.key\n- .metadata.labels.test-label"
    );
    assert_eq!(conflict_message(found), err.message());
}

#[test]
fn the_same_value_shares_ownership() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("kubectl", doc_cm("some value"), false).unwrap();
    let obj = s
        .apply("other", doc_cm("some value"), false)
        .unwrap()
        .clone();
    let both = json!({"f:data": {"f:key": {}}, "f:metadata": {"f:labels": {"f:test-label": {}}}});
    assert_eq!(fields(&obj, "kubectl", "Apply"), both);
    assert_eq!(fields(&obj, "other", "Apply"), both);
    // Nothing changed, so the new entry has no time, as in Kubernetes, and entries
    // without a time sort first.
    assert!(entry(&obj, "other", "Apply").unwrap().get("time").is_none());
    assert_eq!(
        managers(&obj),
        [
            ("other".to_owned(), "Apply".to_owned()),
            ("kubectl".to_owned(), "Apply".to_owned())
        ]
    );
    // From now on, neither may change the value alone.
    let err = s.apply("kubectl", doc_cm("new value"), false).unwrap_err();
    assert_eq!(
        conflicts_of(&err),
        [conflict("other", None, None, ".data.key")]
    );
    let err = s.apply("other", doc_cm("new value"), false).unwrap_err();
    assert_eq!(
        conflicts_of(&err),
        [conflict("kubectl", None, None, ".data.key")]
    );
}

#[test]
fn force_overwrites_and_takes_ownership() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("kubectl", doc_cm("some value"), false).unwrap();
    let obj = s
        .apply("other", config_map(json!({"key": "other value"})), true)
        .unwrap()
        .clone();
    assert_eq!(obj["data"]["key"], "other value");
    assert_eq!(
        fields(&obj, "other", "Apply"),
        json!({"f:data": {"f:key": {}}})
    );
    assert_eq!(
        fields(&obj, "kubectl", "Apply"),
        json!({"f:metadata": {"f:labels": {"f:test-label": {}}}})
    );
    // The loser keeps its time: it did not write.
    assert_eq!(entry(&obj, "kubectl", "Apply").unwrap()["time"], at(1));
    // A manager left without fields loses its entry.
    let mut labels = cm_without_data();
    labels["metadata"]["labels"] = json!({"test-label": "prod"});
    let obj = s.apply("third", labels, true).unwrap().clone();
    assert_eq!(
        managers(&obj),
        [
            ("other".to_owned(), "Apply".to_owned()),
            ("third".to_owned(), "Apply".to_owned())
        ]
    );
    // The forced value now conflicts for the previous owner.
    let err = s.apply("kubectl", doc_cm("some value"), false).unwrap_err();
    assert_eq!(conflicts_of(&err).len(), 2);
}

#[test]
fn a_dropped_field_nobody_else_owns_is_removed() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    let mut config = config_map(json!({"a": "1", "b": "2"}));
    config["metadata"]["labels"] = json!({"x": "1", "y": "2"});
    s.apply("kubectl", config, false).unwrap();
    let mut config = config_map(json!({"a": "1"}));
    config["metadata"]["labels"] = json!({"x": "1"});
    let obj = s.apply("kubectl", config, false).unwrap().clone();
    assert_eq!(obj["data"], json!({"a": "1"}));
    assert_eq!(obj["metadata"]["labels"], json!({"x": "1"}));
    assert_eq!(
        fields(&obj, "kubectl", "Apply"),
        json!({"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:x": {}}}})
    );
    // Dropping everything leaves the object without the maps and without the entry.
    let obj = s
        .apply("kubectl", cm_without_data(), false)
        .unwrap()
        .clone();
    assert!(obj.get("data").is_none_or(Value::is_null), "{obj}");
    assert!(
        obj["metadata"].get("labels").is_none_or(Value::is_null),
        "{obj}"
    );
    assert_eq!(entries(&obj), Vec::<Value>::new());
    assert_eq!(obj["metadata"]["name"], "test-cm");
}

#[test]
fn a_dropped_field_another_applier_owns_stays() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("kubectl", config_map(json!({"a": "1", "b": "2"})), false)
        .unwrap();
    s.apply("other", config_map(json!({"b": "2"})), false)
        .unwrap();
    let obj = s
        .apply("kubectl", config_map(json!({"a": "1"})), false)
        .unwrap()
        .clone();
    assert_eq!(obj["data"], json!({"a": "1", "b": "2"}));
    assert_eq!(
        fields(&obj, "kubectl", "Apply"),
        json!({"f:data": {"f:a": {}}})
    );
    assert_eq!(
        fields(&obj, "other", "Apply"),
        json!({"f:data": {"f:b": {}}})
    );
    // When the last owner drops it too, it goes.
    let obj = s.apply("other", cm_without_data(), false).unwrap().clone();
    assert_eq!(obj["data"], json!({"a": "1"}));
    assert_eq!(managers(&obj), [("kubectl".to_owned(), "Apply".to_owned())]);
}

#[test]
fn a_dropped_field_an_updater_changed_stays() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("kubectl", config_map(json!({"a": "1", "b": "2"})), false)
        .unwrap();
    s.update("editor", None, &[], |o| o["data"]["b"] = json!("3"));
    let obj = s
        .apply("kubectl", config_map(json!({"a": "1"})), false)
        .unwrap()
        .clone();
    assert_eq!(obj["data"], json!({"a": "1", "b": "3"}));
    assert_eq!(
        fields(&obj, "editor", "Update"),
        json!({"f:data": {"f:b": {}}})
    );
}

#[test]
fn fields_an_applier_never_applied_are_never_pruned() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("kubectl", config_map(json!({"a": "1"})), false)
        .unwrap();
    let applier_only = s.get()["metadata"]["managedFields"].clone();
    // Added by an update, then left without an owner by managed fields sent back
    // without the updater's entry.
    s.update("editor", None, &[], |o| o["data"]["c"] = json!("3"));
    let obj = s
        .update("restorer", None, &[], |o| {
            o["metadata"]["managedFields"] = applier_only.clone()
        })
        .clone();
    assert_eq!(obj["metadata"]["managedFields"], applier_only);
    s.apply("kubectl", config_map(json!({"a": "1", "b": "2"})), false)
        .unwrap();
    let obj = s
        .apply("kubectl", config_map(json!({"a": "1"})), false)
        .unwrap()
        .clone();
    // b, which the applier dropped, goes; c, which it never applied, stays.
    assert_eq!(obj["data"], json!({"a": "1", "c": "3"}));
    assert_eq!(managers(&obj), [("kubectl".to_owned(), "Apply".to_owned())]);
}

#[test]
fn out_of_a_conflict_by_sharing_or_giving_up() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply(
        "alice",
        config_map(json!({"key": "v1", "mine": "a"})),
        false,
    )
    .unwrap();
    // Become shared manager: match the live value.
    assert!(
        s.apply("bob", config_map(json!({"key": "v2"})), false)
            .is_err()
    );
    s.apply("bob", config_map(json!({"key": "v1", "his": "b"})), false)
        .unwrap();
    assert_eq!(
        fields(s.get(), "bob", "Apply"),
        json!({"f:data": {"f:his": {}, "f:key": {}}})
    );
    // Give up the claim: leave the field out; the value stays for the other owner.
    let obj = s
        .apply("bob", config_map(json!({"his": "b"})), false)
        .unwrap()
        .clone();
    assert_eq!(obj["data"], json!({"key": "v1", "mine": "a", "his": "b"}));
    assert_eq!(
        fields(&obj, "bob", "Apply"),
        json!({"f:data": {"f:his": {}}})
    );
    assert_eq!(
        fields(&obj, "alice", "Apply"),
        json!({"f:data": {"f:key": {}, "f:mine": {}}})
    );
}

#[test]
fn an_update_takes_ownership_and_a_later_apply_conflicts() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("kubectl", doc_cm("some value"), false).unwrap();
    let obj = s
        .update("kube-controller-manager", None, &[], |o| {
            o["data"]["key"] = json!("new value")
        })
        .clone();
    // The documentation's object with two managers.
    assert_eq!(
        obj["metadata"]["managedFields"],
        json!([
            {
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {"f:test-label": {}}}},
                "manager": "kubectl",
                "operation": "Apply",
                "time": at(1)
            },
            {
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {"f:key": {}}},
                "manager": "kube-controller-manager",
                "operation": "Update",
                "time": at(2)
            }
        ])
    );
    let err = s.apply("kubectl", doc_cm("some value"), false).unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "kube-controller-manager" using v1: .data.key"#
    );
    assert_eq!(
        conflicts_of(&err),
        [conflict(
            "kube-controller-manager",
            Some("v1"),
            None,
            ".data.key"
        )]
    );
    // Forcing takes it back; the updater owned nothing else and disappears.
    let obj = s
        .apply("kubectl", doc_cm("some value"), true)
        .unwrap()
        .clone();
    assert_eq!(obj["data"]["key"], "some value");
    assert_eq!(managers(&obj), [("kubectl".to_owned(), "Apply".to_owned())]);
}

#[test]
fn updates_record_only_what_they_change() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("kubectl", config_map(json!({"a": "1", "b": "2"})), false)
        .unwrap();
    let before = s.get().clone();
    // Writing the same object back records nothing.
    let same = s.update("editor", None, &[], |_| {}).clone();
    assert_eq!(same, before);
    // Each update of one manager goes into one entry.
    s.update("editor", None, &[], |o| o["data"]["c"] = json!("3"));
    let obj = s
        .update("editor", None, &[], |o| o["data"]["d"] = json!("4"))
        .clone();
    assert_eq!(
        fields(&obj, "editor", "Update"),
        json!({"f:data": {"f:c": {}, "f:d": {}}})
    );
    assert_eq!(entry(&obj, "editor", "Update").unwrap()["time"], at(4));
    // Removing a field takes it from every manager, and gives it to nobody.
    let obj = s
        .update("remover", None, &[], |o| {
            o["data"].as_object_mut().unwrap().remove("b");
        })
        .clone();
    assert_eq!(
        fields(&obj, "kubectl", "Apply"),
        json!({"f:data": {"f:a": {}}})
    );
    assert!(entry(&obj, "remover", "Update").is_none());
    // The applier may set it again without conflict.
    let obj = s
        .apply("kubectl", config_map(json!({"a": "1", "b": "2"})), false)
        .unwrap();
    assert_eq!(obj["data"]["b"], "2");
}

fn replicas_only(n: i64) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx-deployment"},
        "spec": {"replicas": n}
    })
}

fn hpa_scales_to(s: &mut Store, n: i64) {
    s.update("kube-controller-manager", Some("scale"), &[], |o| {
        o["spec"]["replicas"] = json!(n)
    });
}

#[test]
fn replicas_are_handed_over_to_the_autoscaler() {
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    s.apply("kubectl", nginx(Some(3)), false).unwrap();
    // A private manager claims the same value: shared ownership, no conflict.
    let obj = s
        .apply("handover-to-hpa", replicas_only(3), false)
        .unwrap()
        .clone();
    assert_eq!(
        fields(&obj, "handover-to-hpa", "Apply"),
        json!({"f:spec": {"f:replicas": {}}})
    );
    assert_eq!(
        fields(&obj, "kubectl", "Apply")["f:spec"]["f:replicas"],
        json!({})
    );
    // Now the user may drop replicas: the value stays.
    let obj = s.apply("kubectl", nginx(None), false).unwrap().clone();
    assert_eq!(obj["spec"]["replicas"], 3);
    assert!(
        fields(&obj, "kubectl", "Apply")["f:spec"]
            .get("f:replicas")
            .is_none()
    );
    // The autoscaler writes through the scale subresource; the temporary manager
    // loses its only field and its entry goes away.
    hpa_scales_to(&mut s, 5);
    let obj = s.get().clone();
    assert_eq!(
        managers(&obj),
        [
            ("kubectl".to_owned(), "Apply".to_owned()),
            ("kube-controller-manager".to_owned(), "Update".to_owned())
        ]
    );
    let hpa = entry(&obj, "kube-controller-manager", "Update").unwrap();
    assert_eq!(hpa["subresource"], "scale");
    assert_eq!(hpa["apiVersion"], "apps/v1");
    assert_eq!(hpa["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    // Putting replicas back into the configuration now conflicts with the autoscaler.
    let err = s.apply("kubectl", nginx(Some(3)), false).unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "kube-controller-manager" with subresource "scale" using apps/v1: .spec.replicas"#
    );
    assert_eq!(
        conflicts_of(&err),
        [conflict(
            "kube-controller-manager",
            Some("apps/v1"),
            Some("scale"),
            ".spec.replicas"
        )]
    );
    // Reapplying without replicas keeps the autoscaler's value.
    let obj = s.apply("kubectl", nginx(None), false).unwrap();
    assert_eq!(obj["spec"]["replicas"], 5);
}

#[test]
fn dropping_replicas_before_anyone_else_owns_them_removes_them() {
    // The race the documentation warns about: the API server would then default
    // replicas to 1.
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    s.apply("kubectl", nginx(Some(3)), false).unwrap();
    s.apply("kubectl", nginx(None), false).unwrap();
    assert_eq!(s.at("/spec/replicas"), Value::Null);
    assert_eq!(
        s.at("/spec/template/spec/containers/0/image"),
        "nginx:1.14.2"
    );
}

#[test]
fn replicas_handed_over_after_the_autoscaler_conflicts() {
    // The basic solution: keep replicas until the autoscaler's write makes them
    // conflict, then drop them.
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    s.apply("kubectl", nginx(Some(3)), false).unwrap();
    hpa_scales_to(&mut s, 7);
    assert!(
        fields(s.get(), "kubectl", "Apply")["f:spec"]
            .get("f:replicas")
            .is_none()
    );
    assert!(s.apply("kubectl", nginx(Some(3)), false).is_err());
    // Matching the autoscaler's value is fine too.
    s.apply("kubectl", nginx(Some(7)), false).unwrap();
    let obj = s.apply("kubectl", nginx(None), false).unwrap();
    assert_eq!(obj["spec"]["replicas"], 7);
}

#[test]
fn ownership_moves_between_appliers_through_sharing() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("old-owner", config_map(json!({"key": "v"})), false)
        .unwrap();
    s.apply("new-owner", config_map(json!({"key": "v"})), false)
        .unwrap();
    let obj = s
        .apply("old-owner", cm_without_data(), false)
        .unwrap()
        .clone();
    assert_eq!(obj["data"]["key"], "v");
    assert_eq!(
        managers(&obj),
        [("new-owner".to_owned(), "Apply".to_owned())]
    );
    // The new owner now changes it freely.
    let obj = s
        .apply("new-owner", config_map(json!({"key": "w"})), false)
        .unwrap();
    assert_eq!(obj["data"]["key"], "w");
}

#[test]
fn containers_are_merged_by_name() {
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    s.apply("kubectl", nginx(Some(3)), false).unwrap();
    let sidecar = pod_template(json!({"containers": [{"name": "sidecar", "image": "busybox"}]}));
    let obj = s.apply("injector", sidecar.clone(), false).unwrap().clone();
    assert_eq!(container_names(&obj), ["nginx", "sidecar"]);
    assert_eq!(
        fields(&obj, "injector", "Apply"),
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"sidecar\"}": {".": {}, "f:image": {}, "f:name": {}}
        }}}}})
    );
    // Each manager changes its own container without conflict.
    let mut newer = nginx(Some(3));
    newer["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.16.1");
    let obj = s.apply("kubectl", newer, false).unwrap().clone();
    assert_eq!(container_names(&obj), ["nginx", "sidecar"]);
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.16.1"
    );
    // ... but not the other's.
    let meddling =
        pod_template(json!({"containers": [{"name": "nginx", "image": "nginx:latest"}]}));
    let err = s.apply("injector", meddling, false).unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "kubectl": .spec.template.spec.containers[name="nginx"].image"#
    );
    // Dropping its container removes just that one.
    let obj = s
        .apply("injector", pod_template(json!({"containers": []})), false)
        .unwrap();
    assert_eq!(container_names(obj), ["nginx"]);
}

#[test]
fn container_ports_are_keyed_by_port_and_protocol() {
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    s.apply("kubectl", nginx(Some(3)), false).unwrap();
    let udp = pod_template(
        json!({"containers": [{"name": "nginx", "ports": [{"containerPort": 80, "protocol": "UDP"}]}]}),
    );
    let obj = s.apply("dns", udp, false).unwrap().clone();
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"}])
    );
    assert_eq!(
        fields(&obj, "dns", "Apply"),
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
            ".": {},
            "f:name": {},
            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"UDP\"}": {
                ".": {}, "f:containerPort": {}, "f:protocol": {}
            }}
        }}}}}})
    );
    // An omitted protocol is TCP: this names kubectl's port, which gains a name.
    let named = pod_template(
        json!({"containers": [{"name": "nginx", "ports": [{"containerPort": 80, "name": "http"}]}]}),
    );
    let obj = s.apply("namer", named, false).unwrap().clone();
    let ports = &obj["spec"]["template"]["spec"]["containers"][0]["ports"];
    assert_eq!(ports[0], json!({"containerPort": 80, "name": "http"}));
    assert_eq!(ports.as_array().unwrap().len(), 2);
    let renamed = pod_template(
        json!({"containers": [{"name": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "web"}]}]}),
    );
    let err = s.apply("other", renamed, false).unwrap_err();
    assert_eq!(
        conflicts_of(&err),
        [conflict(
            "namer",
            None,
            None,
            r#".spec.template.spec.containers[name="nginx"].ports[containerPort=80,protocol="TCP"].name"#
        )]
    );
}

#[test]
fn finalizers_are_a_set() {
    let with = |names: &[&str]| {
        let mut cm = cm_without_data();
        cm["metadata"]["finalizers"] = json!(names);
        cm
    };
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("a", with(&["example.com/a"]), false).unwrap();
    let obj = s
        .apply("b", with(&["example.com/b"]), false)
        .unwrap()
        .clone();
    assert_eq!(
        obj["metadata"]["finalizers"],
        json!(["example.com/a", "example.com/b"])
    );
    assert_eq!(
        fields(&obj, "a", "Apply"),
        json!({"f:metadata": {"f:finalizers": {"v:\"example.com/a\"": {}}}})
    );
    // Items have no value to conflict on: claiming another's item shares it.
    let obj = s
        .apply("b", with(&["example.com/a", "example.com/b"]), false)
        .unwrap()
        .clone();
    assert_eq!(
        obj["metadata"]["finalizers"],
        json!(["example.com/a", "example.com/b"])
    );
    // An item dropped by one of two owners stays, by its last owner goes.
    let obj = s.apply("a", with(&[]), false).unwrap().clone();
    assert_eq!(
        obj["metadata"]["finalizers"],
        json!(["example.com/a", "example.com/b"])
    );
    let obj = s.apply("b", with(&["example.com/b"]), false).unwrap();
    assert_eq!(obj["metadata"]["finalizers"], json!(["example.com/b"]));
}

#[test]
fn an_atomic_struct_is_owned_whole() {
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    let obj = s.apply("kubectl", nginx(Some(3)), false).unwrap().clone();
    assert_eq!(
        fields(&obj, "kubectl", "Apply")["f:spec"]["f:selector"],
        json!({})
    );
    // Adding a label to the selector changes the whole selector.
    let wider = deployment(json!({"selector": {"matchLabels": {"app": "nginx", "tier": "web"}}}));
    let err = s.apply("other", wider, false).unwrap_err();
    assert_eq!(
        conflicts_of(&err),
        [conflict("kubectl", None, None, ".spec.selector")]
    );
    // The same selector is shared.
    let same = deployment(json!({"selector": {"matchLabels": {"app": "nginx"}}}));
    s.apply("other", same, false).unwrap();
    // Forced, the new value replaces the old one whole: nothing is merged.
    let expressions =
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["nginx"]}]});
    let obj = s
        .apply("other", deployment(json!({"selector": expressions})), true)
        .unwrap()
        .clone();
    assert_eq!(obj["spec"]["selector"], expressions);
    assert!(
        fields(&obj, "kubectl", "Apply")["f:spec"]
            .get("f:selector")
            .is_none()
    );
    assert_eq!(
        fields(&obj, "other", "Apply"),
        json!({"f:spec": {"f:selector": {}}})
    );
}

#[test]
fn atomic_lists_and_maps_are_replaced_whole() {
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    let mut config = nginx(Some(3));
    config["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["--a", "--b"]);
    config["spec"]["template"]["spec"]["nodeSelector"] = json!({"disktype": "ssd"});
    let obj = s.apply("kubectl", config, false).unwrap().clone();
    let pod = &fields(&obj, "kubectl", "Apply")["f:spec"]["f:template"]["f:spec"];
    assert_eq!(pod["f:nodeSelector"], json!({}));
    assert_eq!(
        pod["f:containers"]["k:{\"name\":\"nginx\"}"]["f:args"],
        json!({})
    );

    let args = pod_template(json!({"containers": [{"name": "nginx", "args": ["--c"]}]}));
    let err = s.apply("other", args.clone(), false).unwrap_err();
    assert_eq!(
        conflicts_of(&err),
        [conflict(
            "kubectl",
            None,
            None,
            r#".spec.template.spec.containers[name="nginx"].args"#
        )]
    );
    let obj = s.apply("other", args, true).unwrap().clone();
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["args"],
        json!(["--c"])
    );

    let zone = pod_template(json!({"nodeSelector": {"zone": "a"}}));
    let err = s.apply("scheduler", zone.clone(), false).unwrap_err();
    assert_eq!(
        conflicts_of(&err),
        [conflict(
            "kubectl",
            None,
            None,
            ".spec.template.spec.nodeSelector"
        )]
    );
    let obj = s.apply("scheduler", zone, true).unwrap().clone();
    assert_eq!(
        obj["spec"]["template"]["spec"]["nodeSelector"],
        json!({"zone": "a"})
    );

    // Labels are a granular map: another key merges in without conflict.
    let labels = deployment(json!({"template": {"metadata": {"labels": {"tier": "web"}}}}));
    let obj = s.apply("labeller", labels, false).unwrap();
    assert_eq!(
        obj["spec"]["template"]["metadata"]["labels"],
        json!({"app": "nginx", "tier": "web"})
    );
}

#[test]
fn granular_structs_merge_field_by_field() {
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    let mut config = nginx(Some(3));
    config["spec"]["strategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}});
    s.apply("kubectl", config, false).unwrap();
    let tweak = deployment(json!({"strategy": {"rollingUpdate": {"maxUnavailable": 0}}}));
    let obj = s.apply("tuner", tweak, false).unwrap();
    assert_eq!(
        obj["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})
    );
}

#[test]
fn status_is_reset_on_the_main_resource_and_owned_through_the_subresource() {
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    let mut main = nginx(Some(3));
    main["status"] = json!({"replicas": 3});
    let obj = s
        .apply_to("kubectl", None, main.clone(), false, &["status"])
        .unwrap()
        .clone();
    assert!(fields(&obj, "kubectl", "Apply").get("f:status").is_none());

    // The controller applies status through the subresource, where spec is reset.
    let status = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx-deployment"},
        "spec": {"replicas": 10},
        "status": {"replicas": 2, "readyReplicas": 2}
    });
    let obj = s
        .apply_to(
            "deployment-controller",
            Some("status"),
            status,
            false,
            &["spec"],
        )
        .unwrap()
        .clone();
    let controller = entry(&obj, "deployment-controller", "Apply").unwrap();
    assert_eq!(controller["subresource"], "status");
    assert_eq!(
        controller["fieldsV1"],
        json!({"f:status": {"f:readyReplicas": {}, "f:replicas": {}}})
    );
    assert_eq!(obj["status"]["replicas"], 2);
    // kubectl keeps spec.replicas: the controller neither conflicted nor took it.
    assert_eq!(
        fields(&obj, "kubectl", "Apply")["f:spec"]["f:replicas"],
        json!({})
    );

    // Without the reset, status written on the main resource would conflict.
    let err = s
        .apply_to("kubectl", None, main.clone(), false, &[])
        .unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "deployment-controller" with subresource "status": .status.replicas"#
    );
    // With it, the apply goes through and kubectl gains nothing under status.
    let obj = s
        .apply_to("kubectl", None, main, false, &["status"])
        .unwrap();
    assert!(fields(obj, "kubectl", "Apply").get("f:status").is_none());
    assert_eq!(
        fields(obj, "deployment-controller", "Apply")["f:status"]["f:replicas"],
        json!({})
    );
}

#[test]
fn status_updates_through_the_subresource_are_recorded_with_it() {
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    s.apply("kubectl", nginx(Some(3)), false).unwrap();
    let obj = s
        .update("kube-controller-manager", Some("status"), &["spec"], |o| {
            o["status"] = json!({"replicas": 3, "availableReplicas": 3});
            // Reset by the status strategy: neither taken nor recorded.
            o["spec"]["replicas"] = json!(9);
        })
        .clone();
    let e = entry(&obj, "kube-controller-manager", "Update").unwrap();
    assert_eq!(e["subresource"], "status");
    assert_eq!(
        e["fieldsV1"],
        json!({"f:status": {"f:availableReplicas": {}, "f:replicas": {}}})
    );
    assert_eq!(
        fields(&obj, "kubectl", "Apply")["f:spec"]["f:replicas"],
        json!({})
    );
}

#[test]
fn kinds_without_a_schema_have_granular_maps_and_atomic_lists() {
    let mut s = Store::new(WIDGET, "example.com/v1");
    let obj = s
        .apply(
            "alice",
            widget(json!({"size": 3, "tags": ["a", "b"], "nested": {"x": 1}})),
            false,
        )
        .unwrap()
        .clone();
    assert_eq!(
        fields(&obj, "alice", "Apply"),
        json!({"f:spec": {".": {}, "f:nested": {".": {}, "f:x": {}}, "f:size": {}, "f:tags": {}}})
    );
    // Maps are granular.
    let obj = s
        .apply("bob", widget(json!({"nested": {"y": 2}})), false)
        .unwrap()
        .clone();
    assert_eq!(obj["spec"]["nested"], json!({"x": 1, "y": 2}));
    // Lists are atomic.
    let err = s
        .apply("bob", widget(json!({"tags": ["c"]})), false)
        .unwrap_err();
    assert_eq!(
        conflicts_of(&err),
        [conflict("alice", None, None, ".spec.tags")]
    );
    let obj = s
        .apply("bob", widget(json!({"tags": ["c"]})), true)
        .unwrap()
        .clone();
    assert_eq!(obj["spec"]["tags"], json!(["c"]));
    // bob dropped nested.y, which only he owned.
    assert_eq!(obj["spec"]["nested"], json!({"x": 1}));
    assert_eq!(obj["spec"]["size"], 3);
}

#[test]
fn an_owner_of_parts_of_a_now_atomic_struct_owns_the_struct() {
    // Written while the selector was granular: the owner held one label of it.
    let mut live = nginx(Some(3));
    live["metadata"]["managedFields"] = json!([{
        "apiVersion": "apps/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:selector": {"f:matchLabels": {"f:app": {}}}}},
        "manager": "manager-one",
        "operation": "Apply",
        "time": at(0)
    }]);
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    s.object = Some(live);
    // Any change of the selector conflicts with it.
    let wider = deployment(json!({"selector": {"matchLabels": {"app": "nginx", "tier": "web"}}}));
    let err = s.apply("manager-two", wider, false).unwrap_err();
    assert_eq!(
        conflicts_of(&err),
        [conflict("manager-one", None, None, ".spec.selector")]
    );
    // The ownership is recorded in its new shape by the next write.
    let obj = s
        .apply("manager-two", deployment(json!({"paused": true})), false)
        .unwrap();
    assert_eq!(
        fields(obj, "manager-one", "Apply"),
        json!({"f:spec": {"f:selector": {}}})
    );
}

#[test]
fn an_owner_of_a_formerly_atomic_map_no_longer_owns_its_keys() {
    // The documentation's custom resource: manager-one owned spec.data when it was
    // atomic. Now that it is granular, others may change its keys.
    let mut live = widget(json!({"data": {"key1": "val1", "key2": "val2"}}));
    live["metadata"]["managedFields"] = json!([{
        "apiVersion": "example.com/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:data": {}}},
        "manager": "manager-one",
        "operation": "Apply"
    }]);
    let mut s = Store::new(WIDGET, "example.com/v1");
    s.object = Some(live);
    let obj = s
        .apply(
            "manager-two",
            widget(json!({"data": {"key1": "changed"}})),
            false,
        )
        .unwrap();
    assert_eq!(
        obj["spec"]["data"],
        json!({"key1": "changed", "key2": "val2"})
    );
    assert_eq!(
        fields(obj, "manager-one", "Apply"),
        json!({"f:spec": {"f:data": {}}})
    );
}

#[test]
fn clearing_managed_fields_stops_tracking_until_the_next_apply() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    let created = s
        .update("kubectl-create", None, &[], |o| *o = doc_cm("some value"))
        .clone();
    assert_eq!(
        managers(&created),
        [("kubectl-create".to_owned(), "Update".to_owned())]
    );
    let cleared = s
        .update("cleaner", None, &[], |o| {
            o["metadata"]["managedFields"] = json!([{}])
        })
        .clone();
    assert!(
        cleared["metadata"].get("managedFields").is_none(),
        "{cleared}"
    );
    assert_eq!(cleared["data"]["key"], "some value");
    // Updates of an untracked object stay untracked.
    let edited = s
        .update("editor", None, &[], |o| o["data"]["key"] = json!("edited"))
        .clone();
    assert!(
        edited["metadata"].get("managedFields").is_none(),
        "{edited}"
    );
    // The first apply attributes what is there to "before-first-apply".
    let err = s.apply("kubectl", doc_cm("some value"), false).unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.key"#
    );
    let obj = s.apply("kubectl", doc_cm("edited"), false).unwrap().clone();
    assert_eq!(
        obj["metadata"]["managedFields"],
        json!([
            {
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {"f:key": {}}, "f:metadata": {"f:labels": {"f:test-label": {}}}},
                "manager": "kubectl",
                "operation": "Apply"
            },
            {
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:data": {".": {}, "f:key": {}},
                    "f:metadata": {"f:labels": {".": {}, "f:test-label": {}}}
                },
                "manager": "before-first-apply",
                "operation": "Update",
                "time": at(5)
            }
        ])
    );
}

#[test]
fn managed_fields_sent_with_an_update_replace_the_stored_ones() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("kubectl", config_map(json!({"a": "1"})), false)
        .unwrap();
    let sent = json!([{
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:a": {}}},
        "manager": "restored",
        "operation": "Apply",
        "time": at(0)
    }]);
    let obj = s
        .update("restorer", None, &[], |o| {
            o["metadata"]["managedFields"] = sent.clone()
        })
        .clone();
    assert_eq!(obj["metadata"]["managedFields"], sent);
    // Through a subresource they are ignored.
    let obj = s
        .update("sneaky", Some("status"), &[], |o| {
            o["metadata"]["managedFields"] = json!([])
        })
        .clone();
    assert_eq!(obj["metadata"]["managedFields"], sent);
    let err = s
        .apply("kubectl", config_map(json!({"a": "2"})), false)
        .unwrap_err();
    assert_eq!(
        conflicts_of(&err),
        [conflict("restored", None, None, ".data.a")]
    );
}

#[test]
fn old_update_entries_are_merged_into_ancient_changes() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("kubectl", config_map(json!({"base": "1"})), false)
        .unwrap();
    for i in 0..12 {
        s.update(&format!("writer-{i:02}"), None, &[], |o| {
            o["data"][format!("k{i}")] = json!("v")
        });
    }
    let obj = s.get();
    let names = managers(obj);
    assert_eq!(names.len(), 11, "{names:?}");
    assert_eq!(names[0], ("kubectl".to_owned(), "Apply".to_owned()));
    assert_eq!(
        names[1],
        ("ancient-changes".to_owned(), "Update".to_owned())
    );
    assert_eq!(
        fields(obj, "ancient-changes", "Update"),
        json!({"f:data": {"f:k0": {}, "f:k1": {}, "f:k2": {}}})
    );
    assert_eq!(names[2], ("writer-03".to_owned(), "Update".to_owned()));
    assert_eq!(names[10], ("writer-11".to_owned(), "Update".to_owned()));
}

#[test]
fn an_apply_caps_the_update_entries_too() {
    // Stored by a server that did not cap them: twelve updaters.
    let mut live = config_map(json!({}));
    let mut managed = Vec::new();
    for i in 0..12 {
        live["data"][format!("k{i}")] = json!("v");
        managed.push(json!({
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {format!("f:k{i}"): {}}},
            "manager": format!("writer-{i:02}"),
            "operation": "Update",
            "time": at(i)
        }));
    }
    live["metadata"]["managedFields"] = Value::Array(managed);
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.object = Some(live);
    let obj = s
        .apply("kubectl", config_map(json!({"mine": "x"})), false)
        .unwrap();
    let names = managers(obj);
    assert_eq!(names.len(), 11, "{names:?}");
    assert_eq!(names[0], ("kubectl".to_owned(), "Apply".to_owned()));
    assert_eq!(
        names[1],
        ("ancient-changes".to_owned(), "Update".to_owned())
    );
    assert_eq!(
        fields(obj, "ancient-changes", "Update"),
        json!({"f:data": {"f:k0": {}, "f:k1": {}, "f:k2": {}}})
    );
    assert_eq!(
        entry(obj, "ancient-changes", "Update").unwrap()["time"],
        at(2)
    );
}

#[test]
fn a_managers_update_and_apply_entries_are_different_managers() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("controller", config_map(json!({"a": "1"})), false)
        .unwrap();
    s.update("controller", None, &[], |o| o["data"]["a"] = json!("2"));
    let obj = s.get().clone();
    assert_eq!(
        fields(&obj, "controller", "Update"),
        json!({"f:data": {"f:a": {}}})
    );
    assert!(entry(&obj, "controller", "Apply").is_none());
    let err = s
        .apply("controller", config_map(json!({"a": "3"})), false)
        .unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "controller" using v1: .data.a"#
    );
}
