//! The scheduling loop and the binding cycle. The loop pops one pod at a time, decides its
//! node on a snapshot of the cache ([`crate::schedule`]), assumes it there (so the next
//! decision sees the room taken), runs Reserve and Permit, and hands the pod to a binding
//! task: waiting at Permit if asked, then PreBind, Bind, PostBind — off the loop, so a slow
//! bind never stalls the next decision. A pod that fits nowhere goes through PostFilter
//! (preemption), is marked `PodScheduled=False` with the reasons and an event, and waits in
//! the queue for an event that could help; a failed bind is forgotten and backed off.

use crate::cache::Cache;
use crate::framework::{
    ApiClient, Code, CycleState, Framework, PodInfo, PostFilterContext, Snapshot, Status,
};
use crate::queue::{Popped, SchedulingQueue};
use crate::schedule::{self, Failure};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// Decides and binds.
pub struct Scheduler {
    pub profiles: HashMap<String, Arc<Framework>>,
    pub queue: Arc<SchedulingQueue>,
    pub cache: Arc<Mutex<Cache>>,
    pub client: Arc<dyn ApiClient>,
    /// The scheduler's `percentageOfNodesToScore` (profiles may override it).
    pub percentage: u32,
    start: AtomicUsize,
    /// The loop's snapshot, brought up to date from the cache before each cycle.
    snapshot: Mutex<Snapshot>,
}

