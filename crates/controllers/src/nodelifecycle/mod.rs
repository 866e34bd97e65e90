//! The node lifecycle controller (kube-controller-manager's `node-lifecycle-controller`,
//! with the taint eviction controller's work folded in).
//!
//! Every `--node-monitor-period` each node is checked: a node whose Lease in
//! `kube-node-lease` (or Ready heartbeat) is older than `--node-monitor-grace-period` gets
//! its kubelet conditions set to `Unknown` ("Kubelet stopped posting node status.", event
//! `NodeNotReady` on the node) and its pods' Ready condition set to False (event
//! `NodeNotReady` "Node is not ready" on each). Its taints follow its conditions
//! (TaintNodesByCondition's `NoSchedule` taints, including `unschedulable` for cordoned
//! nodes, and TaintBasedEvictions' `not-ready`/`unreachable` `NoExecute` taints), and are
//! lifted when the node is Ready again — which is also what lets new nodes (created with
//! the `not-ready` taint by admission) take pods. Adding a `NoExecute` taint is
//! rate-limited per zone ([`zones`]). Pods on a node with a `NoExecute` taint are deleted
//! at once if they do not tolerate it, or when their `tolerationSeconds` run out
//! ([`eviction`]; event `TaintManagerEviction` "Marking for deletion Pod ns/name").

pub mod eviction;
pub mod health;
pub mod zones;

use crate::context::Context;
use crate::options::Options;
use anyhow::Context as _;
use eviction::Verdict;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use kyb_runtime::compact::Compacted;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::events::Recorder;
use kyb_runtime::informer::{Informer, ObjectKey};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const NAME: &str = "node-lifecycle-controller";
/// The service account kube-controller-manager runs this controller as.
const SERVICE_ACCOUNT: &str = "node-controller";
const LEASE_NAMESPACE: &str = "kube-node-lease";

struct Lifecycle {
    nodes: Arc<Informer<Node>>,
    leases: Arc<Informer<Lease>>,
    pods: Arc<Informer<Pod, Compacted>>,
    client: kube::Client,
    recorder: Recorder,
    eviction_recorder: Recorder,
    limiter: Mutex<zones::Limiter>,
    ctx: Arc<Context>,
}

/// The node a pod is bound to.
fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let nodes = ctx.informers.get::<Node>();
    let leases = ctx.informers.get::<Lease>();
    let pods = ctx.informers.compacted::<Pod>();
    pods.add_index("node", |p: &Pod| {
        node_of(p).map(str::to_string).into_iter().collect()
    });
    let client = ctx
        .client_for(SERVICE_ACCOUNT)
        .await
        .context("node lifecycle controller client")?;
    let reconciler = Arc::new(Lifecycle {
        nodes: nodes.clone(),
        leases: leases.clone(),
        pods: pods.clone(),
        client,
        recorder: ctx.recorder(SERVICE_ACCOUNT),
        eviction_recorder: ctx.recorder("taint-eviction-controller"),
        limiter: Mutex::new(zones::Limiter::default()),
        ctx: ctx.clone(),
    });
    let controller = ctx.controller(NAME, reconciler.clone());
    let queue = controller.queue();
    {
        let queue = queue.clone();
        nodes.on_change(move |change| {
            queue.add(ObjectKey::of(change.object().as_ref()));
        });
    }
    {
        // A renewed Lease matters only to a node not (yet) Ready.
        let queue = queue.clone();
        let nodes = nodes.clone();
        leases.on_change(move |change| {
            let lease = change.object();
            if lease.metadata.namespace.as_deref() != Some(LEASE_NAMESPACE) {
                return;
            }
            let name = lease.metadata.name.as_deref().unwrap_or_default();
            if nodes
                .get("", name)
                .is_some_and(|n| health::ready_status(&n) != Some("True"))
            {
                queue.add(ObjectKey::new("", name));
            }
        });
    }
    {
        // A pod landing on an unhealthy or NoExecute-tainted node needs a look.
        let queue = queue.clone();
        let nodes = nodes.clone();
        pods.on_change(move |change| {
            let Some(name) = node_of(change.object()) else {
                return;
            };
            if nodes.get("", name).is_some_and(|n| {
                health::ready_status(&n) != Some("True")
                    || n.spec
                        .as_ref()
                        .and_then(|s| s.taints.as_ref())
                        .is_some_and(|t| t.iter().any(|t| t.effect == "NoExecute"))
            }) {
                queue.add(ObjectKey::new("", name));
            }
        });
    }
    nodes.wait_synced().await;
    leases.wait_synced().await;
    pods.wait_synced().await;
    let monitor = reconciler.clone();
    let period = ctx
        .options
        .node_monitor_period
        .max(Duration::from_millis(100));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            monitor.observe_zones();
            for key in monitor.nodes.keys() {
                queue.add(key);
            }
        }
    });
    controller.run(ctx.options.workers).await;
    Ok(())
}

