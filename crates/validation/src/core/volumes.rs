//! Pod volumes: names, exactly one source per volume, and each source's own rules
//! (`secret`, `configMap`, `projected`, `downwardAPI`, `hostPath`, `ephemeral`, `csi`,
//! `persistentVolumeClaim`, and the in-tree plugins' required fields).

use std::collections::HashSet;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::core::downward::{
    VOLUME_FIELD_PATHS, validate_object_field_selector, validate_resource_field_selector,
};
use crate::core::storage::validate_pvc_template;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, field};
use kyb_apimachinery::names;
use kyb_apimachinery::quantity::Quantity;

const FILE_MODE_MSG: &str = "must be a number between 0 and 0777 (octal), both inclusive";
const MORE_THAN_ONE: &str = "may not specify more than 1 volume type";

/// What later checks need to know of a declared volume.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct VolumeInfo {
    /// Backed by a claim (`persistentVolumeClaim` or `ephemeral`): usable as a block device.
    pub(crate) is_claim: bool,
    /// An `image` volume: no `subPath` allowed.
    pub(crate) is_image: bool,
}

/// The volumes of a pod that passed validation, by name.
pub(crate) type Volumes = BTreeMap<String, VolumeInfo>;

/// `validatePathNoBacksteps`: no `..` element.
pub(crate) fn validate_no_backsteps(target: &str, path: &Path) -> Vec<FieldError> {
    if target.replace('\\', "/").split('/').any(|p| p == "..") {
        vec![FieldError::invalid(path, target, "must not contain '..'")]
    } else {
        Vec::new()
    }
}

/// `validateLocalDescendingPath`: relative and without `..`.
pub(crate) fn validate_local_descending_path(target: &str, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if target.starts_with('/') {
        errs.push(FieldError::invalid(path, target, "must be a relative path"));
    }
    errs.extend(validate_no_backsteps(target, path));
    errs
}

/// `ValidateLocalNonReservedPath`: also may not start with `..`.
pub(crate) fn validate_local_non_reserved_path(target: &str, path: &Path) -> Vec<FieldError> {
    let mut errs = validate_local_descending_path(target, path);
    if target.starts_with("..") && !target.starts_with("../") {
        errs.push(FieldError::invalid(
            path,
            target,
            "must not start with '..'",
        ));
    }
    errs
}

fn validate_mode(obj: &Value, key: &str, path: &Path) -> Vec<FieldError> {
    match obj.int(key) {
        Some(m) if !(0..=0o777).contains(&m) => {
            vec![FieldError::invalid(&path.child(key), m, FILE_MODE_MSG)]
        }
        _ => Vec::new(),
    }
}

fn required(obj: &Value, key: &str, path: &Path) -> Vec<FieldError> {
    if obj.str(key).is_empty() {
        vec![FieldError::required(&path.child(key), "")]
    } else {
        Vec::new()
    }
}

fn required_list(obj: &Value, key: &str, path: &Path) -> Vec<FieldError> {
    if obj.arr(key).is_empty() {
        vec![FieldError::required(&path.child(key), "")]
    } else {
        Vec::new()
    }
}

fn validate_key_to_path(kp: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = required(kp, "key", path);
    let p = kp.str("path");
    if p.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    errs.extend(validate_local_non_reserved_path(p, &path.child("path")));
    errs.extend(validate_mode(kp, "mode", path));
    errs
}

fn validate_items(src: &Value, path: &Path) -> Vec<FieldError> {
    src.arr("items")
        .iter()
        .enumerate()
        .flat_map(|(i, kp)| validate_key_to_path(kp, &path.child("items").index(i)))
        .collect()
}

