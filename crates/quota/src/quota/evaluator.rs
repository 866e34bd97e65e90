//! Quota evaluators: for each (group, resource), which quota resource names it accounts
//! for, which operations it handles, what one object uses, which pods must name their
//! requests and limits, and how scopes apply. Kubernetes has dedicated evaluators for
//! pods, services and PersistentVolumeClaims; every other resource gets an object-count
//! evaluator (`count/<resource>[.<group>]`), the legacy ones (`configmaps`, `secrets`,
//! `replicationcontrollers`, `resourcequotas`) with their old alias name too.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use kyb_apimachinery::quantity::Quantity;
use serde_json::Value;

use super::scopes::{self, ScopeSelector};
use crate::pod_resources::{self, FOR_QUOTA, Which};
use crate::resource_list::ResourceList;
use kyb_api::Operation;
use kyb_apimachinery::json::{at, items, map_at, opt_str};

/// Resources quota never looks at (`install.DefaultIgnoredResources`).
const IGNORED: &[(&str, &str)] = &[
    ("", "bindings"),
    ("", "componentstatuses"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("", "events"),
    ("events.k8s.io", "events"),
];

/// Core resources whose object count also has a name without `count/`.
const LEGACY_ALIASES: &[&str] = &[
    "configmaps",
    "resourcequotas",
    "replicationcontrollers",
    "secrets",
];

/// The pod evaluator's fixed resource names.
const POD_RESOURCES: &[&str] = &[
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// Names a quota on cpu or memory requires every container to set (a historical rule).
const POD_VALIDATION_SET: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

const SERVICE_RESOURCES: &[&str] = &[
    "count/services",
    "services",
    "services.nodeports",
    "services.loadbalancers",
];

const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// Which evaluator a resource has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Pods,
    Services,
    Claims,
    /// Object count, with a legacy alias name for some core resources.
    Count(Option<&'static str>),
}

/// The evaluator of one (group, resource).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Evaluator<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub kind: Kind,
}

/// `count/<resource>` for the core group, else `count/<resource>.<group>`.
pub(crate) fn object_count_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    }
}

/// The (group, resource) an object-count name counts (`count/deployments.apps`).
pub(crate) fn counted_resource(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("count/")?;
    let (resource, group) = rest.split_once('.').unwrap_or((rest, ""));
    (!resource.is_empty()).then_some((group, resource))
}

/// Whether a resource name is in the `kubernetes.io` namespace (unprefixed names are).
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// A quota name for an extended resource: `requests.<vendor.io/name>`.
fn is_extended_for_quota(name: &str) -> bool {
    !is_native(name) && name.starts_with("requests.")
}

/// An extended resource a container may request (`helper.IsExtendedResourceName`).
fn is_extended_resource(name: &str) -> bool {
    if is_native(name) || name.starts_with("requests.") {
        return false;
    }
    let quota_name = format!("requests.{name}");
    kyb_apimachinery::labels::check_key(&quota_name).is_ok()
}

impl<'a> Evaluator<'a> {
    /// The evaluator of a resource; `None` for the resources quota ignores.
    pub(crate) fn for_resource(group: &'a str, resource: &'a str) -> Option<Self> {
        if IGNORED.contains(&(group, resource)) {
            return None;
        }
        let kind = match (group, resource) {
            ("", "pods") => Kind::Pods,
            ("", "services") => Kind::Services,
            ("", "persistentvolumeclaims") => Kind::Claims,
            ("", r) => Kind::Count(LEGACY_ALIASES.iter().copied().find(|a| *a == r)),
            _ => Kind::Count(None),
        };
        Some(Evaluator {
            group,
            resource,
            kind,
        })
    }

    /// Whether the evaluator looks at a request at all. Pods: creation and the `resize`
    /// subresource; services and claims: creation and update (a service can change
    /// type, a claim can grow); everything else: creation. No other subresource.
    pub(crate) fn handles(&self, op: Operation, subresource: &str) -> bool {
        match (self.kind, subresource) {
            (Kind::Pods, "") => op == Operation::Create,
            (Kind::Pods, "resize") => op == Operation::Update,
            (Kind::Services | Kind::Claims, "") => {
                matches!(op, Operation::Create | Operation::Update)
            }
            (Kind::Count(_), "") => op == Operation::Create,
            _ => false,
        }
    }

