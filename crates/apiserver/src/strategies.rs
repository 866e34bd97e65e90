//! The strategies of the registry's entries (`kyb_api::registry::Strategy`): what each kind
//! does around the REST engine's generic paths.
//!
//! - [`Builtin`]: a built-in kind, from the per-kind tables it is made of once, when the
//!   registry is built — its k8s-openapi type (`kinds`), `kyb-validation`'s defaults,
//!   preparation and validation (`validation`), `kyb-printers`' columns, `kyb_api::fields`'
//!   selectable fields, conversion between its served versions (`convert`), whether it
//!   tracks generations, its scale paths and (pods) its graceful deletion.
//! - [`Untyped`]: a kind without a type, served as Kubernetes serves custom resources: any
//!   JSON object, metadata validated, status only through `/status` when it has that
//!   subresource, every spec change counted in `metadata.generation`, the default table,
//!   no strategic merge patch. The scheduler-plugins kinds (`scheduling.x-k8s.io`) use it;
//!   a custom resource will.
//!
//! [`registry`] builds the registry the server starts with: every built-in resource with
//! its strategy.

use crate::kinds::{self, Normalizer};
use crate::validation;
use kyb_api::Status;
use kyb_api::fields::SelectableField;
use kyb_api::registry::{
    BUILTIN, Normalized, Registry, RegistryError, Resource, ResourceDef, ScalePaths, SelectorForm,
    Strategy, Subresource, definition_name,
};
use serde_json::Value;
use std::sync::Arc;
use std::time::SystemTime;

/// The registry of the built-in resources, each with its strategy: [`Builtin`] for kinds
/// with a k8s-openapi type, [`Untyped`] for the others.
pub fn registry() -> Result<Registry, RegistryError> {
    Registry::new(BUILTIN.iter().map(|def| {
        let strategy: Arc<dyn Strategy> = match Builtin::of(def) {
            Some(builtin) if def.kind == "CertificateSigningRequest" => Arc::new(
                crate::certificates::CertificateSigningRequests::new(builtin),
            ),
            Some(builtin) => Arc::new(builtin),
            None => Arc::new(Untyped::of(def.clone(), None)),
        };
        Resource::new(def.clone(), strategy)
    }))
}

/// Kubernetes' strategies that count spec changes in `metadata.generation`.
fn tracks_generation(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("apps", _)
            | ("", "ReplicationController")
            | ("batch", _)
            | ("autoscaling", "HorizontalPodAutoscaler")
            | ("policy", "PodDisruptionBudget")
            | ("networking.k8s.io", "Ingress" | "NetworkPolicy")
            | ("apiextensions.k8s.io", "CustomResourceDefinition")
            | ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy")
            | ("flowcontrol.apiserver.k8s.io", _)
    ) && kind != "ControllerRevision"
}

/// A table's column definitions as `metav1.TableColumnDefinition` objects.
fn columns(printer: &kyb_printers::Printer) -> Vec<Value> {
    printer
        .columns()
        .iter()
        .map(|c| {
            serde_json::json!({
                "name": c.name,
                "type": c.type_,
                "format": c.format,
                "description": c.description,
                "priority": c.priority,
            })
        })
        .collect()
}

fn cells(printer: &kyb_printers::Printer, object: &Value, now: SystemTime) -> Vec<Value> {
    let now = jiff::Timestamp::try_from(now).unwrap_or_else(|_| jiff::Timestamp::now());
    printer.cells(object, now)
}

/// A built-in kind's strategy.
pub struct Builtin {
    def: ResourceDef,
    definition: String,
    normalize: Normalizer,
    printer: &'static kyb_printers::Printer,
    fields: &'static [SelectableField],
    generation: bool,
    scale: Option<ScalePaths>,
    /// How long a delete waits (`CheckGracefulDelete`), for kinds that wait at all.
    grace_period: Option<fn(&Value, Option<i64>) -> i64>,
}

