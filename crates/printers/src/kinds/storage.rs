//! Storage: PersistentVolume, PersistentVolumeClaim, StorageClass, CSIDriver, CSINode and
//! VolumeAttachment.

use super::{AGE, Column, NAME, Printer, boolean, count_cell, integer, name, owned, string, wide};
use crate::fields::text;
use crate::quantity::quantity;
use crate::timestamp::age;
use jiff::Timestamp;
use kyb_apimachinery::json::{at, items, map_at, opt_bool, opt_str, str_at};
use kyb_apimachinery::meta::is_deleting;
use serde_json::Value;

/// The pre-`storageClassName` annotation, which still takes precedence when present.
const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// Access modes in their short forms, in a fixed order, without duplicates.
fn access_modes(modes: &[Value]) -> String {
    let has = |mode: &str| modes.iter().any(|m| m.as_str() == Some(mode));
    let short = [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ];
    let present: Vec<&str> = short
        .iter()
        .filter(|(mode, _)| has(mode))
        .map(|(_, abbreviation)| *abbreviation)
        .collect();
    present.join(",")
}

fn beta_class(object: &Value) -> Option<&str> {
    map_at(object, &["metadata", "annotations"])
        .and_then(|a| a.get(BETA_STORAGE_CLASS))
        .map(|v| v.as_str().unwrap_or(""))
}

fn phase_or_terminating(object: &Value) -> &str {
    if is_deleting(object) {
        "Terminating"
    } else {
        str_at(object, &["status", "phase"])
    }
}

const VOLUME_MODE: Column = wide(string("VolumeMode", "Filesystem or Block."));

pub(crate) static PERSISTENT_VOLUME: Printer = Printer {
    columns: &[
        NAME,
        string("Capacity", "The volume's size."),
        string(
            "Access Modes",
            "How the volume can be mounted (RWO, ROX, RWX, RWOP).",
        ),
        string(
            "Reclaim Policy",
            "What happens to the volume once released by its claim.",
        ),
        string("Status", "Available, Bound, Released or Failed."),
        string("Claim", "The claim bound to the volume, as namespace/name."),
        string("StorageClass", "The storage class the volume belongs to."),
        string(
            "VolumeAttributesClass",
            "The volume attributes class applied to the volume.",
        ),
        string("Reason", "Why the volume is in its phase, when known."),
        AGE,
        VOLUME_MODE,
    ],
    cells: persistent_volume_cells,
};

fn persistent_volume_cells(volume: &Value, now: Timestamp) -> Vec<Value> {
    let claim = match at(volume, &["spec", "claimRef"]) {
        Some(c) => format!("{}/{}", str_at(c, &["namespace"]), str_at(c, &["name"])),
        None => String::new(),
    };
    let class = beta_class(volume).unwrap_or_else(|| str_at(volume, &["spec", "storageClassName"]));
    vec![
        name(volume),
        owned(quantity(at(volume, &["spec", "capacity", "storage"]))),
        owned(access_modes(items(volume, &["spec", "accessModes"]))),
        text(str_at(volume, &["spec", "persistentVolumeReclaimPolicy"])),
        text(phase_or_terminating(volume)),
        owned(claim),
        text(class),
        text(opt_str(volume, &["spec", "volumeAttributesClassName"]).unwrap_or("<unset>")),
        text(str_at(volume, &["status", "reason"])),
        age(volume, now),
        text(opt_str(volume, &["spec", "volumeMode"]).unwrap_or("<unset>")),
    ]
}

pub(crate) static PERSISTENT_VOLUME_CLAIM: Printer = Printer {
    columns: &[
        NAME,
        string("Status", "Pending, Bound or Lost."),
        string("Volume", "The volume bound to the claim."),
        string("Capacity", "The bound volume's size."),
        string(
            "Access Modes",
            "How the bound volume can be mounted (RWO, ROX, RWX, RWOP).",
        ),
        string("StorageClass", "The storage class the claim asks for."),
        string(
            "VolumeAttributesClass",
            "The volume attributes class the claim asks for.",
        ),
        AGE,
        VOLUME_MODE,
    ],
    cells: persistent_volume_claim_cells,
};

fn persistent_volume_claim_cells(claim: &Value, now: Timestamp) -> Vec<Value> {
    let volume = str_at(claim, &["spec", "volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity(at(claim, &["status", "capacity", "storage"])),
            access_modes(items(claim, &["status", "accessModes"])),
        )
    };
    let class = beta_class(claim)
        .or_else(|| opt_str(claim, &["spec", "storageClassName"]))
        .unwrap_or("");
    vec![
        name(claim),
        text(phase_or_terminating(claim)),
        text(volume),
        owned(capacity),
        owned(modes),
        text(class),
        text(opt_str(claim, &["spec", "volumeAttributesClassName"]).unwrap_or("<unset>")),
        age(claim, now),
        text(opt_str(claim, &["spec", "volumeMode"]).unwrap_or("<unset>")),
    ]
}

