//! PersistentVolumes and PersistentVolumeClaims: defaults (reclaim policy, volume mode,
//! pending phase), claim specs (also used by ephemeral volumes and StatefulSet claim
//! templates), volume sources of PVs, and what may change on update.

use serde_json::{Map, Value, json};

use crate::core::scheduling::validate_node_selector;
use crate::core::volumes::{validate_csi_driver_name, validate_no_backsteps};
use crate::meta::{immutable, validate_annotations, validate_labels};
use crate::{Ctx, now_rfc3339};
use kyb_apimachinery::equality::{diff_text, semantic_eq};
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{
    Obj, child_object, default_str, default_value, field, field_at, obj_mut,
};
use kyb_apimachinery::names;
use kyb_apimachinery::quantity::{Quantity, canonicalize_list};

const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];
const POSITIVE_MSG: &str = "must be greater than zero";

/// `SetDefaults_PersistentVolumeClaimSpec` plus quantity canonicalization.
pub(crate) fn default_pvc_spec(spec: &mut Map<String, Value>) {
    default_value(spec, "volumeMode", json!("Filesystem"));
    if let Some(r) = obj_mut(spec, "resources") {
        canonicalize_list(r.get_mut("limits"));
        canonicalize_list(r.get_mut("requests"));
    }
}

/// Defaults of a PersistentVolumeClaim (also a claim template in a StatefulSet).
pub(crate) fn default_pvc(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    if let Some(spec) = child_object(o, "spec") {
        default_pvc_spec(spec);
    }
    if let Some(status) = child_object(o, "status") {
        default_str(status, "phase", "Pending");
        canonicalize_list(status.get_mut("capacity"));
        canonicalize_list(status.get_mut("allocatedResources"));
    }
}

/// Defaults of a PersistentVolume.
pub(crate) fn default_pv(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    if let Some(status) = child_object(o, "status") {
        default_str(status, "phase", "Pending");
    }
    let Some(spec) = child_object(o, "spec") else {
        return;
    };
    default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
    default_value(spec, "volumeMode", json!("Filesystem"));
    canonicalize_list(spec.get_mut("capacity"));
    if let Some(h) = obj_mut(spec, "hostPath") {
        default_value(h, "type", json!(""));
    }
    if let Some(i) = obj_mut(spec, "iscsi") {
        default_str(i, "iscsiInterface", "default");
    }
    if let Some(r) = obj_mut(spec, "rbd") {
        default_str(r, "pool", "rbd");
        default_str(r, "user", "admin");
        default_str(r, "keyring", "/etc/ceph/keyring");
    }
    if let Some(a) = obj_mut(spec, "azureDisk") {
        default_value(a, "cachingMode", json!("ReadWrite"));
        default_value(a, "fsType", json!("ext4"));
        default_value(a, "readOnly", json!(false));
        default_value(a, "kind", json!("Shared"));
    }
    if let Some(s) = obj_mut(spec, "scaleIO") {
        default_str(s, "storageMode", "ThinProvisioned");
        default_str(s, "fsType", "xfs");
    }
}

/// A new PV starts Pending, with the time of that phase.
pub(crate) fn prepare_pv(obj: &mut Value) {
    if let Some(o) = obj.as_object_mut() {
        o.insert(
            "status".to_string(),
            json!({"phase": "Pending", "lastPhaseTransitionTime": now_rfc3339()}),
        );
    }
}

