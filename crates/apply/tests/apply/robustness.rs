//! Hostile and broken input: whatever the configuration, the live object or its
//! managed fields look like, `apply` answers with a result or an error and `update`
//! with an object — never a panic, a stack overflow or a quadratic blow-up.

use crate::support::{CONFIG_MAP, DEPLOYMENT, Store, config_map, entries, fields, nginx};
use kyb_apply::{ApplyError, MAX_DEPTH, Writer};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const WIDGET: &str = "com.example.v1.Widget";

fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
}

/// `depth` levels of `{"n": ...}` around a string.
fn nested_maps(depth: usize) -> Value {
    nested_maps_around(depth, "leaf")
}

fn nested_maps_around(depth: usize, leaf: &str) -> Value {
    let mut v = json!(leaf);
    for _ in 0..depth {
        v = json!({ "n": v });
    }
    v
}

fn nested_lists(depth: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..depth {
        v = Value::Array(vec![v]);
    }
    v
}

fn writer<'a>(manager: &'a str, api_version: &'a str) -> Writer<'a> {
    Writer {
        manager,
        api_version,
        subresource: None,
        time: "2025-01-01T00:00:00Z",
    }
}

fn bad_request(err: ApplyError) -> String {
    assert_eq!(err.code(), 400, "{err:?}");
    assert_eq!(err.reason(), "BadRequest");
    match err {
        ApplyError::BadRequest(m) => m,
        other => panic!("expected a bad request, got {other:?}"),
    }
}

fn internal(err: ApplyError) -> String {
    assert_eq!(err.code(), 500, "{err:?}");
    assert_eq!(err.reason(), "InternalError");
    match err {
        ApplyError::Internal(m) => m,
        other => panic!("expected an internal error, got {other:?}"),
    }
}

fn invalid(err: ApplyError) -> String {
    assert_eq!(err.code(), 500, "{err:?}");
    assert_eq!(err.reason(), "InternalError");
    match err {
        ApplyError::InvalidObject(m) => m,
        other => panic!("expected an invalid object, got {other:?}"),
    }
}

#[test]
fn configurations_nesting_too_deep_are_refused() {
    for deep in [
        nested_maps(MAX_DEPTH + 10),
        nested_lists(MAX_DEPTH + 10),
        nested_maps(5 * MAX_DEPTH),
    ] {
        let err = kyb_apply::apply(
            WIDGET,
            None,
            &widget(deep),
            &writer("m", "example.com/v1"),
            false,
            &[],
        )
        .unwrap_err();
        assert_eq!(
            bad_request(err),
            format!("the applied configuration nests deeper than {MAX_DEPTH} levels")
        );
    }
    // Typed kinds too, even where the schema has no room for it.
    let mut cm = config_map(json!({}));
    cm["data"]["k"] = nested_maps(MAX_DEPTH + 1);
    let err = kyb_apply::apply(CONFIG_MAP, None, &cm, &writer("m", "v1"), false, &[]).unwrap_err();
    bad_request(err);
}

#[test]
fn configurations_just_within_the_depth_bound_work() {
    let mut s = Store::new(WIDGET, "example.com/v1");
    let deep = widget(nested_maps(MAX_DEPTH - 4));
    s.apply("a", deep.clone(), false).unwrap();
    let obj = s.apply("b", deep.clone(), false).unwrap().clone();
    assert_eq!(obj["spec"], deep["spec"]);
    // Forcing a different leaf at the bottom moves ownership there.
    let changed = widget(nested_maps_around(MAX_DEPTH - 4, "other leaf"));
    s.apply("b", changed.clone(), true).unwrap();
    let err = s.apply("a", deep, false).unwrap_err();
    assert!(
        matches!(err, ApplyError::Conflicts(ref c) if c.len() == 1 && c[0].manager == "b"),
        "{err:?}"
    );
    assert_eq!(s.get()["spec"], changed["spec"]);
}

