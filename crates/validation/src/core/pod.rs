//! The Pod kind: create-time preparation (pending phase, QoS class, scheduling-gated
//! condition, `matchLabelKeys` merged into affinity selectors), validation of a new pod,
//! the narrow set of changes an update may make, status updates, and pod bindings.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::Ctx;
use crate::core::containers::validate_image_whitespace;
use crate::core::pod_spec::{SpecOpts, validate_pod_annotations, validate_pod_spec};
use crate::core::scheduling::validate_tolerations;
use crate::meta::{FIELD_IMMUTABLE_MSG, validate_qualified_name};
use crate::net::{is_dual_stack, validate_ip};
use kyb_apimachinery::equality::{diff_text, semantic_eq};
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, field, field_at};
use kyb_apimachinery::names;
use kyb_component_helpers::qos::compute_pod_qos_json as compute_qos;

/// Appends `In`/`NotIn` requirements for `matchLabelKeys`/`mismatchLabelKeys` to an
/// affinity term's selector, from the pod's own labels.
fn apply_label_keys(term: &mut Map<String, Value>, labels: &Value) {
    let match_keys: Vec<String> = term
        .get("matchLabelKeys")
        .map(|v| v.str_list_owned())
        .unwrap_or_default();
    let mismatch_keys: Vec<String> = term
        .get("mismatchLabelKeys")
        .map(|v| v.str_list_owned())
        .unwrap_or_default();
    if match_keys.is_empty() && mismatch_keys.is_empty() {
        return;
    }
    let Some(sel) = term.get_mut("labelSelector").and_then(Value::as_object_mut) else {
        return;
    };
    let mut added = Vec::new();
    for (keys, op) in [(match_keys, "In"), (mismatch_keys, "NotIn")] {
        for key in keys {
            if let Some(v) = labels.get(&key).and_then(Value::as_str) {
                added.push(json!({"key": key, "operator": op, "values": [v]}));
            }
        }
    }
    if added.is_empty() {
        return;
    }
    let exprs = sel.entry("matchExpressions").or_insert_with(|| json!([]));
    if exprs.is_null() {
        *exprs = json!([]);
    }
    if let Some(list) = exprs.as_array_mut() {
        list.extend(added);
    }
}

trait StrListOwned {
    fn str_list_owned(&self) -> Vec<String>;
}

