//! JSON merge patch: the examples of RFC 7386, appendix A.

use kyb_patch::PatchError;
use kyb_patch::merge_patch::apply;
use serde_json::{Value, json};

#[test]
fn appendix_a() {
    let cases = [
        (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
        (
            json!({"a": "b"}),
            json!({"b": "c"}),
            json!({"a": "b", "b": "c"}),
        ),
        (json!({"a": "b"}), json!({"a": null}), json!({})),
        (
            json!({"a": "b", "b": "c"}),
            json!({"a": null}),
            json!({"b": "c"}),
        ),
        (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
        (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
        (
            json!({"a": {"b": "c"}}),
            json!({"a": {"b": "d", "c": null}}),
            json!({"a": {"b": "d"}}),
        ),
        (
            json!({"a": [{"b": "c"}]}),
            json!({"a": [1]}),
            json!({"a": [1]}),
        ),
        (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
        (json!({"a": "b"}), json!(["c"]), json!(["c"])),
        (
            json!({"e": null}),
            json!({"a": 1}),
            json!({"e": null, "a": 1}),
        ),
        (
            json!([1, 2]),
            json!({"a": "b", "c": null}),
            json!({"a": "b"}),
        ),
        (
            json!({}),
            json!({"a": {"bb": {"ccc": null}}}),
            json!({"a": {"bb": {}}}),
        ),
    ];
    for (target, patch, expected) in cases {
        assert_eq!(apply(&target, &patch), Ok(expected), "{target} + {patch}");
    }
    // The two examples whose patch is not an object or array: RFC 7386 replaces the
    // document with them; Kubernetes refuses them.
    for patch in [Value::Null, json!("bar")] {
        assert_eq!(
            apply(&json!({"a": "foo"}), &patch),
            Err(PatchError::BadRequest("Invalid JSON Patch".into()))
        );
    }
}

#[test]
fn label_and_scale_shapes() {
    // kubectl label pod p env=prod tier-
    let pod = json!({"metadata": {"name": "p", "labels": {"tier": "a"}}, "spec": {"containers": [{"name": "c"}]}});
    let patch = json!({"metadata": {"labels": {"env": "prod", "tier": null}}});
    assert_eq!(
        apply(&pod, &patch).unwrap(),
        json!({"metadata": {"name": "p", "labels": {"env": "prod"}}, "spec": {"containers": [{"name": "c"}]}})
    );
    // kubectl scale: a merge patch of the Scale subresource.
    let scale = json!({"kind": "Scale", "spec": {"replicas": 1}, "status": {"replicas": 1}});
    assert_eq!(
        apply(&scale, &json!({"spec": {"replicas": 3}})).unwrap(),
        json!({"kind": "Scale", "spec": {"replicas": 3}, "status": {"replicas": 1}})
    );
    // Lists are replaced whole.
    assert_eq!(
        apply(&pod, &json!({"spec": {"containers": [{"name": "d"}]}})).unwrap()["spec"],
        json!({"containers": [{"name": "d"}]})
    );
}