    /// Whether this evaluator accounts for the quota resource `name`.
    pub(crate) fn matches_resource(&self, name: &str) -> bool {
        match self.kind {
            Kind::Pods => {
                POD_RESOURCES.contains(&name)
                    || name.starts_with("hugepages-")
                    || name.starts_with("requests.hugepages-")
                    || is_extended_for_quota(name)
            }
            Kind::Services => SERVICE_RESOURCES.contains(&name),
            Kind::Claims => {
                name == "count/persistentvolumeclaims"
                    || name == "persistentvolumeclaims"
                    || name == "requests.storage"
                    || name
                        .strip_suffix("persistentvolumeclaims")
                        .is_some_and(|p| p.ends_with(STORAGE_CLASS_SUFFIX))
                    || name
                        .strip_suffix("requests.storage")
                        .is_some_and(|p| p.ends_with(STORAGE_CLASS_SUFFIX))
            }
            Kind::Count(alias) => {
                alias == Some(name) || counted_resource(name) == Some((self.group, self.resource))
            }
        }
    }

    /// `MatchingResources`: the names among `names` this evaluator accounts for.
    pub(crate) fn matching_resources<'n>(
        &self,
        names: impl IntoIterator<Item = &'n str>,
    ) -> BTreeSet<String> {
        names
            .into_iter()
            .filter(|n| self.matches_resource(n))
            .map(str::to_string)
            .collect()
    }

    /// Whether the object satisfies every scope requirement. Only pods have scopes; for
    /// any other resource a quota with scopes matches nothing.
    pub(crate) fn scopes_match(
        &self,
        selectors: &[ScopeSelector],
        object: &Value,
    ) -> Result<bool, String> {
        if self.kind != Kind::Pods {
            return Ok(selectors.is_empty());
        }
        let mut all = true;
        for s in selectors {
            all &= scopes::pod_matches(s, object)?;
        }
        Ok(all)
    }

    /// `MatchingScopes`' error check: each requirement evaluated on its own, the first
    /// failure reported as `error on matching scope {...}: ...`.
    pub(crate) fn check_scopes(
        &self,
        selectors: &[ScopeSelector],
        object: &Value,
    ) -> Result<(), String> {
        if self.kind != Kind::Pods {
            return Ok(());
        }
        for s in selectors {
            scopes::pod_matches(s, object)
                .map_err(|e| format!("error on matching scope {s}: {e}"))?;
        }
        Ok(())
    }

    /// What one object uses, at time `now`.
    pub(crate) fn usage(&self, object: &Value, now: Timestamp) -> ResourceList {
        match self.kind {
            Kind::Pods => pod_usage(object, now),
            Kind::Services => service_usage(object),
            Kind::Claims => claim_usage(object),
            Kind::Count(alias) => {
                let mut out = ResourceList::new();
                out.insert(object_count_name(self.group, self.resource), one());
                if let Some(alias) = alias {
                    out.insert(alias, one());
                }
                out
            }
        }
    }

    /// `Constraints`: for pods, every container and init container must set the cpu and
    /// memory requests/limits a matching quota tracks; the error lists what is missing
    /// where (`must specify limits.cpu for: a,b; limits.memory for: a`).
    pub(crate) fn constraints(
        &self,
        required: &BTreeSet<String>,
        pod: &Value,
    ) -> Result<(), String> {
        if self.kind != Kind::Pods {
            return Ok(());
        }
        let required: Vec<&str> = required
            .iter()
            .map(String::as_str)
            .filter(|r| POD_VALIDATION_SET.contains(r))
            .collect();
        if required.is_empty() {
            return Ok(());
        }
        let mut missing: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for c in items(pod, &["spec", "containers"])
            .iter()
            .chain(items(pod, &["spec", "initContainers"]))
        {
            let used = compute_usage(
                &pod_resources::container_list(c, Which::Requests),
                &pod_resources::container_list(c, Which::Limits),
            );
            let name = opt_str(c, &["name"]).unwrap_or_default();
            for r in &required {
                if !used.contains(r) {
                    missing.entry(r).or_default().insert(name);
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = missing
            .iter()
            .map(|(r, names)| {
                format!(
                    "{r} for: {}",
                    names.iter().copied().collect::<Vec<_>>().join(",")
                )
            })
            .collect();
        Err(format!("must specify {}", parts.join("; ")))
    }
}

fn one() -> Quantity {
    Quantity::from_int(1)
}

/// `podComputeUsageHelper`: the quota names a set of requests and limits fills.
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("pods", one());
    for base in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(q) = requests.get(base) {
            out.insert(base, q.clone());
            out.insert(format!("requests.{base}"), q.clone());
        }
        if let Some(q) = limits.get(base) {
            out.insert(format!("limits.{base}"), q.clone());
        }
    }
    for (name, q) in requests.iter() {
        if name.starts_with("hugepages-") {
            out.insert(name, q.clone());
            out.insert(format!("requests.{name}"), q.clone());
        }
        if is_extended_resource(name) {
            out.insert(format!("requests.{name}"), q.clone());
        }
    }
    out
}

