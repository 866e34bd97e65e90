//! `storage.k8s.io/v1`: StorageClasses (provisioner, parameters, reclaim policy, binding
//! mode, allowed topologies), CSIDrivers (their defaults and modes), CSINodes and
//! VolumeAttachments.

use serde_json::{Value, json};

use crate::Ctx;
use crate::core::reset_status;
use crate::core::storage::validate_pv;
use crate::core::volumes::validate_csi_driver_name;
use crate::kinds::Kind;
use crate::meta::{immutable, validate_label_name, validate_qualified_name};
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, child_object, default_str, default_value, field, field_at};
use kyb_apimachinery::names;

/// The rules of a `storage.k8s.io/v1` kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    let subdomain = names::name_is_dns_subdomain;
    Some(match kind {
        "StorageClass" => Kind::new(subdomain)
            .defaults(default_storage_class)
            .validate(validate_storage_class)
            .update(validate_storage_class_update),
        "CSIDriver" => Kind::new(subdomain)
            .defaults(default_csi_driver)
            .validate(validate_csi_driver)
            .update(validate_csi_driver_update),
        "CSINode" => Kind::new(subdomain).validate(validate_csi_node),
        "VolumeAttachment" => Kind::new(subdomain)
            .with_status()
            .prepare(|o| reset_status(o, json!({"attached": false})))
            .validate(validate_volume_attachment)
            .update(|n, o, _| immutable(field(n, "spec"), field(o, "spec"), &Path::new("spec"))),
        "CSIStorageCapacity" => super::storage_capacity::csi_storage_capacity(),
        _ => return None,
    })
}

fn default_storage_class(obj: &mut Value) {
    if let Some(o) = obj.as_object_mut() {
        default_str(o, "reclaimPolicy", "Delete");
        default_str(o, "volumeBindingMode", "Immediate");
    }
}

