//! The table of built-in kinds: for each group/version/kind, its name rule and the
//! functions that default, prepare and validate it.

use serde_json::Value;

use crate::Ctx;
use crate::core;
use crate::groups;
use crate::meta::NameFn;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::names;

pub(crate) type DefaultFn = fn(&mut Value);
pub(crate) type PrepareUpdateFn = fn(&mut Value, &Value);
pub(crate) type ValidateFn = fn(&Value, &Ctx<'_>) -> Vec<FieldError>;
pub(crate) type UpdateFn = fn(&Value, &Value, &Ctx<'_>) -> Vec<FieldError>;

/// How a kind's metadata is validated.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetaMode {
    /// `ValidateObjectMeta` of the core group (also checks unqualified finalizer names).
    Core,
    /// apimachinery's generic `ValidateObjectMeta`.
    Generic,
    /// No metadata rules (e.g. `Binding`, which is not stored).
    Skip,
}

/// The rules of one kind.
#[derive(Clone, Copy)]
pub(crate) struct Kind {
    pub(crate) name_fn: NameFn,
    pub(crate) meta: MetaMode,
    pub(crate) status_subresource: bool,
    pub(crate) defaults: DefaultFn,
    pub(crate) prepare: DefaultFn,
    pub(crate) prepare_update: PrepareUpdateFn,
    pub(crate) validate: ValidateFn,
    pub(crate) update: UpdateFn,
    pub(crate) status: UpdateFn,
}

fn noop(_: &mut Value) {}
fn noop_update(_: &mut Value, _: &Value) {}
fn none(_: &Value, _: &Ctx<'_>) -> Vec<FieldError> {
    Vec::new()
}
fn none_update(_: &Value, _: &Value, _: &Ctx<'_>) -> Vec<FieldError> {
    Vec::new()
}

impl Kind {
    /// A kind with names checked by `name_fn` and no other rules yet.
    pub(crate) fn new(name_fn: NameFn) -> Kind {
        Kind {
            name_fn,
            meta: MetaMode::Core,
            status_subresource: false,
            defaults: noop,
            prepare: noop,
            prepare_update: noop_update,
            validate: none,
            update: none_update,
            status: none_update,
        }
    }

    pub(crate) fn meta(self, meta: MetaMode) -> Kind {
        Kind { meta, ..self }
    }
    pub(crate) fn with_status(self) -> Kind {
        Kind {
            status_subresource: true,
            ..self
        }
    }
    pub(crate) fn defaults(self, defaults: DefaultFn) -> Kind {
        Kind { defaults, ..self }
    }
    pub(crate) fn prepare(self, prepare: DefaultFn) -> Kind {
        Kind { prepare, ..self }
    }
    pub(crate) fn prepare_update(self, prepare_update: PrepareUpdateFn) -> Kind {
        Kind {
            prepare_update,
            ..self
        }
    }
    pub(crate) fn validate(self, validate: ValidateFn) -> Kind {
        Kind { validate, ..self }
    }
    pub(crate) fn update(self, update: UpdateFn) -> Kind {
        Kind { update, ..self }
    }
    pub(crate) fn status(self, status: UpdateFn) -> Kind {
        Kind { status, ..self }
    }
}

const SUBDOMAIN: NameFn = names::name_is_dns_subdomain;

/// The rules of a built-in kind, `None` for kinds this crate does not know.
pub(crate) fn lookup(group: &str, version: &str, kind: &str) -> Option<Kind> {
    match group {
        "" if version == "v1" => core::lookup(kind),
        "apps" if version == "v1" => groups::apps::lookup(kind),
        "batch" if version == "v1" => groups::batch::lookup(kind),
        "autoscaling" => groups::autoscaling::lookup(version, kind),
        "policy" if version == "v1" => groups::policy::lookup(kind),
        "networking.k8s.io" if version == "v1" => groups::networking::lookup(kind),
        "storage.k8s.io" if version == "v1" => groups::storage::lookup(kind),
        "rbac.authorization.k8s.io" if version == "v1" => groups::rbac::lookup(kind),
        "coordination.k8s.io" if version == "v1" => groups::coordination::lookup(kind),
        "discovery.k8s.io" if version == "v1" => groups::discovery::lookup(kind),
        "events.k8s.io" if version == "v1" => groups::events::lookup(kind),
        "scheduling.k8s.io" if version == "v1" => groups::scheduling::lookup(kind),
        "node.k8s.io" if version == "v1" => groups::node::lookup(kind),
        "flowcontrol.apiserver.k8s.io" if version == "v1" => groups::flowcontrol::lookup(kind),
        "admissionregistration.k8s.io" if version == "v1" => {
            groups::admissionregistration::lookup(kind)
        }
        "apiextensions.k8s.io" if version == "v1" => groups::apiextensions::lookup(kind),
        "apiregistration.k8s.io" if version == "v1" => groups::apiregistration::lookup(kind),
        "authentication.k8s.io" if version == "v1" && kind == "TokenRequest" => Some(
            Kind::new(SUBDOMAIN)
                .meta(MetaMode::Skip)
                .validate(groups::misc::validate_token_request),
        ),
        _ => None,
    }
}
