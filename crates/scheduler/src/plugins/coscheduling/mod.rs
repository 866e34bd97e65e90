//! Coscheduling: gang scheduling for `PodGroup`s (`scheduling.x-k8s.io/v1alpha1`), with the
//! semantics of the community scheduler-plugins project's plugin of the same name.
//!
//! A pod joins a group with the label `scheduling.x-k8s.io/pod-group: <name>`; the group is
//! the `PodGroup` of that name in the pod's namespace (`spec.minMember`, optional
//! `spec.scheduleTimeoutSeconds` and `spec.minResources`). No member is bound until at least
//! `minMember` members are placed: each placed member waits at Permit, and the member that
//! completes the quorum releases them all. Pods without the label are not looked at.
//!
//! Points:
//! - **PreEnqueue**: a member stays out of the active queue until its `PodGroup` exists and
//!   at least `minMember` pods of the group exist.
//! - **PreFilter**: rejects (unresolvable, so no preemption is tried) members of a group in
//!   back-off after a recent failure, of a group with fewer than `minMember` pods, or whose
//!   `minResources` the cluster's free capacity cannot hold (checked once per group and
//!   timeout window).
//! - **PostFilter**: when a member fits nowhere and the group is far from its quorum (more
//!   than `podGroupRejectPercentage` percent of `minMember` missing), rejects the group's
//!   waiting members so their reservations are released, and backs the group off
//!   (`podGroupBackoffSeconds`).
//! - **Permit**: waits until `minMember` members are placed (waiting at Permit, on their way
//!   to binding, or bound), then allows every waiting member; waits at most the group's
//!   `scheduleTimeoutSeconds`, else `permitWaitingTimeSeconds` (60).
//! - **Reserve**: nothing; **Unreserve**: rejects every waiting member of the group (three
//!   replicas form a quorum, two are useless).
//!
//! Not implemented: scheduler-plugins' QueueSort (a profile has one queue sort, and the
//! default profile's is PrioritySort) and the activation of siblings from Permit.

use crate::framework::{
    ClusterEvent, Code, CycleState, Handle, NodeInfo, PermitPlugin, Plugin, PodInfo,
    PostFilterContext, PostFilterPlugin, PostFilterResult, PreEnqueuePlugin, PreFilterPlugin,
    PreFilterResult, ReservePlugin, Snapshot, Status, resources,
};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The plugin's name.
pub const NAME: &str = "Coscheduling";
/// The label naming a pod's group.
pub const POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";
/// The API group of `PodGroup`.
pub const GROUP: &str = "scheduling.x-k8s.io";
/// The resource of `PodGroup`.
pub const POD_GROUPS: &str = "podgroups";

/// How long a member waits at Permit when neither the group nor the args say.
const DEFAULT_WAIT: Duration = Duration::from_secs(60);
/// The default `podGroupRejectPercentage`.
const DEFAULT_REJECT_PERCENTAGE: i64 = 10;

/// The plugin's arguments (`CoschedulingArgs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    /// `permitWaitingTimeSeconds` (60): the Permit wait when the group sets none.
    pub permit_waiting_time: Duration,
    /// `podGroupBackoffSeconds` (0: none): how long a group rejected in PostFilter is
    /// refused in PreFilter.
    pub pod_group_backoff: Option<Duration>,
    /// `podGroupRejectPercentage` (10): PostFilter leaves the group alone while at most this
    /// percentage of `minMember` is missing.
    pub reject_percentage: i64,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            permit_waiting_time: DEFAULT_WAIT,
            pod_group_backoff: None,
            reject_percentage: DEFAULT_REJECT_PERCENTAGE,
        }
    }
}

