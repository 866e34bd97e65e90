//! What the REST engine asks of a kind, as Kubernetes' registry strategies answer it
//! (`PrepareForCreate`, `Validate`, `Canonicalize`, …), on objects in their JSON form.
//!
//! Each registry entry carries one. The API server implements it for the built-in kinds
//! (their k8s-openapi types, `kyb-validation`'s rules, `kyb-printers`' columns) and for
//! kinds without a type (any JSON object, as custom resources are served); nothing else in
//! the engine needs to know which kind it is serving.

use super::ResourceDef;
use crate::Status;
use crate::fields::SelectableField;
use serde_json::Value;
use std::borrow::Cow;
use std::time::SystemTime;

/// An object decoded through its kind's type.
#[derive(Debug)]
pub struct Normalized {
    /// The canonical JSON (unknown fields dropped, for a typed kind).
    pub object: Value,
    /// Paths of fields the type does not know (`spec.foo`), for `fieldValidation`.
    pub unknown: Vec<String>,
}

/// Where the `scale` subresource reads and writes replicas (JSON pointers, such as
/// `/spec/replicas`), as a CustomResourceDefinition's `subresources.scale` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    /// The desired replicas (written by a scale update).
    pub spec_replicas: Cow<'static, str>,
    /// The observed replicas.
    pub status_replicas: Cow<'static, str>,
    /// The label selector reported in the Scale's `status.selector`, and its form.
    pub label_selector: Option<(Cow<'static, str>, SelectorForm)>,
}

/// How a scalable kind writes its label selector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectorForm {
    /// A `metav1.LabelSelector` (`matchLabels`, `matchExpressions`).
    LabelSelector,
    /// A plain map of labels (a ReplicationController's `spec.selector`).
    Map,
    /// Already in the query syntax (a custom resource's `status.selector`).
    Text,
}

impl ScalePaths {
    /// The workloads' paths: `spec.replicas`, `status.replicas`, `spec.selector` in `form`.
    pub const fn workload(form: SelectorForm) -> ScalePaths {
        ScalePaths {
            spec_replicas: Cow::Borrowed("/spec/replicas"),
            status_replicas: Cow::Borrowed("/status/replicas"),
            label_selector: Some((Cow::Borrowed("/spec/selector"), form)),
        }
    }
}

/// The per-kind behaviour of a resource. Defaults are those of a kind with no rules of its
/// own; a decoder and the table are always the kind's own.
pub trait Strategy: Send + Sync + 'static {
    /// Decodes an object of the kind (its `apiVersion` and `kind` already checked): the
    /// canonical JSON and the fields the kind does not know. `Err` is a decoding error
    /// (a field of the wrong type).
    fn normalize(&self, object: Value) -> Result<Normalized, String>;

    /// The OpenAPI definition of the kind's type (`io.k8s.api.apps.v1.Deployment`): its
    /// schema and the merge semantics of its lists and maps. `None` for a kind without one:
    /// strategic merge patch is refused (415) and server-side apply treats maps as granular
    /// and lists as atomic, as for custom resources.
    fn definition(&self) -> Option<&str> {
        None
    }

    /// Fills in defaults (`SetDefaults_*`). Idempotent.
    fn default(&self, _object: &mut Value) {}

    /// Create-time preparation beyond defaults (`PrepareForCreate`), once the system
    /// metadata (uid, creation time, generation) is set.
    fn prepare_for_create(&self, _object: &mut Value) {}

    /// Create-time preparation that depends on who creates the object (a
    /// CertificateSigningRequest records its requestor): `user` is the requestor as an
    /// `authentication.k8s.io/v1` UserInfo (`username`, `uid`, `groups`, `extra`). Runs
    /// after [`Strategy::prepare_for_create`].
    fn prepare_for_create_by(&self, _object: &mut Value, _user: &Value) {}

    /// Update preparation of the main resource (`PrepareForUpdate`): what only `/status`
    /// may change is kept from `old`, and whatever else the kind keeps across updates.
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

    /// Preparation of a `/status` update: everything but the status comes from `old`.
    fn prepare_for_status_update(&self, _new: &mut Value, _old: &Value) {}

    /// Preparation of an `/approval` update (CertificateSigningRequests): by default
    /// nothing may change.
    fn prepare_for_approval_update(&self, new: &mut Value, old: &Value) {
        *new = old.clone();
    }

    /// Validation of an `/approval` update.
    fn validate_approval_update(&self, _new: &Value, _old: &Value) -> Result<(), Status> {
        Ok(())
    }

    /// Validation of a new object (`422 Invalid` with one cause per field).
    fn validate(&self, _object: &Value) -> Result<(), Status> {
        Ok(())
    }

    /// Validation of an update of the main resource.
    fn validate_update(&self, _new: &Value, _old: &Value) -> Result<(), Status> {
        Ok(())
    }

    /// Validation of a `/status` update.
    fn validate_status_update(&self, _new: &Value, _old: &Value) -> Result<(), Status> {
        Ok(())
    }

    /// Whether `metadata.generation` counts changes of everything but metadata and status.
    fn tracks_generation(&self) -> bool {
        false
    }

    /// The Table columns `kubectl get` prints, as `metav1.TableColumnDefinition` objects.
    fn table_columns(&self) -> Vec<Value>;

    /// One Table row's cells for an object (in this resource's version), one per column.
    fn table_cells(&self, object: &Value, now: SystemTime) -> Vec<Value>;

    /// Where `scale` reads and writes replicas, for kinds with that subresource.
    fn scale(&self) -> Option<&ScalePaths> {
        None
    }

    /// The fields a field selector may name besides `metadata.name` and
    /// `metadata.namespace`.
    fn selectable_fields(&self) -> &[SelectableField] {
        &[]
    }

    /// The grace period a delete gives an object (`CheckGracefulDelete`): `requested` is the
    /// client's `gracePeriodSeconds`. 0 deletes at once (once finalizers allow).
    fn grace_period(&self, _object: &Value, _requested: Option<i64>) -> i64 {
        0
    }

    /// Converts an object of this resource from one of its versions to another (both
    /// sharing storage). The default is the `None` conversion of custom resources: only
    /// `apiVersion` changes.
    fn convert(
        &self,
        object: Value,
        from: &ResourceDef,
        to: &ResourceDef,
    ) -> Result<Value, Status> {
        let _ = from;
        let Value::Object(mut fields) = object else {
            return Err(Status::bad_request("the object is not a JSON object"));
        };
        fields.insert("apiVersion".into(), to.api_version().into());
        Ok(Value::Object(fields))
    }
}
