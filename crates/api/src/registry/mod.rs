//! The resource registry: every resource the API server serves, each entry a definition
//! (names, scope, verbs, subresources, where it is stored) with the strategy that knows the
//! kind (decoding, defaults, preparation, validation, generation, table columns, scale,
//! selectable fields, versions).
//!
//! - [`ResourceDef`]: what a resource is called and where it lives; owned (`Cow`), so the
//!   built-in table ([`BUILTIN`]) stays a `static` while resources added at run time own
//!   their names.
//! - [`Strategy`]: what the REST engine asks of a kind, on JSON; the API server implements
//!   it for the built-in kinds and for kinds without a type (custom resources).
//! - [`Resource`]: one registry entry, a definition and its strategy, shared as
//!   `Arc<Resource>` (it dereferences to its [`ResourceDef`]).
//! - [`Registry`]: the entries, built-ins plus those added and removed at run time; readers
//!   take a [`Snapshot`] (cheap, consistent), followers are told of each change.

mod builtin;
mod snapshot;
mod strategy;

pub use builtin::{ALL_VERBS, BUILTIN, definition_name};
pub use snapshot::{Registry, RegistryError, Snapshot};
pub use strategy::{Normalized, ScalePaths, SelectorForm, Strategy};

use std::borrow::Cow;
use std::sync::Arc;

/// A subresource of a resource (`pods/status`, `deployments/scale`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subresource {
    Status,
    Scale,
    Binding,
    Eviction,
    Token,
    Finalize,
    /// A CertificateSigningRequest's approval conditions.
    Approval,
}

impl Subresource {
    pub fn name(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Scale => "scale",
            Self::Binding => "binding",
            Self::Eviction => "eviction",
            Self::Token => "token",
            Self::Finalize => "finalize",
            Self::Approval => "approval",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "status" => Self::Status,
            "scale" => Self::Scale,
            "binding" => Self::Binding,
            "eviction" => Self::Eviction,
            "token" => Self::Token,
            "finalize" => Self::Finalize,
            "approval" => Self::Approval,
            _ => return None,
        })
    }

    /// The verbs a client may use on it.
    pub fn verbs(self) -> &'static [&'static str] {
        match self {
            Self::Status | Self::Scale | Self::Approval => &["get", "patch", "update"],
            Self::Binding | Self::Eviction | Self::Token => &["create"],
            Self::Finalize => &["update"],
        }
    }

    /// The group, version and kind of the subresource's body, given the parent's.
    pub fn gvk(self, parent: &ResourceDef) -> (&str, &str, &str) {
        match self {
            Self::Status | Self::Finalize | Self::Approval => (
                parent.group.as_ref(),
                parent.version.as_ref(),
                parent.kind.as_ref(),
            ),
            Self::Scale => ("autoscaling", "v1", "Scale"),
            Self::Binding => ("", "v1", "Binding"),
            Self::Eviction => ("policy", "v1", "Eviction"),
            Self::Token => ("authentication.k8s.io", "v1", "TokenRequest"),
        }
    }
}

/// One resource in one group-version: its names, scope, verbs and subresources, and where
/// its objects are stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceDef {
    pub group: Cow<'static, str>,
    pub version: Cow<'static, str>,
    pub kind: Cow<'static, str>,
    pub plural: Cow<'static, str>,
    pub singular: Cow<'static, str>,
    pub short_names: Cow<'static, [Cow<'static, str>]>,
    pub categories: Cow<'static, [Cow<'static, str>]>,
    pub namespaced: bool,
    pub verbs: Cow<'static, [Cow<'static, str>]>,
    pub subresources: Cow<'static, [Subresource]>,
    /// Storage key prefix; objects live at `<prefix>/<namespace>/<name>` or `<prefix>/<name>`.
    /// Versions of one resource share it.
    pub storage_prefix: Cow<'static, str>,
    /// The version objects are stored in (the others are converted on the way).
    pub storage_version: Cow<'static, str>,
    /// Whether a DELETE answers with the deleted object (rather than a success Status).
    pub returns_deleted_object: bool,
}