impl Args {
    /// Parses `pluginConfig` args (`Value::Null`: the defaults), validated as
    /// scheduler-plugins validates them.
    pub fn parse(args: &Value) -> Result<Args, String> {
        let mut parsed = Args::default();
        let Some(fields) = args.as_object() else {
            return if args.is_null() {
                Ok(parsed)
            } else {
                Err(format!(
                    "want args to be of type CoschedulingArgs, got {args}"
                ))
            };
        };
        let mut errors = Vec::new();
        let mut wait = 60;
        let mut backoff = 0;
        for (key, value) in fields {
            let target = match key.as_str() {
                "permitWaitingTimeSeconds" => &mut wait,
                "podGroupBackoffSeconds" => &mut backoff,
                "podGroupRejectPercentage" => &mut parsed.reject_percentage,
                "apiVersion" | "kind" => continue,
                other => return Err(format!("strict decoding error: unknown field {other:?}")),
            };
            *target = value
                .as_i64()
                .ok_or_else(|| format!("{key}: Invalid value: {value}: must be an integer"))?;
        }
        if wait < 0 {
            errors.push(format!(
                "permitWaitingTimeSeconds: Invalid value: {wait}: must be greater than 0"
            ));
        }
        if backoff < 0 {
            errors.push(format!(
                "podGroupBackoffSeconds: Invalid value: {backoff}: must be greater than 0"
            ));
        }
        if !(0..=100).contains(&parsed.reject_percentage) {
            errors.push(format!(
                "podGroupRejectPercentage: Invalid value: {}: must be between 0 and 100",
                parsed.reject_percentage
            ));
        }
        match errors.len() {
            0 => {}
            1 => return Err(errors.remove(0)),
            _ => return Err(format!("[{}]", errors.join(", "))),
        }
        // A zero wait falls back to the default, as scheduler-plugins' wait time does.
        if wait > 0 {
            parsed.permit_waiting_time = Duration::from_secs(wait.unsigned_abs());
        }
        if backoff > 0 {
            parsed.pod_group_backoff = Some(Duration::from_secs(backoff.unsigned_abs()));
        }
        Ok(parsed)
    }
}

/// Builds the plugin from its args.
pub fn factory(args: &Value, handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(Coscheduling::new(
        Args::parse(args)?,
        handle.clone(),
    )))
}

/// What the plugin reads of a `PodGroup`.
#[derive(Clone, Debug)]
struct PodGroup {
    min_member: i64,
    schedule_timeout_seconds: Option<i64>,
    min_resources: Option<serde_json::Map<String, Value>>,
}

impl PodGroup {
    fn from_object(object: &Value) -> PodGroup {
        let spec = &object["spec"];
        PodGroup {
            min_member: spec["minMember"].as_i64().unwrap_or(0),
            schedule_timeout_seconds: spec["scheduleTimeoutSeconds"].as_i64(),
            min_resources: spec["minResources"].as_object().cloned(),
        }
    }
}

/// The groups' bookkeeping, shared by the scheduling and binding cycles.
#[derive(Default)]
struct Groups {
    /// Groups rejected in PostFilter, refused in PreFilter until the instant.
    backed_off: HashMap<String, Instant>,
    /// Groups whose `minResources` the cluster could hold, not checked again until the
    /// instant.
    permitted: HashMap<String, Instant>,
    /// Members (UIDs) past Permit and not unreserved: waiting, or on their way to binding.
    assumed: HashMap<String, HashSet<String>>,
}