/// Whether a pod still counts for compute quota (`QuotaV1Pod`): not `Succeeded` or
/// `Failed`, and not past its deletion grace period (`deletionTimestamp` plus
/// `deletionGracePeriodSeconds`, both set, lies before `now`).
pub(crate) fn pod_counts(pod: &Value, now: Timestamp) -> bool {
    if matches!(
        opt_str(pod, &["status", "phase"]),
        Some("Succeeded" | "Failed")
    ) {
        return false;
    }
    let deletion =
        opt_str(pod, &["metadata", "deletionTimestamp"]).and_then(|t| t.parse::<Timestamp>().ok());
    let grace = at(pod, &["metadata", "deletionGracePeriodSeconds"]).and_then(Value::as_i64);
    if let (Some(deletion), Some(grace)) = (deletion, grace) {
        let end = deletion.saturating_add(SignedDuration::from_secs(grace));
        if let Ok(end) = end
            && now > end
        {
            return false;
        }
    }
    true
}

fn pod_usage(pod: &Value, now: Timestamp) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("count/pods", one());
    if !pod_counts(pod, now) {
        return out;
    }
    let requests = pod_resources::pod_total(pod, Which::Requests, FOR_QUOTA);
    let limits = pod_resources::pod_total(pod, Which::Limits, FOR_QUOTA);
    out.add_assign(&compute_usage(&requests, &limits));
    out
}

fn service_usage(svc: &Value) -> ResourceList {
    let ports = items(svc, &["spec", "ports"]);
    let count = |n: usize| Quantity::from_int(i64::try_from(n).unwrap_or(i64::MAX));
    let mut out = ResourceList::new();
    out.insert("count/services", one());
    out.insert("services", one());
    out.insert("services.loadbalancers", Quantity::from_int(0));
    out.insert("services.nodeports", Quantity::from_int(0));
    match opt_str(svc, &["spec", "type"]) {
        Some("NodePort") => out.insert("services.nodeports", count(ports.len())),
        Some("LoadBalancer") => {
            let allocate =
                at(svc, &["spec", "allocateLoadBalancerNodePorts"]).and_then(Value::as_bool);
            let node_ports = if allocate == Some(false) {
                ports
                    .iter()
                    .filter(|p| {
                        at(p, &["nodePort"])
                            .and_then(Value::as_i64)
                            .is_some_and(|n| n != 0)
                    })
                    .count()
            } else {
                ports.len()
            };
            out.insert("services.nodeports", count(node_ports));
            out.insert("services.loadbalancers", one());
        }
        _ => {}
    }
    out
}

/// A claim's storage class: the beta annotation when present, else `spec.storageClassName`.
fn claim_class(pvc: &Value) -> &str {
    if let Some(annotations) = map_at(pvc, &["metadata", "annotations"])
        && let Some(class) = annotations.get("volume.beta.kubernetes.io/storage-class")
    {
        return class.as_str().unwrap_or_default();
    }
    opt_str(pvc, &["spec", "storageClassName"]).unwrap_or_default()
}

/// Rounded up to whole bytes.
fn whole(q: &Quantity) -> Quantity {
    let mut q = q.clone();
    q.round_up(0);
    q
}

