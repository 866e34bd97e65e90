//! The empty object of a kind, as Kubernetes compares a created object against.
//!
//! When Kubernetes records who set what on create (and before the first apply to an
//! object nobody tracked), it compares the new object with a freshly allocated Go
//! object of the kind, converted to JSON. That zero value is not `{}`: `metadata` is
//! present (`{"creationTimestamp": null}`), struct-typed fields held by value are
//! present as objects (`spec`, `status`, a Deployment's `spec.template`,
//! `spec.strategy`), and fields serialized without `omitempty` are present as null or
//! zero (`spec.template.spec.containers: null`). Fields present in the zero value are
//! not *added* by the new object, which is why a created Deployment's `fieldsV1` has
//! no `"."` on `f:spec`, `f:strategy` or `f:containers` but has one on `f:labels`.
//!
//! The OpenAPI schemas do not say which fields are held by value, so the table below
//! lists them for the kinds whose shape it changes; any other kind gets `metadata`,
//! `spec` and `status` when its schema has them.

use crate::schema::{self, Definition};
use serde_json::{Map, Value, json};

/// How a field appears in a zero value.
#[derive(Clone, Copy)]
enum Zero {
    /// `null` (a nil slice, map or pointer serialized without `omitempty`).
    Null,
    /// `""`.
    Str,
    /// `0`.
    Int,
    /// A struct held by value: its own zero value.
    Struct,
    /// `ObjectMeta`: `{"creationTimestamp": null}`.
    Meta,
}

use Zero::{Int, Meta, Null, Str, Struct};

/// Fields present in the zero value, beyond `metadata`/`spec`/`status` of a kind.
const ZERO_FIELDS: &[(&str, &[(&str, Zero)])] = &[
    (
        "io.k8s.api.apps.v1.DeploymentSpec",
        &[
            ("selector", Null),
            ("template", Struct),
            ("strategy", Struct),
        ],
    ),
    (
        "io.k8s.api.apps.v1.ReplicaSetSpec",
        &[("selector", Null), ("template", Struct)],
    ),
    (
        "io.k8s.api.apps.v1.StatefulSetSpec",
        &[
            ("selector", Null),
            ("template", Struct),
            ("updateStrategy", Struct),
        ],
    ),
    (
        "io.k8s.api.apps.v1.DaemonSetSpec",
        &[
            ("selector", Null),
            ("template", Struct),
            ("updateStrategy", Struct),
        ],
    ),
    (
        "io.k8s.api.apps.v1.ControllerRevision",
        &[("revision", Int)],
    ),
    ("io.k8s.api.batch.v1.JobSpec", &[("template", Struct)]),
    (
        "io.k8s.api.batch.v1.CronJobSpec",
        &[("schedule", Str), ("jobTemplate", Struct)],
    ),
    (
        "io.k8s.api.batch.v1.JobTemplateSpec",
        &[("metadata", Meta), ("spec", Struct)],
    ),
    (
        "io.k8s.api.core.v1.PodTemplateSpec",
        &[("metadata", Meta), ("spec", Struct)],
    ),
    ("io.k8s.api.core.v1.PodTemplate", &[("template", Struct)]),
    ("io.k8s.api.core.v1.PodSpec", &[("containers", Null)]),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimSpec",
        &[("resources", Struct)],
    ),
    (
        "io.k8s.api.core.v1.ServiceStatus",
        &[("loadBalancer", Struct)],
    ),
    (
        "io.k8s.api.networking.v1.IngressStatus",
        &[("loadBalancer", Struct)],
    ),
    (
        "io.k8s.api.networking.v1.NetworkPolicySpec",
        &[("podSelector", Struct)],
    ),
    ("io.k8s.api.rbac.v1.Role", &[("rules", Null)]),
    ("io.k8s.api.rbac.v1.ClusterRole", &[("rules", Null)]),
    ("io.k8s.api.rbac.v1.RoleBinding", &[("roleRef", Struct)]),
    (
        "io.k8s.api.rbac.v1.ClusterRoleBinding",
        &[("roleRef", Struct)],
    ),
    (
        "io.k8s.api.rbac.v1.RoleRef",
        &[("apiGroup", Str), ("kind", Str), ("name", Str)],
    ),
    (
        "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerSpec",
        &[("scaleTargetRef", Struct), ("maxReplicas", Int)],
    ),
    (
        "io.k8s.api.autoscaling.v1.CrossVersionObjectReference",
        &[("kind", Str), ("name", Str)],
    ),
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec",
        &[("scaleTargetRef", Struct), ("maxReplicas", Int)],
    ),
    (
        "io.k8s.api.autoscaling.v2.CrossVersionObjectReference",
        &[("kind", Str), ("name", Str)],
    ),
];

/// Nesting of by-value structs is shallow; this only guards against a table mistake.
const MAX_NESTING: usize = 8;

/// The zero value of objects of `definition` (`{}` for kinds without a definition).
pub(crate) fn object(definition: &str) -> Value {
    let Some(Definition::Struct(def)) = schema::lookup(definition) else {
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    for (field, zero) in [("metadata", Meta), ("spec", Struct), ("status", Struct)] {
        if def.fields.contains_key(field)
            && let Some(v) = field_zero(def.name, field, zero, 1)
        {
            out.insert(field.to_owned(), v);
        }
    }
    add_table_fields(def.name, &mut out, 1);
    Value::Object(out)
}

fn add_table_fields(definition: &str, out: &mut Map<String, Value>, nesting: usize) {
    let Some((_, fields)) = ZERO_FIELDS.iter().find(|(d, _)| *d == definition) else {
        return;
    };
    for (field, zero) in fields.iter() {
        if let Some(v) = field_zero(definition, field, *zero, nesting) {
            out.insert((*field).to_owned(), v);
        }
    }
}

fn field_zero(parent: &str, field: &str, zero: Zero, nesting: usize) -> Option<Value> {
    Some(match zero {
        Null => Value::Null,
        Str => Value::String(String::new()),
        Int => json!(0),
        Meta => json!({"creationTimestamp": null}),
        Struct => {
            if nesting > MAX_NESTING {
                return None;
            }
            let mut out = Map::new();
            if let Some(name) = kyb_openapi::field_type(parent, field) {
                add_table_fields(name, &mut out, nesting + 1);
            }
            Value::Object(out)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_zero_value() {
        assert_eq!(
            object("io.k8s.api.apps.v1.Deployment"),
            json!({
                "metadata": {"creationTimestamp": null},
                "spec": {
                    "selector": null,
                    "strategy": {},
                    "template": {
                        "metadata": {"creationTimestamp": null},
                        "spec": {"containers": null}
                    }
                },
                "status": {}
            })
        );
    }

    #[test]
    fn other_kinds() {
        assert_eq!(
            object("io.k8s.api.core.v1.ConfigMap"),
            json!({"metadata": {"creationTimestamp": null}})
        );
        assert_eq!(
            object("io.k8s.api.rbac.v1.RoleBinding"),
            json!({"metadata": {"creationTimestamp": null}, "roleRef": {"apiGroup": "", "kind": "", "name": ""}})
        );
        assert_eq!(
            object("io.k8s.api.batch.v1.CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"],
            json!({"containers": null})
        );
        assert_eq!(object("com.example.v1.Widget"), json!({}));
    }
}
