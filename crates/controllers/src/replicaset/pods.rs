//! Pod facts the replica controllers read — active, ready, available for
//! `minReadySeconds` — the pods they create from a template, and the order in which they
//! delete surplus pods (Kubernetes' `ActivePodsWithRanks`): unscheduled before scheduled,
//! Pending before Unknown before Running, not ready before ready, lower
//! `controller.kubernetes.io/pod-deletion-cost` first, pods doubled up on a node first,
//! more recently ready first, more restarts first, newer first.

use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

pub const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// Not terminated (Succeeded/Failed) and not being deleted.
pub fn is_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_none() && !matches!(phase, Some("Succeeded" | "Failed"))
}

#[cfg(test)]
use kyb_component_helpers::pod_readiness::is_ready;
use kyb_component_helpers::pod_readiness::{self, ready_since};

/// What a replica controller keeps of an owned, active pod while it reconciles: the facts
/// its status and deletion order need, a few hundred bytes where the whole pod is several
/// kilobytes (pods are read one at a time from the informer and reduced to this).
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub name: String,
    node: Option<String>,
    phase: u8,
    ready_since: Option<Option<jiff::Timestamp>>,
    deletion_cost: i64,
    restarts: i32,
    created: Option<jiff::Timestamp>,
    /// Carries every label of the owner's template.
    pub fully_labeled: bool,
}

impl Member {
    pub fn of(pod: &Pod, template_labels: &BTreeMap<String, String>) -> Member {
        let labels = pod.metadata.labels.as_ref();
        Member {
            name: pod.metadata.name.clone().unwrap_or_default(),
            node: node(pod).map(str::to_string),
            phase: phase_ordinal(pod),
            ready_since: ready_since(pod),
            deletion_cost: deletion_cost(pod),
            restarts: restarts(pod),
            created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
            fully_labeled: template_labels
                .iter()
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v)),
        }
    }

    pub fn is_ready(&self) -> bool {
        self.ready_since.is_some()
    }

    /// Whether the pod has been ready for `min_ready_seconds` at `now`; if it is ready but
    /// not yet available, how long until it is.
    pub fn availability(
        &self,
        min_ready_seconds: i32,
        now: jiff::Timestamp,
    ) -> (bool, Option<std::time::Duration>) {
        match pod_readiness::until_available_since(self.ready_since, min_ready_seconds, now) {
            Some(wait) if wait.is_zero() => (true, None),
            Some(wait) => (false, Some(wait)),
            None => (false, None),
        }
    }
}

/// A pod for `template`, named `<prefix>…` and controlled by `owner`.
pub fn from_template(
    template: &PodTemplateSpec,
    namespace: &str,
    prefix: &str,
    owner: OwnerReference,
) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(prefix.to_string()),
            namespace: Some(namespace.to_string()),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// The prefix of generated pod names: `<owner>-` (or the name alone if that would be
/// too long to be a name prefix).
pub fn name_prefix(owner: &str) -> String {
    if owner.len() + 1 > 253 {
        owner.to_string()
    } else {
        format!("{owner}-")
    }
}

fn phase_ordinal(pod: &Pod) -> u8 {
    match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Pending") | None => 0,
        Some("Unknown") => 1,
        Some("Running") => 2,
        _ => 3,
    }
}

fn deletion_cost(pod: &Pod) -> i64 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DELETION_COST))
        .and_then(|v| v.parse::<i32>().ok())
        .map(i64::from)
        .unwrap_or(0)
}

fn restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .map(|c| c.restart_count)
        .max()
        .unwrap_or(0)
}