#[test]
fn live_objects_nesting_too_deep_are_left_alone() {
    let mut s = Store::new(WIDGET, "example.com/v1");
    s.apply("a", widget(json!({"x": 1})), false).unwrap();
    let tracked = s.get()["metadata"]["managedFields"].clone();
    // An update making the object too deep keeps the stored managed fields.
    let obj = s
        .update("deepener", None, &[], |o| {
            o["spec"]["deep"] = nested_maps(MAX_DEPTH + 10)
        })
        .clone();
    assert_eq!(obj["metadata"]["managedFields"], tracked);
    assert_eq!(obj["spec"]["x"], 1);
    // An apply to it is refused.
    let err = s.apply("a", widget(json!({"x": 2})), false).unwrap_err();
    assert_eq!(
        internal(err),
        format!("the live object nests deeper than {MAX_DEPTH} levels")
    );
    // So is one hiding the depth in managed fields sent with an update.
    let mut s = Store::new(WIDGET, "example.com/v1");
    s.apply("a", widget(json!({"x": 1})), false).unwrap();
    let obj = s
        .update("sneaky", None, &[], |o| {
            o["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"] = nested_maps(MAX_DEPTH + 10);
            o["spec"]["x"] = json!(5);
        })
        .clone();
    assert_eq!(obj["metadata"]["managedFields"], tracked);
    assert_eq!(obj["spec"]["x"], 5);
}

#[test]
fn configurations_that_are_not_objects_are_bad_requests() {
    for (config, kind) in [
        (json!([1]), "array"),
        (json!("x"), "string"),
        (json!(3), "number"),
        (json!(true), "bool"),
        (json!(null), "null"),
    ] {
        let err = kyb_apply::apply(CONFIG_MAP, None, &config, &writer("m", "v1"), false, &[])
            .unwrap_err();
        assert_eq!(
            bad_request(err),
            format!(
                "error decoding YAML: json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
            )
        );
    }
}

#[test]
fn managed_fields_in_the_configuration_are_refused() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    for managed in [
        json!([]),
        json!([{"manager": "m", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {}}]),
        json!([{}]),
    ] {
        let mut config = config_map(json!({"k": "v"}));
        config["metadata"]["managedFields"] = managed;
        let err = s.apply("m", config, false).unwrap_err();
        assert_eq!(bad_request(err), "metadata.managedFields must be nil");
    }
    assert!(s.object.is_none());
    // An explicit null is no managed fields at all.
    let mut config = config_map(json!({"k": "v"}));
    config["metadata"]["managedFields"] = Value::Null;
    let obj = s.apply("m", config, false).unwrap();
    assert_eq!(fields(obj, "m", "Apply"), json!({"f:data": {"f:k": {}}}));
}

#[test]
fn configurations_of_another_type_are_refused() {
    let cases = [
        (
            DEPLOYMENT,
            "apps/v1",
            json!({"apiVersion": "apps/v1beta1", "kind": "Deployment"}),
            "apps/v1beta1, Kind=Deployment",
        ),
        (
            DEPLOYMENT,
            "apps/v1",
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet"}),
            "apps/v1, Kind=StatefulSet",
        ),
        (
            DEPLOYMENT,
            "apps/v1",
            json!({"metadata": {"name": "x"}}),
            "/, Kind=",
        ),
        (
            CONFIG_MAP,
            "v1",
            json!({"apiVersion": "v1", "kind": "Pod"}),
            "/v1, Kind=Pod",
        ),
        (
            CONFIG_MAP,
            "v1",
            json!({"apiVersion": 1, "kind": "ConfigMap"}),
            "/, Kind=ConfigMap",
        ),
        (
            CONFIG_MAP,
            "v1",
            json!({"apiVersion": "a/b/v1", "kind": "ConfigMap"}),
            "/, Kind=",
        ),
        (
            WIDGET,
            "example.com/v1",
            json!({"apiVersion": "example.com/v2", "kind": "Widget"}),
            "example.com/v2, Kind=Widget",
        ),
    ];
    for (definition, version, config, gvk) in cases {
        let err = kyb_apply::apply(definition, None, &config, &writer("m", version), false, &[])
            .unwrap_err();
        assert_eq!(bad_request(err), format!("invalid object type: {gvk}"));
    }
}

