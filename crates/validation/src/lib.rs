//! Defaulting and validation of built-in Kubernetes kinds, as the Kubernetes 1.33 API server
//! does them, on objects in their JSON form.
//!
//! The API server's REST engine calls, for every create of a built-in kind:
//! [`default_object`] (Kubernetes' `SetDefaults_*`, applied on decode), then
//! [`prepare_for_create`] (the registry strategies' `PrepareForCreate`: status reset, QoS
//! class, generated Job selectors, ...), then [`validate_create`]; for updates
//! [`default_object`], optionally [`prepare_for_update`], and [`validate_update`]; for
//! `/status` updates [`prepare_for_status_update`] and [`validate_status_update`].
//! Validation returns [`FieldError`]s worded exactly like Kubernetes' `field.Error`, and
//! [`invalid_message`] builds the `Status` message around them.
//!
//! Metadata bookkeeping (uid, resourceVersion, creationTimestamp, generation, managed
//! fields, deletion) and Service IP/port allocation belong to the engine.
//!
//! Inputs are untrusted: every accessor tolerates missing fields, wrong types and `null`,
//! and nothing here panics on odd input.

mod core;
mod cron;
mod groups;
mod kinds;
mod meta;
mod net;
mod selector;

use serde_json::Value;

pub use kyb_apimachinery::field::{ErrorKind, FieldError, invalid_message};

use crate::kinds::{Kind, MetaMode, lookup};
use crate::meta::{MetaRules, validate_object_meta, validate_object_meta_update};
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{self, Obj};
use kyb_apimachinery::names;

/// What a kind's validation functions know besides the object.
pub(crate) struct Ctx<'a> {
    /// The stored object, on update.
    pub(crate) old: Option<&'a Value>,
}

/// The current time as Kubernetes writes timestamps (`2006-01-02T15:04:05Z`).
pub(crate) fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second())
        .map(|t| t.to_string())
        .unwrap_or_else(|_| now.to_string())
}

/// Fills in defaults (Kubernetes' `SetDefaults_*` for 1.33) for an object of
/// group/version/kind, and writes resource quantities in canonical form. Idempotent.
/// Unknown kinds are left alone.
pub fn default_object(group: &str, version: &str, kind: &str, object: &mut Value) {
    if let Some(k) = lookup(group, version, kind) {
        (k.defaults)(object);
    }
}

/// Create-time preparation beyond defaults that Kubernetes' registry strategies do
/// (`PrepareForCreate`): e.g. a Pod's status becomes `{phase: Pending, qosClass: ...}`, a
/// Namespace gets `status.phase: Active` and the `kubernetes` finalizer, workloads get their
/// status cleared, a Job gets its generated selector and labels (which needs
/// `metadata.uid`: set it before calling this). Defaults are re-applied afterwards, as
/// Kubernetes does when it reads the stored object back.
pub fn prepare_for_create(group: &str, version: &str, kind: &str, object: &mut Value) {
    if let Some(k) = lookup(group, version, kind) {
        (k.prepare)(object);
        (k.defaults)(object);
    }
}

/// Update preparation beyond defaults (`PrepareForUpdate`) for a request to the main
/// resource: the status of kinds with a status subresource is kept from the stored
/// object, a Namespace keeps its `spec.finalizers`, a Service keeps its allocated cluster
/// IPs and node ports when the request leaves them out.
pub fn prepare_for_update(group: &str, version: &str, kind: &str, new: &mut Value, old: &Value) {
    if let Some(k) = lookup(group, version, kind) {
        if k.status_subresource
            && let Some(n) = new.as_object_mut()
        {
            match old.get("status") {
                Some(s) => n.insert("status".to_string(), s.clone()),
                None => n.remove("status"),
            };
        }
        (k.prepare_update)(new, old);
        (k.defaults)(new);
    }
}

