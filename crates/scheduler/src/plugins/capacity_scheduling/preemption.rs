//! Capacity scheduling's preemption: Kubernetes' preemption flow (eligibility, candidate
//! nodes, a what-if per node, the choice of node) with scheduler-plugins' choice of victims
//! by quota: reclaim what other namespaces borrow, or make room among the pod's own
//! namespace by priority.

use super::NAME;
use super::quota::QuotaState;
use crate::framework::{
    Code, CycleState, Framework, Lister, NodeInfo, NodeStatuses, PodInfo, PostFilterContext,
    PostFilterResult, Status,
};
use k8s_openapi::jiff::Timestamp;
use kyb_apimachinery::labels::Selector;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Why a node is left out of the search.
const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
const TERMINATING: &str = "not eligible due to a terminating pod on the nominated node.";

/// A PodDisruptionBudget as preemption reads it.
pub struct Pdb {
    namespace: String,
    selector: Selector,
    allowed: i64,
    disrupted: HashSet<String>,
}

impl Pdb {
    /// The budgets the informer holds (those whose selector selects something).
    pub fn list(lister: &dyn Lister) -> Vec<Pdb> {
        lister
            .objects("policy", "poddisruptionbudgets")
            .iter()
            .filter_map(|pdb| {
                let selector = pdb["spec"].get("selector").filter(|s| !s.is_null())?;
                let selector = Selector::from_label_selector(selector).ok()?;
                // A missing or empty selector matches no pods.
                if selector.is_empty() {
                    return None;
                }
                let status = &pdb["status"];
                Some(Pdb {
                    namespace: pdb["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    selector,
                    allowed: status["disruptionsAllowed"].as_i64().unwrap_or(0),
                    disrupted: status["disruptedPods"]
                        .as_object()
                        .map(|m| m.keys().cloned().collect())
                        .unwrap_or_default(),
                })
            })
            .collect()
    }
}

/// A node where preemption makes room, and what it evicts there.
struct Candidate {
    node: String,
    victims: Vec<Arc<PodInfo>>,
    pdb_violations: usize,
}

fn quota_state(state: &CycleState) -> Result<&QuotaState, Status> {
    state
        .read::<QuotaState>(NAME)
        .ok_or_else(|| Status::error(format!("error reading {NAME:?} from cycleState")))
}

/// When a pod started (now, if it has not).
fn start_time(pod: &PodInfo, now: Timestamp) -> Timestamp {
    pod.pod
        .status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map_or(now, |t| t.0)
}

/// Capacity scheduling's PostFilter: the node to nominate and the pods to evict there, or
/// why there is none (unresolvable: the default preemption must not overrule it).
pub fn preempt(
    context: &PostFilterContext<'_>,
    state: &CycleState,
    pod: &Arc<PodInfo>,
    statuses: &NodeStatuses,
    pdbs: &[Pdb],
) -> (Option<PostFilterResult>, Status) {
    let snapshot = context.snapshot;
    if snapshot.is_empty() {
        return (None, Status::error("no nodes available"));
    }
    let quotas = match quota_state(state) {
        Ok(quotas) => quotas,
        Err(status) => return (None, status),
    };
    if let Err(reason) = eligible(context, statuses, pod, quotas) {
        return (None, Status::unresolvable(reason));
    }
    // The nodes where evicting pods may help: those a Filter found short of something, and
    // (when this plugin's PreFilter refused the pod on quota grounds) every node it
    // refused.
    let rejected = quotas.rejected;
    let potential: Vec<&Arc<NodeInfo>> = snapshot
        .nodes
        .iter()
        .filter(|node| match statuses.get(&node.name) {
            Some(status) => status.code() == Code::Unschedulable || status.plugin() == Some(NAME),
            None => rejected,
        })
        .collect();
    let now = Timestamp::now();
    let mut candidates = Vec::new();
    let mut failures: Vec<Status> = Vec::new();
    let mut errors: Vec<Status> = Vec::new();
    for node in &potential {
        let mut what_if_state = state.clone();
        let mut what_if_node = NodeInfo::clone(node);
        match select_victims(
            context.framework,
            &mut what_if_state,
            pod,
            &mut what_if_node,
            pdbs,
            now,
        ) {
            Ok((victims, _)) if victims.is_empty() => errors.push(Status::error(format!(
                "expected at least one victim pod on node {:?}",
                node.name
            ))),
            Ok((victims, pdb_violations)) => candidates.push(Candidate {
                node: node.name.clone(),
                victims,
                pdb_violations,
            }),
            Err(status) if status.code() == Code::Error => errors.push(status),
            Err(status) => failures.push(status),
        }
    }
    if candidates.is_empty() {
        if let Some(error) = errors.into_iter().next() {
            return (None, error);
        }
        return (
            None,
            Status::unresolvable(no_room(snapshot.len(), &failures)),
        );
    }
    // Non-violating candidates first, as Kubernetes lists them.
    candidates.sort_by_key(|c| c.pdb_violations > 0);
    match pick(candidates, now) {
        Some(best) => (
            Some(PostFilterResult {
                nominated_node: best.node,
                victims: best.victims,
            }),
            Status::success(),
        ),
        None => (
            None,
            Status::unresolvable("no candidate node for preemption"),
        ),
    }
}

/// Kubernetes' FitError message: `0/N nodes are available: <count> <reason>, ….`, the
/// nodes not tried counting as "Preemption is not helpful for scheduling".
fn no_room(all_nodes: usize, failures: &[Status]) -> String {
    let mut reasons: HashMap<String, usize> = HashMap::new();
    for failure in failures {
        for reason in failure.reasons() {
            *reasons.entry(reason.clone()).or_default() += 1;
        }
    }
    let untried = all_nodes.saturating_sub(failures.len());
    if untried > 0 {
        *reasons.entry(NOT_HELPFUL.to_string()).or_default() += untried;
    }
    let mut histogram: Vec<String> = reasons
        .into_iter()
        .map(|(reason, count)| format!("{count} {reason}"))
        .collect();
    histogram.sort();
    format!(
        "0/{all_nodes} nodes are available: {}.",
        histogram.join(", ")
    )
}

/// Whether the pod may preempt: not with `preemptionPolicy: Never`, and not while pods it
/// may have preempted before are still terminating on its nominated node.
fn eligible(
    context: &PostFilterContext<'_>,
    statuses: &NodeStatuses,
    pod: &PodInfo,
    state: &QuotaState,
) -> Result<(), &'static str> {
    if pod.never_preempts() {
        return Err("not eligible due to preemptionPolicy=Never.");
    }
    let nominated = pod
        .pod
        .status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .filter(|n| !n.is_empty());
    let Some(nominated) = nominated else {
        return Ok(());
    };
    // The nominated node cannot take the pod whatever is evicted: look elsewhere.
    if statuses
        .get(nominated)
        .is_some_and(|s| s.code() == Code::UnschedulableAndUnresolvable && s.plugin() != Some(NAME))
    {
        return Ok(());
    }
    let Some(node) = context.snapshot.get(nominated) else {
        return Ok(());
    };
    let quotas = &state.quotas;
    match quotas.index_of(&pod.namespace) {
        Some(own) => {
            let over_min = state.used_over_min_with(own, &state.nominated_in_quota_with_pod);
            for other in node.pods.iter().filter(|p| p.terminating()) {
                let Some(theirs) = quotas.index_of(&other.namespace) else {
                    continue;
                };
                if other.namespace == pod.namespace && other.priority < pod.priority {
                    return Err(TERMINATING);
                }
                if other.namespace != pod.namespace && !over_min && state.used_over_min(theirs) {
                    return Err(TERMINATING);
                }
            }
        }
        None => {
            let terminating_below = node.pods.iter().any(|other| {
                quotas.index_of(&other.namespace).is_none()
                    && other.terminating()
                    && other.priority < pod.priority
            });
            if terminating_below {
                return Err(TERMINATING);
            }
        }
    }
    Ok(())
}