#[test]
fn configurations_that_do_not_fit_the_schema_are_invalid() {
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    let mut unknown = nginx(Some(1));
    unknown["spec"]["foo"] = json!(1);
    assert_eq!(
        invalid(s.apply("m", unknown, false).unwrap_err()),
        "failed to create typed patch object (/nginx-deployment; apps/v1, Kind=Deployment): .spec.foo: field not declared in schema"
    );
    let mut wrong = nginx(Some(1));
    wrong["spec"]["replicas"] = json!("three");
    assert_eq!(
        invalid(s.apply("m", wrong, false).unwrap_err()),
        "failed to create typed patch object (/nginx-deployment; apps/v1, Kind=Deployment): .spec.replicas: expected numeric (int or float), got string"
    );
    let mut not_a_list = nginx(Some(1));
    not_a_list["spec"]["template"]["spec"]["containers"] = json!({"name": "nginx"});
    assert!(
        invalid(s.apply("m", not_a_list, false).unwrap_err())
            .contains(".spec.template.spec.containers: expected list")
    );
    assert!(s.object.is_none());
}

#[test]
fn repeated_items_in_a_configuration_are_invalid() {
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    let mut twice = nginx(Some(1));
    let container = twice["spec"]["template"]["spec"]["containers"][0].clone();
    twice["spec"]["template"]["spec"]["containers"] = json!([container.clone(), container]);
    assert_eq!(
        invalid(s.apply("m", twice, false).unwrap_err()),
        r#"failed to create typed patch object (/nginx-deployment; apps/v1, Kind=Deployment): .spec.template.spec.containers: duplicate entries for key [name="nginx"]"#
    );
    let mut ports = nginx(Some(1));
    // 80 without a protocol is 80/TCP.
    ports["spec"]["template"]["spec"]["containers"][0]["ports"] =
        json!([{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}]);
    assert!(
        invalid(s.apply("m", ports, false).unwrap_err())
            .ends_with(r#".ports: duplicate entries for key [containerPort=80,protocol="TCP"]"#)
    );
    let mut cm = Store::new(CONFIG_MAP, "v1");
    let mut finalizers = config_map(json!({}));
    finalizers["metadata"]["finalizers"] = json!(["a", "a"]);
    assert_eq!(
        invalid(cm.apply("m", finalizers, false).unwrap_err()),
        r#"failed to create typed patch object (default/test-cm; /v1, Kind=ConfigMap): .metadata.finalizers: duplicate entries for key [="a"]"#
    );
}

#[test]
fn list_items_without_their_keys_are_invalid() {
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    let mut nameless = nginx(Some(1));
    nameless["spec"]["template"]["spec"]["containers"] = json!([{"image": "x"}]);
    assert_eq!(
        invalid(s.apply("m", nameless, false).unwrap_err()),
        "failed to create typed patch object (/nginx-deployment; apps/v1, Kind=Deployment): .spec.template.spec.containers: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)"
    );
    for item in [json!(null), json!("nginx"), json!([1])] {
        let mut odd = nginx(Some(1));
        odd["spec"]["template"]["spec"]["containers"] = json!([item]);
        invalid(s.apply("m", odd, false).unwrap_err());
    }
    let mut cm = Store::new(CONFIG_MAP, "v1");
    for item in [json!(null), json!({"a": 1}), json!(["a"])] {
        let mut finalizers = config_map(json!({}));
        finalizers["metadata"]["finalizers"] = json!([item]);
        invalid(cm.apply("m", finalizers, false).unwrap_err());
    }
}

#[test]
fn live_objects_with_repeated_items_still_apply() {
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    let mut config = nginx(Some(1));
    config["spec"]["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "A", "value": "1"}]);
    s.apply("kubectl", config, false).unwrap();
    // Kubernetes stores repeated environment variables.
    let obj = s
        .update("editor", None, &[], |o| {
            o["spec"]["template"]["spec"]["containers"][0]["env"] = json!([
                {"name": "A", "value": "1"}, {"name": "A", "value": "2"}, {"name": "B", "value": "3"}
            ]);
        })
        .clone();
    assert_eq!(entries(&obj).len(), 2);
    // An apply that does not mention them keeps them.
    let obj = s.apply("kubectl", nginx(Some(2)), true).unwrap().clone();
    let env = &obj["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(env.as_array().map(Vec::len), Some(3), "{env}");
    // One naming the repeated item replaces all its copies.
    let mut config = nginx(Some(2));
    config["spec"]["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "A", "value": "9"}]);
    let obj = s.apply("kubectl", config, true).unwrap();
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["env"],
        json!([{"name": "A", "value": "9"}, {"name": "B", "value": "3"}])
    );
}

#[test]
fn live_objects_with_unkeyed_items_are_internal_errors() {
    let mut broken = nginx(Some(1));
    broken["spec"]["template"]["spec"]["containers"] = json!([{"image": "x"}, 7]);
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    s.object = Some(broken.clone());
    let message = internal(s.apply("kubectl", nginx(Some(1)), false).unwrap_err());
    assert!(
        message.starts_with(
            "failed to create typed live object (/nginx-deployment; apps/v1, Kind=Deployment): "
        ),
        "{message}"
    );
    assert!(message.contains("omits key field \"name\""), "{message}");
    // An update of it still goes through, untracked as before.
    let obj = s
        .update("editor", None, &[], |o| o["spec"]["replicas"] = json!(4))
        .clone();
    assert_eq!(obj["spec"]["replicas"], 4);
    assert!(obj["metadata"].get("managedFields").is_none());

    // A tracked object broken later keeps its managed fields through updates.
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    s.apply("kubectl", nginx(Some(1)), false).unwrap();
    let tracked = s.get()["metadata"]["managedFields"].clone();
    let obj = s
        .update("breaker", None, &[], |o| {
            o["spec"]["template"]["spec"]["containers"] = json!([{"image": "x"}])
        })
        .clone();
    assert_eq!(obj["metadata"]["managedFields"], tracked);
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"],
        json!([{"image": "x"}])
    );
}

#[test]
fn garbage_managed_fields_on_the_live_object() {
    let garbage = [
        json!("garbage"),
        json!({"manager": "x"}),
        json!([1]),
        json!([null]),
        json!([{"manager": "x", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}]),
        json!([{"manager": "x", "operation": "Apply", "fieldsType": "FieldsV1"}]),
        json!([{"manager": "x", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV2"}]),
        json!([{"manager": "x", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": "f:data"}]),
        json!([{"manager": "x", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"bogus": {}}}]),
        json!([{"manager": "x", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": 1}}]),
        json!([{"manager": "x", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {".": {"f:a": {}}}}]),
        json!([{"manager": "x", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"k:{\"a\":": {}}}]),
        json!([{"manager": 5, "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1"}]),
        json!([{"manager": "x", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "time": 5}]),
    ];
    for managed in garbage {
        let mut live = config_map(json!({"key": "v"}));
        live["metadata"]["managedFields"] = managed.clone();
        let mut s = Store::new(CONFIG_MAP, "v1");
        s.object = Some(live);
        let message = internal(
            s.apply("kubectl", config_map(json!({"key": "w"})), false)
                .unwrap_err(),
        );
        assert!(
            message.starts_with("failed to decode managed fields: "),
            "{managed}: {message}"
        );
        // Updates go through.
        let obj = s
            .update("editor", None, &[], |o| o["data"]["key"] = json!("u"))
            .clone();
        assert_eq!(obj["data"]["key"], "u", "{managed}");
    }
}

#[test]
fn well_formed_managed_fields_that_do_not_fit_the_object() {
    // Paths that do not exist, keys under structs, indices under maps, items under
    // scalars: ownership of nothing, never a crash.
    let odd = json!({
        "f:nothing": {"k:{\"x\":1}": {".": {}, "f:y": {}}},
        "f:data": {"i:3": {}, "v:\"q\"": {}, "f:key": {"f:deeper": {}}},
        "f:metadata": {"f:labels": {"k:{\"name\":\"a\"}": {}}, "f:finalizers": {"f:x": {}}},
        "k:{\"name\":\"root\"}": {}
    });
    let mut live = config_map(json!({"key": "v"}));
    live["metadata"]["managedFields"] = json!([{
        "manager": "odd", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": odd
    }]);
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.object = Some(live);
    let mut config = config_map(json!({"key": "w", "other": "x"}));
    config["metadata"]["labels"] = json!({"a": "b"});
    config["metadata"]["finalizers"] = json!(["f"]);
    let obj = s.apply("kubectl", config.clone(), false).unwrap().clone();
    assert_eq!(obj["data"], json!({"key": "w", "other": "x"}));
    s.update("editor", None, &[], |o| o["data"]["key"] = json!("u"));
    s.apply("kubectl", config, true).unwrap();
    s.apply("kubectl", config_map(json!({})), false).unwrap();

    // The same on a typed struct with atomic members, which are reconciled.
    let mut live = nginx(Some(1));
    live["metadata"]["managedFields"] = json!([{
        "manager": "odd", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {
            "f:selector": {"i:0": {"v:1": {}}},
            "f:replicas": {"f:x": {}},
            "f:template": {"f:spec": {"f:containers": {"i:0": {}, "v:\"a\"": {"f:b": {}}}, "f:nodeSelector": {"k:{\"a\":1}": {}}}}
        }}
    }]);
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    s.object = Some(live);
    let obj = s.apply("kubectl", nginx(Some(1)), true).unwrap();
    assert_eq!(obj["spec"]["replicas"], 1);
}

#[test]
fn strange_names_and_values_round_trip() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    let keys = [
        "a.b/c",
        "quote\"d",
        "new\nline",
        "<html>&",
        "ünïcödé",
        "",
        "f:x",
        "k:{}",
        ".",
    ];
    let mut data = serde_json::Map::new();
    for (i, k) in keys.iter().enumerate() {
        data.insert((*k).to_owned(), json!(format!("v{i}")));
    }
    let mut config = config_map(Value::Object(data.clone()));
    config["metadata"]["labels"] = Value::Object(data);
    config["metadata"]["finalizers"] = json!(["x\"y", "<&>", "\u{2028}"]);
    s.apply("ma\"nager\n", config.clone(), false).unwrap();
    let set = fields(s.get(), "ma\"nager\n", "Apply");
    assert!(set["f:data"].get("f:quote\"d").is_some(), "{set}");
    assert!(
        set["f:metadata"]["f:finalizers"]
            .get("v:\"\\u003c\\u0026\\u003e\"")
            .is_some(),
        "{set}"
    );
    // Another manager changing each of them conflicts on each, named as Kubernetes
    // prints them.
    let mut changed = config.clone();
    for k in keys {
        changed["data"][k] = json!("changed");
    }
    let err = s.apply("other", changed, false).unwrap_err();
    let ApplyError::Conflicts(conflicts) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(conflicts.len(), keys.len());
    assert!(
        conflicts.iter().any(|c| c.field == ".data.quote\"d"),
        "{conflicts:?}"
    );
    assert!(
        err.message()
            .starts_with("Apply failed with 9 conflicts: conflicts with \"ma\\\"nager\\n\":\n")
    );
    // Dropping all of them removes them.
    let obj = s
        .apply("ma\"nager\n", config_map(json!({})), false)
        .unwrap();
    assert!(
        obj["data"]
            .as_object()
            .is_none_or(serde_json::Map::is_empty),
        "{obj}"
    );
    assert!(obj["metadata"].get("labels").is_none_or(Value::is_null));
}

#[test]
fn unreadable_times_and_empty_managers_are_tolerated() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    let time = "yesterday";
    let w = Writer {
        manager: "",
        api_version: "v1",
        subresource: Some(""),
        time,
    };
    let obj = kyb_apply::apply(
        CONFIG_MAP,
        None,
        &config_map(json!({"a": "1"})),
        &w,
        false,
        &[],
    )
    .unwrap();
    let e = &obj["metadata"]["managedFields"][0];
    assert_eq!(e["manager"], "unknown");
    assert_eq!(e["time"], "yesterday");
    assert!(e.get("subresource").is_none());
    s.object = Some(obj);
    let obj = s
        .update("", None, &[], |o| o["data"]["b"] = json!("2"))
        .clone();
    assert_eq!(
        fields(&obj, "unknown", "Update"),
        json!({"f:data": {"f:b": {}}})
    );
}

#[test]
fn huge_lists_are_handled_in_linear_time() {
    let started = Instant::now();
    let n = 20_000;
    // A set of finalizers.
    let names: Vec<String> = (0..n).map(|i| format!("example.com/f{i}")).collect();
    let with = |names: &[String]| {
        let mut cm = config_map(json!({}));
        cm["metadata"]["finalizers"] = json!(names);
        cm
    };
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("a", with(&names), false).unwrap();
    s.apply("b", with(&names[n - 10..]), false).unwrap();
    let obj = s.apply("a", with(&names[..n / 2]), false).unwrap();
    assert_eq!(
        obj["metadata"]["finalizers"].as_array().map(Vec::len),
        Some(n / 2 + 10)
    );

    // A map list of environment variables (fewer: each item is a small object).
    let n = n / 4;
    let env: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("VAR_{i}"), "value": "x"}))
        .collect();
    let mut config = nginx(Some(1));
    config["spec"]["template"]["spec"]["containers"][0]["env"] = Value::Array(env.clone());
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    s.apply("kubectl", config.clone(), false).unwrap();
    s.update("editor", None, &[], |o| {
        o["spec"]["template"]["spec"]["containers"][0]["env"][n - 1]["value"] = json!("y");
    });
    let mut reversed = env.clone();
    reversed.reverse();
    config["spec"]["template"]["spec"]["containers"][0]["env"] = Value::Array(reversed);
    let err = s.apply("kubectl", config.clone(), false).unwrap_err();
    assert!(
        matches!(err, ApplyError::Conflicts(ref c) if c.len() == 1),
        "{err:?}"
    );
    let obj = s.apply("kubectl", config, true).unwrap();
    let merged = obj["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap();
    assert_eq!(merged.len(), n);
    assert_eq!(merged[0]["name"], format!("VAR_{}", n - 1));

    // An atomic list in a kind without a schema, and a wide map.
    let mut s = Store::new(WIDGET, "example.com/v1");
    let numbers: Vec<Value> = (0..5 * n).map(|i| json!(i)).collect();
    let wide: serde_json::Map<String, Value> =
        (0..n).map(|i| (format!("k{i}"), json!(i))).collect();
    s.apply(
        "a",
        widget(json!({"numbers": numbers, "wide": wide})),
        false,
    )
    .unwrap();
    let obj = s
        .apply("a", widget(json!({"numbers": [1]})), false)
        .unwrap();
    assert_eq!(obj["spec"], json!({"numbers": [1]}));

    assert!(
        started.elapsed() < Duration::from_secs(8),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn many_managed_fields_entries_are_handled_in_linear_time() {
    let started = Instant::now();
    let n = 5_000;
    let sent: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "manager": format!("m{i}"),
                "operation": "Update",
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "time": format!("2024-01-01T00:{:02}:{:02}Z", (i / 60) % 60, i % 60),
                "fieldsV1": {"f:data": {format!("f:k{i}"): {}}}
            })
        })
        .collect();
    let mut s = Store::new(CONFIG_MAP, "v1");
    s.apply("kubectl", config_map(json!({"k0": "v"})), false)
        .unwrap();
    let obj = s
        .update("restorer", None, &[], |o| {
            o["metadata"]["managedFields"] = Value::Array(sent)
        })
        .clone();
    // Capped to ten update entries, the oldest merged.
    assert_eq!(entries(&obj).len(), 10);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }

    fn value(&mut self, depth: usize) -> Value {
        match self.below(if depth == 0 { 4 } else { 7 }) {
            0 => Value::Null,
            1 => json!(self.below(3) == 0),
            2 => json!(self.below(4)),
            3 => json!(self.pick(&["a", "b", "", "x"]).to_string()),
            4 | 5 => {
                let mut m = serde_json::Map::new();
                for _ in 0..self.below(4) {
                    let k = self.pick(&["a", "b", "c", "name"]).to_string();
                    let v = self.value(depth - 1);
                    m.insert(k, v);
                }
                Value::Object(m)
            }
            _ => Value::Array((0..self.below(3)).map(|_| self.value(depth - 1)).collect()),
        }
    }

    fn container(&mut self) -> Value {
        let mut c = json!({"name": self.pick(&["a", "b", "c"])});
        if self.below(2) == 0 {
            c["image"] = json!(self.pick(&["x", "y"]));
        }
        if self.below(3) == 0 {
            c["args"] = json!([self.pick(&["1", "2"])]);
        }
        if self.below(3) == 0 {
            let env: Vec<Value> = (0..self.below(3))
                .map(|_| json!({"name": self.pick(&["X", "Y"]), "value": self.pick(&["1", "2"])}))
                .collect();
            c["env"] = Value::Array(env);
        }
        if self.below(3) == 0 {
            let ports: Vec<Value> = (0..self.below(3))
                .map(|_| {
                    let mut p = json!({"containerPort": self.pick(&[80, 443])});
                    if self.below(2) == 0 {
                        p["protocol"] = json!(self.pick(&["TCP", "UDP"]));
                    }
                    p
                })
                .collect();
            c["ports"] = Value::Array(ports);
        }
        c
    }

    fn deployment(&mut self) -> Value {
        let mut spec = serde_json::Map::new();
        if self.below(2) == 0 {
            spec.insert("replicas".into(), json!(self.below(4)));
        }
        if self.below(3) == 0 {
            spec.insert("paused".into(), json!(self.below(2) == 0));
        }
        if self.below(3) == 0 {
            spec.insert(
                "selector".into(),
                json!({"matchLabels": {"app": self.pick(&["a", "b"])}}),
            );
        }
        if self.below(4) == 0 {
            spec.insert("bogus".into(), json!(1));
        }
        let containers: Vec<Value> = (0..=self.below(2)).map(|_| self.container()).collect();
        let mut pod = json!({"containers": containers});
        if self.below(3) == 0 {
            pod["nodeSelector"] = json!({self.pick(&["k1", "k2"]).to_string(): "v"});
        }
        spec.insert("template".into(), json!({"spec": pod}));
        let mut labels = serde_json::Map::new();
        for _ in 0..=self.below(2) {
            labels.insert(
                self.pick(&["l1", "l2"]).to_string(),
                json!(self.pick(&["a", "b"])),
            );
        }
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "labels": labels, "finalizers": [self.pick(&["f1", "f2"])]},
            "spec": spec
        })
    }
}

