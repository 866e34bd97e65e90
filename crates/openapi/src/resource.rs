//! The served resources, as the API server's registry describes them to this crate, and the names
//! derived from them (document paths, URL prefixes, operation-id and tag spellings).

/// One served resource, as the API server registers it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceSpec {
    /// API group; `""` for the core group.
    pub group: String,
    /// API version, such as `v1`.
    pub version: String,
    /// Kind, such as `Pod`.
    pub kind: String,
    /// Plural resource name, such as `pods`.
    pub plural: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Verbs on the resource: any of get, list, watch, create, update, patch, delete,
    /// deletecollection.
    pub verbs: Vec<String>,
    /// Subresources: status, scale, binding, eviction, token, finalize (others are
    /// listed in discovery but get no operations here).
    pub subresources: Vec<String>,
}

impl ResourceSpec {
    /// The spec of a registry entry: its names, scope, verbs and subresources.
    pub fn of(def: &kyb_api::ResourceDef) -> ResourceSpec {
        ResourceSpec {
            group: def.group.to_string(),
            version: def.version.to_string(),
            kind: def.kind.to_string(),
            plural: def.plural.to_string(),
            namespaced: def.namespaced,
            verbs: def.verbs.iter().map(|v| v.to_string()).collect(),
            subresources: def
                .subresources
                .iter()
                .map(|s| s.name().to_string())
                .collect(),
        }
    }

    /// Whether the resource has `verb`.
    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// The group-version path of its OpenAPI v3 document (`api/v1`, `apis/apps/v1`).
    pub fn group_version_path(&self) -> String {
        group_version_path(&self.group, &self.version)
    }
}

/// A group, version and kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Gvk {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) kind: String,
}

impl Gvk {
    pub(crate) fn new(group: &str, version: &str, kind: &str) -> Gvk {
        Gvk {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
        }
    }

    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"group": self.group, "kind": self.kind, "version": self.version})
    }
}

/// `api/v1` for the core group, `apis/<group>/<version>` otherwise.
pub(crate) fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The URL prefix of a group-version's resources: `/api/v1`, `/apis/apps/v1`.
pub(crate) fn url_prefix(group: &str, version: &str) -> String {
    format!("/{}", group_version_path(group, version))
}

/// The group as it appears in operation ids: `Core`, `Apps`, `RbacAuthorization`.
pub(crate) fn group_camel(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    group_words(group).map(|w| capitalize(&w)).collect()
}

/// The group as it appears in tags: `core`, `apps`, `rbacAuthorization`.
pub(crate) fn group_tag(group: &str) -> String {
    let camel = group_camel(group);
    let mut chars = camel.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The tag of a group-version's operations: `core_v1`, `apps_v1`.
pub(crate) fn tag(group: &str, version: &str) -> String {
    format!("{}_{version}", group_tag(group))
}

fn group_words(group: &str) -> impl Iterator<Item = String> + '_ {
    let trimmed = group.strip_suffix(".k8s.io").unwrap_or(group);
    trimmed
        .split(['.', '-'])
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
}

/// The first letter upper-cased.
pub(crate) fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The definition name Kubernetes gives a custom kind: the group's labels reversed,
/// then version and kind (`com.example.stable.v1.CronTab`).
pub(crate) fn custom_definition_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(group_version_path("", "v1"), "api/v1");
        assert_eq!(group_version_path("apps", "v1"), "apis/apps/v1");
        assert_eq!(url_prefix("batch", "v1"), "/apis/batch/v1");
        assert_eq!(group_camel(""), "Core");
        assert_eq!(
            group_camel("rbac.authorization.k8s.io"),
            "RbacAuthorization"
        );
        assert_eq!(
            group_camel("admissionregistration.k8s.io"),
            "Admissionregistration"
        );
        assert_eq!(group_camel("stable.example.com"), "StableExampleCom");
        assert_eq!(tag("", "v1"), "core_v1");
        assert_eq!(
            tag("rbac.authorization.k8s.io", "v1"),
            "rbacAuthorization_v1"
        );
        assert_eq!(tag("autoscaling", "v2"), "autoscaling_v2");
        assert_eq!(capitalize("v2beta1"), "V2beta1");
        assert_eq!(
            custom_definition_name("stable.example.com", "v1", "CronTab"),
            "com.example.stable.v1.CronTab"
        );
    }
}