/// Preparation of a `/status` update (`PrepareForUpdate` of the status strategies): every
/// top-level field but `status` comes from the stored object; which metadata comes from it
/// too is each kind's choice, as in Kubernetes (see [`status_kept_metadata`]).
pub fn prepare_for_status_update(
    group: &str,
    version: &str,
    kind: &str,
    new: &mut Value,
    old: &Value,
) {
    let Some(n) = new.as_object_mut() else { return };
    let status = n.remove("status");
    let new_meta = n.remove("metadata");
    n.clear();
    if let Some(o) = old.as_object() {
        for (k, v) in o {
            if k != "status" && k != "metadata" {
                n.insert(k.clone(), v.clone());
            }
        }
    }
    let mut meta = new_meta.unwrap_or(Value::Null);
    let builtin = lookup(group, version, kind).is_some();
    if let Some(m) = meta.as_object_mut() {
        let whole = !builtin
            || matches!(
                (group, kind),
                (
                    "flowcontrol.apiserver.k8s.io",
                    "FlowSchema" | "PriorityLevelConfiguration"
                )
            );
        if whole {
            // Custom resources and flow control: metadata is the stored one but for the
            // managed fields the status write itself recorded.
            let managed = m.remove("managedFields");
            *m = old
                .get("metadata")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            match managed {
                Some(managed) => m.insert("managedFields".into(), managed),
                None => m.remove("managedFields"),
            };
        } else {
            for key in ["generation", "deletionTimestamp"]
                .into_iter()
                .chain(status_kept_metadata(group, kind).iter().copied())
            {
                match old.get("metadata").and_then(|om| om.get(key)) {
                    Some(v) => m.insert(key.to_string(), v.clone()),
                    None => m.remove(key),
                };
            }
        }
    }
    if !meta.is_null() {
        n.insert("metadata".to_string(), meta);
    }
    if let Some(s) = status {
        n.insert("status".to_string(), s);
    }
    if group.is_empty() && kind == "PersistentVolume" {
        core::storage::prepare_pv_status_update(new, old);
    }
    default_object(group, version, kind, new);
}

/// The metadata a kind's `/status` writes may not change (beyond `generation` and
/// `deletionTimestamp`, which no update changes): Kubernetes' status strategies mostly
/// reset only the spec; a few reset labels, owner references, or everything
/// `ResetObjectMetaForStatus` covers.
fn status_kept_metadata(group: &str, kind: &str) -> &'static [&'static str] {
    const RESET_FOR_STATUS: &[&str] = &["labels", "annotations", "finalizers", "ownerReferences"];
    match (group, kind) {
        ("apps", "Deployment") => &["labels"],
        ("", "Pod") => &["ownerReferences"],
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy")
        | ("storage.k8s.io", "VolumeAttachment") => RESET_FOR_STATUS,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            &["labels", "annotations", "ownerReferences"]
        }
        _ => &[],
    }
}

fn meta_rules(k: Option<&Kind>) -> Option<MetaRules> {
    match k {
        None => Some(MetaRules {
            name_fn: names::name_is_dns_subdomain,
            kube_finalizers: false,
        }),
        Some(k) => match k.meta {
            MetaMode::Skip => None,
            MetaMode::Core => Some(MetaRules {
                name_fn: k.name_fn,
                kube_finalizers: true,
            }),
            MetaMode::Generic => Some(MetaRules {
                name_fn: k.name_fn,
                kube_finalizers: false,
            }),
        },
    }
}

fn not_an_object(object: &Value) -> Option<Vec<FieldError>> {
    if object.is_object() {
        None
    } else {
        Some(vec![FieldError::invalid(
            &Path::new(""),
            object.clone(),
            "must be a JSON object",
        )])
    }
}

/// Drops repeated errors (the same rule reached twice), keeping the first of each.
fn dedup(errs: Vec<FieldError>) -> Vec<FieldError> {
    let mut seen = std::collections::HashSet::new();
    errs.into_iter()
        .filter(|e| seen.insert(format!("{}|{}", e.kind.reason(), e)))
        .collect()
}