fn node(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// `members` in the order they should be deleted (first = first to go).
pub fn deletion_order(members: &[Member]) -> Vec<&Member> {
    let mut per_node: HashMap<&str, usize> = HashMap::new();
    for member in members {
        if let Some(n) = member.node.as_deref() {
            *per_node.entry(n).or_default() += 1;
        }
    }
    let rank = |m: &Member| {
        m.node
            .as_deref()
            .map(|n| per_node.get(n).copied().unwrap_or(0))
            .unwrap_or(0)
    };
    let mut ranked: Vec<(usize, &Member)> = members.iter().map(|m| (rank(m), m)).collect();
    ranked.sort_by(|(ra, a), (rb, b)| compare(a, *ra, b, *rb));
    ranked.into_iter().map(|(_, m)| m).collect()
}

fn compare(a: &Member, rank_a: usize, b: &Member, rank_b: usize) -> Ordering {
    // Unscheduled first.
    a.node
        .is_some()
        .cmp(&b.node.is_some())
        .then_with(|| a.phase.cmp(&b.phase))
        .then_with(|| a.is_ready().cmp(&b.is_ready()))
        .then_with(|| a.deletion_cost.cmp(&b.deletion_cost))
        // More pods on the same node first.
        .then_with(|| rank_b.cmp(&rank_a))
        // Both ready: the more recently ready first.
        .then_with(
            || match (a.ready_since.flatten(), b.ready_since.flatten()) {
                (Some(ta), Some(tb)) => tb.cmp(&ta),
                _ => Ordering::Equal,
            },
        )
        .then_with(|| b.restarts.cmp(&a.restarts))
        // Newer first (no creation time counts as newest).
        .then_with(|| match (&a.created, &b.created) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(ta), Some(tb)) => tb.cmp(ta),
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn pod(
        name: &str,
        node: Option<&str>,
        phase: &str,
        ready: Option<&str>,
        extra: serde_json::Value,
    ) -> Arc<Pod> {
        let mut v = json!({
            "metadata": {"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": node, "containers": []},
            "status": {"phase": phase, "conditions": ready.map(|t| vec![json!({
                "type": "Ready", "status": "True", "lastTransitionTime": t})]).unwrap_or_default()},
        });
        merge(&mut v, extra);
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn merge(a: &mut serde_json::Value, b: serde_json::Value) {
        match (a, b) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(serde_json::Value::Null), v);
                }
            }
            (a, b) => *a = b,
        }
    }

    fn names(pods: Vec<Arc<Pod>>) -> Vec<String> {
        let members: Vec<Member> = pods
            .iter()
            .map(|p| Member::of(p, &BTreeMap::new()))
            .collect();
        deletion_order(&members)
            .into_iter()
            .map(|m| m.name.clone())
            .collect()
    }

    #[test]
    fn deletes_the_least_useful_pods_first() {
        let t = "2026-01-01T00:00:10Z";
        let pods = vec![
            pod(
                "ready-old",
                Some("n1"),
                "Running",
                Some("2026-01-01T00:00:05Z"),
                json!({}),
            ),
            pod("ready-recent", Some("n2"), "Running", Some(t), json!({})),
            pod("not-ready", Some("n3"), "Running", None, json!({})),
            pod("pending", Some("n4"), "Pending", None, json!({})),
            pod("unscheduled", None, "Pending", None, json!({})),
            pod(
                "cheap",
                Some("n5"),
                "Running",
                Some(t),
                json!({"metadata": {"annotations": {DELETION_COST: "-5"}}}),
            ),
        ];
        assert_eq!(
            names(pods),
            [
                "unscheduled",
                "pending",
                "not-ready",
                "cheap",
                "ready-recent",
                "ready-old"
            ]
        );
    }

    #[test]
    fn then_doubled_up_restarts_and_age() {
        let t = "2026-01-01T00:00:10Z";
        let pods = vec![
            pod("alone", Some("a"), "Running", Some(t), json!({})),
            pod("shared1", Some("b"), "Running", Some(t), json!({})),
            pod(
                "shared2",
                Some("b"),
                "Running",
                Some(t),
                json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:01Z"}}),
            ),
            pod(
                "crashy",
                Some("c"),
                "Running",
                Some(t),
                json!({"status": {"containerStatuses": [{"name": "c", "image": "i", "imageID": "",
                    "ready": true, "restartCount": 4}]}}),
            ),
        ];
        assert_eq!(names(pods), ["shared2", "shared1", "crashy", "alone"]);
    }

    #[test]
    fn availability_waits_for_min_ready_seconds() {
        let member = |p: &Arc<Pod>| Member::of(p, &BTreeMap::new());
        let p = pod(
            "p",
            Some("n"),
            "Running",
            Some("2026-01-01T00:00:10Z"),
            json!({}),
        );
        let at = |s: &str| s.parse::<jiff::Timestamp>().unwrap();
        assert_eq!(
            member(&p).availability(0, at("2026-01-01T00:00:10Z")),
            (true, None)
        );
        assert_eq!(
            member(&p).availability(5, at("2026-01-01T00:00:12Z")),
            (false, Some(std::time::Duration::from_secs(3)))
        );
        assert_eq!(
            member(&p).availability(5, at("2026-01-01T00:00:15Z")),
            (true, None)
        );
        let not_ready = pod("q", Some("n"), "Running", None, json!({}));
        assert!(!is_ready(&not_ready));
        assert!(!member(&not_ready).is_ready());
        assert_eq!(
            member(&not_ready).availability(0, at("2026-01-01T00:00:15Z")),
            (false, None)
        );
    }
}