pub(crate) static STORAGE_CLASS: Printer = Printer {
    columns: &[
        NAME,
        string("Provisioner", "The driver creating volumes of this class."),
        string(
            "ReclaimPolicy",
            "What happens to volumes of this class once released.",
        ),
        string(
            "VolumeBindingMode",
            "When volumes are bound: Immediate or WaitForFirstConsumer.",
        ),
        string(
            "AllowVolumeExpansion",
            "Whether claims of this class may grow.",
        ),
        AGE,
    ],
    cells: storage_class_cells,
};

const DEFAULT_CLASS_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

fn storage_class_cells(class: &Value, now: Timestamp) -> Vec<Value> {
    let annotations = map_at(class, &["metadata", "annotations"]);
    let is_default = DEFAULT_CLASS_ANNOTATIONS.iter().any(|key| {
        annotations
            .and_then(|a| a.get(*key))
            .and_then(Value::as_str)
            == Some("true")
    });
    let display_name = if is_default {
        owned(format!(
            "{} (default)",
            kyb_apimachinery::meta::name(class).unwrap_or_default()
        ))
    } else {
        name(class)
    };
    vec![
        display_name,
        text(str_at(class, &["provisioner"])),
        text(opt_str(class, &["reclaimPolicy"]).unwrap_or("Delete")),
        text(opt_str(class, &["volumeBindingMode"]).unwrap_or("Immediate")),
        Value::Bool(opt_bool(class, &["allowVolumeExpansion"]).unwrap_or(false)),
        age(class, now),
    ]
}

pub(crate) static CSI_DRIVER: Printer = Printer {
    columns: &[
        NAME,
        boolean(
            "AttachRequired",
            "Whether volumes need an attach step before mounting.",
        ),
        boolean(
            "PodInfoOnMount",
            "Whether the driver is told about the pod on mount.",
        ),
        boolean(
            "StorageCapacity",
            "Whether the driver reports storage capacity.",
        ),
        string(
            "TokenRequests",
            "Audiences of the service account tokens passed to the driver.",
        ),
        boolean(
            "RequiresRepublish",
            "Whether volumes are mounted again periodically.",
        ),
        string("Modes", "The volume lifecycle modes the driver supports."),
        AGE,
    ],
    cells: csi_driver_cells,
};

fn csi_driver_cells(driver: &Value, now: Timestamp) -> Vec<Value> {
    let flag = |field: &str, default: bool| {
        Value::Bool(opt_bool(driver, &["spec", field]).unwrap_or(default))
    };
    let tokens = match at(driver, &["spec", "tokenRequests"]) {
        Some(requests) => {
            let audiences: Vec<&str> = requests
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| str_at(r, &["audience"]))
                .collect();
            audiences.join(",")
        }
        None => "<unset>".to_owned(),
    };
    let modes: Vec<&str> = items(driver, &["spec", "volumeLifecycleModes"])
        .iter()
        .map(|m| m.as_str().unwrap_or(""))
        .collect();
    let modes = if modes.is_empty() {
        "<none>".to_owned()
    } else {
        modes.join(",")
    };
    vec![
        name(driver),
        flag("attachRequired", true),
        flag("podInfoOnMount", false),
        flag("storageCapacity", false),
        owned(tokens),
        flag("requiresRepublish", false),
        owned(modes),
        age(driver, now),
    ]
}

pub(crate) static CSI_NODE: Printer = Printer {
    columns: &[
        NAME,
        integer(
            "Drivers",
            "How many CSI drivers are registered on the node.",
        ),
        AGE,
    ],
    cells: csi_node_cells,
};

fn csi_node_cells(node: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(node),
        count_cell(node, &["spec", "drivers"]),
        age(node, now),
    ]
}

pub(crate) static VOLUME_ATTACHMENT: Printer = Printer {
    columns: &[
        NAME,
        Column {
            format: "name",
            ..string("Attacher", "The driver attaching the volume.")
        },
        string("PV", "The persistent volume being attached."),
        string("Node", "The node the volume is attached to."),
        boolean("Attached", "Whether the attach has completed."),
        AGE,
    ],
    cells: volume_attachment_cells,
};

fn volume_attachment_cells(attachment: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(attachment),
        text(str_at(attachment, &["spec", "attacher"])),
        text(str_at(
            attachment,
            &["spec", "source", "persistentVolumeName"],
        )),
        text(str_at(attachment, &["spec", "nodeName"])),
        Value::Bool(kyb_apimachinery::json::bool_at(
            attachment,
            &["status", "attached"],
        )),
        age(attachment, now),
    ]
}

pub(crate) static CSI_STORAGE_CAPACITY: Printer = Printer {
    columns: &[
        NAME,
        string(
            "StorageClassName",
            "The storage class the capacity applies to.",
        ),
        string(
            "Capacity",
            "The capacity reported by the CSI driver's GetCapacity call.",
        ),
    ],
    cells: csi_storage_capacity_cells,
};