/// A PV status update: `lastPhaseTransitionTime` is kept while the phase stays, and set to
/// now when the phase changes and the client left the time unset or unchanged.
pub(crate) fn prepare_pv_status_update(new: &mut Value, old: &Value) {
    let time = |v: &Value| {
        v.get("status")
            .and_then(|s| s.get("lastPhaseTransitionTime"))
            .cloned()
    };
    let phase = |v: &Value| v.get("status").and_then(|s| s.get("phase")).cloned();
    let (old_time, new_time) = (time(old), time(new));
    let stamp = if phase(old) == phase(new) {
        match (new_time, old_time) {
            (None, Some(kept)) => kept,
            _ => return,
        }
    } else if new_time.is_none() || new_time == old_time {
        Value::String(now_rfc3339())
    } else {
        return;
    };
    if let Some(status) = new.as_object_mut().and_then(|n| obj_mut(n, "status")) {
        status.insert("lastPhaseTransitionTime".to_string(), stamp);
    }
}

fn validate_access_modes(modes: &[Value], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut rwop = false;
    let mut other = false;
    for m in modes {
        let m = m.as_str().unwrap_or_default();
        if !ACCESS_MODES.contains(&m) {
            errs.push(FieldError::not_supported(path, m, ACCESS_MODES));
        } else if m == "ReadWriteOncePod" {
            rwop = true;
        } else {
            other = true;
        }
    }
    if rwop && other {
        errs.push(FieldError::forbidden(
            path,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    errs
}

fn validate_data_source(ds: &Value, is_ref: bool, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if ds.str("name").is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    let kind = ds.str("kind");
    if kind.is_empty() {
        errs.push(FieldError::required(&path.child("kind"), ""));
    }
    let group = ds.str("apiGroup");
    if group.is_empty() && kind != "PersistentVolumeClaim" {
        errs.push(FieldError::invalid(
            path,
            kind,
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ));
    }
    if !group.is_empty() {
        for m in names::dns1123_subdomain_errors(group) {
            errs.push(FieldError::invalid(&path.child("apiGroup"), group, m));
        }
    }
    if is_ref {
        let ns = ds.str("namespace");
        if !ns.is_empty() {
            for m in names::name_is_dns_label(ns, false) {
                errs.push(FieldError::invalid(&path.child("namespace"), ns, m));
            }
        }
    }
    errs
}

/// `ValidatePersistentVolumeClaimSpec`.
pub(crate) fn validate_pvc_spec(spec: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let modes = spec.arr("accessModes");
    if modes.is_empty() {
        errs.push(FieldError::required(
            &path.child("accessModes"),
            "at least 1 access mode is required",
        ));
    }
    let sel = field(spec, "selector");
    if !sel.is_null() {
        errs.extend(crate::selector::validate_label_selector(
            sel,
            false,
            &path.child("selector"),
        ));
    }
    errs.extend(validate_access_modes(modes, &path.child("accessModes")));
    let storage_path = path.child("resources").key("storage");
    match field_at(spec, &["resources", "requests", "storage"]) {
        Value::Null => errs.push(FieldError::required(&storage_path, "")),
        v => match Quantity::from_json(v) {
            Err(m) => errs.push(FieldError::invalid(&storage_path, v.clone(), m)),
            Ok(q) if q.sign() <= 0 => errs.push(FieldError::invalid(
                &storage_path,
                q.canonical(),
                POSITIVE_MSG,
            )),
            Ok(q) => errs.extend(crate::core::resources::validate_quantity_value(
                "storage",
                &q,
                &storage_path,
            )),
        },
    }
    if let Some(sc) = spec.opt_str("storageClassName")
        && !sc.is_empty()
    {
        for m in names::name_is_dns_subdomain(sc, false) {
            errs.push(FieldError::invalid(&path.child("storageClassName"), sc, m));
        }
    }
    if let Some(vm) = spec.opt_str("volumeMode")
        && !VOLUME_MODES.contains(&vm)
    {
        errs.push(FieldError::not_supported(
            &path.child("volumeMode"),
            vm,
            VOLUME_MODES,
        ));
    }
    let ds = field(spec, "dataSource");
    let dsr = field(spec, "dataSourceRef");
    if !ds.is_null() {
        errs.extend(validate_data_source(ds, false, &path.child("dataSource")));
    }
    if !dsr.is_null() {
        errs.extend(validate_data_source(
            dsr,
            true,
            &path.child("dataSourceRef"),
        ));
    }
    if !dsr.str("namespace").is_empty() {
        if !ds.is_null() {
            errs.push(FieldError::invalid(
                path,
                path.child("dataSource").to_string(),
                "may not be specified when dataSourceRef.namespace is specified",
            ));
        }
    } else if !ds.is_null() && !dsr.is_null() {
        let same = ds.str("apiGroup") == dsr.str("apiGroup")
            && ds.str("kind") == dsr.str("kind")
            && ds.str("name") == dsr.str("name");
        if !same {
            errs.push(FieldError::invalid(
                path,
                path.child("dataSource").to_string(),
                "must match dataSourceRef",
            ));
        }
    }
    errs
}

/// `ValidateTemplateObjectMeta`: only labels and annotations may be set.
pub(crate) fn validate_template_meta(meta: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = validate_annotations(field(meta, "annotations"), &path.child("annotations"));
    errs.extend(validate_labels(
        field(meta, "labels"),
        &path.child("labels"),
    ));
    if let Value::Object(m) = meta {
        for (k, v) in m {
            if k != "labels" && k != "annotations" && !kyb_apimachinery::json::is_zero(v) {
                errs.push(FieldError::forbidden(&path.child(k), "cannot be set"));
            }
        }
    }
    errs
}

/// `ValidatePersistentVolumeClaimTemplate` (generic ephemeral volumes).
pub(crate) fn validate_pvc_template(tmpl: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = validate_template_meta(field(tmpl, "metadata"), &path.child("metadata"));
    errs.extend(validate_pvc_spec(field(tmpl, "spec"), &path.child("spec")));
    errs
}

/// PersistentVolumeClaim: the claim spec.
pub(crate) fn validate_pvc(obj: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    validate_pvc_spec(field(obj, "spec"), &Path::new("spec"))
}

fn storage_request(obj: &Value) -> Option<Quantity> {
    Quantity::from_json(field_at(obj, &["spec", "resources", "requests", "storage"])).ok()
}

/// PersistentVolumeClaim update: the spec is immutable except `volumeName` (once),
/// `storageClassName` (from unset), and storage requests of bound claims.
pub(crate) fn validate_pvc_update(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut new_spec = field(new, "spec").clone();
    let mut old_spec = field(old, "spec").clone();
    if old_spec.str("volumeName").is_empty()
        && let (Some(o), Some(v)) = (old_spec.as_object_mut(), new_spec.get("volumeName"))
    {
        o.insert("volumeName".to_string(), v.clone());
    }
    const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
    let old_ann = field_at(old, &["metadata", "annotations"]).clone();
    let new_ann = field_at(new, &["metadata", "annotations"]).clone();
    let old_sc = old_spec.opt_str("storageClassName").map(str::to_string);
    let new_sc = new_spec.opt_str("storageClassName").map(str::to_string);
    let old_beta = old_ann.opt_str(BETA_CLASS).map(str::to_string);
    let new_beta = new_ann.opt_str(BETA_CLASS).map(str::to_string);
    let from_annotation = old_beta.is_some()
        && old_sc.is_none()
        && new_sc.is_some()
        && new_sc == old_beta
        && (new_beta.is_none() || new_beta == old_beta);
    if from_annotation {
        if let Some(n) = new_spec.as_object_mut() {
            n.remove("storageClassName");
        }
    } else {
        if new_beta != old_beta {
            errs.push(FieldError::invalid(
                &Path::new("metadata").child("annotations").child(BETA_CLASS),
                new_beta.clone().unwrap_or_default(),
                crate::meta::FIELD_IMMUTABLE_MSG,
            ));
        }
        let from_nil =
            new_sc.is_some() && old_sc.is_none() && (old_beta.is_none() || new_sc == old_beta);
        if from_nil && let (Some(n), Some(o)) = (new_spec.as_object_mut(), old_sc.clone()) {
            n.insert("storageClassName".to_string(), Value::from(o));
        } else if from_nil && let Some(n) = new_spec.as_object_mut() {
            n.remove("storageClassName");
        }
    }
    let bound = field_at(new, &["status", "phase"]).as_str() == Some("Bound");
    if bound {
        if let (Some(n), Some(o)) = (
            new_spec
                .pointer_mut("/resources/requests")
                .and_then(Value::as_object_mut),
            field_at(&old_spec, &["resources", "requests", "storage"])
                .as_str()
                .map(str::to_string),
        ) {
            n.insert("storage".to_string(), Value::from(o));
        }
        if let Some(n) = new_spec.as_object_mut() {
            match old_spec.get("volumeAttributesClassName") {
                Some(v) => n.insert("volumeAttributesClassName".to_string(), v.clone()),
                None => n.remove("volumeAttributesClassName"),
            };
        }
    }
    if !semantic_eq(&new_spec, &old_spec) {
        errs.push(FieldError::forbidden(
            &Path::new("spec"),
            format!(
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n{}",
                diff_text(&old_spec, &new_spec)
            ),
        ));
    }
    if let (Some(n), Some(o)) = (storage_request(new), storage_request(old))
        && n.cmp_q(&o).is_lt()
    {
        let status = Quantity::from_json(field_at(old, &["status", "capacity", "storage"]))
            .unwrap_or(Quantity::from_int(0));
        if n.cmp_q(&status).is_le() {
            errs.push(FieldError::forbidden(
                &Path::new("spec")
                    .child("resources")
                    .child("requests")
                    .child("storage"),
                "field can not be less than status.capacity",
            ));
        }
    }
    errs.extend(immutable(
        field_at(new, &["spec", "volumeMode"]),
        field_at(old, &["spec", "volumeMode"]),
        &Path::new("volumeMode"),
    ));
    errs
}

/// PersistentVolumeClaim status update.
pub(crate) fn validate_pvc_status(new: &Value, _old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if field_at(new, &["spec", "accessModes"])
        .as_array()
        .is_none_or(Vec::is_empty)
    {
        errs.push(FieldError::required(
            &Path::new("Spec").child("accessModes"),
            "",
        ));
    }
    if let Value::Object(cap) = field_at(new, &["status", "capacity"]) {
        for (k, v) in cap {
            errs.extend(validate_basic_resource(
                v,
                &Path::new("status").child("capacity").key(k),
            ));
        }
    }
    errs
}

fn validate_basic_resource(v: &Value, path: &Path) -> Vec<FieldError> {
    match Quantity::from_json(v) {
        Ok(q) if q.sign() < 0 => {
            vec![FieldError::invalid(
                path,
                i64::try_from(q.ceil_value()).unwrap_or(i64::MIN),
                "must be a valid resource quantity",
            )]
        }
        Ok(_) => Vec::new(),
        Err(m) => vec![FieldError::invalid(path, v.clone(), m)],
    }
}

/// Volume source keys of a PersistentVolume, in Kubernetes' order.
const PV_SOURCES: &[(&str, &str)] = &[
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "persistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephfs"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
];

fn required_fields(s: &Value, keys: &[&str], path: &Path) -> Vec<FieldError> {
    keys.iter()
        .filter(|k| s.get_field(k).is_none_or(kyb_apimachinery::json::is_zero))
        .map(|k| FieldError::required(&path.child(k), ""))
        .collect()
}

fn validate_pv_source(key: &str, s: &Value, path: &Path) -> Vec<FieldError> {
    match key {
        "hostPath" | "local" => {
            let p = s.str("path");
            if p.is_empty() {
                return vec![FieldError::required(&path.child("path"), "")];
            }
            let mut errs = validate_no_backsteps(p, &path.child("path"));
            if key == "hostPath"
                && let Some(t) = s.opt_str("type")
            {
                const TYPES: &[&str] = &[
                    "",
                    "BlockDevice",
                    "CharDevice",
                    "Directory",
                    "DirectoryOrCreate",
                    "File",
                    "FileOrCreate",
                    "Socket",
                ];
                if !TYPES.contains(&t) {
                    errs.push(FieldError::not_supported(&path.child("type"), t, TYPES));
                }
            }
            errs
        }
        "nfs" => {
            let mut errs = required_fields(s, &["server", "path"], path);
            if !s.str("path").starts_with('/') {
                errs.push(FieldError::invalid(
                    &path.child("path"),
                    s.str("path"),
                    "must be an absolute path",
                ));
            }
            errs
        }
        "csi" => {
            let mut errs = validate_csi_driver_name(s.str("driver"), &path.child("driver"));
            errs.extend(required_fields(s, &["volumeHandle"], path));
            errs
        }
        "gcePersistentDisk" => required_fields(s, &["pdName"], path),
        "awsElasticBlockStore" | "cinder" | "portworxVolume" => {
            required_fields(s, &["volumeID"], path)
        }
        "glusterfs" => required_fields(s, &["endpoints", "path"], path),
        "rbd" => required_fields(s, &["monitors", "image"], path),
        "quobyte" => required_fields(s, &["registry", "volume"], path),
        "cephfs" => required_fields(s, &["monitors"], path),
        "iscsi" => required_fields(s, &["targetPortal", "iqn"], path),
        "flexVolume" => required_fields(s, &["driver"], path),
        "azureFile" => required_fields(s, &["secretName", "shareName"], path),
        "vsphereVolume" => required_fields(s, &["volumePath"], path),
        "photonPersistentDisk" => required_fields(s, &["pdID"], path),
        "azureDisk" => required_fields(s, &["diskName", "diskURI"], path),
        "scaleIO" => required_fields(s, &["gateway", "system", "volumeName"], path),
        "storageos" => required_fields(s, &["volumeName"], path),
        _ => Vec::new(),
    }
}

/// PersistentVolume: access modes, capacity, reclaim policy, node affinity, exactly one
/// volume source.
pub(crate) fn validate_pv(obj: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(obj, "spec");
    let path = Path::new("spec");
    let modes = spec.arr("accessModes");
    if modes.is_empty() {
        errs.push(FieldError::required(&path.child("accessModes"), ""));
    }
    errs.extend(validate_access_modes(modes, &path.child("accessModes")));
    let cap = field(spec, "capacity");
    let cap_map = cap.as_object();
    if cap_map.is_none_or(Map::is_empty) {
        errs.push(FieldError::required(&path.child("capacity"), ""));
    }
    if cap_map.is_none_or(|m| !m.contains_key("storage") || m.len() > 1) {
        errs.push(FieldError::not_supported(
            &path.child("capacity"),
            cap.clone(),
            &["storage"],
        ));
    }
    if let Some(m) = cap_map {
        for (k, v) in m {
            let p = path.child("capacity").key(k);
            errs.extend(validate_basic_resource(v, &p));
            if let Ok(q) = Quantity::from_json(v)
                && q.sign() <= 0
            {
                errs.push(FieldError::invalid(&p, q.canonical(), POSITIVE_MSG));
            }
        }
    }
    let policy = spec.str("persistentVolumeReclaimPolicy");
    if !policy.is_empty() && !["Delete", "Recycle", "Retain"].contains(&policy) {
        errs.push(FieldError::not_supported(
            &path.child("persistentVolumeReclaimPolicy"),
            policy,
            &["Delete", "Recycle", "Retain"],
        ));
    }
    let mut node_affinity = false;
    let na = field(spec, "nodeAffinity");
    if !na.is_null() {
        node_affinity = true;
        let req = field(na, "required");
        if req.is_null() {
            errs.push(FieldError::required(
                &path.child("nodeAffinity").child("required"),
                "must specify required node constraints",
            ));
        } else {
            errs.extend(validate_node_selector(
                req,
                false,
                &path.child("nodeAffinity").child("required"),
            ));
        }
    }
    let mut count = 0;
    for (key, child) in PV_SOURCES {
        let s = field(spec, key);
        if s.is_null() {
            continue;
        }
        if count > 0 && *key != "flexVolume" {
            errs.push(FieldError::forbidden(
                &path.child(key),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        count += 1;
        errs.extend(validate_pv_source(key, s, &path.child(child)));
        if *key == "local" && !node_affinity {
            errs.push(FieldError::required(
                &path.child("nodeAffinity"),
                "Local volume requires node affinity",
            ));
        }
    }
    if count == 0 {
        errs.push(FieldError::required(&path, "must specify a volume type"));
    }
    let hp = field_at(spec, &["hostPath", "path"]).as_str();
    if hp.is_some_and(|p| p.trim_end_matches('/').is_empty() && !p.is_empty())
        && policy == "Recycle"
    {
        errs.push(FieldError::forbidden(
            &path.child("persistentVolumeReclaimPolicy"),
            "may not be 'recycle' for a hostPath mount of '/'",
        ));
    }
    let sc = spec.str("storageClassName");
    if !sc.is_empty() {
        for m in names::name_is_dns_subdomain(sc, false) {
            errs.push(FieldError::invalid(&path.child("storageClassName"), sc, m));
        }
    }
    if let Some(vm) = spec.opt_str("volumeMode")
        && !VOLUME_MODES.contains(&vm)
    {
        errs.push(FieldError::not_supported(
            &path.child("volumeMode"),
            vm,
            VOLUME_MODES,
        ));
    }
    errs
}

/// The volume source part of a PV spec.
fn pv_source(spec: &Value) -> Value {
    let mut m = Map::new();
    for (key, _) in PV_SOURCES {
        if let Some(v) = spec.get_field(key) {
            m.insert((*key).to_string(), v.clone());
        }
    }
    Value::Object(m)
}

/// PersistentVolume update: the volume source and volume mode are immutable, node
/// affinity once set too.
pub(crate) fn validate_pv_update(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut new_src = pv_source(field(new, "spec"));
    let old_src = pv_source(field(old, "spec"));
    if field_at(&old_src, &["csi", "controllerExpandSecretRef"]).is_null()
        && let Some(csi) = new_src.get_mut("csi").and_then(Value::as_object_mut)
    {
        csi.remove("controllerExpandSecretRef");
    }
    if !semantic_eq(&new_src, &old_src) {
        errs.push(FieldError::forbidden(
            &Path::new("spec").child("persistentvolumesource"),
            format!(
                "spec.persistentvolumesource is immutable after creation\n{}",
                diff_text(&old_src, &new_src)
            ),
        ));
    }
    errs.extend(immutable(
        field_at(new, &["spec", "volumeMode"]),
        field_at(old, &["spec", "volumeMode"]),
        &Path::new("volumeMode"),
    ));
    let old_na = field_at(old, &["spec", "nodeAffinity"]);
    let new_na = field_at(new, &["spec", "nodeAffinity"]);
    if !old_na.is_null() && !semantic_eq(new_na, old_na) {
        errs.push(FieldError::invalid(
            &Path::new("nodeAffinity"),
            new_na.clone(),
            "field is immutable, except for updating from beta label to GA",
        ));
    }
    errs
}

/// Whether a status update keeps `resourceVersion` (PVs, PVCs and quotas require it).
pub(crate) fn require_resource_version(new: &Value) -> Vec<FieldError> {
    if field_at(new, &["metadata", "resourceVersion"])
        .as_str()
        .is_none_or(str::is_empty)
    {
        vec![FieldError::required(&Path::new("resourceVersion"), "")]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx<'static> {
        Ctx { old: None }
    }

    #[test]
    fn pvc_spec() {
        let ok = json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
        assert!(validate_pvc(&ok, &ctx()).is_empty());
        let bad = json!({"spec": {"accessModes": ["ReadWriteOncePod", "ReadWriteOnce", "Sometimes"], "resources": {}}});
        let msgs: Vec<String> = validate_pvc(&bad, &ctx())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            vec![
                r#"spec.accessModes: Unsupported value: "Sometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod""#,
                "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
                "spec.resources[storage]: Required value",
            ]
        );
    }

    #[test]
    fn pvc_update() {
        let old = json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
        let mut new = old.clone();
        new["spec"]["volumeName"] = json!("pv1");
        assert!(validate_pvc_update(&new, &old, &ctx()).is_empty());
        new["spec"]["accessModes"] = json!(["ReadWriteMany"]);
        let errs = validate_pvc_update(&new, &old, &ctx());
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0]
                .detail
                .starts_with("spec is immutable after creation")
        );
        let mut bound = old.clone();
        bound["status"] = json!({"phase": "Bound", "capacity": {"storage": "1Gi"}});
        bound["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert!(validate_pvc_update(&bound, &old, &ctx()).is_empty());
    }

    #[test]
    fn pv() {
        let ok = json!({"spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}, "hostPath": {"path": "/data"}}});
        assert!(validate_pv(&ok, &ctx()).is_empty());
        let bad = json!({"spec": {"capacity": {"cpu": "1"}}});
        let msgs: Vec<String> = validate_pv(&bad, &ctx())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(msgs[0], "spec.accessModes: Required value");
        assert_eq!(
            msgs[1],
            r#"spec.capacity: Unsupported value: map[string]string{"cpu":"1"}: supported values: "storage""#
        );
        assert_eq!(msgs[2], "spec: Required value: must specify a volume type");
        let mut changed = ok.clone();
        changed["spec"]["hostPath"]["path"] = json!("/other");
        assert_eq!(validate_pv_update(&changed, &ok, &ctx()).len(), 1);
    }

    #[test]
    fn defaults() {
        let mut pv = json!({"spec": {"capacity": {"storage": "1024Mi"}}});
        default_pv(&mut pv);
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], json!("Retain"));
        assert_eq!(pv["spec"]["volumeMode"], json!("Filesystem"));
        assert_eq!(pv["spec"]["capacity"]["storage"], json!("1Gi"));
        assert_eq!(pv["status"]["phase"], json!("Pending"));
    }

    #[test]
    fn pv_phase_transition_time_follows_the_phase() {
        let old = json!({"status": {"phase": "Available", "lastPhaseTransitionTime": "2020-01-01T00:00:00Z"}});
        // Same phase, time left out: kept.
        let mut new = json!({"status": {"phase": "Available"}});
        prepare_pv_status_update(&mut new, &old);
        assert_eq!(
            new["status"]["lastPhaseTransitionTime"],
            json!("2020-01-01T00:00:00Z")
        );
        // New phase, time left out or unchanged: now.
        for mut new in [
            json!({"status": {"phase": "Bound"}}),
            json!({"status": {"phase": "Bound", "lastPhaseTransitionTime": "2020-01-01T00:00:00Z"}}),
        ] {
            prepare_pv_status_update(&mut new, &old);
            let stamped = &new["status"]["lastPhaseTransitionTime"];
            assert!(stamped.is_string() && *stamped != json!("2020-01-01T00:00:00Z"));
        }
        // New phase with the client's own time: the client's.
        let mut new = json!({"status": {"phase": "Bound", "lastPhaseTransitionTime": "2021-01-01T00:00:00Z"}});
        prepare_pv_status_update(&mut new, &old);
        assert_eq!(
            new["status"]["lastPhaseTransitionTime"],
            json!("2021-01-01T00:00:00Z")
        );
    }
}