impl Lifecycle {
    fn options(&self) -> &Options {
        &self.ctx.options
    }

    /// Whether the node has been heard of within the grace period.
    fn heard_recently(&self, node: &Node, now: Timestamp) -> bool {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let lease = self.leases.get(LEASE_NAMESPACE, name);
        let grace = SignedDuration::try_from(self.options().node_monitor_grace_period)
            .unwrap_or(SignedDuration::MAX);
        health::last_heard(node, lease.as_deref())
            .is_some_and(|heard| now.duration_since(heard) <= grace)
    }

    /// Recomputes every zone's state (once per monitor period).
    fn observe_zones(&self) {
        let now = self.ctx.now();
        let nodes = self.nodes.list();
        let health: Vec<(&Node, bool)> = nodes
            .iter()
            .map(|n| {
                let ready = health::ready_status(n) == Some("True") && self.heard_recently(n, now);
                (n.as_ref(), ready)
            })
            .collect();
        let changed = self
            .limiter
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .observe(health.into_iter(), self.options());
        for (zone, state) in changed {
            tracing::info!(zone = %zone.replace('\0', ""), ?state, "zone state changed");
        }
    }

    /// Sets the node's kubelet conditions to Unknown; returns the updated node.
    async fn mark_unknown(&self, node: &Node, now: Timestamp) -> anyhow::Result<Option<Node>> {
        let Some(conditions) = health::unknown_conditions(node, now) else {
            return Ok(None);
        };
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let was_ready = health::ready_status(node) == Some("True");
        let api: Api<Node> = Api::all(self.client.clone());
        let patch = json!({
            "metadata": {"resourceVersion": node.metadata.resource_version},
            "status": {"conditions": conditions},
        });
        let updated = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("marking node {name} unknown"))?;
        tracing::info!(node = %name, "node stopped posting status");
        if was_ready {
            self.recorder.normal(
                &updated,
                "NodeNotReady",
                format!("Node {name} status is now: NodeNotReady"),
            );
        }
        Ok(Some(updated))
    }

    /// Sets the Ready condition of the node's pods to False.
    async fn mark_pods_not_ready(&self, name: &str, now: Timestamp) -> anyhow::Result<()> {
        for pod in self.pods.by_index("node", name) {
            if pod.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let mut conditions = pod
                .status
                .as_ref()
                .and_then(|s| s.conditions.clone())
                .unwrap_or_default();
            let Some(ready) = conditions.iter_mut().find(|c| c.type_ == "Ready") else {
                continue;
            };
            if ready.status == "False" {
                continue;
            }
            ready.status = "False".to_string();
            ready.last_transition_time = Some(Time(now));
            let patch = json!({
                "metadata": {"resourceVersion": pod.metadata.resource_version},
                "status": {"conditions": conditions},
            });
            let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
            let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
            let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
            api.patch_status(pod_name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("marking pod {namespace}/{pod_name} not ready"))?;
            self.recorder
                .warning(pod.as_ref(), "NodeNotReady", "Node is not ready");
        }
        Ok(())
    }

    /// Evicts the node's pods that do not tolerate its `NoExecute` taints (now, or when
    /// their toleration runs out); returns when to look again.
    async fn evict(&self, node: &Node, now: Timestamp) -> anyhow::Result<Option<Duration>> {
        let taints: Vec<_> = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|t| t.effect == "NoExecute")
            .collect();
        if taints.is_empty() {
            return Ok(None);
        }
        let since = taints
            .iter()
            .filter_map(|t| t.time_added.as_ref().map(|t| t.0))
            .max()
            .unwrap_or(now);
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let mut next: Option<Duration> = None;
        for pod in self.pods.by_index("node", name) {
            if pod.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let due = match eviction::verdict(&pod, &taints, since) {
                Verdict::Stay => false,
                Verdict::EvictNow => true,
                Verdict::EvictAt(at) if at <= now => true,
                Verdict::EvictAt(at) => {
                    let wait = now.duration_until(at).unsigned_abs();
                    next = Some(next.map_or(wait, |n| n.min(wait)));
                    false
                }
            };
            if due {
                self.delete_pod(&pod, now).await?;
            }
        }
        Ok(next)
    }

    async fn delete_pod(&self, pod: &Pod, now: Timestamp) -> anyhow::Result<()> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        self.eviction_recorder.normal(
            pod,
            "TaintManagerEviction",
            format!("Marking for deletion Pod {namespace}/{name}"),
        );
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        // The DisruptionTarget condition first, as Kubernetes does (best effort).
        let mut conditions = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        if !conditions.iter().any(|c| c.type_ == "DisruptionTarget") {
            conditions.push(PodCondition {
                type_: "DisruptionTarget".to_string(),
                status: "True".to_string(),
                reason: Some("DeletionByTaintManager".to_string()),
                message: Some("Taint manager: deleting due to NoExecute taint".to_string()),
                last_transition_time: Some(Time(now)),
                ..Default::default()
            });
            let patch = json!({"status": {"conditions": conditions}});
            if let Err(error) = api
                .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                tracing::debug!(pod = %format!("{namespace}/{name}"), %error, "disruption condition");
            }
        }
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e).with_context(|| format!("evicting pod {namespace}/{name}")),
        }
    }
}

