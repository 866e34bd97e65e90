//! `apiextensions.k8s.io/v1`: CustomResourceDefinitions — defaults (singular and list
//! kind, conversion strategy, stored versions) and the basic rules of names, group, scope
//! and versions. Schema structure and CEL rules are not checked here.

use serde_json::{Value, json};

use crate::Ctx;
use crate::kinds::{Kind, MetaMode};
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{
    Obj, child_object, default_str, default_value, field, field_at, obj_mut,
};
use kyb_apimachinery::names;

/// The rules of an `apiextensions.k8s.io/v1` kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    match kind {
        "CustomResourceDefinition" => Some(
            Kind::new(names::name_is_dns_subdomain)
                .meta(MetaMode::Generic)
                .with_status()
                .defaults(default_crd)
                .prepare(prepare_crd)
                .validate(validate_crd)
                .update(validate_crd_update),
        ),
        _ => None,
    }
}

fn storage_version(obj: &Value) -> Option<String> {
    field_at(obj, &["spec", "versions"])
        .as_array()?
        .iter()
        .find(|v| v.flag("storage"))
        .map(|v| v.str("name").to_string())
}

fn default_crd(obj: &mut Value) {
    let storage = storage_version(obj);
    let Some(o) = obj.as_object_mut() else { return };
    if let Some(spec) = child_object(o, "spec") {
        if let Some(n) = obj_mut(spec, "names") {
            let kind = n
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            default_str(n, "singular", &kind.to_lowercase());
            if !kind.is_empty() {
                default_str(n, "listKind", &format!("{kind}List"));
            }
        }
        default_value(spec, "conversion", json!({"strategy": "None"}));
        if let Some(svc) = spec
            .get_mut("conversion")
            .and_then(|c| c.pointer_mut("/webhook/clientConfig/service"))
            .and_then(Value::as_object_mut)
        {
            default_value(svc, "port", json!(443));
        }
    }
    if let Some(status) = obj_mut(o, "status") {
        let empty = status
            .get("storedVersions")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if empty && let Some(s) = storage {
            status.insert("storedVersions".to_string(), json!([s]));
        }
    }
}

fn prepare_crd(obj: &mut Value) {
    let storage = storage_version(obj);
    if let Some(o) = obj.as_object_mut() {
        let mut status = json!({"acceptedNames": {"kind": "", "plural": ""}});
        if let Some(s) = storage {
            status["storedVersions"] = json!([s]);
        }
        o.insert("status".to_string(), status);
    }
}

fn validate_crd(crd: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(crd, "spec");
    let sp = Path::new("spec");
    let group = spec.str("group");
    let plural = field_at(spec, &["names", "plural"])
        .as_str()
        .unwrap_or_default();
    let name = field_at(crd, &["metadata", "name"])
        .as_str()
        .unwrap_or_default();
    if name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid(
            &Path::new("metadata").child("name"),
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        errs.push(FieldError::required(&sp.child("group"), ""));
    } else {
        for m in names::dns1123_subdomain_errors(group) {
            errs.push(FieldError::invalid(&sp.child("group"), group, m));
        }
        if group.split('.').count() < 2 {
            errs.push(FieldError::invalid(
                &sp.child("group"),
                group,
                "should be a domain with at least one dot",
            ));
        }
    }
    let scope = spec.str("scope");
    if scope.is_empty() {
        errs.push(FieldError::required(&sp.child("scope"), ""));
    } else if scope != "Cluster" && scope != "Namespaced" {
        errs.push(FieldError::not_supported(
            &sp.child("scope"),
            scope,
            &["Cluster", "Namespaced"],
        ));
    }
    let names_v = field(spec, "names");
    let np = sp.child("names");
    for key in ["plural", "singular"] {
        let v = names_v.str(key);
        if v.is_empty() && key == "plural" {
            errs.push(FieldError::required(&np.child(key), ""));
        } else if !v.is_empty() {
            for m in names::dns1035_label_errors(v) {
                errs.push(FieldError::invalid(&np.child(key), v, m));
            }
        }
    }
    for key in ["kind", "listKind"] {
        let v = names_v.str(key);
        if v.is_empty() {
            errs.push(FieldError::required(&np.child(key), ""));
        } else {
            for m in names::dns1035_label_errors(&v.to_lowercase()) {
                errs.push(FieldError::invalid(&np.child(key), v, m));
            }
        }
    }
    let versions = spec.arr("versions");
    let vp = sp.child("versions");
    if versions.is_empty() {
        errs.push(FieldError::invalid(
            &vp,
            Value::from(versions.to_vec()),
            "must have exactly one version marked as storage version",
        ));
    }
    let storage_count = versions.iter().filter(|v| v.flag("storage")).count();
    if !versions.is_empty() && storage_count != 1 {
        errs.push(FieldError::invalid(
            &vp,
            Value::from(versions.to_vec()),
            "must have exactly one version marked as storage version",
        ));
    }
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (i, v) in versions.iter().enumerate() {
        let name = v.str("name");
        let p = vp.index(i);
        for m in names::dns1035_label_errors(name) {
            errs.push(FieldError::invalid(&p.child("name"), name, m));
        }
        if seen.contains(name) {
            errs.push(FieldError::invalid(
                &p.child("name"),
                name,
                "must be unique",
            ));
        }
        seen.insert(name);
        if field_at(v, &["schema", "openAPIV3Schema"]).is_null() {
            errs.push(FieldError::required(
                &p.child("schema").child("openAPIV3Schema"),
                "schemas are required",
            ));
        }
    }
    if !versions.is_empty() && !versions.iter().any(|v| v.flag("served")) {
        errs.push(FieldError::invalid(
            &vp,
            Value::from(versions.to_vec()),
            "must have at least one version marked as served",
        ));
    }
    let strategy = field_at(spec, &["conversion", "strategy"])
        .as_str()
        .unwrap_or("None");
    if strategy != "None" && strategy != "Webhook" {
        errs.push(FieldError::not_supported(
            &sp.child("conversion").child("strategy"),
            strategy,
            &["None", "Webhook"],
        ));
    }
    errs
}

fn validate_crd_update(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ns = field_at(new, &["spec", "scope"]);
    let os = field_at(old, &["spec", "scope"]);
    let established = field_at(old, &["status", "acceptedNames", "plural"])
        .as_str()
        .is_some_and(|p| !p.is_empty());
    if established && ns != os {
        errs.push(FieldError::invalid(
            &Path::new("spec").child("scope"),
            ns.clone(),
            crate::meta::FIELD_IMMUTABLE_MSG,
        ));
    }
    errs.extend(crate::meta::immutable(
        field_at(new, &["spec", "group"]),
        field_at(old, &["spec", "group"]),
        &Path::new("spec").child("group"),
    ));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
    }

    #[test]
    fn crds() {
        let ctx = Ctx { old: None };
        let mut c = crd();
        default_crd(&mut c);
        prepare_crd(&mut c);
        default_crd(&mut c);
        assert_eq!(c["spec"]["names"]["singular"], json!("widget"));
        assert_eq!(c["spec"]["names"]["listKind"], json!("WidgetList"));
        assert_eq!(c["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(c["status"]["storedVersions"], json!(["v1"]));
        assert!(validate_crd(&c, &ctx).is_empty());
        c["metadata"]["name"] = json!("gadgets.example.com");
        assert_eq!(
            validate_crd(&c, &ctx)[0].to_string(),
            r#"metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group"#
        );
    }
}
