//! The scheduling queue: pods waiting to be scheduled, in three places as in
//! kube-scheduler — the active queue (ordered by the profile's QueueSort: priority, then
//! arrival), the backoff queue (pods that failed recently, each for an exponential backoff
//! of 1 s doubling up to 10 s by default), and the unschedulable pods (waiting for a
//! cluster event that could make them fit: a node added or changed, a pod deleted, …;
//! after five minutes they are tried again anyway). Pods refused by PreEnqueue (scheduling
//! gates, incomplete gangs) wait with the unschedulable ones and are checked again on
//! events.

use crate::framework::{ClusterEvent, Framework, PodInfo, QueuedPod};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How long an unschedulable pod waits before it is tried again without an event.
const MAX_UNSCHEDULABLE: Duration = Duration::from_secs(5 * 60);

/// The profile ordering decides the active queue.
struct Active {
    pod: QueuedPod,
    order: Arc<Framework>,
}

impl PartialEq for Active {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Active {}
impl PartialOrd for Active {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Active {
    /// BinaryHeap pops the greatest: the pod that goes first is the greatest.
    fn cmp(&self, other: &Self) -> Ordering {
        if self.order.less(&self.pod, &other.pod) {
            Ordering::Greater
        } else if self.order.less(&other.pod, &self.pod) {
            Ordering::Less
        } else {
            Ordering::Equal
        }
    }
}

/// A pod backing off until `until`.
struct Backoff {
    until: Instant,
    pod: QueuedPod,
}

impl PartialEq for Backoff {
    fn eq(&self, other: &Self) -> bool {
        self.until == other.until
    }
}
impl Eq for Backoff {}
impl PartialOrd for Backoff {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Backoff {
    /// The earliest expiry is the greatest (a min-heap by time).
    fn cmp(&self, other: &Self) -> Ordering {
        other.until.cmp(&self.until)
    }
}

/// An unschedulable (or gated) pod and what rejected it.
struct Parked {
    pod: QueuedPod,
    /// The plugins that rejected it (their events may help); empty: any event.
    plugins: HashSet<&'static str>,
    since: Instant,
    /// Refused by PreEnqueue rather than by a scheduling attempt.
    gated: bool,
}

/// Where a pod is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Active,
    Backoff,
    Parked,
    /// Popped for a scheduling attempt.
    InFlight,
}

#[derive(Default)]
struct Inner {
    active: BinaryHeap<Active>,
    backoff: BinaryHeap<Backoff>,
    parked: HashMap<String, Parked>,
    /// Every pod the queue holds (or has in flight), by UID, with its latest info.
    places: HashMap<String, (Place, Arc<PodInfo>)>,
    /// The cycle of the latest event of each kind: a pod that fails an attempt during
    /// which an event it cares about happened goes to backoff (the event may have made it
    /// fit) rather than waiting for another one. One entry per kind, so an idle scheduler
    /// watching busy nodes keeps nothing.
    events_since: Vec<(u64, ClusterEvent)>,
    /// Counts scheduling attempts (pops).
    cycle: u64,
    /// Pods nominated to nodes by preemption: node → uids.
    nominated: HashMap<String, HashSet<String>>,
    /// Unscheduled pods arrived or changed since gated pods were last asked PreEnqueue
    /// again; asked once per pop, so a burst of siblings costs one pass.
    recheck_gated: bool,
}

/// The queue, shared by the informers (adds, updates, events) and the scheduling loop
/// (pops, requeues).
pub struct SchedulingQueue {
    inner: Mutex<Inner>,
    ready: Notify,
    initial_backoff: Duration,
    max_backoff: Duration,
    /// The profiles by scheduler name (for ordering and PreEnqueue).
    profiles: HashMap<String, Arc<Framework>>,
}

/// A popped pod and the cycle it is attempted in.
pub struct Popped {
    pub pod: QueuedPod,
    pub cycle: u64,
}

impl SchedulingQueue {
    pub fn new(
        profiles: HashMap<String, Arc<Framework>>,
        initial_backoff: Duration,
        max_backoff: Duration,
    ) -> SchedulingQueue {
        SchedulingQueue {
            inner: Mutex::new(Inner::default()),
            ready: Notify::new(),
            initial_backoff,
            max_backoff,
            profiles,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn profile(&self, pod: &PodInfo) -> Option<&Arc<Framework>> {
        self.profiles.get(pod.scheduler_name())
    }

    /// Whether a pod is for one of this scheduler's profiles.
    pub fn responsible_for(&self, pod: &PodInfo) -> bool {
        self.profiles.contains_key(pod.scheduler_name())
    }

    /// A new unscheduled pod (or one seen again after a relist).
    pub fn add(&self, pod: Arc<PodInfo>) {
        let Some(profile) = self.profile(&pod).cloned() else {
            return;
        };
        let mut inner = self.lock();
        if inner.places.contains_key(&pod.uid) {
            drop(inner);
            self.update(pod);
            return;
        }
        let now = Instant::now();
        let queued = QueuedPod {
            info: pod.clone(),
            timestamp: now,
            attempts: 0,
            initial_attempt: now,
        };
        // A nomination made before (by this scheduler before a restart, or another one).
        if let Some(node) = pod.nominated_node_name() {
            Self::set_nomination(&mut inner, &pod.uid, node);
        }
        self.place(&mut inner, &profile, queued);
        // A new pod may complete what gated pods wait for (a gang's siblings).
        inner.recheck_gated = inner.parked.values().any(|p| p.gated);
        drop(inner);
        self.ready.notify_one();
    }

    /// Puts a pod in the active queue, or parks it if PreEnqueue refuses.
    fn place(&self, inner: &mut Inner, profile: &Arc<Framework>, pod: QueuedPod) {
        let uid = pod.info.uid.clone();
        let info = pod.info.clone();
        if profile.run_pre_enqueue(&pod.info).is_success() {
            inner.places.insert(uid, (Place::Active, info));
            inner.active.push(Active {
                pod,
                order: profile.clone(),
            });
        } else {
            inner.places.insert(uid.clone(), (Place::Parked, info));
            inner.parked.insert(
                uid,
                Parked {
                    pod,
                    plugins: HashSet::new(),
                    since: Instant::now(),
                    gated: true,
                },
            );
        }
    }

    /// A pod's new state: the queue keeps the newest info; a parked pod whose spec
    /// changed is worth another try.
    pub fn update(&self, pod: Arc<PodInfo>) {
        let mut inner = self.lock();
        let Some((place, info)) = inner.places.get_mut(&pod.uid) else {
            drop(inner);
            self.add(pod);
            return;
        };
        *info = pod.clone();
        let place = *place;
        if let Some(node) = pod.nominated_node_name() {
            Self::set_nomination(&mut inner, &pod.uid, node);
        }
        inner.recheck_gated = inner.parked.values().any(|p| p.gated);
        match place {
            Place::Parked => {
                if let Some(mut parked) = inner.parked.remove(&pod.uid) {
                    parked.pod.info = pod.clone();
                    if let Some(profile) = self.profile(&pod).cloned() {
                        self.place(&mut inner, &profile, parked.pod);
                        drop(inner);
                        self.ready.notify_one();
                    }
                }
            }
            // Heaps are refreshed when popped (the latest info is in `places`).
            Place::Active | Place::Backoff | Place::InFlight => {}
        }
    }

    /// A pod gone (deleted, or scheduled by someone else).
    pub fn delete(&self, uid: &str) {
        let mut inner = self.lock();
        inner.places.remove(uid);
        inner.parked.remove(uid);
        if !inner.nominated.is_empty() {
            Self::set_nomination(&mut inner, uid, "");
        }
    }

    /// Waits for the next pod to schedule.
    pub async fn pop(&self) -> Popped {
        loop {
            let notified = self.ready.notified();
            if let Some(popped) = self.try_pop() {
                return popped;
            }
            // Backoff expiry is not announced: look again when the next one is due.
            let wait = {
                let inner = self.lock();
                inner
                    .backoff
                    .peek()
                    .map(|b| b.until.saturating_duration_since(Instant::now()))
                    .unwrap_or(Duration::from_secs(1))
                    .max(Duration::from_millis(1))
            };
            let _ = tokio::time::timeout(wait, notified).await;
        }
    }

    /// The next pod if one is ready now (expired backoffs and stale unschedulable pods are
    /// moved to the active queue first).
    pub fn try_pop(&self) -> Option<Popped> {
        let mut inner = self.lock();
        self.flush(&mut inner);
        while let Some(Active { mut pod, .. }) = inner.active.pop() {
            let uid = pod.info.uid.clone();
            let Some((place, info)) = inner.places.get_mut(&uid) else {
                continue; // deleted meanwhile
            };
            if *place != Place::Active {
                continue;
            }
            *place = Place::InFlight;
            pod.info = info.clone();
            pod.attempts += 1;
            inner.cycle += 1;
            let cycle = inner.cycle;
            return Some(Popped { pod, cycle });
        }
        None
    }

    /// Moves due backoffs, and pods unschedulable for too long, to the active queue.
    fn flush(&self, inner: &mut Inner) {
        let now = Instant::now();
        while inner.backoff.peek().is_some_and(|b| b.until <= now) {
            let Some(Backoff { pod, .. }) = inner.backoff.pop() else {
                break;
            };
            self.activate(inner, pod);
        }
        let stale: Vec<String> = inner
            .parked
            .iter()
            .filter(|(_, p)| !p.gated && now.duration_since(p.since) >= MAX_UNSCHEDULABLE)
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in stale {
            if let Some(parked) = inner.parked.remove(&uid) {
                self.activate(inner, parked.pod);
            }
        }
        if inner.recheck_gated {
            inner.recheck_gated = false;
            let gated: Vec<String> = inner
                .parked
                .iter()
                .filter(|(_, p)| p.gated)
                .map(|(uid, _)| uid.clone())
                .collect();
            for uid in gated {
                let Some(parked) = inner.parked.remove(&uid) else {
                    continue;
                };
                // `place` asks PreEnqueue again and parks the pod anew if it still refuses.
                self.activate(inner, parked.pod);
            }
        }
    }

    fn activate(&self, inner: &mut Inner, pod: QueuedPod) {
        let uid = pod.info.uid.clone();
        let Some((_, info)) = inner.places.get(&uid) else {
            return; // deleted
        };
        let mut pod = pod;
        pod.info = info.clone();
        if let Some(profile) = self.profile(&pod.info).cloned() {
            self.place(inner, &profile, pod);
        }
    }

    fn backoff_for(&self, attempts: u32) -> Duration {
        let shift = attempts.saturating_sub(1).min(16);
        (self.initial_backoff * (1u32 << shift)).min(self.max_backoff)
    }

    /// A pod that failed its attempt in `cycle`, rejected by `plugins`: it waits for an
    /// event they care about — or backs off at once if such an event already happened
    /// during the attempt.
    pub fn unschedulable(&self, popped: QueuedPod, cycle: u64, plugins: HashSet<&'static str>) {
        let mut inner = self.lock();
        let uid = popped.info.uid.clone();
        if !inner.places.contains_key(&uid) {
            return;
        }
        let profile = self.profile(&popped.info).cloned();
        let moved = inner.events_since.iter().any(|(c, event)| {
            *c >= cycle
                && (plugins.is_empty()
                    || plugins.iter().any(|p| {
                        profile
                            .as_ref()
                            .is_none_or(|f| f.events_of(p).contains(event))
                    }))
        });
        if moved {
            self.back_off(&mut inner, popped);
        } else {
            inner
                .places
                .insert(uid.clone(), (Place::Parked, popped.info.clone()));
            inner.parked.insert(
                uid,
                Parked {
                    pod: popped,
                    plugins,
                    since: Instant::now(),
                    gated: false,
                },
            );
        }
    }

    /// A pod whose attempt failed for another reason (an error, a failed bind): it backs off.
    pub fn requeue_after_error(&self, popped: QueuedPod) {
        let mut inner = self.lock();
        if inner.places.contains_key(&popped.info.uid) {
            self.back_off(&mut inner, popped);
        }
    }

    fn back_off(&self, inner: &mut Inner, popped: QueuedPod) {
        let until = Instant::now() + self.backoff_for(popped.attempts);
        inner.places.insert(
            popped.info.uid.clone(),
            (Place::Backoff, popped.info.clone()),
        );
        inner.backoff.push(Backoff { until, pod: popped });
        self.ready.notify_one();
    }

    /// A pod scheduled (assumed): the queue forgets it.
    pub fn done(&self, uid: &str) {
        let mut inner = self.lock();
        if inner
            .places
            .get(uid)
            .is_some_and(|(place, _)| *place == Place::InFlight)
        {
            inner.places.remove(uid);
        }
    }

    /// A cluster event: parked pods whose rejecting plugins care about it (and gated pods,
    /// whose PreEnqueue is asked again) move on — to backoff if they are still backing off
    /// from their last attempt, else to the active queue.
    pub fn on_event(&self, event: ClusterEvent) {
        let mut inner = self.lock();
        let cycle = inner.cycle;
        match inner.events_since.iter_mut().find(|(_, e)| *e == event) {
            Some(latest) => latest.0 = cycle,
            None => inner.events_since.push((cycle, event)),
        }
        let waking: Vec<String> = inner
            .parked
            .iter()
            .filter(|(_, parked)| {
                parked.gated
                    || parked.plugins.is_empty()
                    || parked.plugins.iter().any(|p| {
                        self.profile(&parked.pod.info)
                            .is_none_or(|f| f.events_of(p).contains(&event))
                    })
            })
            .map(|(uid, _)| uid.clone())
            .collect();
        let mut woke = false;
        for uid in waking {
            let Some(parked) = inner.parked.remove(&uid) else {
                continue;
            };
            woke = true;
            if parked.gated {
                self.activate(&mut inner, parked.pod);
            } else {
                let due = parked.since + self.backoff_for(parked.pod.attempts);
                if due > Instant::now() {
                    inner
                        .places
                        .insert(uid, (Place::Backoff, parked.pod.info.clone()));
                    inner.backoff.push(Backoff {
                        until: due,
                        pod: parked.pod,
                    });
                } else {
                    self.activate(&mut inner, parked.pod);
                }
            }
        }
        drop(inner);
        if woke {
            self.ready.notify_one();
        }
    }

    /// Records that preemption nominated a pod to a node (its room is kept for it); an
    /// empty node drops the nomination.
    pub fn nominate(&self, uid: &str, node: &str) {
        let mut inner = self.lock();
        Self::set_nomination(&mut inner, uid, node);
    }

    fn set_nomination(inner: &mut Inner, uid: &str, node: &str) {
        inner.nominated.retain(|_, pods| {
            pods.remove(uid);
            !pods.is_empty()
        });
        if !node.is_empty() {
            inner
                .nominated
                .entry(node.to_string())
                .or_default()
                .insert(uid.to_string());
        }
    }

    /// The node a pod is nominated to, if any.
    pub fn nominated_node(&self, uid: &str) -> Option<String> {
        self.lock()
            .nominated
            .iter()
            .find(|(_, pods)| pods.contains(uid))
            .map(|(node, _)| node.clone())
    }

    /// The pods nominated to `node`, with their latest info.
    pub fn nominated_to(&self, node: &str) -> Vec<Arc<PodInfo>> {
        let inner = self.lock();
        inner
            .nominated
            .get(node)
            .into_iter()
            .flatten()
            .filter_map(|uid| inner.places.get(uid).map(|(_, info)| info.clone()))
            .collect()
    }

    /// Whether any pod is nominated anywhere (the common case is none: no extra work).
    pub fn has_nominations(&self) -> bool {
        self.lock().nominated.values().any(|p| !p.is_empty())
    }

    /// Pods waiting, per place: (active, backoff, unschedulable).
    pub fn lengths(&self) -> (usize, usize, usize) {
        let inner = self.lock();
        (inner.active.len(), inner.backoff.len(), inner.parked.len())
    }
}