/// Whether `v` holds no null, empty map or empty list: values whose spelling (null
/// or empty) structured-merge-diff does not keep stable across merges and prunes.
fn plain(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Array(items) => !items.is_empty() && items.iter().all(plain),
        Value::Object(map) => !map.is_empty() && map.values().all(plain),
        _ => true,
    }
}

/// The applier's set after a successful apply is the configuration's set, and an
/// immediate reapply of the same (plain) configuration is a no-op.
fn check_after_apply(
    definition: &'static str,
    version: &'static str,
    s: &mut Store,
    manager: &str,
    config: &Value,
) {
    let after = s.get().clone();
    let mut fresh = Store::new(definition, version);
    let expected = fresh
        .apply(manager, config.clone(), false)
        .map(|o| fields(o, manager, "Apply"));
    assert_eq!(
        Ok(fields(&after, manager, "Apply")),
        expected,
        "config {config}\nobject {after}"
    );
    for e in entries(&after) {
        let set = &e["fieldsV1"];
        assert!(
            set.as_object().is_some_and(|m| !m.is_empty()),
            "empty entry in {after}"
        );
        assert!(set.pointer("/f:metadata/f:name").is_none(), "{set}");
    }
    if !plain(config) {
        return;
    }
    let again = s.apply(manager, config.clone(), false);
    assert!(again.is_ok(), "reapplying {config} to {after}: {again:?}");
    let mut a = after.clone();
    let mut b = s.get().clone();
    a["metadata"]
        .as_object_mut()
        .map(|m| m.remove("managedFields"));
    b["metadata"]
        .as_object_mut()
        .map(|m| m.remove("managedFields"));
    assert_eq!(a, b, "reapplying {config} changed the object");
}