impl Builtin {
    /// The strategy of a built-in resource; `None` for a kind without a type.
    pub fn of(def: &'static ResourceDef) -> Option<Builtin> {
        let (group, kind): (&'static str, &'static str) = (&def.group, &def.kind);
        let normalize = kinds::normalizer(group, &def.version, kind)?;
        let scale = def.has_subresource(Subresource::Scale).then(|| {
            ScalePaths::workload(match (group, kind) {
                ("", "ReplicationController") => SelectorForm::Map,
                _ => SelectorForm::LabelSelector,
            })
        });
        Some(Builtin {
            def: def.clone(),
            definition: definition_name(group, &def.version, kind),
            normalize,
            printer: kyb_printers::printer(group, kind),
            fields: kyb_api::fields::builtin(group, kind),
            generation: tracks_generation(group, kind),
            scale,
            grace_period: matches!((group, kind), ("", "Pod")).then_some(pod_grace_period as _),
        })
    }
}

/// Pods bound to a node get a grace period for their kubelet (the client's, else the pod's
/// `terminationGracePeriodSeconds`, else 30 s); unbound and finished pods go at once.
fn pod_grace_period(pod: &Value, requested: Option<i64>) -> i64 {
    let bound = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let finished = matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    if !bound || finished {
        return 0;
    }
    requested
        .or_else(|| {
            pod.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(30)
        .max(0)
}

impl Strategy for Builtin {
    fn normalize(&self, object: Value) -> Result<Normalized, String> {
        (self.normalize)(object)
    }

    fn definition(&self) -> Option<&str> {
        Some(&self.definition)
    }

    fn default(&self, object: &mut Value) {
        validation::default_object(&self.def, object);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        validation::prepare_for_create(&self.def, object);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        validation::prepare_for_update(&self.def, new, old);
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        validation::prepare_for_status_update(&self.def, new, old);
    }

    fn validate(&self, object: &Value) -> Result<(), Status> {
        validation::validate_create(&self.def, object)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Result<(), Status> {
        validation::validate_update(&self.def, new, old)
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Result<(), Status> {
        validation::validate_status_update(&self.def, new, old)
    }

    fn tracks_generation(&self) -> bool {
        self.generation
    }

    fn table_columns(&self) -> Vec<Value> {
        columns(self.printer)
    }

    fn table_cells(&self, object: &Value, now: SystemTime) -> Vec<Value> {
        cells(self.printer, object, now)
    }

    fn scale(&self) -> Option<&ScalePaths> {
        self.scale.as_ref()
    }

    fn selectable_fields(&self) -> &[SelectableField] {
        self.fields
    }

    fn grace_period(&self, object: &Value, requested: Option<i64>) -> i64 {
        self.grace_period
            .map_or(0, |grace| grace(object, requested))
    }

    fn convert(
        &self,
        object: Value,
        from: &ResourceDef,
        to: &ResourceDef,
    ) -> Result<Value, Status> {
        crate::convert::convert(from, to, object)
    }
}

/// The strategy of a kind without a type: custom resources' generic one.
pub struct Untyped {
    def: ResourceDef,
    scale: Option<ScalePaths>,
}

impl Untyped {
    /// The strategy of `def`'s kind, with `scale` paths if it has the scale subresource.
    pub fn of(def: ResourceDef, scale: Option<ScalePaths>) -> Untyped {
        Untyped { def, scale }
    }
}

impl Strategy for Untyped {
    fn normalize(&self, object: Value) -> Result<Normalized, String> {
        // Kept as sent: there is no type to know fields by.
        Ok(Normalized {
            object,
            unknown: Vec::new(),
        })
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if self.def.has_subresource(Subresource::Status)
            && let Some(fields) = new.as_object_mut()
        {
            // Status only through /status.
            match old.get("status") {
                Some(status) => fields.insert("status".into(), status.clone()),
                None => fields.remove("status"),
            };
        }
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        validation::prepare_for_status_update(&self.def, new, old);
    }

    fn validate(&self, object: &Value) -> Result<(), Status> {
        validation::validate_create(&self.def, object)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Result<(), Status> {
        validation::validate_update(&self.def, new, old)
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Result<(), Status> {
        validation::validate_status_update(&self.def, new, old)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn table_columns(&self) -> Vec<Value> {
        columns(kyb_printers::printer(&self.def.group, &self.def.kind))
    }

    fn table_cells(&self, object: &Value, now: SystemTime) -> Vec<Value> {
        cells(
            kyb_printers::printer(&self.def.group, &self.def.kind),
            object,
            now,
        )
    }

    fn scale(&self) -> Option<&ScalePaths> {
        self.scale.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_pods_a_kubelet_still_has_to_stop_wait_for_their_grace_period() {
        let pod = |node: Option<&str>, phase: &str| {
            json!({"spec": {"nodeName": node, "terminationGracePeriodSeconds": 45},
                   "status": {"phase": phase}})
        };
        // Not scheduled: no kubelet will ever confirm it; finished: nothing left to stop.
        assert_eq!(pod_grace_period(&pod(None, "Pending"), Some(30)), 0);
        assert_eq!(pod_grace_period(&pod(Some(""), "Pending"), None), 0);
        assert_eq!(pod_grace_period(&pod(Some("n1"), "Succeeded"), None), 0);
        assert_eq!(pod_grace_period(&pod(Some("n1"), "Failed"), Some(10)), 0);
        assert_eq!(pod_grace_period(&pod(Some("n1"), "Running"), None), 45);
        assert_eq!(pod_grace_period(&pod(Some("n1"), "Running"), Some(5)), 5);
    }

    #[test]
    fn kinds_without_a_type_are_untyped() -> Result<(), RegistryError> {
        let snapshot = registry()?.snapshot();
        let untyped: Vec<&str> = snapshot
            .resources()
            .iter()
            .filter(|r| r.strategy.definition().is_none())
            .map(|r| r.kind.as_ref())
            .collect();
        assert_eq!(
            untyped,
            vec!["PodGroup", "ElasticQuota", "NodeMetrics", "PodMetrics"]
        );
        let deployments = snapshot.find("apps", "v1", "deployments");
        assert!(deployments.is_some_and(|d| d.strategy.tracks_generation()
            && d.strategy.scale().is_some()
            && d.strategy.definition() == Some("io.k8s.api.apps.v1.Deployment")));
        let revisions = snapshot.find("apps", "v1", "controllerrevisions");
        assert!(revisions.is_some_and(|r| !r.strategy.tracks_generation()));
        let groups = snapshot.find("scheduling.x-k8s.io", "v1alpha1", "podgroups");
        assert!(groups.is_some_and(|g| g.strategy.tracks_generation()));
        Ok(())
    }

    #[test]
    fn pods_wait_for_their_kubelet() -> Result<(), RegistryError> {
        let snapshot = registry()?.snapshot();
        let grace = |plural: &str, object: &Value| {
            snapshot
                .find("", "v1", plural)
                .map(|r| r.strategy.grace_period(object, None))
        };
        let bound = json!({"spec": {"nodeName": "n", "terminationGracePeriodSeconds": 5}});
        assert_eq!(grace("pods", &bound), Some(5));
        assert_eq!(grace("pods", &json!({"spec": {}})), Some(0));
        assert_eq!(grace("configmaps", &bound), Some(0));
        Ok(())
    }

    #[test]
    fn untyped_status_changes_only_through_status() {
        let mut def = ResourceDef::custom("example.com", "v1", "Widget", "widgets", true);
        def.subresources = std::borrow::Cow::Borrowed(&[Subresource::Status]);
        let strategy = Untyped::of(def, None);
        let old = json!({"spec": {"a": 1}, "status": {"ready": true}});
        let mut new = json!({"spec": {"a": 2}, "status": {"ready": false}, "extra": 1});
        strategy.prepare_for_update(&mut new, &old);
        assert_eq!(
            new,
            json!({"spec": {"a": 2}, "status": {"ready": true}, "extra": 1})
        );
        let normalized = strategy.normalize(json!({"anything": [1, "x"]}));
        assert!(normalized.is_ok_and(|n| n.unknown.is_empty()));
        assert_eq!(
            strategy.table_columns().first().map(|c| c["name"].clone()),
            Some(json!("Name"))
        );
    }
}