/// Takes a pod off the what-if node, updating the plugins' PreFilter state.
fn remove(
    framework: &Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    node: &mut NodeInfo,
    victim: &Arc<PodInfo>,
) -> Result<(), Status> {
    node.remove_pod(&victim.key);
    let status = framework.run_remove_pod(state, pod, victim, node);
    if status.is_success() {
        Ok(())
    } else {
        Err(Status::new(Code::Error, status.reasons().to_vec()))
    }
}

/// Puts a pod back on the what-if node, updating the plugins' PreFilter state.
fn add(
    framework: &Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    node: &mut NodeInfo,
    victim: &Arc<PodInfo>,
) -> Result<(), Status> {
    node.add_pod(victim.clone());
    let status = framework.run_add_pod(state, pod, victim, node);
    if status.is_success() {
        Ok(())
    } else {
        Err(Status::new(Code::Error, status.reasons().to_vec()))
    }
}

/// The fewest pods to evict from `node` for `pod` to fit there, within the quota rules,
/// and how many of them a PodDisruptionBudget protects.
fn select_victims(
    framework: &Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    node: &mut NodeInfo,
    pdbs: &[Pdb],
    now: Timestamp,
) -> Result<(Vec<Arc<PodInfo>>, usize), Status> {
    let (own, pod_request, nominated_in_quota, nominated_all, own_over_min) = {
        let quotas = quota_state(state)?;
        let own = quotas.quotas.index_of(&pod.namespace);
        (
            own,
            quotas.pod_request.clone(),
            quotas.nominated_in_quota_with_pod.clone(),
            quotas.nominated_with_pod.clone(),
            own.is_some_and(|q| quotas.used_over_min_with(q, &quotas.nominated_in_quota_with_pod)),
        )
    };
    let mut pods: Vec<(Arc<PodInfo>, Timestamp)> = node
        .pods
        .iter()
        .map(|p| (p.clone(), start_time(p, now)))
        .collect();
    // Least important first: the first evicted while quotas are checked pod by pod.
    pods.sort_by(|a, b| a.0.priority.cmp(&b.0.priority).then(b.1.cmp(&a.1)));
    let mut potential = Vec::new();
    for (other, started) in pods {
        let victim = {
            let quotas = quota_state(state)?;
            let theirs = quotas.quotas.index_of(&other.namespace);
            match (own, theirs) {
                // Over its min: only lower-priority pods of its own namespace.
                (Some(_), Some(_)) if own_over_min => {
                    other.namespace == pod.namespace && other.priority < pod.priority
                }
                // Within its min: what namespaces over their min borrow.
                (Some(_), Some(theirs)) => {
                    other.namespace != pod.namespace && quotas.used_over_min(theirs)
                }
                (Some(_), None) => false,
                (None, Some(_)) => false,
                (None, None) => other.priority < pod.priority,
            }
        };
        if victim {
            remove(framework, state, pod, node, &other)?;
            potential.push((other, started));
        }
    }
    if potential.is_empty() {
        return Err(Status::unresolvable(format!(
            "No victims found on node {} for preemptor pod {}",
            node.name, pod.name
        )));
    }
    let status = framework.run_filter(state, pod, node);
    if !status.is_success() {
        return Err(status);
    }
    if let Some(own) = own {
        let quotas = quota_state(state)?;
        if quotas.used_over_max_with(own, &pod_request)
            || quotas.aggregated_used_over_min_with(&pod_request)
        {
            return Err(Status::unschedulable("global quota max exceeded"));
        }
    }
    // Reprieve as many as possible, the most important first, those a budget protects
    // before the others.
    potential.sort_by(|a, b| b.0.priority.cmp(&a.0.priority).then(a.1.cmp(&b.1)));
    let (violating, non_violating) = split_by_pdb(potential, pdbs);
    let mut victims = Vec::new();
    let mut violations = 0;
    let reprieves = violating
        .into_iter()
        .map(|p| (p, true))
        .chain(non_violating.into_iter().map(|p| (p, false)));
    for (other, protected) in reprieves {
        add(framework, state, pod, node, &other)?;
        let fits = framework.run_filter(state, pod, node).is_success();
        let over_quota = fits
            && own.is_some_and(|own| {
                quota_state(state).is_ok_and(|q| {
                    q.used_over_max_with(own, &nominated_in_quota)
                        || q.aggregated_used_over_min_with(&nominated_all)
                })
            });
        if !fits || over_quota {
            remove(framework, state, pod, node, &other)?;
            if !fits && protected {
                violations += 1;
            }
            victims.push(other);
        }
    }
    Ok((victims, violations))
}