fn validate_storage_class(sc: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let prov = sc.str("provisioner");
    let pp = Path::new("provisioner");
    if prov.is_empty() {
        errs.push(FieldError::required(&pp, ""));
    } else {
        errs.extend(validate_qualified_name(&prov.to_lowercase(), &pp));
    }
    if let Some(params) = sc.obj("parameters") {
        let path = Path::new("parameters");
        if params.len() > 512 {
            errs.push(FieldError::too_many(&path, params.len(), 512));
        }
        let mut total = 0;
        for (k, v) in params {
            if k.is_empty() {
                errs.push(FieldError::invalid(
                    &path,
                    k.as_str(),
                    "field can not be empty.",
                ));
            }
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > 256 * 1024 {
            errs.push(FieldError::too_long(&path, 256 * 1024));
        }
    }
    let rp = sc.str("reclaimPolicy");
    if !rp.is_empty() && rp != "Delete" && rp != "Retain" {
        errs.push(FieldError::not_supported(
            &Path::new("reclaimPolicy"),
            rp,
            &["Delete", "Retain"],
        ));
    }
    match sc.opt_str("volumeBindingMode") {
        None => errs.push(FieldError::required(&Path::new("volumeBindingMode"), "")),
        Some("Immediate" | "WaitForFirstConsumer") => {}
        Some(other) => errs.push(FieldError::not_supported(
            &Path::new("volumeBindingMode"),
            other,
            &["Immediate", "WaitForFirstConsumer"],
        )),
    }
    let tp = Path::new("allowedTopologies");
    for (i, term) in sc.arr("allowedTopologies").iter().enumerate() {
        let ep = tp.index(i).child("matchLabelExpressions");
        let mut keys: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for (j, req) in term.arr("matchLabelExpressions").iter().enumerate() {
            let rp = ep.index(j);
            let values = req.str_list("values");
            if values.is_empty() {
                errs.push(FieldError::required(&rp.child("values"), ""));
            }
            let mut seen_values: std::collections::HashSet<&str> = std::collections::HashSet::new();
            for (k, v) in values.iter().enumerate() {
                if !seen_values.insert(v) {
                    errs.push(FieldError::duplicate(&rp.child("values").index(k), *v));
                }
            }
            let key = req.str("key");
            errs.extend(validate_label_name(key, &rp.child("key")));
            if keys.contains(key) {
                errs.push(FieldError::duplicate(&rp.child("key"), key));
            }
            keys.insert(key);
        }
    }
    errs
}

fn validate_storage_class_update(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for key in ["parameters", "provisioner", "reclaimPolicy"] {
        if !kyb_apimachinery::equality::semantic_eq_field(new, old, key) {
            errs.push(FieldError::forbidden(
                &Path::new(key),
                format!("updates to {key} are forbidden."),
            ));
        }
    }
    errs.extend(immutable(
        field(new, "volumeBindingMode"),
        field(old, "volumeBindingMode"),
        &Path::new("volumeBindingMode"),
    ));
    errs
}

fn default_csi_driver(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    let Some(spec) = child_object(o, "spec") else {
        return;
    };
    default_value(spec, "attachRequired", json!(true));
    default_value(spec, "podInfoOnMount", json!(false));
    default_value(spec, "storageCapacity", json!(false));
    default_value(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    default_value(spec, "requiresRepublish", json!(false));
    default_value(spec, "seLinuxMount", json!(false));
    let empty_modes = spec
        .get("volumeLifecycleModes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if empty_modes {
        spec.insert("volumeLifecycleModes".to_string(), json!(["Persistent"]));
    }
}

fn validate_csi_driver(d: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = validate_csi_driver_name(
        field_at(d, &["metadata", "name"])
            .as_str()
            .unwrap_or_default(),
        &Path::new("name"),
    );
    let spec = field(d, "spec");
    let sp = Path::new("spec");
    for key in [
        "attachRequired",
        "podInfoOnMount",
        "storageCapacity",
        "requiresRepublish",
    ] {
        if !spec.has(key) {
            errs.push(FieldError::required(&sp.child(key), ""));
        }
    }
    if let Some(p) = spec.opt_str("fsGroupPolicy")
        && !["File", "None", "ReadWriteOnceWithFSType"].contains(&p)
    {
        errs.push(FieldError::not_supported(
            &sp.child("fsGroupPolicy"),
            p,
            &["File", "None", "ReadWriteOnceWithFSType"],
        ));
    }
    for (i, m) in spec.arr("volumeLifecycleModes").iter().enumerate() {
        let m = m.as_str().unwrap_or_default();
        if m != "Persistent" && m != "Ephemeral" {
            errs.push(FieldError::not_supported(
                &sp.child("volumeLifecycleModes").index(i),
                m,
                &["Ephemeral", "Persistent"],
            ));
        }
    }
    let mut audiences: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (i, t) in spec.arr("tokenRequests").iter().enumerate() {
        let tp = sp.child("tokenRequests").index(i);
        let aud = t.str("audience");
        if audiences.contains(aud) {
            errs.push(FieldError::duplicate(&tp.child("audience"), aud));
        }
        audiences.insert(aud);
        if let Some(exp) = t.int("expirationSeconds") {
            if exp < 600 {
                errs.push(FieldError::invalid(
                    &tp.child("expirationSeconds"),
                    exp,
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if exp > 1 << 32 {
                errs.push(FieldError::invalid(
                    &tp.child("expirationSeconds"),
                    exp,
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
        }
    }
    errs
}

fn validate_csi_driver_update(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for key in ["volumeLifecycleModes", "fsGroupPolicy"] {
        errs.extend(immutable(
            field_at(new, &["spec", key]),
            field_at(old, &["spec", key]),
            &Path::new("spec").child(key),
        ));
    }
    errs
}

fn validate_csi_node(n: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let dp = Path::new("spec").child("drivers");
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (i, d) in field_at(n, &["spec", "drivers"])
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let p = dp.index(i);
        let name = d.str("name");
        errs.extend(validate_csi_driver_name(name, &p.child("name")));
        if seen.contains(name) {
            errs.push(FieldError::duplicate(&p.child("name"), name));
        }
        seen.insert(name);
        let node_id = d.str("nodeID");
        if node_id.is_empty() {
            errs.push(FieldError::required(&p.child("nodeID"), ""));
        } else if node_id.len() > 192 {
            errs.push(FieldError::invalid(
                &p.child("nodeID"),
                node_id,
                "must be 192 characters or less",
            ));
        }
        for (j, k) in d.str_list("topologyKeys").iter().enumerate() {
            errs.extend(validate_qualified_name(
                k,
                &p.child("topologyKeys").index(j),
            ));
        }
        if let Some(c) = field_at(d, &["allocatable", "count"]).as_i64()
            && c < 0
        {
            errs.push(FieldError::invalid(
                &p.child("allocatable").child("count"),
                c,
                crate::meta::IS_NEGATIVE_MSG,
            ));
        }
    }
    errs
}

fn validate_volume_attachment(va: &Value, ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(va, "spec");
    let sp = Path::new("spec");
    errs.extend(validate_csi_driver_name(
        spec.str("attacher"),
        &sp.child("attacher"),
    ));
    let node = spec.str("nodeName");
    if node.is_empty() {
        errs.push(FieldError::required(&sp.child("nodeName"), ""));
    } else {
        for m in names::name_is_dns_subdomain(node, false) {
            errs.push(FieldError::invalid(&sp.child("nodeName"), node, m));
        }
    }
    let src = field(spec, "source");
    let srcp = sp.child("source");
    let pv = src.opt_str("persistentVolumeName");
    let inline = field(src, "inlineVolumeSpec");
    match (pv, inline.is_null()) {
        (Some(_), false) => errs.push(FieldError::forbidden(
            &srcp,
            "must specify exactly one of inlineVolumeSpec and persistentVolumeName",
        )),
        (None, true) => errs.push(FieldError::required(
            &srcp,
            "must specify exactly one of inlineVolumeSpec and persistentVolumeName",
        )),
        (Some(name), true) => {
            if name.is_empty() {
                errs.push(FieldError::required(
                    &srcp.child("persistentVolumeName"),
                    "must specify non empty persistentVolumeName",
                ));
            }
        }
        (None, false) => {
            let wrapped = json!({"spec": inline});
            for mut e in validate_pv(&wrapped, ctx) {
                e.field = e.field.replacen("spec", "spec.source.inlineVolumeSpec", 1);
                if e.field.ends_with("accessModes")
                    || e.field.ends_with("capacity")
                    || e.detail.contains("must specify a volume type")
                {
                    continue;
                }
                errs.push(e);
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx<'static> {
        Ctx { old: None }
    }

    #[test]
    fn storage_classes() {
        let mut sc = json!({"provisioner": "ebs.csi.aws.com"});
        default_storage_class(&mut sc);
        assert_eq!(
            sc,
            json!({"provisioner": "ebs.csi.aws.com", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"})
        );
        assert!(validate_storage_class(&sc, &ctx()).is_empty());
        let bad = json!({"reclaimPolicy": "Recycle", "volumeBindingMode": "Later"});
        let msgs: Vec<String> = validate_storage_class(&bad, &ctx())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            vec![
                "provisioner: Required value",
                r#"reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain""#,
                r#"volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer""#,
            ]
        );
        let mut new = sc.clone();
        new["provisioner"] = json!("other");
        assert_eq!(
            validate_storage_class_update(&new, &sc, &ctx())[0].to_string(),
            "provisioner: Forbidden: updates to provisioner are forbidden."
        );
    }

    #[test]
    fn csi_drivers() {
        let mut d = json!({"metadata": {"name": "csi.example.com"}, "spec": {}});
        default_csi_driver(&mut d);
        assert_eq!(d["spec"]["volumeLifecycleModes"], json!(["Persistent"]));
        assert_eq!(d["spec"]["attachRequired"], json!(true));
        assert!(validate_csi_driver(&d, &ctx()).is_empty());
    }

    #[test]
    fn volume_attachments() {
        let ok = json!({"spec": {"attacher": "csi.example.com", "nodeName": "n1", "source": {"persistentVolumeName": "pv"}}});
        assert!(validate_volume_attachment(&ok, &ctx()).is_empty());
        let bad = json!({"spec": {"attacher": "", "source": {}}});
        assert_eq!(validate_volume_attachment(&bad, &ctx()).len(), 4);
    }
}
