//! `rbac.authorization.k8s.io/v1`: Roles and ClusterRoles (policy rules, aggregation) and
//! their bindings (role references that never change, subject kinds). RBAC names only need
//! to be usable as URL path segments.

use serde_json::Value;

use crate::Ctx;
use crate::kinds::Kind;
use crate::selector::{self, validate_label_selector};
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, default_str, each_obj, field, obj_mut};
use kyb_apimachinery::names;

const GROUP: &str = "rbac.authorization.k8s.io";

fn rbac_name(name: &str, prefix: bool) -> Vec<String> {
    names::path_segment_name_errors(name, prefix)
}

/// The rules of an RBAC kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    Some(match kind {
        "Role" => Kind::new(rbac_name).validate(|o, _| validate_rules(o, true)),
        "ClusterRole" => Kind::new(rbac_name).validate(validate_cluster_role),
        "RoleBinding" => Kind::new(rbac_name)
            .defaults(default_binding)
            .validate(|o, _| validate_binding(o, true))
            .update(validate_binding_update),
        "ClusterRoleBinding" => Kind::new(rbac_name)
            .defaults(default_binding)
            .validate(|o, _| validate_binding(o, false))
            .update(validate_binding_update),
        _ => return None,
    })
}

/// `SetDefaults_RoleBinding` / `SetDefaults_ClusterRoleBinding` / `SetDefaults_Subject`.
fn default_binding(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    if let Some(r) = obj_mut(o, "roleRef") {
        default_str(r, "apiGroup", GROUP);
    }
    each_obj(o, "subjects", |s| {
        let group = match s.get("kind").and_then(Value::as_str) {
            Some("User" | "Group") => Some(GROUP),
            _ => None,
        };
        if let Some(g) = group {
            default_str(s, "apiGroup", g);
        }
    });
}

/// `ValidatePolicyRule` for every rule.
fn validate_rules(role: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, rule) in role.arr("rules").iter().enumerate() {
        let p = Path::new("rules").index(i);
        if rule.arr("verbs").is_empty() {
            errs.push(FieldError::required(
                &p.child("verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = rule.arr("nonResourceURLs");
        if !urls.is_empty() {
            let value = Value::from(urls.to_vec());
            if namespaced {
                errs.push(FieldError::invalid(
                    &p.child("nonResourceURLs"),
                    value.clone(),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if !rule.arr("apiGroups").is_empty()
                || !rule.arr("resources").is_empty()
                || !rule.arr("resourceNames").is_empty()
            {
                errs.push(FieldError::invalid(
                    &p.child("nonResourceURLs"),
                    value,
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if rule.arr("apiGroups").is_empty() {
            errs.push(FieldError::required(
                &p.child("apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if rule.arr("resources").is_empty() {
            errs.push(FieldError::required(
                &p.child("resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
    errs
}

fn validate_cluster_role(role: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = validate_rules(role, false);
    let agg = field(role, "aggregationRule");
    if !agg.is_null() {
        let sp = Path::new("aggregationRule").child("clusterRoleSelectors");
        let selectors = agg.arr("clusterRoleSelectors");
        if selectors.is_empty() {
            errs.push(FieldError::required(
                &sp,
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ));
        }
        for (i, s) in selectors.iter().enumerate() {
            errs.extend(validate_label_selector(s, false, &sp.index(i)));
            if selector::parse(s).is_err() {
                errs.push(FieldError::invalid(
                    &sp.index(i),
                    s.clone(),
                    "invalid label selector.",
                ));
            }
        }
    }
    errs
}

fn validate_subject(s: &Value, namespaced: bool, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = s.str("name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    let group = s.str("apiGroup");
    match s.str("kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for m in names::name_is_dns_subdomain(name, false) {
                    errs.push(FieldError::invalid(&path.child("name"), name, m));
                }
            }
            if !group.is_empty() {
                errs.push(FieldError::not_supported(
                    &path.child("apiGroup"),
                    group,
                    &[""],
                ));
            }
            if !namespaced && s.str("namespace").is_empty() {
                errs.push(FieldError::required(&path.child("namespace"), ""));
            }
        }
        "User" | "Group" => {
            if group != GROUP {
                errs.push(FieldError::not_supported(
                    &path.child("apiGroup"),
                    group,
                    &[GROUP],
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            &path.child("kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
    errs
}

fn validate_binding(b: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let r = field(b, "roleRef");
    let rp = Path::new("roleRef");
    let group = r.str("apiGroup");
    if group != GROUP {
        errs.push(FieldError::not_supported(
            &rp.child("apiGroup"),
            group,
            &[GROUP],
        ));
    }
    let kind = r.str("kind");
    if namespaced {
        if kind != "Role" && kind != "ClusterRole" {
            errs.push(FieldError::not_supported(
                &rp.child("kind"),
                kind,
                &["Role", "ClusterRole"],
            ));
        }
    } else if kind != "ClusterRole" {
        errs.push(FieldError::not_supported(
            &rp.child("kind"),
            kind,
            &["ClusterRole"],
        ));
    }
    let name = r.str("name");
    if name.is_empty() {
        errs.push(FieldError::required(&rp.child("name"), ""));
    } else {
        for m in rbac_name(name, false) {
            errs.push(FieldError::invalid(&rp.child("name"), name, m));
        }
    }
    for (i, s) in b.arr("subjects").iter().enumerate() {
        errs.extend(validate_subject(
            s,
            namespaced,
            &Path::new("subjects").index(i),
        ));
    }
    errs
}

fn validate_binding_update(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let n = field(new, "roleRef");
    if !kyb_apimachinery::equality::semantic_eq(n, field(old, "roleRef")) {
        return vec![FieldError::invalid(
            &Path::new("roleRef"),
            n.clone(),
            "cannot change roleRef",
        )];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> Ctx<'static> {
        Ctx { old: None }
    }

    #[test]
    fn roles() {
        let ok = json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        assert!(validate_rules(&ok, true).is_empty());
        let bad = json!({"rules": [{"resources": ["pods"]}, {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]});
        let msgs: Vec<String> = validate_rules(&bad, true)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            vec![
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                r#"rules[1].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs"#,
            ]
        );
        assert_eq!(rbac_name("system:admin", false).len(), 0);
        assert_eq!(rbac_name("a/b", false), vec!["may not contain '/'"]);
    }

    #[test]
    fn bindings() {
        let mut b = json!({"roleRef": {"kind": "Role", "name": "r"}, "subjects": [
            {"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "default", "namespace": "default"}]});
        default_binding(&mut b);
        assert_eq!(b["roleRef"]["apiGroup"], json!(GROUP));
        assert_eq!(b["subjects"][0]["apiGroup"], json!(GROUP));
        assert!(b["subjects"][1].get("apiGroup").is_none());
        assert!(validate_binding(&b, true).is_empty());
        let msgs: Vec<String> = validate_binding(&b, false)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            vec![r#"roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole""#]
        );
        let mut changed = b.clone();
        changed["roleRef"]["name"] = json!("other");
        assert_eq!(
            validate_binding_update(&changed, &b, &ctx())[0].detail,
            "cannot change roleRef"
        );
    }
}