impl StrListOwned for Value {
    fn str_list_owned(&self) -> Vec<String> {
        self.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn mutate_pod_affinity(pod: &mut Value) {
    let labels = field_at(pod, &["metadata", "labels"]).clone();
    let Some(aff) = pod
        .pointer_mut("/spec/affinity")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(pa) = aff.get_mut(kind).and_then(Value::as_object_mut) else {
            continue;
        };
        if let Some(list) = pa
            .get_mut("preferredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array_mut)
        {
            for t in list {
                if let Some(term) = t.get_mut("podAffinityTerm").and_then(Value::as_object_mut) {
                    apply_label_keys(term, &labels);
                }
            }
        }
        if let Some(list) = pa
            .get_mut("requiredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array_mut)
        {
            for t in list {
                if let Some(term) = t.as_object_mut() {
                    apply_label_keys(term, &labels);
                }
            }
        }
    }
}

/// `podStrategy.PrepareForCreate`.
pub(crate) fn prepare(pod: &mut Value) {
    let qos = compute_qos(field(pod, "spec"));
    let gated = !field_at(pod, &["spec", "schedulingGates"])
        .as_array()
        .is_none_or(Vec::is_empty);
    let Some(o) = pod.as_object_mut() else { return };
    let mut status = json!({"phase": "Pending", "qosClass": qos});
    if gated {
        status["conditions"] = json!([{
            "type": "PodScheduled",
            "status": "False",
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates"
        }]);
    }
    o.insert("status".to_string(), status);
    mutate_pod_affinity(pod);
}

/// `validatePodMetadataAndSpec` (the metadata itself is validated by the caller), plus
/// the create-only rules of `ValidatePodCreate`.
pub(crate) fn validate(pod: &Value, ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let meta = field(pod, "metadata");
    let spec = field(pod, "spec");
    let spec_path = Path::new("spec");
    errs.extend(validate_pod_annotations(
        meta,
        spec,
        &Path::new("metadata").child("annotations"),
    ));
    let opts = SpecOpts {
        is_pod: true,
        pod_name: Some(meta.str("name")),
    };
    errs.extend(validate_pod_spec(spec, opts, &spec_path));
    if spec.str("serviceAccountName").is_empty() {
        for (vi, vol) in spec.arr("volumes").iter().enumerate() {
            for (si, src) in field_at(vol, &["projected", "sources"])
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                if src.has("serviceAccountToken") {
                    errs.push(FieldError::forbidden(
                        &spec_path
                            .child("volumes")
                            .index(vi)
                            .child("projected")
                            .child("sources")
                            .index(si)
                            .child("serviceAccountToken"),
                        "must not be specified when serviceAccountName is not set",
                    ));
                }
            }
        }
    }
    for key in ["containers", "initContainers"] {
        for (i, c) in spec.arr(key).iter().enumerate() {
            errs.extend(validate_image_whitespace(c, &spec_path.child(key).index(i)));
        }
    }
    if ctx.old.is_none() {
        if !spec.arr("ephemeralContainers").is_empty() {
            errs.push(FieldError::forbidden(
                &spec_path.child("ephemeralContainers"),
                "cannot be set on create",
            ));
        }
        if !spec.str("nodeName").is_empty() && !spec.arr("schedulingGates").is_empty() {
            errs.push(FieldError::forbidden(
                &spec_path.child("nodeName"),
                "cannot be set until all schedulingGates have been cleared",
            ));
        }
    }
    errs
}

const MIRROR: &str = "kubernetes.io/config.mirror";
const APPARMOR_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

fn validate_annotation_updates(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = Path::new("metadata").child("annotations");
    let new_a = field_at(new, &["metadata", "annotations"]);
    let old_a = field_at(old, &["metadata", "annotations"]);
    for (k, v) in old_a.str_map_owned() {
        if new_a.get(&k).and_then(Value::as_str) == Some(v.as_str()) {
            continue;
        }
        if k.starts_with(APPARMOR_PREFIX) {
            errs.push(FieldError::forbidden(
                &path.key(&k),
                "may not remove or update AppArmor annotations",
            ));
        }
        if k == MIRROR {
            errs.push(FieldError::forbidden(
                &path.key(&k),
                "may not remove or update mirror pod annotation",
            ));
        }
    }
    for (k, _) in new_a.str_map_owned() {
        if old_a.get(&k).is_some() {
            continue;
        }
        if k.starts_with(APPARMOR_PREFIX) {
            errs.push(FieldError::forbidden(
                &path.key(&k),
                "may not add AppArmor annotations",
            ));
        }
        if k == MIRROR {
            errs.push(FieldError::forbidden(
                &path.key(&k),
                "may not add mirror pod annotation",
            ));
        }
    }
    errs
}

trait StrMapOwned {
    fn str_map_owned(&self) -> Vec<(String, String)>;
}

impl StrMapOwned for Value {
    fn str_map_owned(&self) -> Vec<(String, String)> {
        self.as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn validate_container_updates(
    new: &[Value],
    old: &[Value],
    path: &Path,
) -> (Vec<FieldError>, bool) {
    if new.len() != old.len() {
        return (
            vec![FieldError::forbidden(
                path,
                "pod updates may not add or remove containers",
            )],
            true,
        );
    }
    let mut errs = Vec::new();
    for (i, c) in new.iter().enumerate() {
        if c.str("image").is_empty() {
            errs.push(FieldError::required(&path.index(i).child("image"), ""));
        }
        errs.extend(validate_image_whitespace(c, &path.index(i)));
    }
    (errs, false)
}

const UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// A toleration without its `tolerationSeconds`, the part an update may not change.
fn toleration_key(t: &Value) -> (&str, &str, &str, &str) {
    (
        t.str("key"),
        t.str("operator"),
        t.str("value"),
        t.str("effect"),
    )
}

fn only_added_tolerations(new: &[Value], old: &[Value], path: &Path) -> Vec<FieldError> {
    let present: HashSet<(&str, &str, &str, &str)> = new.iter().map(toleration_key).collect();
    for o in old {
        if !present.contains(&toleration_key(o)) {
            return vec![FieldError::forbidden(
                path,
                "existing toleration can not be modified except its tolerationSeconds",
            )];
        }
    }
    validate_tolerations(new, path)
}

fn only_deleted_gates(new: &[Value], old: &[Value], path: &Path) -> Vec<FieldError> {
    let old_names: HashSet<&str> = old.iter().map(|g| g.str("name")).collect();
    new.iter()
        .enumerate()
        .filter(|(_, g)| !old_names.contains(g.str("name")))
        .map(|(i, g)| {
            FieldError::forbidden(
                &path.index(i).child("name"),
                format!(
                    "only deletion is allowed, but found new scheduling gate '{}'",
                    g.str("name")
                ),
            )
        })
        .collect()
}

/// `ValidatePodUpdate` beyond what `validate` checks again on the new object.
pub(crate) fn validate_update(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = validate_annotation_updates(new, old);
    let spec_path = Path::new("spec");
    let ns = field(new, "spec");
    let os = field(old, "spec");
    for key in ["containers", "initContainers"] {
        let (e, stop) = validate_container_updates(ns.arr(key), os.arr(key), &spec_path.child(key));
        errs.extend(e);
        if stop {
            return errs;
        }
    }
    let new_ads = ns.int("activeDeadlineSeconds");
    let old_ads = os.int("activeDeadlineSeconds");
    match (new_ads, old_ads) {
        (Some(n), _) if !(0..=i64::from(i32::MAX)).contains(&n) => {
            errs.push(FieldError::invalid(
                &spec_path.child("activeDeadlineSeconds"),
                n,
                names::inclusive_range_error(0, i64::from(i32::MAX)),
            ));
            return errs;
        }
        (Some(n), Some(o)) if o < n => {
            errs.push(FieldError::invalid(
                &spec_path.child("activeDeadlineSeconds"),
                n,
                "must be less than or equal to previous value",
            ));
            return errs;
        }
        (None, Some(_)) => errs.push(FieldError::invalid(
            &spec_path.child("activeDeadlineSeconds"),
            Value::Null,
            "must not update from a positive integer to nil value",
        )),
        _ => {}
    }
    errs.extend(only_added_tolerations(
        ns.arr("tolerations"),
        os.arr("tolerations"),
        &spec_path.child("tolerations"),
    ));
    errs.extend(only_deleted_gates(
        ns.arr("schedulingGates"),
        os.arr("schedulingGates"),
        &spec_path.child("schedulingGates"),
    ));
    if semantic_eq(ns, os) {
        return errs;
    }
    let mut munged = ns.clone();
    if let Some(m) = munged.as_object_mut() {
        for key in ["containers", "initContainers"] {
            if let Some(list) = m.get_mut(key).and_then(Value::as_array_mut) {
                for (i, c) in list.iter_mut().enumerate() {
                    if let Some(c) = c.as_object_mut() {
                        let old_image = os
                            .arr(key)
                            .get(i)
                            .map(|o| field(o, "image").clone())
                            .unwrap_or(Value::Null);
                        c.insert("image".to_string(), old_image);
                    }
                }
            }
        }
        for key in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
            match os.get_field(key) {
                Some(v) => m.insert(key.to_string(), v.clone()),
                None => m.remove(key),
            };
        }
        if os
            .int("terminationGracePeriodSeconds")
            .is_some_and(|g| g < 0)
            && ns.int("terminationGracePeriodSeconds") == Some(1)
        {
            m.insert(
                "terminationGracePeriodSeconds".to_string(),
                field(os, "terminationGracePeriodSeconds").clone(),
            );
        }
        if !os.arr("schedulingGates").is_empty() {
            let new_sel = field(ns, "nodeSelector");
            let old_sel = field(os, "nodeSelector");
            if !semantic_eq(new_sel, old_sel) {
                let removed_or_changed = old_sel.str_map_owned().iter().any(|(k, v)| {
                    new_sel.get(k.as_str()).and_then(Value::as_str) != Some(v.as_str())
                });
                if removed_or_changed {
                    errs.push(FieldError::invalid(
                        &spec_path.child("nodeSelector"),
                        new_sel.clone(),
                        "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
                    ));
                }
                match os.get_field("nodeSelector") {
                    Some(v) => m.insert("nodeSelector".to_string(), v.clone()),
                    None => m.remove("nodeSelector"),
                };
            }
        }
    }
    if !semantic_eq(&munged, os) {
        errs.push(FieldError::forbidden(
            &spec_path,
            format!(
                "pod updates may not change fields other than {UPDATABLE}\n{}",
                diff_text(os, &munged)
            ),
        ));
    }
    errs
}

fn terminated(status: &Value) -> Option<&Value> {
    field_at(status, &["state", "terminated"])
        .as_object()
        .map(|_| field_at(status, &["state", "terminated"]))
}

fn container_state_transitions(
    new: &[Value],
    old: &[Value],
    restart: &str,
    init_spec: Option<&[Value]>,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if restart == "Always" {
        return errs;
    }
    for (i, o) in old.iter().enumerate() {
        let Some(t) = terminated(o) else { continue };
        if t.int("exitCode").unwrap_or(0) != 0 && restart == "OnFailure" {
            continue;
        }
        if let Some(init) = init_spec
            && init
                .iter()
                .any(|c| c.str("name") == o.str("name") && c.str("restartPolicy") == "Always")
        {
            continue;
        }
        if new
            .iter()
            .any(|n| n.str("name") == o.str("name") && terminated(n).is_none())
        {
            errs.push(FieldError::forbidden(
                &path.index(i).child("state"),
                "may not be transitioned to non-terminated state",
            ));
        }
    }
    errs
}

fn validate_ip_list(list: &[Value], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ips: Vec<&str> = list.iter().map(|p| p.str("ip")).collect();
    for (i, ip) in ips.iter().enumerate() {
        errs.extend(validate_ip(&path.index(i), ip));
    }
    if ips.len() > 1 {
        if !is_dual_stack(&ips) || ips.len() > 2 {
            errs.push(FieldError::invalid(
                path,
                Value::from(list.to_vec()),
                "may specify no more than one IP for each IP family",
            ));
        }
        let mut seen: HashSet<&str> = HashSet::new();
        for (i, ip) in ips.iter().enumerate() {
            if !seen.insert(ip) {
                errs.push(FieldError::duplicate(
                    &path.index(i),
                    list.get(i).cloned().unwrap_or(Value::Null),
                ));
            }
        }
    }
    errs
}

/// `ValidatePodStatusUpdate`.
pub(crate) fn validate_status(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = validate_annotation_updates(new, old);
    let meta_path = Path::new("metadata");
    for (i, c) in field_at(new, &["status", "conditions"])
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let t = c.str("type");
        if !matches!(t, "PodScheduled" | "Ready" | "Initialized") {
            errs.extend(validate_qualified_name(
                t,
                &meta_path.child("conditions").index(i).child("Type"),
            ));
        }
    }
    let status_path = Path::new("status");
    if field_at(new, &["spec", "nodeName"]) != field_at(old, &["spec", "nodeName"]) {
        errs.push(FieldError::forbidden(
            &status_path.child("nodeName"),
            "may not be changed directly",
        ));
    }
    let nominated = field_at(new, &["status", "nominatedNodeName"])
        .as_str()
        .unwrap_or_default();
    if nominated
        != field_at(old, &["status", "nominatedNodeName"])
            .as_str()
            .unwrap_or_default()
        && !nominated.is_empty()
    {
        for m in names::name_is_dns_subdomain(nominated, false) {
            errs.push(FieldError::invalid(
                &status_path.child("nominatedNodeName"),
                nominated,
                m,
            ));
        }
    }
    let new_qos = field_at(new, &["status", "qosClass"]);
    if !semantic_eq(new_qos, field_at(old, &["status", "qosClass"])) {
        errs.push(FieldError::invalid(
            &status_path.child("qosClass"),
            new_qos.clone(),
            FIELD_IMMUTABLE_MSG,
        ));
    }
    let restart = field_at(old, &["spec", "restartPolicy"])
        .as_str()
        .unwrap_or_default();
    let list = |v: &Value, k: &str| {
        field_at(v, &["status", k])
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .to_vec()
    };
    errs.extend(container_state_transitions(
        &list(new, "containerStatuses"),
        &list(old, "containerStatuses"),
        restart,
        None,
        &status_path.child("containerStatuses"),
    ));
    let init_spec = field_at(old, &["spec", "initContainers"])
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    errs.extend(container_state_transitions(
        &list(new, "initContainerStatuses"),
        &list(old, "initContainerStatuses"),
        restart,
        Some(init_spec),
        &status_path.child("initContainerStatuses"),
    ));
    errs.extend(container_state_transitions(
        &list(new, "ephemeralContainerStatuses"),
        &list(old, "ephemeralContainerStatuses"),
        "Never",
        None,
        &status_path.child("ephemeralContainerStatuses"),
    ));
    errs.extend(validate_ip_list(
        &list(new, "podIPs"),
        &status_path.child("podIPs"),
    ));
    let host_ips = list(new, "hostIPs");
    if let Some(first) = host_ips.first() {
        let host_ip = field_at(new, &["status", "hostIP"])
            .as_str()
            .unwrap_or_default();
        if first.str("ip") != host_ip {
            errs.push(FieldError::invalid(
                &status_path.child("hostIPs").index(0).child("ip"),
                first.str("ip"),
                "must be equal to `hostIP`",
            ));
        }
        errs.extend(validate_ip_list(&host_ips, &status_path.child("hostIPs")));
    }
    errs
}

/// `ValidatePodBinding` for `pods/binding` (a `Binding` object).
pub(crate) fn validate_binding(binding: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let target = field(binding, "target");
    let kind = target.str("kind");
    if !kind.is_empty() && kind != "Node" {
        errs.push(FieldError::not_supported(
            &Path::new("target").child("kind"),
            kind,
            &["Node", "<empty>"],
        ));
    }
    if target.str("name").is_empty() {
        errs.push(FieldError::required(&Path::new("target").child("name"), ""));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_with(resources: &[Value]) -> Value {
        let containers: Vec<Value> = resources
            .iter()
            .map(|r| json!({"name": "c", "resources": r}))
            .collect();
        json!({"containers": containers})
    }

    #[test]
    fn qos_classes() {
        assert_eq!(compute_qos(&spec_with(&[json!({})])), "BestEffort");
        assert_eq!(
            compute_qos(&spec_with(&[
                json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}})
            ])),
            "Guaranteed"
        );
        assert_eq!(
            compute_qos(&spec_with(&[
                json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}})
            ])),
            "Burstable"
        );
        assert_eq!(
            compute_qos(&spec_with(&[json!({"requests": {"cpu": "100m"}})])),
            "Burstable"
        );
        assert_eq!(
            compute_qos(&spec_with(&[
                json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}),
                json!({"limits": {"cpu": "1"}, "requests": {"cpu": "1"}})
            ])),
            "Burstable"
        );
        assert_eq!(
            compute_qos(&spec_with(&[json!({"requests": {"example.com/gpu": "1"}})])),
            "BestEffort"
        );
    }

    #[test]
    fn prepare_sets_status_and_gates() {
        let mut pod = json!({"metadata": {"labels": {"app": "a"}}, "spec": {"schedulingGates": [{"name": "x"}], "containers": [],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {}, "matchLabelKeys": ["app", "missing"], "topologyKey": "zone"}]}}},
            "status": {"phase": "Running"}});
        prepare(&mut pod);
        assert_eq!(pod["status"]["phase"], json!("Pending"));
        assert_eq!(pod["status"]["qosClass"], json!("BestEffort"));
        assert_eq!(
            pod["status"]["conditions"][0]["reason"],
            json!("SchedulingGated")
        );
        assert_eq!(
            pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                [0]["labelSelector"],
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a"]}]})
        );
    }
}
