//! certificates.k8s.io/v1 CertificateSigningRequests: their strategy (the requestor
//! recorded on create, spec and status kept apart on the main resource, `/status` for the
//! certificate and Failed conditions, `/approval` for Approved and Denied), their
//! validation (`validation`) and the admission plugins that guard approving and signing
//! (`admission`).

pub mod admission;
pub mod validation;

use crate::strategies::Builtin;
use crate::util;
use kyb_api::Status;
use kyb_api::fields::SelectableField;
use kyb_api::registry::{Normalized, ResourceDef, Strategy};
use serde_json::{Map, Value, json};
use std::time::SystemTime;
use validation::Allowed;

/// The strategy of CertificateSigningRequests: the built-in one (type, table, metadata
/// rules) with Kubernetes' CSR strategies around it.
pub struct CertificateSigningRequests {
    builtin: Builtin,
}

impl CertificateSigningRequests {
    pub fn new(builtin: Builtin) -> CertificateSigningRequests {
        CertificateSigningRequests { builtin }
    }
}

const GROUP: &str = "certificates.k8s.io";
const KIND: &str = "CertificateSigningRequest";

/// `422 Invalid` for metadata errors followed by the request's own.
fn check(
    object: &Value,
    mut errors: Vec<kyb_validation::FieldError>,
    mut more: Vec<kyb_validation::FieldError>,
) -> Result<(), Status> {
    errors.append(&mut more);
    crate::validation::check(GROUP, KIND, object, &errors)
}

fn object_mut<'a>(value: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    let fields = value.as_object_mut()?;
    let entry = fields.entry(key).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    entry.as_object_mut()
}

fn take_from(new: &mut Value, old: &Value, key: &str) {
    if let Some(fields) = new.as_object_mut() {
        match old.get(key) {
            Some(value) => fields.insert(key.into(), value.clone()),
            None => fields.remove(key),
        };
    }
}

fn conditions_of(object: &Value) -> Vec<Value> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// `lastUpdateTime` defaults to now; `lastTransitionTime` to the old condition's of the
/// same type when its status is unchanged, else now (`populateConditionTimestamps`).
fn populate_timestamps(new: &mut Value, old: &Value) {
    let now = util::now();
    let old_conditions = conditions_of(old);
    let Some(conditions) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for condition in conditions.iter_mut() {
        let Some(fields) = condition.as_object_mut() else {
            continue;
        };
        let missing = |f: &Map<String, Value>, k: &str| {
            f.get(k).and_then(Value::as_str).is_none_or(str::is_empty)
        };
        if missing(fields, "lastUpdateTime") {
            fields.insert("lastUpdateTime".into(), now.clone().into());
        }
        if missing(fields, "lastTransitionTime") {
            let same = old_conditions.iter().find(|c| {
                c.get("type") == fields.get("type") && c.get("status") == fields.get("status")
            });
            let time = same
                .and_then(|c| c.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| now.clone().into());
            fields.insert("lastTransitionTime".into(), time);
        }
    }
}

impl Strategy for CertificateSigningRequests {
    fn normalize(&self, object: Value) -> Result<Normalized, String> {
        self.builtin.normalize(object)
    }

    fn definition(&self) -> Option<&str> {
        self.builtin.definition()
    }

    fn default(&self, object: &mut Value) {
        self.builtin.default(object);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        self.builtin.prepare_for_create(object);
        // Nobody creates a request already approved or signed.
        if let Some(fields) = object.as_object_mut() {
            fields.insert("status".into(), json!({}));
        }
    }

