//! JSON patch: the examples of RFC 6902, appendix A.

use kyb_patch::json_patch::apply;
use serde_json::json;

#[test]
fn appendix_a() {
    let ok = [
        // A.1 Adding an object member
        (
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz", "value": "qux"}]),
            json!({"baz": "qux", "foo": "bar"}),
        ),
        // A.2 Adding an array element
        (
            json!({"foo": ["bar", "baz"]}),
            json!([{"op": "add", "path": "/foo/1", "value": "qux"}]),
            json!({"foo": ["bar", "qux", "baz"]}),
        ),
        // A.3 Removing an object member
        (
            json!({"baz": "qux", "foo": "bar"}),
            json!([{"op": "remove", "path": "/baz"}]),
            json!({"foo": "bar"}),
        ),
        // A.4 Removing an array element
        (
            json!({"foo": ["bar", "qux", "baz"]}),
            json!([{"op": "remove", "path": "/foo/1"}]),
            json!({"foo": ["bar", "baz"]}),
        ),
        // A.5 Replacing a value
        (
            json!({"baz": "qux", "foo": "bar"}),
            json!([{"op": "replace", "path": "/baz", "value": "boo"}]),
            json!({"baz": "boo", "foo": "bar"}),
        ),
        // A.6 Moving a value
        (
            json!({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}),
            json!([{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}]),
            json!({"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}),
        ),
        // A.7 Moving an array element
        (
            json!({"foo": ["all", "grass", "cows", "eat"]}),
            json!([{"op": "move", "from": "/foo/1", "path": "/foo/3"}]),
            json!({"foo": ["all", "cows", "eat", "grass"]}),
        ),
        // A.8 Testing a value: success
        (
            json!({"baz": "qux", "foo": ["a", 2, "c"]}),
            json!([{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}]),
            json!({"baz": "qux", "foo": ["a", 2, "c"]}),
        ),
        // A.10 Adding a nested member object
        (
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/child", "value": {"grandchild": {}}}]),
            json!({"foo": "bar", "child": {"grandchild": {}}}),
        ),
        // A.11 Ignoring unrecognized elements
        (
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}]),
            json!({"foo": "bar", "baz": "qux"}),
        ),
        // A.14 ~ escape ordering
        (
            json!({"/": 9, "~1": 10}),
            json!([{"op": "test", "path": "/~01", "value": 10}]),
            json!({"/": 9, "~1": 10}),
        ),
        // A.16 Adding an array value
        (
            json!({"foo": ["bar"]}),
            json!([{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}]),
            json!({"foo": ["bar", ["abc", "def"]]}),
        ),
    ];
    for (document, patch, expected) in ok {
        assert_eq!(apply(document, &patch), Ok(expected), "{patch}");
    }

    let failing = [
        // A.9 Testing a value: error
        (
            json!({"baz": "qux"}),
            json!([{"op": "test", "path": "/baz", "value": "bar"}]),
        ),
        // A.12 Adding to a nonexistent target
        (
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz/bat", "value": "qux"}]),
        ),
        // A.13 Invalid JSON patch document: with duplicate members serde_json keeps the
        // last, "remove", whose target does not exist.
        (
            json!({"foo": "bar"}),
            serde_json::from_str(
                r#"[{"op": "add", "path": "/baz", "value": "qux", "op": "remove"}]"#,
            )
            .unwrap(),
        ),
        // A.15 Comparing strings and numbers
        (
            json!({"/": 9, "~1": 10}),
            json!([{"op": "test", "path": "/~01", "value": "10"}]),
        ),
    ];
    for (document, patch) in failing {
        let error = apply(document, &patch).unwrap_err();
        assert_eq!(error.code(), 422, "{patch}");
        assert_eq!(error.status_message(), kyb_patch::INVALID_MESSAGE);
    }
}

#[test]
fn a_failing_operation_applies_nothing() {
    let patch = json!([
        {"op": "add", "path": "/a", "value": 1},
        {"op": "test", "path": "/a", "value": 2}
    ]);
    let error = apply(json!({}), &patch).unwrap_err();
    assert_eq!(error.message(), "testing value /a failed: test failed");
}

#[test]
fn copy_and_move() {
    let doc = json!({"spec": {"template": {"metadata": {"labels": {"app": "a"}}}}, "metadata": {}});
    let patch = json!([
        {"op": "copy", "from": "/spec/template/metadata/labels", "path": "/metadata/labels"},
        {"op": "move", "from": "/metadata/labels/app", "path": "/metadata/labels/name"},
        {"op": "replace", "path": "/spec/template/metadata/labels/app", "value": "b"}
    ]);
    assert_eq!(
        apply(doc, &patch).unwrap(),
        json!({"spec": {"template": {"metadata": {"labels": {"app": "b"}}}}, "metadata": {"labels": {"name": "a"}}})
    );
}

#[test]
fn rollout_undo_shape() {
    // kubectl rollout undo replaces the pod template and annotations with one JSON patch.
    let doc = json!({"metadata": {"annotations": {"deployment.kubernetes.io/revision": "2"}},
                     "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "v2"}]}}}});
    let patch = json!([
        {"op": "replace", "path": "/spec/template", "value": {"spec": {"containers": [{"name": "web", "image": "v1"}]}}},
        {"op": "replace", "path": "/metadata/annotations", "value": {"deployment.kubernetes.io/revision": "1"}}
    ]);
    assert_eq!(
        apply(doc, &patch).unwrap(),
        json!({"metadata": {"annotations": {"deployment.kubernetes.io/revision": "1"}},
               "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "v1"}]}}}})
    );
}