impl Scheduler {
    pub fn new(
        profiles: HashMap<String, Arc<Framework>>,
        queue: Arc<SchedulingQueue>,
        cache: Arc<Mutex<Cache>>,
        client: Arc<dyn ApiClient>,
        percentage: u32,
    ) -> Scheduler {
        Scheduler {
            profiles,
            queue,
            cache,
            client,
            percentage,
            start: AtomicUsize::new(0),
            snapshot: Mutex::new(Snapshot::default()),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Schedules pods while `leading` is true.
    pub async fn run(self: Arc<Self>, mut leading: watch::Receiver<bool>) {
        loop {
            if !*leading.borrow() {
                if leading.changed().await.is_err() {
                    return;
                }
                continue;
            }
            let popped = tokio::select! {
                popped = self.queue.pop() => popped,
                _ = leading.changed() => continue,
            };
            self.schedule_one(popped);
            // Let the binding tasks and informers run between decisions.
            tokio::task::yield_now().await;
        }
    }

    /// One scheduling cycle (synchronous: the binding cycle is spawned).
    pub fn schedule_one(self: &Arc<Self>, popped: Popped) {
        let pod = popped.pod.info.clone();
        let Some(framework) = self.profiles.get(pod.scheduler_name()).cloned() else {
            self.queue.done(&pod.uid);
            return;
        };
        if pod.terminating() || self.cache().knows(&pod.uid) {
            self.queue.done(&pod.uid);
            return;
        }
        let mut snapshot = self.snapshot.lock().unwrap_or_else(|p| p.into_inner());
        self.cache().update_snapshot(&mut snapshot);
        let snapshot = &*snapshot;
        let mut state = CycleState::new();
        let percentage = framework
            .percentage_of_nodes_to_score
            .unwrap_or(self.percentage);
        let queue = self.queue.clone();
        let any_nominated = queue.has_nominations();
        let nominated = move |node: &str| {
            if any_nominated {
                queue.nominated_to(node)
            } else {
                Vec::new()
            }
        };
        let outcome = schedule::schedule(
            &framework,
            &mut state,
            &pod,
            snapshot,
            percentage,
            &self.start,
            &nominated,
        );
        match outcome {
            Ok(decision) => self.assume(framework, state, popped, decision.node),
            Err(Failure::Unfit(fit)) => {
                // Every node a PreFilter rejected counts as rejected by it, for preemption.
                let mut statuses = fit.statuses.clone();
                if let Some(status) = &fit.pre_filter {
                    for node in &snapshot.nodes {
                        statuses.insert(node.name.clone(), status.clone());
                    }
                }
                let context = PostFilterContext {
                    framework: &framework,
                    snapshot,
                };
                let (result, post) = framework.run_post_filter(&context, &state, &pod, &statuses);
                let post_message = if post.is_success() {
                    None
                } else {
                    Some(post.message())
                };
                match result {
                    Some(result) if post.is_success() && !result.nominated_node.is_empty() => {
                        self.preempt(&framework, &pod, result);
                    }
                    // No room anywhere: a nomination from an earlier cycle no longer holds.
                    _ if self.queue.nominated_node(&pod.uid).is_some()
                        || pod.nominated_node_name().is_some() =>
                    {
                        self.clear_nomination(&pod);
                    }
                    _ => {}
                }
                let message = fit.message(post_message.as_deref());
                tracing::debug!(pod = %pod.key, %message, "unschedulable");
                self.record_unschedulable(&pod, "Unschedulable", message);
                self.queue
                    .unschedulable(popped.pod, popped.cycle, fit.plugins());
            }
            Err(Failure::Error(status)) => {
                tracing::warn!(pod = %pod.key, error = %status, "scheduling error");
                self.record_unschedulable(&pod, "SchedulerError", status.message());
                self.queue.requeue_after_error(popped.pod);
            }
        }
    }

    /// Acts on preemption: the pod is nominated to the node (at once in the queue, so the
    /// next cycles leave the room to it), the victims are evicted (marked
    /// `DisruptionTarget`, then deleted), and lower-priority nominations there cleared.
    fn preempt(
        &self,
        framework: &Arc<Framework>,
        pod: &Arc<PodInfo>,
        result: crate::framework::PostFilterResult,
    ) {
        self.queue.nominate(&pod.uid, &result.nominated_node);
        let client = self.client.clone();
        let framework = framework.clone();
        let pod = pod.clone();
        tokio::spawn(async move {
            tracing::info!(
                preemptor = %pod.key,
                node = %result.nominated_node,
                victims = result.victims.len(),
                "preempting"
            );
            if let Err(error) = client.nominate(&pod, &result.nominated_node).await {
                tracing::debug!(pod = %pod.key, %error, "cannot set the nominated node");
            }
            if let Err(error) = crate::plugins::default_preemption::prepare_candidate(
                &framework.handle,
                &pod,
                &result,
            )
            .await
            {
                tracing::warn!(preemptor = %pod.key, %error, "cannot evict a preemption victim");
            }
        });
    }

    /// Drops the pod's nomination, here and in its status.
    fn clear_nomination(&self, pod: &Arc<PodInfo>) {
        self.queue.nominate(&pod.uid, "");
        if pod.nominated_node_name().is_none() {
            return;
        }
        let client = self.client.clone();
        let pod = pod.clone();
        tokio::spawn(async move {
            if let Err(error) = client.nominate(&pod, "").await {
                tracing::debug!(pod = %pod.key, %error, "cannot clear the nominated node");
            }
        });
    }

    fn record_unschedulable(&self, pod: &Arc<PodInfo>, reason: &'static str, message: String) {
        let client = self.client.clone();
        let pod = pod.clone();
        tokio::spawn(async move {
            if let Err(error) = client.unschedulable(&pod, reason, &message).await {
                tracing::debug!(pod = %pod.key, %error, "cannot record why the pod is unschedulable");
            }
        });
    }

    /// Assumes the pod on its node, reserves and permits, then binds off the loop.
    fn assume(
        self: &Arc<Self>,
        framework: Arc<Framework>,
        mut state: CycleState,
        popped: Popped,
        node: String,
    ) {
        let pod = popped.pod.info.clone();
        self.cache().assume(pod.clone(), &node);
        // Placed: a nomination no longer holds room for it.
        self.queue.nominate(&pod.uid, "");
        let status = framework.run_reserve(&mut state, &pod, &node);
        if !status.is_success() {
            framework.run_unreserve(&mut state, &pod, &node);
            self.fail(&pod, popped, &status);
            return;
        }
        let status = framework.run_permit(&mut state, &pod, &node);
        if !status.is_success() && status.code() != Code::Wait {
            framework.run_unreserve(&mut state, &pod, &node);
            self.fail(&pod, popped, &status);
            return;
        }
        let waiting = status.code() == Code::Wait;
        let this = self.clone();
        tokio::spawn(async move {
            this.bind(framework, state, popped, node, waiting).await;
        });
    }

    /// The binding cycle.
    async fn bind(
        self: Arc<Self>,
        framework: Arc<Framework>,
        mut state: CycleState,
        popped: Popped,
        node: String,
        waiting: bool,
    ) {
        let pod = popped.pod.info.clone();
        if waiting {
            let status = match framework.handle.waiting_pods.get(&pod.uid) {
                Some(held) => framework.handle.waiting_pods.wait(&held).await,
                None => Status::error("the pod was not waiting at permit"),
            };
            if !status.is_success() {
                framework.run_unreserve(&mut state, &pod, &node);
                self.fail(&pod, popped, &status);
                return;
            }
        }
        let mut status = framework.run_pre_bind(&state, &pod, &node).await;
        if status.is_success() {
            status = framework.run_bind(&state, &pod, &node).await;
        }
        if !status.is_success() {
            tracing::debug!(pod = %pod.key, %node, error = %status, "binding failed");
            framework.run_unreserve(&mut state, &pod, &node);
            self.cache().forget(&pod.uid);
            self.record_unschedulable(&pod, "SchedulerError", status.message());
            self.queue.requeue_after_error(popped.pod);
            // The room it held is free again.
            self.queue
                .on_event(crate::framework::ClusterEvent::PodDelete);
            return;
        }
        framework.run_post_bind(&state, &pod, &node).await;
    }

    /// A pod rejected after it was assumed (Reserve, Permit): it is forgotten and waits.
    fn fail(&self, pod: &Arc<PodInfo>, popped: Popped, status: &Status) {
        self.cache().forget(&pod.uid);
        self.queue
            .on_event(crate::framework::ClusterEvent::PodDelete);
        let message = status.message();
        match status.code() {
            Code::Error => {
                self.record_unschedulable(pod, "SchedulerError", message);
                self.queue.requeue_after_error(popped.pod);
            }
            _ => {
                self.record_unschedulable(pod, "Unschedulable", message);
                let plugins: HashSet<&'static str> = status.plugin().into_iter().collect();
                self.queue.unschedulable(popped.pod, popped.cycle, plugins);
            }
        }
    }
}