    fn prepare_for_create_by(&self, object: &mut Value, user: &Value) {
        let Some(spec) = object_mut(object, "spec") else {
            return;
        };
        for field in ["username", "uid", "groups", "extra"] {
            spec.remove(field);
        }
        let text = |k: &str| {
            user.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        if let Some(name) = text("username") {
            spec.insert("username".into(), name.into());
        }
        if let Some(uid) = text("uid") {
            spec.insert("uid".into(), uid.into());
        }
        if let Some(groups) = user
            .get("groups")
            .filter(|g| g.as_array().is_some_and(|a| !a.is_empty()))
        {
            spec.insert("groups".into(), groups.clone());
        }
        if let Some(extra) = user
            .get("extra")
            .filter(|e| e.as_object().is_some_and(|m| !m.is_empty()))
        {
            spec.insert("extra".into(), extra.clone());
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.builtin.prepare_for_update(new, old);
        take_from(new, old, "spec");
        take_from(new, old, "status");
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        self.builtin.prepare_for_status_update(new, old);
        take_from(new, old, "spec");
        // Approval belongs to /approval: Approved and Denied conditions stay as they were.
        let approval = |c: &Value| {
            matches!(
                c.get("type").and_then(Value::as_str),
                Some("Approved" | "Denied")
            )
        };
        let mut conditions: Vec<Value> = conditions_of(new)
            .into_iter()
            .filter(|c| !approval(c))
            .collect();
        conditions.extend(conditions_of(old).into_iter().filter(approval));
        if let Some(status) = object_mut(new, "status") {
            if conditions.is_empty() {
                status.remove("conditions");
            } else {
                status.insert("conditions".into(), conditions.into());
            }
        }
        populate_timestamps(new, old);
    }

    fn prepare_for_approval_update(&self, new: &mut Value, old: &Value) {
        self.builtin.prepare_for_status_update(new, old);
        take_from(new, old, "spec");
        let conditions = new.pointer("/status/conditions").cloned();
        take_from(new, old, "status");
        if let Some(status) = object_mut(new, "status") {
            match conditions {
                Some(conditions) => status.insert("conditions".into(), conditions),
                None => status.remove("conditions"),
            };
        }
        populate_timestamps(new, old);
    }

    fn validate(&self, object: &Value) -> Result<(), Status> {
        let metadata = kyb_validation::validate_create(GROUP, "v1", KIND, false, object);
        check(object, metadata, validation::validate(object, None))
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Result<(), Status> {
        let metadata = kyb_validation::validate_update(GROUP, "v1", KIND, false, new, old);
        let own = validation::validate_update(new, old, Allowed::default());
        check(new, metadata, own)
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Result<(), Status> {
        let metadata = kyb_validation::validate_status_update(GROUP, "v1", KIND, false, new, old);
        let allowed = Allowed {
            certificate: true,
            ..Allowed::default()
        };
        check(
            new,
            metadata,
            validation::validate_update(new, old, allowed),
        )
    }

    fn validate_approval_update(&self, new: &Value, old: &Value) -> Result<(), Status> {
        let metadata = kyb_validation::validate_status_update(GROUP, "v1", KIND, false, new, old);
        let allowed = Allowed {
            approval: true,
            ..Allowed::default()
        };
        check(
            new,
            metadata,
            validation::validate_update(new, old, allowed),
        )
    }

    fn table_columns(&self) -> Vec<Value> {
        self.builtin.table_columns()
    }

    fn table_cells(&self, object: &Value, now: SystemTime) -> Vec<Value> {
        self.builtin.table_cells(object, now)
    }

    fn selectable_fields(&self) -> &[SelectableField] {
        self.builtin.selectable_fields()
    }

    fn convert(
        &self,
        object: Value,
        from: &ResourceDef,
        to: &ResourceDef,
    ) -> Result<Value, Status> {
        self.builtin.convert(object, from, to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kyb_api::registry::BUILTIN;

    fn strategy() -> CertificateSigningRequests {
        let def = BUILTIN
            .iter()
            .find(|d| d.kind == "CertificateSigningRequest")
            .unwrap_or_else(|| panic!("no CSR row"));
        CertificateSigningRequests::new(Builtin::of(def).unwrap_or_else(|| panic!("no type")))
    }

    #[test]
    fn the_requestor_is_who_creates_it() {
        let strategy = strategy();
        let mut csr = json!({"spec": {"username": "someone-else", "groups": ["system:masters"], "signerName": "example.com/x"}, "status": {"certificate": "LS0t"}});
        strategy.prepare_for_create(&mut csr);
        strategy.prepare_for_create_by(
            &mut csr,
            &json!({"username": "alice", "groups": ["dev", "system:authenticated"]}),
        );
        assert_eq!(
            csr,
            json!({"spec": {"username": "alice", "groups": ["dev", "system:authenticated"], "signerName": "example.com/x"}, "status": {}})
        );
    }

    #[test]
    fn each_path_changes_only_its_part() {
        let strategy = strategy();
        let old = json!({"metadata": {"name": "c"}, "spec": {"signerName": "example.com/x"}, "status": {"conditions": [{"type": "Approved", "status": "True", "lastUpdateTime": "2020-01-01T00:00:00Z", "lastTransitionTime": "2020-01-01T00:00:00Z"}]}});
        let mut main = json!({"metadata": {"name": "c", "labels": {"a": "b"}}, "spec": {"signerName": "example.com/y"}, "status": {}});
        strategy.prepare_for_update(&mut main, &old);
        assert_eq!(main["spec"], old["spec"]);
        assert_eq!(main["status"], old["status"]);
        assert_eq!(main["metadata"]["labels"], json!({"a": "b"}));

        let mut status = json!({"metadata": {"name": "c"}, "spec": {}, "status": {"certificate": "LS0t", "conditions": [{"type": "Failed", "status": "True"}]}});
        strategy.prepare_for_status_update(&mut status, &old);
        assert_eq!(status["spec"], old["spec"]);
        assert_eq!(status["status"]["certificate"], "LS0t");
        let types: Vec<&str> = conditions_of(&status)
            .iter()
            .filter_map(|c| c["type"].as_str().map(|_| ""))
            .collect();
        assert_eq!(types.len(), 2);
        assert!(status["status"]["conditions"][0]["lastUpdateTime"].is_string());

        let mut approval = json!({"metadata": {"name": "c"}, "status": {"certificate": "LS0t", "conditions": [{"type": "Denied", "status": "True"}]}});
        strategy.prepare_for_approval_update(&mut approval, &old);
        assert_eq!(approval["spec"], old["spec"]);
        assert!(approval["status"].get("certificate").is_none());
        assert_eq!(approval["status"]["conditions"][0]["type"], "Denied");
    }
}