fn validate_host_path(hp: &Value, path: &Path) -> Vec<FieldError> {
    let p = hp.str("path");
    if p.is_empty() {
        return vec![FieldError::required(&path.child("path"), "")];
    }
    let mut errs = validate_no_backsteps(p, &path.child("path"));
    if let Some(t) = hp.opt_str("type") {
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

fn validate_downward_file(file: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let p = file.str("path");
    if p.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    errs.extend(validate_local_non_reserved_path(p, &path.child("path")));
    let field_ref = field(file, "fieldRef");
    let resource_ref = field(file, "resourceFieldRef");
    if !field_ref.is_null() {
        errs.extend(validate_object_field_selector(
            field_ref,
            VOLUME_FIELD_PATHS,
            &path.child("fieldRef"),
        ));
        if !resource_ref.is_null() {
            errs.push(FieldError::invalid(
                path,
                "resource",
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            ));
        }
    } else if !resource_ref.is_null() {
        errs.extend(validate_resource_field_selector(
            resource_ref,
            true,
            &path.child("resourceFieldRef"),
        ));
    } else {
        errs.push(FieldError::required(
            path,
            "one of fieldRef and resourceFieldRef is required",
        ));
    }
    errs.extend(validate_mode(file, "mode", path));
    errs
}

fn validate_downward_api(src: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = validate_mode(src, "defaultMode", path);
    for file in src.arr("items") {
        errs.extend(validate_downward_file(file, path));
    }
    errs
}

fn validate_projected(
    src: &Value,
    path: &Path,
    allow_non_local_token_path: bool,
) -> Vec<FieldError> {
    let mut errs = validate_mode(src, "defaultMode", path);
    let mut all_paths: HashSet<String> = HashSet::new();
    let mut note_path = |p: &str, errs: &mut Vec<FieldError>, value: &str| {
        if !all_paths.insert(p.to_string()) {
            errs.push(FieldError::invalid(
                path,
                value,
                "conflicting duplicate paths",
            ));
        }
    };
    for (i, source) in src.arr("sources").iter().enumerate() {
        let src_path = path.child("sources").index(i);
        let mut count = 0;
        for key in ["secret", "configMap"] {
            let s = field(source, key);
            if s.is_null() {
                continue;
            }
            count += 1;
            let p = src_path.child(key);
            errs.extend(required(s, "name", &p));
            for (j, kp) in s.arr("items").iter().enumerate() {
                errs.extend(validate_key_to_path(kp, &p.child("items").index(j)));
                let kp_path = kp.str("path");
                if !kp_path.is_empty() {
                    note_path(kp_path, &mut errs, s.str("name"));
                }
            }
        }
        let d = field(source, "downwardAPI");
        if !d.is_null() {
            count += 1;
            let p = src_path.child("downwardAPI");
            for file in d.arr("items") {
                errs.extend(validate_downward_file(file, &p));
                let fp = file.str("path");
                if !fp.is_empty() {
                    note_path(fp, &mut errs, fp);
                }
            }
        }
        let t = field(source, "serviceAccountToken");
        if !t.is_null() {
            count += 1;
            let p = src_path.child("serviceAccountToken");
            let exp = t.int("expirationSeconds").unwrap_or(0);
            if exp < 600 {
                errs.push(FieldError::invalid(
                    &p.child("expirationSeconds"),
                    exp,
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if exp > 1 << 32 {
                errs.push(FieldError::invalid(
                    &p.child("expirationSeconds"),
                    exp,
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
            let tp = t.str("path");
            if tp.is_empty() {
                errs.push(FieldError::required(&path.child("path"), ""));
            } else if !allow_non_local_token_path {
                errs.extend(validate_local_non_reserved_path(tp, &path.child("path")));
            }
        }
        let b = field(source, "clusterTrustBundle");
        if !b.is_null() {
            count += 1;
            let p = src_path.child("clusterTrustBundle");
            match (b.opt_str("name"), b.opt_str("signerName")) {
                (Some(_), Some(_)) => errs.push(FieldError::invalid(
                    &p,
                    b.clone(),
                    "only one of name and signerName may be used",
                )),
                (Some(name), None) => {
                    if name.is_empty() {
                        errs.push(FieldError::required(
                            &p.child("name"),
                            "must be a valid object name",
                        ));
                    }
                    if b.has("labelSelector") {
                        errs.push(FieldError::invalid(
                            &p.child("labelSelector"),
                            field(b, "labelSelector").clone(),
                            "labelSelector must be unset if name is specified",
                        ));
                    }
                }
                (None, Some(signer)) => {
                    if signer.is_empty() {
                        errs.push(FieldError::required(
                            &p.child("signerName"),
                            "must be a valid signer name",
                        ));
                    }
                    errs.extend(crate::selector::validate_label_selector(
                        field(b, "labelSelector"),
                        false,
                        &p.child("labelSelector"),
                    ));
                }
                (None, None) => errs.push(FieldError::required(
                    &p,
                    "either name or signerName must be specified",
                )),
            }
            let bp = b.str("path");
            if bp.is_empty() {
                errs.push(FieldError::required(&p.child("path"), ""));
            }
            errs.extend(validate_local_non_reserved_path(bp, &p.child("path")));
            note_path(bp, &mut errs, bp);
        }
        if count > 1 {
            errs.push(FieldError::forbidden(
                &src_path,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
    errs
}

fn validate_iscsi(s: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = required(s, "targetPortal", path);
    let iqn = s.str("iqn");
    if iqn.is_empty() {
        errs.push(FieldError::required(&path.child("iqn"), ""));
    } else if !iqn.starts_with("iqn") && !iqn.starts_with("eui") && !iqn.starts_with("naa") {
        errs.push(FieldError::invalid(
            &path.child("iqn"),
            iqn,
            "must be valid format starting with iqn, eui, or naa",
        ));
    }
    let lun = s.int("lun").unwrap_or(0);
    if !(0..=255).contains(&lun) {
        errs.push(FieldError::invalid(
            &path.child("lun"),
            lun,
            names::inclusive_range_error(0, 255),
        ));
    }
    if (s.flag("chapAuthDiscovery") || s.flag("chapAuthSession")) && !s.has("secretRef") {
        errs.push(FieldError::required(&path.child("secretRef"), ""));
    }
    errs
}

fn validate_fc(s: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let wwns = s.arr("targetWWNs");
    let wwids = s.arr("wwids");
    if wwns.is_empty() && wwids.is_empty() {
        errs.push(FieldError::required(
            &path.child("targetWWNs"),
            "must specify either targetWWNs or wwids, but not both",
        ));
    }
    if !wwns.is_empty() && !wwids.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("targetWWNs"),
            Value::from(wwns.to_vec()),
            "targetWWNs and wwids can not be specified simultaneously",
        ));
    }
    if !wwns.is_empty() {
        match s.int("lun") {
            None => errs.push(FieldError::required(
                &path.child("lun"),
                "lun is required if targetWWNs is specified",
            )),
            Some(l) if !(0..=255).contains(&l) => {
                errs.push(FieldError::invalid(
                    &path.child("lun"),
                    l,
                    names::inclusive_range_error(0, 255),
                ));
            }
            _ => {}
        }
    }
    errs
}

fn validate_partition(s: &Value, path: &Path) -> Vec<FieldError> {
    let p = s.int("partition").unwrap_or(0);
    if !(0..=255).contains(&p) {
        vec![FieldError::invalid(
            &path.child("partition"),
            p,
            names::inclusive_range_error(1, 255),
        )]
    } else {
        Vec::new()
    }
}

fn validate_flex_options(s: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = required(s, "driver", path);
    if let Some(opts) = s.obj("options") {
        for k in opts.keys() {
            let ns = k.split_once('/').map_or(k.as_str(), |(n, _)| n);
            let normalized = format!(".{}", ns.to_lowercase());
            if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
                errs.push(FieldError::invalid(
                    &path.child("options").key(k),
                    k.as_str(),
                    "kubernetes.io and k8s.io namespaces are reserved",
                ));
            }
        }
    }
    errs
}

fn validate_azure_disk(s: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = required(s, "diskName", path);
    if s.str("diskURI").is_empty() {
        errs.push(FieldError::required(&path.child("diskURI"), ""));
    }
    if let Some(c) = s.opt_str("cachingMode")
        && !["None", "ReadOnly", "ReadWrite"].contains(&c)
    {
        errs.push(FieldError::not_supported(
            &path.child("cachingMode"),
            c,
            &["None", "ReadOnly", "ReadWrite"],
        ));
    }
    if let Some(k) = s.opt_str("kind") {
        if !["Dedicated", "Managed", "Shared"].contains(&k) {
            errs.push(FieldError::not_supported(
                &path.child("kind"),
                k,
                &["Dedicated", "Managed", "Shared"],
            ));
        }
        let uri = s.str("diskURI");
        if k == "Managed" && !uri.starts_with("/subscriptions/") {
            errs.push(FieldError::not_supported(
                &path.child("diskURI"),
                uri,
                &["/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"],
            ));
        }
        if k != "Managed" && !uri.starts_with("https://") {
            errs.push(FieldError::not_supported(
                &path.child("diskURI"),
                uri,
                &["https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"],
            ));
        }
    }
    errs
}

/// `ValidateCSIDriverName`.
pub(crate) fn validate_csi_driver_name(driver: &str, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if driver.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    if driver.len() > 63 {
        errs.push(FieldError::too_long(path, 63));
    }
    for m in names::dns1123_subdomain_errors(&driver.to_lowercase()) {
        errs.push(FieldError::invalid(path, driver, m));
    }
    errs
}

fn validate_csi(s: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = validate_csi_driver_name(s.str("driver"), &path.child("driver"));
    let r = field(s, "nodePublishSecretRef");
    if !r.is_null() {
        let name = r.str("name");
        if name.is_empty() {
            errs.push(FieldError::required(
                &path.child("nodePublishSecretRef").child("name"),
                "",
            ));
        } else {
            for m in names::name_is_dns_subdomain(name, false) {
                errs.push(FieldError::invalid(&path.child("name"), name, m));
            }
        }
    }
    errs
}

fn validate_ephemeral(
    s: &Value,
    pod_name: Option<&str>,
    vol_name: &str,
    path: &Path,
    vol_path: &Path,
) -> Vec<FieldError> {
    let tmpl = field(s, "volumeClaimTemplate");
    if tmpl.is_null() {
        return vec![FieldError::required(&path.child("volumeClaimTemplate"), "")];
    }
    let mut errs = validate_pvc_template(tmpl, &path.child("volumeClaimTemplate"));
    if let Some(pod) = pod_name.filter(|p| !p.is_empty())
        && !vol_name.is_empty()
    {
        let pvc = format!("{pod}-{vol_name}");
        for m in names::name_is_dns_subdomain(&pvc, false) {
            errs.push(FieldError::invalid(
                &vol_path.child("name"),
                vol_name,
                format!("PVC name {}: {m}", kyb_apimachinery::gofmt::quote(&pvc)),
            ));
        }
    }
    errs
}

/// Source keys in the order Kubernetes checks them, with the path name used for the
/// "more than one type" error and for the source's own errors.
const SOURCES: &[(&str, &str, &str)] = &[
    ("emptyDir", "emptyDir", "emptyDir"),
    ("hostPath", "hostPath", "hostPath"),
    ("gitRepo", "gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk", "persistentDisk"),
    (
        "awsElasticBlockStore",
        "awsElasticBlockStore",
        "awsElasticBlockStore",
    ),
    ("secret", "secret", "secret"),
    ("nfs", "nfs", "nfs"),
    ("iscsi", "iscsi", "iscsi"),
    ("glusterfs", "glusterfs", "glusterfs"),
    ("flocker", "flocker", "flocker"),
    (
        "persistentVolumeClaim",
        "persistentVolumeClaim",
        "persistentVolumeClaim",
    ),
    ("rbd", "rbd", "rbd"),
    ("cinder", "cinder", "cinder"),
    ("cephfs", "cephFS", "cephfs"),
    ("quobyte", "quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI", "downwardAPI"),
    ("fc", "fc", "fc"),
    ("flexVolume", "flexVolume", "flexVolume"),
    ("configMap", "configMap", "configMap"),
    ("azureFile", "azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume", "vsphereVolume"),
    (
        "photonPersistentDisk",
        "photonPersistentDisk",
        "photonPersistentDisk",
    ),
    ("portworxVolume", "portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk", "azureDisk"),
    ("storageos", "storageos", "storageos"),
    ("projected", "projected", "projected"),
    ("scaleIO", "scaleIO", "scaleIO"),
    ("csi", "csi", "csi"),
    ("ephemeral", "ephemeral", "ephemeral"),
    ("image", "image", "image"),
];

/// Options of volume validation.
#[derive(Clone, Copy, Default)]
pub(crate) struct VolumeOpts<'a> {
    /// The pod's name, when validating a pod (not a template).
    pub(crate) pod_name: Option<&'a str>,
    /// The spec belongs to a Pod (image volumes then need a reference).
    pub(crate) is_pod: bool,
    pub(crate) allow_non_local_token_path: bool,
}

fn validate_source(vol: &Value, opts: VolumeOpts<'_>, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut count = 0;
    let vol_name = vol.str("name");
    for (key, forbid_name, child) in SOURCES {
        let s = field(vol, key);
        if s.is_null() {
            continue;
        }
        if count > 0 {
            errs.push(FieldError::forbidden(
                &path.child(forbid_name),
                MORE_THAN_ONE,
            ));
            continue;
        }
        count += 1;
        let p = path.child(child);
        errs.extend(match *key {
            "emptyDir" => {
                let sl = field(s, "sizeLimit");
                match (sl.is_null(), Quantity::from_json(sl)) {
                    (true, _) => Vec::new(),
                    (false, Ok(q)) if q.sign() < 0 => {
                        vec![FieldError::forbidden(
                            &p.child("sizeLimit"),
                            "SizeLimit field must be a valid resource quantity",
                        )]
                    }
                    (false, Ok(_)) => Vec::new(),
                    (false, Err(m)) => {
                        vec![FieldError::invalid(&p.child("sizeLimit"), sl.clone(), m)]
                    }
                }
            }
            "hostPath" => validate_host_path(s, &p),
            "gitRepo" => {
                let mut e = required(s, "repository", &p);
                e.extend(validate_local_descending_path(
                    s.str("directory"),
                    &p.child("directory"),
                ));
                e
            }
            "gcePersistentDisk" => {
                let mut e = required(s, "pdName", &p);
                e.extend(validate_partition(s, &p));
                e
            }
            "awsElasticBlockStore" => {
                let mut e = required(s, "volumeID", &p);
                e.extend(validate_partition(s, &p));
                e
            }
            "secret" => {
                let mut e = required(s, "secretName", &p);
                e.extend(validate_mode(s, "defaultMode", &p));
                e.extend(validate_items(s, &p));
                e
            }
            "configMap" => {
                let mut e = required(s, "name", &p);
                e.extend(validate_mode(s, "defaultMode", &p));
                e.extend(validate_items(s, &p));
                e
            }
            "nfs" => {
                let mut e = required(s, "server", &p);
                e.extend(required(s, "path", &p));
                if !s.str("path").starts_with('/') {
                    e.push(FieldError::invalid(
                        &p.child("path"),
                        s.str("path"),
                        "must be an absolute path",
                    ));
                }
                e
            }
            "iscsi" => validate_iscsi(s, &p),
            "glusterfs" => {
                let mut e = required(s, "endpoints", &p);
                e.extend(required(s, "path", &p));
                e
            }
            "flocker" => {
                let mut e = Vec::new();
                let (n, u) = (s.str("datasetName"), s.str("datasetUUID"));
                if n.is_empty() && u.is_empty() {
                    e.push(FieldError::required(
                        &p,
                        "one of datasetName and datasetUUID is required",
                    ));
                }
                if !n.is_empty() && !u.is_empty() {
                    e.push(FieldError::invalid(
                        &p,
                        "resource",
                        "datasetName and datasetUUID can not be specified simultaneously",
                    ));
                }
                if n.contains('/') {
                    e.push(FieldError::invalid(
                        &p.child("datasetName"),
                        n,
                        "must not contain '/'",
                    ));
                }
                e
            }
            "persistentVolumeClaim" => required(s, "claimName", &p),
            "rbd" => {
                let mut e = required_list(s, "monitors", &p);
                e.extend(required(s, "image", &p));
                e
            }
            "cinder" => {
                let mut e = required(s, "volumeID", &p);
                let r = field(s, "secretRef");
                if !r.is_null() && r.str("name").is_empty() {
                    e.push(FieldError::required(
                        &p.child("secretRef").child("name"),
                        "",
                    ));
                }
                e
            }
            "cephfs" => required_list(s, "monitors", &p),
            "quobyte" => {
                let mut e = Vec::new();
                if s.str("registry").is_empty() {
                    e.push(FieldError::required(
                        &p.child("registry"),
                        "must be a host:port pair or multiple pairs separated by commas",
                    ));
                } else if s.str("tenant").len() >= 65 {
                    e.push(FieldError::required(
                        &p.child("tenant"),
                        "must be a UUID and may not exceed a length of 64 characters",
                    ));
                }
                e.extend(required(s, "volume", &p));
                e
            }
            "downwardAPI" => validate_downward_api(s, &p),
            "fc" => validate_fc(s, &p),
            "flexVolume" => validate_flex_options(s, &p),
            "azureFile" => {
                let mut e = required(s, "secretName", &p);
                e.extend(required(s, "shareName", &p));
                e
            }
            "vsphereVolume" => required(s, "volumePath", &p),
            "photonPersistentDisk" => required(s, "pdID", &p),
            "portworxVolume" => required(s, "volumeID", &p),
            "azureDisk" => validate_azure_disk(s, &p),
            "storageos" => {
                let mut e = Vec::new();
                let vn = s.str("volumeName");
                if vn.is_empty() {
                    e.push(FieldError::required(&p.child("volumeName"), ""));
                } else {
                    for m in names::dns1123_label_errors(vn) {
                        e.push(FieldError::invalid(&p.child("volumeName"), vn, m));
                    }
                }
                let ns = s.str("volumeNamespace");
                if !ns.is_empty() {
                    for m in names::dns1123_label_errors(ns) {
                        e.push(FieldError::invalid(&p.child("volumeNamespace"), ns, m));
                    }
                }
                let r = field(s, "secretRef");
                if !r.is_null() && r.str("name").is_empty() {
                    e.push(FieldError::required(
                        &p.child("secretRef").child("name"),
                        "",
                    ));
                }
                e
            }
            "projected" => validate_projected(s, &p, opts.allow_non_local_token_path),
            "scaleIO" => {
                let mut e = required(s, "gateway", &p);
                e.extend(required(s, "system", &p));
                e.extend(required(s, "volumeName", &p));
                e
            }
            "csi" => validate_csi(s, &p),
            "ephemeral" => validate_ephemeral(s, opts.pod_name, vol_name, &p, path),
            "image" => {
                let mut e = Vec::new();
                if opts.is_pod && s.str("reference").is_empty() {
                    e.push(FieldError::required(&p.child("reference"), ""));
                }
                e.extend(crate::core::containers::validate_pull_policy(
                    s.str("pullPolicy"),
                    &p.child("pullPolicy"),
                ));
                e
            }
            _ => Vec::new(),
        });
        if *key == "iscsi"
            && s.has("initiatorName")
            && vol_name.len() + 1 + s.str("targetPortal").len() > 64
        {
            errs.push(FieldError::invalid(
                &path.child("name"),
                vol_name,
                "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
            ));
        }
    }
    if count == 0 {
        errs.push(FieldError::required(path, "must specify a volume type"));
    }
    errs
}

/// `ValidateVolumes`: returns the volumes that validated, for mount checks.
pub(crate) fn validate_volumes(
    volumes: &[Value],
    opts: VolumeOpts<'_>,
    path: &Path,
) -> (Volumes, Vec<FieldError>) {
    let mut errs = Vec::new();
    let mut vols = Volumes::new();
    let created_claims: HashSet<String> = match opts.pod_name {
        Some(pod) if !pod.is_empty() => volumes
            .iter()
            .filter(|v| v.has("ephemeral"))
            .map(|v| format!("{pod}-{}", v.str("name")))
            .collect(),
        _ => HashSet::new(),
    };
    for (i, vol) in volumes.iter().enumerate() {
        let p = path.index(i);
        let name_path = p.child("name");
        let name = vol.str("name");
        let mut el = validate_source(vol, opts, &p);
        if name.is_empty() {
            el.push(FieldError::required(&name_path, ""));
        } else {
            for m in names::dns1123_label_errors(name) {
                el.push(FieldError::invalid(&name_path, name, m));
            }
        }
        if vols.contains_key(name) {
            el.push(FieldError::duplicate(&name_path, name));
        }
        if el.is_empty() {
            vols.insert(
                name.to_string(),
                VolumeInfo {
                    is_claim: vol.has("persistentVolumeClaim") || vol.has("ephemeral"),
                    is_image: vol.has("image"),
                },
            );
        } else {
            errs.extend(el);
        }
        let claim = at_str(vol, "persistentVolumeClaim", "claimName");
        if !claim.is_empty() && created_claims.contains(claim) {
            errs.push(FieldError::invalid(
                &p.child("persistentVolumeClaim").child("claimName"),
                claim,
                "must not reference a PVC that gets created for an ephemeral volume",
            ));
        }
    }
    (vols, errs)
}

fn at_str<'a>(v: &'a Value, a: &str, b: &str) -> &'a str {
    field(v, a).str(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(vols: Value) -> Vec<String> {
        let list = vols.as_array().cloned().unwrap_or_default();
        validate_volumes(&list, VolumeOpts::default(), &Path::new("spec.volumes"))
            .1
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn valid_volumes() {
        assert!(check(json!([
            {"name": "a", "emptyDir": {}},
            {"name": "b", "secret": {"secretName": "s", "defaultMode": 420}},
            {"name": "c", "configMap": {"name": "c", "items": [{"key": "k", "path": "p"}]}},
            {"name": "d", "hostPath": {"path": "/tmp", "type": ""}},
            {"name": "e", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}]}},
            {"name": "f", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}}]}},
            {"name": "g", "persistentVolumeClaim": {"claimName": "x"}}
        ]))
        .is_empty());
    }

    #[test]
    fn common_mistakes() {
        assert_eq!(
            check(json!([{"name": "a"}])),
            vec!["spec.volumes[0]: Required value: must specify a volume type"]
        );
        assert_eq!(
            check(json!([{"name": "a", "emptyDir": {}}, {"name": "a", "emptyDir": {}}])),
            vec![r#"spec.volumes[1].name: Duplicate value: "a""#]
        );
        assert_eq!(
            check(json!([{"name": "a", "emptyDir": {}, "hostPath": {"path": "/x"}}])),
            vec!["spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type"]
        );
        assert_eq!(
            check(json!([{"name": "a", "secret": {}}])),
            vec!["spec.volumes[0].secret.secretName: Required value"]
        );
        assert_eq!(
            check(
                json!([{"name": "a", "configMap": {"name": "c", "defaultMode": 1000, "items": [{"key": "k", "path": "../x"}]}}])
            ),
            vec![
                "spec.volumes[0].configMap.defaultMode: Invalid value: 1000: must be a number between 0 and 0777 (octal), both inclusive",
                r#"spec.volumes[0].configMap.items[0].path: Invalid value: "../x": must not contain '..'"#
            ]
        );
        assert_eq!(
            check(json!([{"name": "a", "hostPath": {"path": "/x", "type": "Weird"}}])),
            vec![
                r#"spec.volumes[0].hostPath.type: Unsupported value: "Weird": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket""#
            ]
        );
        assert_eq!(
            check(
                json!([{"name": "a", "projected": {"sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 60}}]}}])
            ),
            vec![
                "spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
            ]
        );
    }
}