impl Reconciler for Lifecycle {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(node) = self.nodes.get_key(key) else {
            return Ok(Action::Done);
        };
        let now = self.ctx.now();
        let name = key.name.as_str();
        let mut node: Node = (*node).clone();
        if !self.heard_recently(&node, now)
            && let Some(updated) = self.mark_unknown(&node, now).await?
        {
            node = updated;
        }
        let ready = health::ready_status(&node);
        if ready.is_some_and(|s| s != "True") {
            self.mark_pods_not_ready(name, now).await?;
        }
        // Taints in line with the conditions; a new NoExecute taint waits for its zone.
        let mut again: Option<Duration> = None;
        let no_schedule = health::no_schedule_keys(&node);
        let mut no_execute = health::no_execute_key(&node);
        {
            let mut limiter = self.limiter.lock().unwrap_or_else(|e| e.into_inner());
            if limiter.all_disrupted() {
                no_execute = None;
            } else if no_execute.is_some() && !health::has_no_execute(&node) {
                let zone = zones::zone_of(&node);
                if let Err(wait) = limiter.take(&zone, now, self.options()) {
                    no_execute = None;
                    again = Some(wait.unwrap_or(self.options().node_monitor_period));
                }
            }
        }
        if let Some(taints) = health::reconcile_taints(&node, &no_schedule, no_execute, now) {
            let api: Api<Node> = Api::all(self.client.clone());
            let patch = json!({
                "metadata": {"resourceVersion": node.metadata.resource_version},
                "spec": {"taints": taints},
            });
            node = api
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("updating the taints of node {name}"))?;
        }
        if let Some(wait) = self.evict(&node, now).await? {
            again = Some(again.map_or(wait, |a| a.min(wait)));
        }
        Ok(match again {
            Some(wait) => Action::RequeueAfter(wait.max(Duration::from_millis(100))),
            None => Action::Done,
        })
    }
}