/// The Coscheduling plugin.
pub struct Coscheduling {
    args: Args,
    handle: Arc<Handle>,
    groups: Mutex<Groups>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Whether a pod has finished (terminal pods are not members any more).
fn terminal(pod: &PodInfo) -> bool {
    matches!(
        pod.pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// The group a pod names (`None` without the label, or with an empty one).
fn group_name(pod: &PodInfo) -> Option<&str> {
    pod.label(POD_GROUP_LABEL).filter(|g| !g.is_empty())
}

/// Whether `other` is a member of group `group` of namespace `namespace`.
fn member_of(other: &PodInfo, namespace: &str, group: &str) -> bool {
    other.namespace == namespace && other.label(POD_GROUP_LABEL) == Some(group)
}

impl Coscheduling {
    pub fn new(args: Args, handle: Arc<Handle>) -> Coscheduling {
        Coscheduling {
            args,
            handle,
            groups: Mutex::new(Groups::default()),
        }
    }

    /// The `PodGroup` `name` of `namespace`, if the informer has it.
    fn pod_group(&self, namespace: &str, name: &str) -> Option<PodGroup> {
        self.handle
            .lister
            .objects(GROUP, POD_GROUPS)
            .iter()
            .find(|o| {
                o["metadata"]["namespace"].as_str() == Some(namespace)
                    && o["metadata"]["name"].as_str() == Some(name)
            })
            .map(|o| PodGroup::from_object(o))
    }

    /// How many pods the group has (the pod itself included), not counting finished ones.
    fn count_members(&self, pod: &PodInfo, group: &str) -> i64 {
        let others = self
            .handle
            .lister
            .pods()
            .iter()
            .filter(|p| p.uid != pod.uid && member_of(p, &pod.namespace, group) && !terminal(p))
            .count();
        i64::try_from(others).unwrap_or(i64::MAX).saturating_add(1)
    }

    /// How many members other than `pod` are placed: waiting at Permit, past it on their
    /// way to binding, or bound. Forgets members that no longer exist.
    fn count_assigned(&self, pod: &PodInfo, full_name: &str, group: &str) -> i64 {
        let waiting: HashSet<String> = self
            .handle
            .waiting_pods
            .all()
            .iter()
            .filter(|w| w.pod.uid != pod.uid && member_of(&w.pod, &pod.namespace, group))
            .map(|w| w.pod.uid.clone())
            .collect();
        let mut groups = lock(&self.groups);
        let assumed = groups.assumed.get(full_name);
        let mut existing = HashSet::new();
        let mut count = waiting.len();
        for other in self.handle.lister.pods().iter() {
            if other.uid == pod.uid || !member_of(other, &pod.namespace, group) || terminal(other) {
                continue;
            }
            if assumed.is_some() {
                existing.insert(other.uid.clone());
            }
            if waiting.contains(&other.uid) {
                continue;
            }
            if other.node_name().is_some() || assumed.is_some_and(|a| a.contains(&other.uid)) {
                count += 1;
            }
        }
        if let Some(assumed) = groups.assumed.get_mut(full_name) {
            assumed
                .retain(|uid| uid == &pod.uid || existing.contains(uid) || waiting.contains(uid));
            if assumed.is_empty() {
                groups.assumed.remove(full_name);
            }
        }
        i64::try_from(count).unwrap_or(i64::MAX)
    }

    /// Rejects every pod of the group waiting at Permit.
    fn reject_waiting(&self, namespace: &str, group: &str, message: &str) {
        for waiting in self.handle.waiting_pods.all() {
            if member_of(&waiting.pod, namespace, group) {
                waiting.reject(NAME, message);
            }
        }
    }

    /// Whether the cluster's free capacity (counting what the group's own pods hold as
    /// free) covers the group's `minResources` and `minMember` pods; the gap otherwise.
    fn check_min_resources(
        min_resources: &serde_json::Map<String, Value>,
        min_member: i64,
        snapshot: &Snapshot,
        namespace: &str,
        group: &str,
    ) -> Result<(), String> {
        let mut needed: Vec<(String, i64)> = min_resources
            .iter()
            .filter(|(name, _)| name.as_str() != resources::PODS)
            .map(|(name, quantity)| (name.clone(), base_units(name, quantity)))
            .collect();
        needed.push((resources::PODS.to_string(), min_member));
        needed.sort();
        for node in &snapshot.nodes {
            if node.node.is_none() {
                continue;
            }
            let free = FreeOnNode::new(node, namespace, group);
            needed.retain_mut(|(name, amount)| {
                *amount = amount.saturating_sub(free.get(name));
                *amount > 0
            });
            if needed.is_empty() {
                return Ok(());
            }
        }
        let gap: Vec<String> = needed
            .iter()
            .map(|(name, amount)| format!("{name}:{}", format_amount(name, *amount)))
            .collect();
        Err(format!("resource gap: map[{}]", gap.join(" ")))
    }
}

/// A resource amount in the units the scheduler counts it in (millicores for CPU).
fn base_units(name: &str, quantity: &Value) -> i64 {
    let Ok(q) = kyb_apimachinery::quantity::Quantity::from_json(quantity) else {
        return 0;
    };
    let amount = if name == resources::CPU {
        q.milli_value()
    } else {
        q.ceil_value()
    };
    i64::try_from(amount).unwrap_or(i64::MAX)
}

/// An amount in base units as a quantity.
fn format_amount(name: &str, amount: i64) -> String {
    if name == resources::CPU && amount % 1000 != 0 {
        format!("{amount}m")
    } else if name == resources::CPU {
        (amount / 1000).to_string()
    } else {
        amount.to_string()
    }
}

/// What a node has free for a group: allocatable minus what pods other than the group's
/// request.
struct FreeOnNode<'a> {
    node: &'a NodeInfo,
    group_requests: crate::framework::Resources,
    group_pods: i64,
}

impl<'a> FreeOnNode<'a> {
    fn new(node: &'a NodeInfo, namespace: &str, group: &str) -> FreeOnNode<'a> {
        let mut group_requests = crate::framework::Resources::default();
        let mut group_pods = 0;
        for pod in node.pods.iter().filter(|p| member_of(p, namespace, group)) {
            group_requests.add(&pod.requests);
            group_pods += 1;
        }
        FreeOnNode {
            node,
            group_requests,
            group_pods,
        }
    }

    fn get(&self, name: &str) -> i64 {
        let allocatable = &self.node.allocatable;
        let requested = &self.node.requested;
        if name == resources::PODS {
            let others = i64::try_from(self.node.pods.len())
                .unwrap_or(i64::MAX)
                .saturating_sub(self.group_pods);
            return allocatable.allowed_pods.saturating_sub(others);
        }
        let is_standard = matches!(
            name,
            resources::CPU | resources::MEMORY | resources::EPHEMERAL_STORAGE
        );
        if !is_standard && !allocatable.scalar.contains_key(name) {
            return 0;
        }
        allocatable.get(name).saturating_sub(
            requested
                .get(name)
                .saturating_sub(self.group_requests.get(name)),
        )
    }
}

impl Plugin for Coscheduling {
    fn name(&self) -> &'static str {
        NAME
    }

    /// A new pod of the group, or a `PodGroup` created or changed.
    fn events(&self) -> &'static [ClusterEvent] {
        &[ClusterEvent::PodAdd, ClusterEvent::Other]
    }

    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }

    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }

    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        Some(self)
    }

    fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
        Some(self)
    }

    fn as_permit(&self) -> Option<&dyn PermitPlugin> {
        Some(self)
    }
}

