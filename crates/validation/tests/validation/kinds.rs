//! Properties every served kind must have: its minimal object is valid on create, on an
//! unchanged update and on an unchanged status update, and defaulting is idempotent.

use crate::fixtures::{admit, all, rich, texts};
use kyb_validation::{
    default_object, prepare_for_create, validate_create, validate_status_update, validate_update,
};

#[test]
fn minimal_objects_are_valid_after_defaulting() {
    for f in all().into_iter().chain(rich()) {
        let mut o = f.object.clone();
        admit(f.group, f.version, f.kind, &mut o);
        let errs = validate_create(f.group, f.version, f.kind, f.namespaced, &o);
        assert!(errs.is_empty(), "{}: {:?}", f.kind, texts(&errs));
    }
}

#[test]
fn unchanged_updates_are_valid() {
    for f in all().into_iter().chain(rich()) {
        let mut o = f.object.clone();
        admit(f.group, f.version, f.kind, &mut o);
        // The engine fills in the stored resourceVersion before validating an update.
        o["metadata"]["resourceVersion"] = "42".into();
        let errs = validate_update(f.group, f.version, f.kind, f.namespaced, &o, &o);
        assert!(errs.is_empty(), "{} update: {:?}", f.kind, texts(&errs));
        let errs = validate_status_update(f.group, f.version, f.kind, f.namespaced, &o, &o);
        assert!(errs.is_empty(), "{} status: {:?}", f.kind, texts(&errs));
    }
}

#[test]
fn defaulting_and_preparation_are_idempotent() {
    for f in all().into_iter().chain(rich()) {
        let mut once = f.object.clone();
        default_object(f.group, f.version, f.kind, &mut once);
        let mut twice = once.clone();
        default_object(f.group, f.version, f.kind, &mut twice);
        assert_eq!(once, twice, "{}: defaults not idempotent", f.kind);

        let mut prepared = once.clone();
        prepare_for_create(f.group, f.version, f.kind, &mut prepared);
        let mut again = prepared.clone();
        prepare_for_create(f.group, f.version, f.kind, &mut again);
        // A PersistentVolume's phase transition time is "now": a second may have passed.
        for o in [&mut prepared, &mut again] {
            if let Some(status) = o.get_mut("status").and_then(|s| s.as_object_mut()) {
                status.remove("lastPhaseTransitionTime");
            }
        }
        assert_eq!(prepared, again, "{}: preparation not idempotent", f.kind);
        default_object(f.group, f.version, f.kind, &mut again);
        assert_eq!(
            prepared, again,
            "{}: defaults change a prepared object",
            f.kind
        );
    }
}

#[test]
fn scope_decides_whether_a_namespace_is_required() {
    for f in all() {
        let mut o = f.object.clone();
        admit(f.group, f.version, f.kind, &mut o);
        let flipped = validate_create(f.group, f.version, f.kind, !f.namespaced, &o);
        let expected = if f.namespaced {
            "metadata.namespace: Forbidden: not allowed on this type"
        } else {
            "metadata.namespace: Required value"
        };
        assert!(
            texts(&flipped).iter().any(|t| t == expected),
            "{}: {:?}",
            f.kind,
            texts(&flipped)
        );
    }
}

#[test]
fn unknown_kinds_get_metadata_validation_only() {
    let mut o = serde_json::json!({"metadata": {"name": "x", "namespace": "default"}, "spec": {"anything": [1, 2]}});
    let before = o.clone();
    admit("example.com", "v1", "Widget", &mut o);
    assert_eq!(o, before, "no defaults for unknown kinds");
    assert!(validate_create("example.com", "v1", "Widget", true, &o).is_empty());
    let bad = serde_json::json!({"metadata": {"name": "Bad_Name", "namespace": "default"}});
    let errs = validate_create("example.com", "v1", "Widget", true, &bad);
    assert_eq!(errs.len(), 1, "{:?}", texts(&errs));
    assert_eq!(errs[0].field, "metadata.name");
}