/// Splits pods (in order) into those whose eviction would violate a PodDisruptionBudget and
/// the others.
fn split_by_pdb(
    pods: Vec<(Arc<PodInfo>, Timestamp)>,
    pdbs: &[Pdb],
) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
    let mut allowed: Vec<i64> = pdbs.iter().map(|p| p.allowed).collect();
    let mut violating = Vec::new();
    let mut non_violating = Vec::new();
    for (pod, _) in pods {
        let mut violated = false;
        let labelled = pod
            .pod
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| !l.is_empty());
        if labelled {
            for (pdb, allowed) in pdbs.iter().zip(allowed.iter_mut()) {
                if pdb.namespace != pod.namespace
                    || !pdb.selector.matches_pairs(|key| pod.label(key))
                    || pdb.disrupted.contains(&pod.name)
                {
                    continue;
                }
                *allowed -= 1;
                if *allowed < 0 {
                    violated = true;
                }
            }
        }
        if violated {
            violating.push(pod);
        } else {
            non_violating.push(pod);
        }
    }
    (violating, non_violating)
}

/// Kubernetes' choice among candidate nodes: the fewest budget violations, then the lowest
/// priority of the first victim, the smallest sum of priorities, the fewest victims, the
/// latest start of the most important victims, and the first node.
fn pick(mut candidates: Vec<Candidate>, now: Timestamp) -> Option<Candidate> {
    let offset = i128::from(i32::MAX) + 1;
    let scores: [&dyn Fn(&Candidate) -> i128; 5] = [
        &|c| -(c.pdb_violations as i128),
        &|c| -c.victims.first().map_or(0, |v| i128::from(v.priority)),
        &|c| {
            -c.victims
                .iter()
                .map(|v| i128::from(v.priority) + offset)
                .sum::<i128>()
        },
        &|c| -(c.victims.len() as i128),
        &|c| earliest_start_of_most_important(&c.victims, now),
    ];
    for score in scores {
        if candidates.len() == 1 {
            break;
        }
        let best = candidates.iter().map(score).max().unwrap_or(i128::MIN);
        candidates.retain(|c| score(c) == best);
    }
    candidates.into_iter().next()
}

/// The earliest start among the highest-priority victims (nanoseconds).
fn earliest_start_of_most_important(victims: &[Arc<PodInfo>], now: Timestamp) -> i128 {
    let Some(top) = victims.iter().map(|v| v.priority).max() else {
        return i128::MIN;
    };
    victims
        .iter()
        .filter(|v| v.priority == top)
        .map(|v| start_time(v, now).as_nanosecond())
        .min()
        .unwrap_or(i128::MIN)
}