fn csi_storage_capacity_cells(capacity: &Value, _now: Timestamp) -> Vec<Value> {
    let size = match capacity.get("capacity").and_then(Value::as_str) {
        Some(text) => crate::quantity::canonical(text),
        None => "<unset>".to_string(),
    };
    vec![
        name(capacity),
        crate::fields::text(kyb_apimachinery::json::str_at(
            capacity,
            &["storageClassName"],
        )),
        Value::String(size),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::testing::{ago, now, row};
    use serde_json::json;

    #[test]
    fn persistent_volume_row() {
        let pv = json!({
            "metadata": {"name": "pv-1", "creationTimestamp": ago(3600)},
            "spec": {"capacity": {"storage": "10240Mi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "fast",
                     "claimRef": {"namespace": "default", "name": "data"}, "volumeMode": "Filesystem"},
            "status": {"phase": "Bound"}
        });
        assert_eq!(
            row(persistent_volume_cells(&pv, now())),
            json!([
                "pv-1",
                "10Gi",
                "RWO,RWX",
                "Retain",
                "Bound",
                "default/data",
                "fast",
                "<unset>",
                "",
                "60m",
                "Filesystem"
            ])
        );
        assert_eq!(
            row(persistent_volume_cells(&json!({}), now())),
            json!([
                "",
                "0",
                "",
                "",
                "",
                "",
                "",
                "<unset>",
                "",
                "<unknown>",
                "<unset>"
            ])
        );
    }

    #[test]
    fn persistent_volume_annotations_and_deletion() {
        let pv = json!({
            "metadata": {"name": "old", "deletionTimestamp": ago(1),
                         "annotations": {"volume.beta.kubernetes.io/storage-class": "legacy"}},
            "spec": {"storageClassName": "fast"},
            "status": {"phase": "Released", "reason": "Gone"}
        });
        let cells = persistent_volume_cells(&pv, now());
        assert_eq!(cells[4], json!("Terminating"));
        assert_eq!(cells[6], json!("legacy"));
        assert_eq!(cells[8], json!("Gone"));
    }

    #[test]
    fn persistent_volume_claim_rows() {
        let bound = json!({
            "metadata": {"name": "data", "creationTimestamp": ago(120)},
            "spec": {"volumeName": "pv-1", "storageClassName": "fast", "volumeMode": "Filesystem",
                     "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}
        });
        assert_eq!(
            row(persistent_volume_claim_cells(&bound, now())),
            json!([
                "data",
                "Bound",
                "pv-1",
                "1Gi",
                "RWO",
                "fast",
                "<unset>",
                "2m",
                "Filesystem"
            ])
        );
        let pending = json!({"metadata": {"name": "wait"}, "spec": {"volumeAttributesClassName": "gold"},
                             "status": {"phase": "Pending"}});
        assert_eq!(
            row(persistent_volume_claim_cells(&pending, now())),
            json!([
                "wait",
                "Pending",
                "",
                "",
                "",
                "",
                "gold",
                "<unknown>",
                "<unset>"
            ])
        );
    }

    #[test]
    fn storage_class_row() {
        let c = json!({"metadata": {"name": "standard", "creationTimestamp": ago(60),
                                    "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                       "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"});
        assert_eq!(
            row(storage_class_cells(&c, now())),
            json!([
                "standard (default)",
                "rancher.io/local-path",
                "Delete",
                "WaitForFirstConsumer",
                false,
                "60s"
            ])
        );
        let c = json!({"metadata": {"name": "x"}, "reclaimPolicy": "Retain", "allowVolumeExpansion": true});
        assert_eq!(
            row(storage_class_cells(&c, now())),
            json!(["x", "", "Retain", "Immediate", true, "<unknown>"])
        );
    }

    #[test]
    fn csi_driver_row() {
        let d = json!({"metadata": {"name": "csi.example.com", "creationTimestamp": ago(60)},
                       "spec": {"attachRequired": false, "podInfoOnMount": true,
                                "tokenRequests": [{"audience": "vault"}, {"audience": "gcp"}],
                                "volumeLifecycleModes": ["Persistent", "Ephemeral"]}});
        assert_eq!(
            row(csi_driver_cells(&d, now())),
            json!([
                "csi.example.com",
                false,
                true,
                false,
                "vault,gcp",
                false,
                "Persistent,Ephemeral",
                "60s"
            ])
        );
        assert_eq!(
            row(csi_driver_cells(
                &json!({"spec": {"tokenRequests": []}}),
                now()
            )),
            json!(["", true, false, false, "", false, "<none>", "<unknown>"])
        );
        assert_eq!(csi_driver_cells(&json!({}), now())[4], json!("<unset>"));
    }

    #[test]
    fn csi_node_and_volume_attachment_rows() {
        let n = json!({"metadata": {"name": "node-1", "creationTimestamp": ago(5)},
                       "spec": {"drivers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(row(csi_node_cells(&n, now())), json!(["node-1", 2, "5s"]));
        let a = json!({"metadata": {"name": "csi-123", "creationTimestamp": ago(5)},
                       "spec": {"attacher": "csi.example.com", "nodeName": "node-1",
                                "source": {"persistentVolumeName": "pv-1"}},
                       "status": {"attached": true}});
        assert_eq!(
            row(volume_attachment_cells(&a, now())),
            json!(["csi-123", "csi.example.com", "pv-1", "node-1", true, "5s"])
        );
    }
}