impl PreEnqueuePlugin for Coscheduling {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let Some(group) = group_name(pod) else {
            return Status::success();
        };
        let Some(pg) = self.pod_group(&pod.namespace, group) else {
            return Status::pending("PodGroup not found");
        };
        let members = self.count_members(pod, group);
        if members < pg.min_member {
            return Status::pending(format!(
                "pre-enqueue pod {} cannot find enough sibling pods, current pods number: {members}, minMember of group: {}",
                pod.name, pg.min_member
            ));
        }
        Status::success()
    }
}

impl PreFilterPlugin for Coscheduling {
    fn pre_filter(
        &self,
        _state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let Some(group) = group_name(pod) else {
            return (None, Status::skip());
        };
        let Some(pg) = self.pod_group(&pod.namespace, group) else {
            // Permit refuses it; nothing to check here.
            return (None, Status::skip());
        };
        let full_name = format!("{}/{group}", pod.namespace);
        let now = Instant::now();
        {
            let mut groups = lock(&self.groups);
            groups.backed_off.retain(|_, until| *until > now);
            if groups.backed_off.contains_key(&full_name) {
                return (
                    None,
                    Status::unresolvable(format!("podGroup {full_name} failed recently")),
                );
            }
        }
        let members = self.count_members(pod, group);
        if members < pg.min_member {
            return (
                None,
                Status::unresolvable(format!(
                    "pre-filter pod {} cannot find enough sibling pods, current pods number: {members}, minMember of group: {}",
                    pod.name, pg.min_member
                )),
            );
        }
        let Some(min_resources) = pg.min_resources.as_ref() else {
            return (None, Status::success());
        };
        {
            let mut groups = lock(&self.groups);
            groups.permitted.retain(|_, until| *until > now);
            if groups.permitted.contains_key(&full_name) {
                return (None, Status::success());
            }
        }
        if let Err(gap) = Coscheduling::check_min_resources(
            min_resources,
            pg.min_member,
            snapshot,
            &pod.namespace,
            group,
        ) {
            return (None, Status::unresolvable(gap));
        }
        lock(&self.groups)
            .permitted
            .insert(full_name, now + self.args.permit_waiting_time);
        (None, Status::success())
    }
}

