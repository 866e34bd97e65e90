//! `apiregistration.k8s.io/v1`: APIServices — the `version.group` name, priorities, and
//! the service reference of aggregated APIs.

use serde_json::{Value, json};

use crate::Ctx;
use crate::core::reset_status;
use crate::kinds::{Kind, MetaMode};
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, default_value, field, field_at, obj_mut};
use kyb_apimachinery::names;

/// The rules of an `apiregistration.k8s.io/v1` kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    match kind {
        "APIService" => Some(
            Kind::new(names::path_segment_name_errors)
                .meta(MetaMode::Generic)
                .with_status()
                .defaults(|o| {
                    if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut)
                        && let Some(svc) = obj_mut(spec, "service")
                    {
                        default_value(svc, "port", json!(443));
                    }
                })
                .prepare(|o| reset_status(o, json!({})))
                .validate(validate_api_service),
        ),
        _ => None,
    }
}

fn validate_api_service(api: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(api, "spec");
    let sp = Path::new("spec");
    let group = spec.str("group");
    let version = spec.str("version");
    let required = format!("{version}.{group}");
    let name = field_at(api, &["metadata", "name"])
        .as_str()
        .unwrap_or_default();
    if !name.is_empty()
        && names::path_segment_name_errors(name, false).is_empty()
        && name != required
    {
        errs.push(FieldError::invalid(
            &Path::new("metadata").child("name"),
            name,
            format!(
                "must be `spec.version+\".\"+spec.group`: {}",
                kyb_apimachinery::gofmt::quote(&required)
            ),
        ));
    }
    if group.is_empty() && version != "v1" {
        errs.push(FieldError::required(
            &sp.child("group"),
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for m in names::dns1123_subdomain_errors(group) {
            errs.push(FieldError::invalid(&sp.child("group"), group, m));
        }
    }
    for m in names::dns1035_label_errors(version) {
        errs.push(FieldError::invalid(&sp.child("version"), version, m));
    }
    let gpm = spec.int("groupPriorityMinimum").unwrap_or(0);
    if gpm <= 0 || gpm > 20000 {
        errs.push(FieldError::invalid(
            &sp.child("groupPriorityMinimum"),
            gpm,
            "must be positive and less than 20000",
        ));
    }
    let vp = spec.int("versionPriority").unwrap_or(0);
    if vp <= 0 || vp > 1000 {
        errs.push(FieldError::invalid(
            &sp.child("versionPriority"),
            vp,
            "must be positive and less than 1000",
        ));
    }
    let ca = spec.str("caBundle");
    let svc = field(spec, "service");
    if svc.is_null() {
        if !ca.is_empty() {
            let len = kyb_apimachinery::base64::decode(ca)
                .map(|b| b.len())
                .unwrap_or(ca.len());
            errs.push(FieldError::invalid(
                &sp.child("caBundle"),
                format!("{len} bytes"),
                "local APIServices may not have a caBundle",
            ));
        }
        if spec.flag("insecureSkipTLSVerify") {
            errs.push(FieldError::invalid(
                &sp.child("insecureSkipTLSVerify"),
                true,
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return errs;
    }
    let svp = sp.child("service");
    for key in ["namespace", "name"] {
        if svc.str(key).is_empty() {
            errs.push(FieldError::required(&svp.child(key), ""));
        }
    }
    let port = svc.int("port").unwrap_or(0);
    let msgs = names::port_number_errors(port);
    if !msgs.is_empty() {
        errs.push(FieldError::invalid(
            &svp.child("port"),
            port,
            format!("port is not valid: {}", msgs.join(", ")),
        ));
    }
    if spec.flag("insecureSkipTLSVerify") && !ca.is_empty() {
        errs.push(FieldError::invalid(
            &sp.child("insecureSkipTLSVerify"),
            true,
            "may not be true if caBundle is present",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_services() {
        let ctx = Ctx { old: None };
        let ok = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {"group": "metrics.k8s.io", "version": "v1beta1",
            "groupPriorityMinimum": 100, "versionPriority": 100, "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443}}});
        assert!(validate_api_service(&ok, &ctx).is_empty());
        let local = json!({"metadata": {"name": "v1.apps"}, "spec": {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15}});
        assert!(validate_api_service(&local, &ctx).is_empty());
        let mut bad = ok.clone();
        bad["metadata"]["name"] = json!("v1.other");
        bad["spec"]["versionPriority"] = json!(0);
        assert_eq!(validate_api_service(&bad, &ctx).len(), 2);
    }
}
