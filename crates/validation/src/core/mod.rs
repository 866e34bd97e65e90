//! The core (`""`, `v1`) group: pods and everything they are built from, services,
//! config, namespaces, nodes, storage claims, quotas and the rest.

pub(crate) mod config;
pub(crate) mod containers;
pub(crate) mod downward;
pub(crate) mod endpoints;
pub(crate) mod event;
pub(crate) mod namespace;
pub(crate) mod node;
pub(crate) mod pod;
pub(crate) mod pod_defaults;
pub(crate) mod pod_spec;
pub(crate) mod quota;
pub(crate) mod replication;
pub(crate) mod resources;
pub(crate) mod scheduling;
pub(crate) mod security;
pub(crate) mod service;
pub(crate) mod storage;
pub(crate) mod volumes;

use serde_json::Value;

use crate::kinds::{Kind, MetaMode};
use crate::meta::NameFn;
use kyb_apimachinery::json::child_object;
use kyb_apimachinery::names;

const SUBDOMAIN: NameFn = names::name_is_dns_subdomain;

/// Replaces `status` with `value` (create-time status reset).
pub(crate) fn reset_status(obj: &mut Value, value: Value) {
    if let Some(o) = obj.as_object_mut() {
        o.insert("status".to_string(), value);
    }
}

/// Runs `f` on `spec` when it is (or can become) an object.
pub(crate) fn with_spec(obj: &mut Value, f: impl FnOnce(&mut serde_json::Map<String, Value>)) {
    if let Some(o) = obj.as_object_mut()
        && let Some(spec) = child_object(o, "spec")
    {
        f(spec);
    }
}

/// The rules of a core kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    Some(match kind {
        "Pod" => Kind::new(SUBDOMAIN)
            .with_status()
            .defaults(pod_defaults::default_pod)
            .prepare(pod::prepare)
            .validate(pod::validate)
            .update(pod::validate_update)
            .status(pod::validate_status),
        "Binding" => Kind::new(SUBDOMAIN)
            .meta(MetaMode::Skip)
            .validate(pod::validate_binding),
        "PodTemplate" => Kind::new(SUBDOMAIN)
            .defaults(replication::default_pod_template_kind)
            .validate(replication::validate_pod_template_kind),
        "ReplicationController" => Kind::new(SUBDOMAIN)
            .with_status()
            .defaults(replication::default_rc)
            .prepare(replication::prepare_rc)
            .validate(replication::validate_rc)
            .status(replication::validate_rc_status),
        "Service" => Kind::new(names::name_is_dns1035_label)
            .with_status()
            .defaults(service::default_service)
            .prepare(service::prepare)
            .prepare_update(service::prepare_update)
            .validate(service::validate)
            .update(service::validate_update)
            .status(service::validate_status),
        "Endpoints" => Kind::new(SUBDOMAIN)
            .defaults(endpoints::default_endpoints)
            .validate(endpoints::validate),
        "ConfigMap" => Kind::new(SUBDOMAIN)
            .validate(config::validate_config_map)
            .update(config::validate_config_map_update),
        "Secret" => Kind::new(SUBDOMAIN)
            .defaults(config::default_secret)
            .validate(config::validate_secret)
            .update(config::validate_secret_update),
        "ServiceAccount" => Kind::new(SUBDOMAIN).prepare(config::prepare_service_account),
        "Namespace" => Kind::new(names::name_is_dns_label)
            .with_status()
            .defaults(namespace::default_namespace)
            .prepare(namespace::prepare)
            .prepare_update(namespace::prepare_update)
            .validate(namespace::validate)
            .status(namespace::validate_status),
        "Node" => Kind::new(SUBDOMAIN)
            .with_status()
            .defaults(node::default_node)
            .validate(node::validate)
            .update(node::validate_update)
            .status(node::validate_status),
        "Event" => Kind::new(names::path_segment_name_errors)
            .meta(MetaMode::Generic)
            .validate(event::validate)
            .update(event::validate_update),
        "LimitRange" => Kind::new(SUBDOMAIN)
            .defaults(quota::default_limit_range)
            .validate(quota::validate_limit_range),
        "ResourceQuota" => Kind::new(SUBDOMAIN)
            .with_status()
            .defaults(quota::default_quota)
            .prepare(quota::prepare_quota)
            .validate(quota::validate_quota)
            .update(quota::validate_quota_update)
            .status(quota::validate_quota_status),
        "PersistentVolume" => Kind::new(SUBDOMAIN)
            .with_status()
            .defaults(storage::default_pv)
            .prepare(storage::prepare_pv)
            .validate(storage::validate_pv)
            .update(storage::validate_pv_update)
            .status(|new, _, _| storage::require_resource_version(new)),
        "PersistentVolumeClaim" => Kind::new(SUBDOMAIN)
            .with_status()
            .defaults(storage::default_pvc)
            .prepare(|o| reset_status(o, Value::Object(Default::default())))
            .validate(storage::validate_pvc)
            .update(storage::validate_pvc_update)
            .status(|new, old, ctx| {
                let mut e = storage::require_resource_version(new);
                e.extend(storage::validate_pvc_status(new, old, ctx));
                e
            }),
        _ => return None,
    })
}