impl PostFilterPlugin for Coscheduling {
    fn post_filter(
        &self,
        _context: &PostFilterContext<'_>,
        _state: &CycleState,
        pod: &Arc<PodInfo>,
        _statuses: &crate::framework::NodeStatuses,
    ) -> (Option<PostFilterResult>, Status) {
        let Some(group) = group_name(pod) else {
            return (None, Status::skip());
        };
        let Some(pg) = self.pod_group(&pod.namespace, group) else {
            return (None, Status::unschedulable("can not find pod group"));
        };
        let full_name = format!("{}/{group}", pod.namespace);
        // Enough members are placed already: this one's failure does not sink the group.
        let assigned = self.count_assigned(pod, &full_name, group);
        if assigned >= pg.min_member {
            return (None, Status::new(Code::Unschedulable, Vec::new()));
        }
        // Close to the quorum: let the remaining members try.
        let missing = pg.min_member - assigned;
        if missing.saturating_mul(100) <= self.args.reject_percentage.saturating_mul(pg.min_member)
        {
            return (None, Status::new(Code::Unschedulable, Vec::new()));
        }
        // If this member fits nowhere, its siblings very likely will not either: release
        // what the waiting ones hold.
        self.reject_waiting(&pod.namespace, group, "optimistic rejection in PostFilter");
        let mut groups = lock(&self.groups);
        if let Some(backoff) = self.args.pod_group_backoff
            && self.count_members(pod, group) >= pg.min_member
        {
            groups
                .backed_off
                .insert(full_name.clone(), Instant::now() + backoff);
        }
        groups.permitted.remove(&full_name);
        (
            None,
            Status::unschedulable(format!(
                "PodGroup {full_name} gets rejected due to Pod {} is unschedulable even after PostFilter",
                pod.name
            )),
        )
    }
}

impl ReservePlugin for Coscheduling {
    fn reserve(&self, _state: &mut CycleState, _pod: &PodInfo, _node: &str) -> Status {
        Status::success()
    }

    fn unreserve(&self, _state: &mut CycleState, pod: &PodInfo, _node: &str) {
        let Some(group) = group_name(pod) else {
            return;
        };
        let full_name = format!("{}/{group}", pod.namespace);
        {
            let mut groups = lock(&self.groups);
            if let Some(assumed) = groups.assumed.get_mut(&full_name) {
                assumed.remove(&pod.uid);
                if assumed.is_empty() {
                    groups.assumed.remove(&full_name);
                }
            }
        }
        if self.pod_group(&pod.namespace, group).is_none() {
            return;
        }
        self.reject_waiting(&pod.namespace, group, "rejection in Unreserve");
        lock(&self.groups).permitted.remove(&full_name);
    }
}

impl PermitPlugin for Coscheduling {
    fn permit(
        &self,
        _state: &mut CycleState,
        pod: &Arc<PodInfo>,
        _node: &str,
    ) -> (Status, Duration) {
        let Some(group) = group_name(pod) else {
            return (Status::success(), Duration::ZERO);
        };
        let Some(pg) = self.pod_group(&pod.namespace, group) else {
            return (Status::unschedulable("PodGroup not found"), Duration::ZERO);
        };
        let full_name = format!("{}/{group}", pod.namespace);
        let assigned = self.count_assigned(pod, &full_name, group);
        lock(&self.groups)
            .assumed
            .entry(full_name)
            .or_default()
            .insert(pod.uid.clone());
        if assigned.saturating_add(1) >= pg.min_member {
            for waiting in self.handle.waiting_pods.all() {
                if member_of(&waiting.pod, &pod.namespace, group) {
                    waiting.allow(NAME);
                }
            }
            return (Status::success(), Duration::ZERO);
        }
        let timeout = pg
            .schedule_timeout_seconds
            .filter(|s| *s > 0)
            .map(|s| Duration::from_secs(s.unsigned_abs()))
            .unwrap_or(self.args.permit_waiting_time);
        (Status::wait(), timeout)
    }
}

#[cfg(test)]
mod tests;