fn claim_usage(pvc: &Value) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("persistentvolumeclaims", one());
    out.insert("count/persistentvolumeclaims", one());
    let class = claim_class(pvc);
    if !class.is_empty() {
        out.insert(
            format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"),
            one(),
        );
    }
    let requested = at(pvc, &["spec", "resources", "requests", "storage"])
        .and_then(|v| Quantity::from_json(v).ok())
        .map(|q| whole(&q));
    // A claim being expanded (or recovering from a failed expansion) is charged for the
    // larger of what it asks for and what was allocated (RecoverVolumeExpansionFailure).
    let storage = requested.map(|req| {
        match at(pvc, &["status", "allocatedResources", "storage"])
            .and_then(|v| Quantity::from_json(v).ok())
        {
            Some(alloc) if alloc.cmp_q(&req).is_gt() => whole(&alloc),
            _ => req,
        }
    });
    if let Some(storage) = storage {
        if !class.is_empty() {
            out.insert(
                format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"),
                storage.clone(),
            );
        }
        out.insert("requests.storage", storage);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2025-06-01T12:00:00Z".parse().unwrap()
    }

    fn ev(group: &'static str, resource: &'static str) -> Evaluator<'static> {
        Evaluator::for_resource(group, resource).unwrap()
    }

    #[test]
    fn kinds_and_ignored_resources() {
        assert_eq!(ev("", "pods").kind, Kind::Pods);
        assert_eq!(ev("", "secrets").kind, Kind::Count(Some("secrets")));
        assert_eq!(ev("apps", "deployments").kind, Kind::Count(None));
        assert!(Evaluator::for_resource("", "events").is_none());
        assert!(
            Evaluator::for_resource("authorization.k8s.io", "localsubjectaccessreviews").is_none()
        );
        assert_eq!(
            counted_resource("count/deployments.apps"),
            Some(("apps", "deployments"))
        );
        assert_eq!(
            counted_resource("count/widgets.example.com"),
            Some(("example.com", "widgets"))
        );
        assert_eq!(counted_resource("count/pods"), Some(("", "pods")));
        assert_eq!(counted_resource("count/"), None);
        assert_eq!(counted_resource("pods"), None);
    }

    #[test]
    fn matching_resources() {
        let pods = ev("", "pods");
        let names = [
            "pods",
            "count/pods",
            "requests.cpu",
            "hugepages-2Mi",
            "requests.hugepages-1Gi",
            "requests.nvidia.com/gpu",
            "requests.storage",
            "services",
            "count/deployments.apps",
            "requests.kubernetes.io/foo",
        ];
        assert_eq!(
            pods.matching_resources(names)
                .into_iter()
                .collect::<Vec<_>>(),
            vec![
                "count/pods",
                "hugepages-2Mi",
                "pods",
                "requests.cpu",
                "requests.hugepages-1Gi",
                "requests.nvidia.com/gpu"
            ]
        );
        let claims = ev("", "persistentvolumeclaims");
        assert!(claims.matches_resource("gold.storageclass.storage.k8s.io/requests.storage"));
        assert!(claims.matches_resource("gold.storageclass.storage.k8s.io/persistentvolumeclaims"));
        assert!(!claims.matches_resource("gold.storageclass.storage.k8s.io/pods"));
        assert!(ev("apps", "deployments").matches_resource("count/deployments.apps"));
        assert!(!ev("apps", "deployments").matches_resource("count/deployments"));
        assert!(ev("", "configmaps").matches_resource("configmaps"));
    }

    #[test]
    fn handled_operations() {
        assert!(ev("", "pods").handles(Operation::Create, ""));
        assert!(!ev("", "pods").handles(Operation::Update, ""));
        assert!(ev("", "pods").handles(Operation::Update, "resize"));
        assert!(ev("", "services").handles(Operation::Update, ""));
        assert!(!ev("", "services").handles(Operation::Update, "status"));
        assert!(ev("", "persistentvolumeclaims").handles(Operation::Update, ""));
        assert!(!ev("apps", "deployments").handles(Operation::Update, ""));
        assert!(!ev("apps", "deployments").handles(Operation::Delete, ""));
    }

    #[test]
    fn pod_usage_counts_compute_resources() {
        let pod = json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi", "nvidia.com/gpu": "1",
                    "hugepages-2Mi": "4Mi", "ephemeral-storage": "1Gi"},
                    "limits": {"cpu": "500m", "memory": "64Mi", "nvidia.com/gpu": "1", "hugepages-2Mi": "4Mi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m"}}}],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1", "memory": "32Mi"}}}],
            "overhead": {"cpu": "100m"}
        }});
        assert_eq!(
            ev("", "pods").usage(&pod, now()).pretty(),
            "count/pods=1,cpu=1100m,ephemeral-storage=1Gi,hugepages-2Mi=4Mi,limits.cpu=600m,limits.memory=64Mi,memory=64Mi,pods=1,requests.cpu=1100m,requests.ephemeral-storage=1Gi,requests.hugepages-2Mi=4Mi,requests.memory=64Mi,requests.nvidia.com/gpu=1"
        );
    }

    #[test]
    fn finished_and_expired_pods_only_count_as_objects() {
        let base = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}});
        let mut done = base.clone();
        done["status"] = json!({"phase": "Succeeded"});
        assert_eq!(ev("", "pods").usage(&done, now()).pretty(), "count/pods=1");
        let mut deleting = base.clone();
        deleting["metadata"] =
            json!({"deletionTimestamp": "2025-06-01T11:59:00Z", "deletionGracePeriodSeconds": 30});
        assert_eq!(
            ev("", "pods").usage(&deleting, now()).pretty(),
            "count/pods=1"
        );
        deleting["metadata"]["deletionGracePeriodSeconds"] = json!(120);
        assert!(
            ev("", "pods")
                .usage(&deleting, now())
                .contains("requests.cpu")
        );
        // Without a grace period the pod still counts.
        deleting["metadata"] = json!({"deletionTimestamp": "2020-01-01T00:00:00Z"});
        assert!(
            ev("", "pods")
                .usage(&deleting, now())
                .contains("requests.cpu")
        );
    }

    #[test]
    fn service_usage_by_type() {
        let svc = |t: &str, extra: Value| {
            let mut s = json!({"spec": {"type": t, "ports": [{"port": 80, "nodePort": 30080}, {"port": 443}]}});
            if let (Some(spec), Some(extra)) = (s["spec"].as_object_mut(), extra.as_object()) {
                spec.extend(extra.clone());
            }
            ev("", "services").usage(&s, now()).pretty()
        };
        assert_eq!(
            svc("ClusterIP", json!({})),
            "count/services=1,services=1,services.loadbalancers=0,services.nodeports=0"
        );
        assert_eq!(
            svc("NodePort", json!({})),
            "count/services=1,services=1,services.loadbalancers=0,services.nodeports=2"
        );
        assert_eq!(
            svc(
                "LoadBalancer",
                json!({"allocateLoadBalancerNodePorts": false})
            ),
            "count/services=1,services=1,services.loadbalancers=1,services.nodeports=1"
        );
    }

    #[test]
    fn claim_usage_by_class() {
        let pvc = json!({"spec": {"storageClassName": "gold",
            "resources": {"requests": {"storage": "1500m"}}}});
        assert_eq!(
            ev("", "persistentvolumeclaims").usage(&pvc, now()).pretty(),
            "count/persistentvolumeclaims=1,gold.storageclass.storage.k8s.io/persistentvolumeclaims=1,gold.storageclass.storage.k8s.io/requests.storage=2,persistentvolumeclaims=1,requests.storage=2"
        );
        let beta = json!({"metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": ""}},
            "spec": {"storageClassName": "gold", "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"allocatedResources": {"storage": "2Gi"}}});
        assert_eq!(
            ev("", "persistentvolumeclaims")
                .usage(&beta, now())
                .pretty(),
            "count/persistentvolumeclaims=1,persistentvolumeclaims=1,requests.storage=2Gi"
        );
        assert_eq!(
            ev("apps", "deployments").usage(&json!({}), now()).pretty(),
            "count/deployments.apps=1"
        );
        assert_eq!(
            ev("", "configmaps").usage(&json!({}), now()).pretty(),
            "configmaps=1,count/configmaps=1"
        );
    }

    #[test]
    fn must_specify_message() {
        let pod = json!({"spec": {
            "containers": [{"name": "nginx", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                           {"name": "side", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1", "memory": "1Gi"}}}],
            "initContainers": [{"name": "init"}]
        }});
        let required: BTreeSet<String> =
            ["limits.cpu", "limits.memory", "pods", "requests.storage"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        assert_eq!(
            ev("", "pods").constraints(&required, &pod).unwrap_err(),
            "must specify limits.cpu for: init,nginx; limits.memory for: init,nginx,side"
        );
        let only_pods: BTreeSet<String> = ["pods".to_string()].into();
        assert!(ev("", "pods").constraints(&only_pods, &pod).is_ok());
    }
}