fn set_spec_field(obj: &mut Value, key: &str, value: Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert(key.to_owned(), value);
    }
}

#[test]
fn random_applies_and_updates_never_break() {
    let managers = ["m1", "m2", "m3"];
    for seed in 1..=8u64 {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ seed);
        let mut deployments = Store::new(DEPLOYMENT, "apps/v1");
        let mut widgets = Store::new(WIDGET, "example.com/v1");
        for _ in 0..40 {
            let manager = *rng.pick(&managers);
            let force = rng.below(3) == 0;
            match rng.below(4) {
                0 | 1 => {
                    let config = rng.deployment();
                    if deployments.apply(manager, config.clone(), force).is_ok() {
                        check_after_apply(
                            DEPLOYMENT,
                            "apps/v1",
                            &mut deployments,
                            manager,
                            &config,
                        );
                    }
                }
                2 => {
                    let config = widget(rng.value(4));
                    if widgets.apply(manager, config.clone(), force).is_ok() {
                        check_after_apply(WIDGET, "example.com/v1", &mut widgets, manager, &config);
                    }
                }
                _ => {
                    let replacement = rng.value(3);
                    let key = rng
                        .pick(&["replicas", "paused", "template", "x"])
                        .to_string();
                    for store in [&mut deployments, &mut widgets] {
                        if store.object.is_some() {
                            store.update(manager, None, &[], |o| {
                                set_spec_field(o, &key, replacement.clone())
                            });
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn live_objects_of_the_wrong_shape_never_panic() {
    let shapes = [
        json!("x"),
        json!([1]),
        json!(null),
        json!({}),
        json!({"metadata": "x"}),
        json!({"metadata": {"labels": "x", "finalizers": {"a": 1}}}),
        json!({"spec": 5}),
        json!({"spec": {"template": {"spec": {"containers": "nginx"}}}}),
        json!({"spec": {"selector": [1], "replicas": {"a": 1}}}),
        json!({"metadata": {"managedFields": null}, "status": [null]}),
    ];
    for live in shapes {
        let w = writer("m", "apps/v1");
        // Either an answer or an error; never a panic.
        let applied = kyb_apply::apply(DEPLOYMENT, Some(&live), &nginx(Some(1)), &w, true, &[]);
        if let Ok(obj) = &applied {
            assert_eq!(obj["spec"]["replicas"], 1, "{live}");
        }
        let mut new = live.clone();
        kyb_apply::update(DEPLOYMENT, Some(&live), &mut new, &w, &["status"]);
        let mut new = nginx(Some(2));
        kyb_apply::update(DEPLOYMENT, Some(&live), &mut new, &w, &["", ".", "a..b"]);
        assert_eq!(new["spec"]["replicas"], 2);
    }
}