/// Validates a new object, metadata included: the name rule of the kind, generateName,
/// namespace required or forbidden by scope, labels, annotations, finalizers, owner
/// references, then the kind's own rules. Unknown kinds get metadata validation only.
pub fn validate_create(
    group: &str,
    version: &str,
    kind: &str,
    namespaced: bool,
    object: &Value,
) -> Vec<FieldError> {
    if let Some(e) = not_an_object(object) {
        return e;
    }
    let k = lookup(group, version, kind);
    let ctx = Ctx { old: None };
    let mut errs = Vec::new();
    if let Some(rules) = meta_rules(k.as_ref()) {
        errs.extend(validate_object_meta(
            json::field(object, "metadata"),
            namespaced,
            rules,
            &Path::new("metadata"),
        ));
    }
    if let Some(k) = &k {
        errs.extend((k.validate)(object, &ctx));
    }
    dedup(errs)
}

/// Validates an update: what [`validate_create`] checks on the new object, plus the fields
/// that may not change (metadata identity, pod spec except the mutable fields, selectors of
/// workloads, Service cluster IPs, Job templates, PVC specs, immutable ConfigMaps and
/// Secrets, ...).
pub fn validate_update(
    group: &str,
    version: &str,
    kind: &str,
    namespaced: bool,
    new: &Value,
    old: &Value,
) -> Vec<FieldError> {
    if let Some(e) = not_an_object(new) {
        return e;
    }
    let k = lookup(group, version, kind);
    let ctx = Ctx { old: Some(old) };
    let mut errs = Vec::new();
    let new_meta = json::field(new, "metadata");
    if let Some(rules) = meta_rules(k.as_ref()) {
        errs.extend(validate_object_meta_update(
            new_meta,
            json::field(old, "metadata"),
            rules,
            &Path::new("metadata"),
        ));
        errs.extend(validate_object_meta(
            new_meta,
            namespaced,
            rules,
            &Path::new("metadata"),
        ));
    }
    if let Some(k) = &k {
        errs.extend((k.validate)(new, &ctx));
        errs.extend((k.update)(new, old, &ctx));
    }
    dedup(errs)
}

/// Validates an update through the `/status` subresource: metadata update rules plus the
/// kind's status checks (Kubernetes validates status updates separately and more
/// loosely).
pub fn validate_status_update(
    group: &str,
    version: &str,
    kind: &str,
    namespaced: bool,
    new: &Value,
    old: &Value,
) -> Vec<FieldError> {
    // Scope was checked when the object was created, and metadata cannot move.
    let _ = namespaced;
    if let Some(e) = not_an_object(new) {
        return e;
    }
    let k = lookup(group, version, kind);
    let ctx = Ctx { old: Some(old) };
    let mut errs = Vec::new();
    if let Some(rules) = meta_rules(k.as_ref()) {
        errs.extend(validate_object_meta_update(
            json::field(new, "metadata"),
            json::field(old, "metadata"),
            rules,
            &Path::new("metadata"),
        ));
    }
    if let Some(k) = &k {
        errs.extend((k.status)(new, old, &ctx));
    }
    dedup(errs)
}

/// Validates a `namespaces/{name}/finalize` update: metadata update rules and the
/// finalizer names in `spec.finalizers`.
pub fn validate_namespace_finalize(new: &Value, old: &Value) -> Vec<FieldError> {
    let rules = MetaRules {
        name_fn: names::name_is_dns_label,
        kube_finalizers: true,
    };
    let mut errs = validate_object_meta_update(
        json::field(new, "metadata"),
        json::field(old, "metadata"),
        rules,
        &Path::new("metadata"),
    );
    let path = Path::new("spec").child("finalizers");
    for (i, f) in json::field(new, "spec")
        .str_list("finalizers")
        .iter()
        .enumerate()
    {
        errs.extend(meta::validate_finalizer_name(f, &path.index(i)));
    }
    dedup(errs)
}