impl ResourceDef {
    /// A resource of a group served at run time (as a custom resource is): every verb,
    /// stored at `/registry/<group>/<plural>` in this version, `singular` the lower-case
    /// kind; add subresources, short names and categories to the result.
    pub fn custom(
        group: impl Into<Cow<'static, str>>,
        version: impl Into<Cow<'static, str>>,
        kind: impl Into<Cow<'static, str>>,
        plural: impl Into<Cow<'static, str>>,
        namespaced: bool,
    ) -> ResourceDef {
        let (group, version, kind, plural) =
            (group.into(), version.into(), kind.into(), plural.into());
        ResourceDef {
            singular: kind.to_lowercase().into(),
            short_names: Cow::Borrowed(&[]),
            categories: Cow::Borrowed(&[]),
            namespaced,
            verbs: Cow::Borrowed(ALL_VERBS),
            subresources: Cow::Borrowed(&[]),
            storage_prefix: format!("/registry/{group}/{plural}").into(),
            storage_version: version.clone(),
            returns_deleted_object: true,
            group,
            version,
            kind,
            plural,
        }
    }

    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The group, version and kind of its objects.
    pub fn gvk(&self) -> (&str, &str, &str) {
        (&self.group, &self.version, &self.kind)
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    pub fn has_subresource(&self, sub: Subresource) -> bool {
        self.subresources.contains(&sub)
    }

    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// Whether objects of this resource are answered on the spot and never stored
    /// (TokenReview, SubjectAccessReview, ...).
    pub fn is_virtual(&self) -> bool {
        self.storage_prefix.is_empty()
    }

    /// Whether `other` is the same resource in the same version (the same representation).
    pub fn same_version(&self, other: &ResourceDef) -> bool {
        self.group == other.group && self.version == other.version && self.plural == other.plural
    }

    /// The storage key of an object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("{}/{ns}/{name}", self.storage_prefix),
            _ => format!("{}/{name}", self.storage_prefix),
        }
    }

    /// The storage prefix of a list (one namespace, or everything).
    pub fn list_prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("{}/{ns}/", self.storage_prefix),
            _ => format!("{}/", self.storage_prefix),
        }
    }

    /// The `<resource>.<group>` name used in messages.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// One registry entry: a resource's definition and the strategy of its kind. It
/// dereferences to the definition, so `resource.plural` reads as it did.
pub struct Resource {
    def: ResourceDef,
    pub strategy: Arc<dyn Strategy>,
}

impl Resource {
    pub fn new(def: ResourceDef, strategy: Arc<dyn Strategy>) -> Resource {
        Resource { def, strategy }
    }

    pub fn def(&self) -> &ResourceDef {
        &self.def
    }
}

impl std::ops::Deref for Resource {
    type Target = ResourceDef;

    fn deref(&self) -> &ResourceDef {
        &self.def
    }
}

impl std::fmt::Debug for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Resource").field(&self.def).finish()
    }
}

/// Splits `apps/v1` into (`apps`, `v1`) and `v1` into (``, `v1`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin(group: &str, version: &str, plural: &str) -> Option<&'static ResourceDef> {
        BUILTIN
            .iter()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
    }

    #[test]
    fn resources_are_unique_per_group_version() {
        for (i, a) in BUILTIN.iter().enumerate() {
            for b in &BUILTIN[i + 1..] {
                assert!(
                    !a.same_version(b),
                    "{}/{} {} twice",
                    a.group,
                    a.version,
                    a.plural
                );
            }
        }
    }

    #[test]
    fn keys_follow_the_kubernetes_layout() {
        let pods = builtin("", "v1", "pods").map(|r| r.key(Some("default"), "web"));
        assert_eq!(pods.as_deref(), Some("/registry/pods/default/web"));
        let nodes = builtin("", "v1", "nodes").map(|r| r.key(None, "n1"));
        assert_eq!(nodes.as_deref(), Some("/registry/minions/n1"));
        assert_eq!(
            builtin("apps", "v1", "deployments")
                .map(|r| r.api_version())
                .as_deref(),
            Some("apps/v1")
        );
        let widgets = ResourceDef::custom("example.com", "v1", "Widget", "widgets", true);
        assert_eq!(
            widgets.key(Some("ns"), "w"),
            "/registry/example.com/widgets/ns/w"
        );
        assert_eq!(
            (widgets.singular.as_ref(), widgets.has_verb("watch")),
            ("widget", true)
        );
    }

    #[test]
    fn definition_names_follow_k8s_openapi() {
        let name = |g, v, k| definition_name(g, v, k);
        assert_eq!(name("", "v1", "Pod"), "io.k8s.api.core.v1.Pod");
        assert_eq!(
            name("apps", "v1", "Deployment"),
            "io.k8s.api.apps.v1.Deployment"
        );
        assert_eq!(
            name("rbac.authorization.k8s.io", "v1", "Role"),
            "io.k8s.api.rbac.v1.Role"
        );
        assert_eq!(
            name("coordination.k8s.io", "v1", "Lease"),
            "io.k8s.api.coordination.v1.Lease"
        );
        assert_eq!(
            name("autoscaling", "v2", "HorizontalPodAutoscaler"),
            "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler"
        );
        assert_eq!(
            name("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
        );
        assert_eq!(
            name("apiregistration.k8s.io", "v1", "APIService"),
            "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService"
        );
    }
}
