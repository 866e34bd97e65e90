//! The downward API: `fieldRef` and `resourceFieldRef` selectors used by environment
//! variables and `downwardAPI` volumes.

use serde_json::Value;

use crate::meta::validate_qualified_name;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, field};
use kyb_apimachinery::quantity::Quantity;

/// Pod fields an environment variable may read (sorted, as Kubernetes lists them).
pub(crate) const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// Pod fields a downward API volume file may hold.
pub(crate) const VOLUME_FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];

const RESOURCE_FIELD_PATHS: &[&str] = &[
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// `metadata.labels['key']` → (`metadata.labels`, `key`).
fn split_subscript(path: &str) -> Option<(&str, &str)> {
    let s = path.strip_suffix("']")?;
    let (head, sub) = s.split_once("['")?;
    (!head.is_empty()).then_some((head, sub))
}

/// Kubernetes' `ConvertDownwardAPIFieldLabel` for pods.
fn convert_field_label(version: &str, label: &str) -> Result<String, String> {
    if version != "v1" {
        return Err(format!("unsupported pod version: {version}"));
    }
    if let Some((head, _)) = split_subscript(label) {
        return match head {
            "metadata.annotations" | "metadata.labels" => Ok(label.to_string()),
            _ => Err(format!("field label does not support subscript: {label}")),
        };
    }
    match label {
        "metadata.annotations"
        | "metadata.labels"
        | "metadata.name"
        | "metadata.namespace"
        | "metadata.uid"
        | "spec.nodeName"
        | "spec.restartPolicy"
        | "spec.serviceAccountName"
        | "spec.schedulerName"
        | "status.phase"
        | "status.hostIP"
        | "status.hostIPs"
        | "status.podIP"
        | "status.podIPs" => Ok(label.to_string()),
        "spec.host" => Ok("spec.nodeName".to_string()),
        _ => Err(format!("field label not supported: {label}")),
    }
}

/// `validateObjectFieldSelector`.
pub(crate) fn validate_object_field_selector(
    fs: &Value,
    allowed: &[&str],
    path: &Path,
) -> Vec<FieldError> {
    let api_version = fs.str("apiVersion");
    if api_version.is_empty() {
        return vec![FieldError::required(&path.child("apiVersion"), "")];
    }
    let field_path = fs.str("fieldPath");
    if field_path.is_empty() {
        return vec![FieldError::required(&path.child("fieldPath"), "")];
    }
    let internal = match convert_field_label(api_version, field_path) {
        Ok(p) => p,
        Err(e) => {
            return vec![FieldError::invalid(
                &path.child("fieldPath"),
                field_path,
                format!("error converting fieldPath: {e}"),
            )];
        }
    };
    if let Some((head, sub)) = split_subscript(&internal) {
        return match head {
            "metadata.annotations" => validate_qualified_name(&sub.to_lowercase(), path),
            "metadata.labels" => validate_qualified_name(sub, path),
            _ => vec![FieldError::invalid(
                path,
                head,
                "does not support subscript",
            )],
        };
    }
    if !allowed.contains(&internal.as_str()) {
        return vec![FieldError::not_supported(
            &path.child("fieldPath"),
            internal.as_str(),
            allowed,
        )];
    }
    Vec::new()
}

/// `validateContainerResourceFieldSelector`; `volume`: the container name is required.
pub(crate) fn validate_resource_field_selector(
    fs: &Value,
    volume: bool,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let resource = fs.str("resource");
    if volume && fs.str("containerName").is_empty() {
        errs.push(FieldError::required(&path.child("containerName"), ""));
    } else if resource.is_empty() {
        errs.push(FieldError::required(&path.child("resource"), ""));
    } else if !RESOURCE_FIELD_PATHS.contains(&resource)
        && !resource.starts_with("requests.hugepages-")
        && !resource.starts_with("limits.hugepages-")
    {
        errs.push(FieldError::not_supported(
            &path.child("resource"),
            resource,
            RESOURCE_FIELD_PATHS,
        ));
    }
    errs.extend(validate_divisor(resource, field(fs, "divisor"), path));
    errs
}

fn validate_divisor(resource: &str, divisor: &Value, path: &Path) -> Vec<FieldError> {
    let Ok(q) = Quantity::from_json(divisor) else {
        return Vec::new();
    };
    if q.is_zero() {
        return Vec::new();
    }
    let d = q.canonical();
    const BYTES: &[&str] = &[
        "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
    ];
    let p = path.child("divisor");
    let bytes_msg = |what: &str| {
        format!(
            "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the {what} resource"
        )
    };
    let mut errs = Vec::new();
    match resource {
        "limits.cpu" | "requests.cpu" if d != "1m" && d != "1" => errs.push(FieldError::invalid(
            &p,
            resource,
            "only divisor's values 1m and 1 are supported with the cpu resource",
        )),
        "limits.memory" | "requests.memory" if !BYTES.contains(&d.as_str()) => {
            errs.push(FieldError::invalid(&p, resource, bytes_msg("memory")));
        }
        "limits.ephemeral-storage" | "requests.ephemeral-storage"
            if !BYTES.contains(&d.as_str()) =>
        {
            errs.push(FieldError::invalid(
                &p,
                resource,
                bytes_msg("local ephemeral storage"),
            ));
        }
        _ => {}
    }
    if (resource.starts_with("requests.hugepages-") || resource.starts_with("limits.hugepages-"))
        && !BYTES.contains(&d.as_str())
    {
        errs.push(FieldError::invalid(&p, resource, bytes_msg("hugepages")));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_selectors() {
        let p = Path::new("f");
        assert!(
            validate_object_field_selector(
                &json!({"apiVersion": "v1", "fieldPath": "metadata.name"}),
                ENV_FIELD_PATHS,
                &p
            )
            .is_empty()
        );
        assert!(
            validate_object_field_selector(
                &json!({"apiVersion": "v1", "fieldPath": "metadata.labels['app']"}),
                ENV_FIELD_PATHS,
                &p
            )
            .is_empty()
        );
        let e = validate_object_field_selector(
            &json!({"apiVersion": "v1", "fieldPath": "spec.bogus"}),
            ENV_FIELD_PATHS,
            &p,
        );
        assert_eq!(
            e[0].to_string(),
            r#"f.fieldPath: Invalid value: "spec.bogus": error converting fieldPath: field label not supported: spec.bogus"#
        );
        let e = validate_object_field_selector(
            &json!({"apiVersion": "v1", "fieldPath": "status.phase"}),
            ENV_FIELD_PATHS,
            &p,
        );
        assert_eq!(e[0].kind, kyb_apimachinery::field::ErrorKind::NotSupported);
    }

    #[test]
    fn resource_selectors() {
        let p = Path::new("r");
        assert!(
            validate_resource_field_selector(
                &json!({"resource": "limits.cpu", "divisor": "1m"}),
                false,
                &p
            )
            .is_empty()
        );
        assert_eq!(
            validate_resource_field_selector(
                &json!({"resource": "limits.cpu", "divisor": "2"}),
                false,
                &p
            )
            .len(),
            1
        );
        assert_eq!(
            validate_resource_field_selector(&json!({"resource": "limits.cpu"}), true, &p)[0].field,
            "r.containerName"
        );
        assert_eq!(
            validate_resource_field_selector(&json!({"resource": "foo"}), false, &p).len(),
            1
        );
    }
}
