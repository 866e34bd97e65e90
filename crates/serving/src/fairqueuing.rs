//! Fair queuing for server requests, as API Priority and Fairness' queue sets do it: a
//! [`QueueSet`] has a concurrency limit (seats); a request that finds no free seat waits in
//! one of the set's queues, chosen by shuffle sharding its flow over the queues (a hand of
//! `hand_size` queues dealt from the flow's hash, the shortest of them taken), so that one
//! heavy flow fills at most its own few queues. Free seats go to the queues in fair order:
//! start-time fair queuing, every request costing one unit of virtual time — the queue
//! whose next request has the earliest virtual start is served first, and a queue that
//! was idle starts at the current virtual time, not with credit saved while idle.
//!
//! A request is refused ([`Rejection`]) when its queue is full, when it waited longer than
//! its wait limit, or at once when the set does not queue (`limitResponse.type: Reject`).
//! The set can be reconfigured live ([`QueueSet::configure`]); waiting requests are kept.
//! Nothing here knows about HTTP or Kubernetes objects.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::oneshot;

/// How requests beyond the concurrency limit wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queuing {
    pub queues: usize,
    pub hand_size: usize,
    pub queue_length_limit: usize,
}

/// A queue set's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Requests executing at once.
    pub concurrency_limit: usize,
    /// `None`: a request finding no free seat is refused at once.
    pub queuing: Option<Queuing>,
}

/// Why a request was not served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// No free seat and the set does not queue.
    ConcurrencyLimit,
    /// Its queue already held `queue_length_limit` requests.
    QueueFull,
    /// It waited its whole wait limit.
    TimedOut,
}

impl Rejection {
    /// The reason as Kubernetes' metrics name it.
    pub fn reason(self) -> &'static str {
        match self {
            Self::ConcurrencyLimit => "concurrency-limit",
            Self::QueueFull => "queue-full",
            Self::TimedOut => "time-out",
        }
    }
}

struct Waiter {
    id: u64,
    wake: oneshot::Sender<()>,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Waiter>,
    executing: usize,
    /// The virtual start of the queue's next request.
    virtual_start: u64,
}

impl Queue {
    fn load(&self) -> usize {
        self.waiting.len() + self.executing
    }
}

struct State {
    config: Config,
    executing: usize,
    queues: Vec<Queue>,
    /// The virtual start of the request dispatched last: the set's virtual time.
    clock: u64,
    /// Where the search for the next queue starts (round robin among ties).
    cursor: usize,
    next_id: u64,
}

/// One priority level's seats and queues.
pub struct QueueSet {
    state: Mutex<State>,
}

/// A seat held by an executing request; dropping it frees the seat for the next one.
pub struct Seat {
    set: Arc<QueueSet>,
    queue: Option<usize>,
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.set.finish(self.queue);
    }
}

/// A request waiting in a queue; dropped before it is given a seat, it leaves the queue,
/// and dropped after, it frees the seat (the client went away while being dispatched).
struct Pending {
    set: Arc<QueueSet>,
    queue: usize,
    id: u64,
    armed: bool,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.armed && !self.set.leave(self.id) {
            self.set.finish(Some(self.queue));
        }
    }
}

impl QueueSet {
    pub fn new(config: Config) -> Arc<QueueSet> {
        let queues = config.queuing.map_or(0, |q| q.queues);
        Arc::new(QueueSet {
            state: Mutex::new(State {
                config,
                executing: 0,
                queues: (0..queues).map(|_| Queue::default()).collect(),
                clock: 0,
                cursor: 0,
                next_id: 0,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent counters (no await inside);
        // keep serving with them.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The configuration now in force.
    pub fn config(&self) -> Config {
        self.lock().config
    }

    /// Applies a new configuration. Waiting requests stay queued (those of queues that no
    /// longer exist move to the remaining ones); a higher limit dispatches at once.
    pub fn configure(&self, config: Config) {
        let mut state = self.lock();
        if state.config == config {
            return;
        }
        state.config = config;
        let wanted = config.queuing.map_or(0, |q| q.queues);
        if wanted != state.queues.len() {
            let old = std::mem::take(&mut state.queues);
            let waiting = old.iter().any(|q| !q.waiting.is_empty());
            // A set that stops queuing keeps one queue until its waiters are served.
            let count = if wanted == 0 && !waiting {
                0
            } else {
                wanted.max(1)
            };
            let mut queues: Vec<Queue> = (0..count).map(|_| Queue::default()).collect();
            if count > 0 {
                for (i, queue) in old.into_iter().enumerate() {
                    let target = &mut queues[i % count];
                    target.executing += queue.executing;
                    target.waiting.extend(queue.waiting);
                }
            }
            state.queues = queues;
            state.cursor = 0;
        }
        dispatch(&mut state);
    }

    /// Requests executing now.
    pub fn executing(&self) -> usize {
        self.lock().executing
    }

    /// Requests waiting now.
    pub fn waiting(&self) -> usize {
        self.lock().queues.iter().map(|q| q.waiting.len()).sum()
    }

    /// Waits for a seat for a request of the flow `flow_hash`, at most `wait_limit`.
    pub async fn acquire(
        self: &Arc<Self>,
        flow_hash: u64,
        wait_limit: Duration,
    ) -> Result<Seat, Rejection> {
        let (queue, id, woken) = {
            let mut state = self.lock();
            let Some(queuing) = state.config.queuing.filter(|_| !state.queues.is_empty()) else {
                if state.executing < state.config.concurrency_limit {
                    state.executing += 1;
                    return Ok(Seat {
                        set: self.clone(),
                        queue: None,
                    });
                }
                return Err(Rejection::ConcurrencyLimit);
            };
            let queue = choose_queue(&state.queues, flow_hash, queuing.hand_size);
            if state.queues[queue].waiting.len() >= queuing.queue_length_limit {
                return Err(Rejection::QueueFull);
            }
            let id = state.next_id;
            state.next_id += 1;
            let (wake, woken) = oneshot::channel();
            let clock = state.clock;
            let q = &mut state.queues[queue];
            if q.load() == 0 {
                // An idle queue joins at the current virtual time.
                q.virtual_start = q.virtual_start.max(clock);
            }
            q.waiting.push_back(Waiter { id, wake });
            dispatch(&mut state);
            (queue, id, woken)
        };
        let mut pending = Pending {
            set: self.clone(),
            queue,
            id,
            armed: true,
        };
        let dispatched = matches!(tokio::time::timeout(wait_limit, woken).await, Ok(Ok(())));
        if dispatched || !self.leave(id) {
            // Given a seat (possibly just as the wait ended).
            pending.armed = false;
            return Ok(Seat {
                set: self.clone(),
                queue: Some(pending.queue),
            });
        }
        pending.armed = false;
        Err(Rejection::TimedOut)
    }

    /// Takes a waiting request out of its queue; false if it is no longer there (it was
    /// given a seat).
    fn leave(&self, id: u64) -> bool {
        let mut state = self.lock();
        for q in &mut state.queues {
            if let Some(at) = q.waiting.iter().position(|w| w.id == id) {
                q.waiting.remove(at);
                return true;
            }
        }
        false
    }

    fn finish(&self, queue: Option<usize>) {
        let mut state = self.lock();
        state.executing = state.executing.saturating_sub(1);
        if let Some(q) = queue.and_then(|q| state.queues.get_mut(q)) {
            q.executing = q.executing.saturating_sub(1);
        }
        dispatch(&mut state);
    }
}

/// Gives free seats to waiting requests, fairest queue first.
fn dispatch(state: &mut State) {
    while state.executing < state.config.concurrency_limit {
        let count = state.queues.len();
        let mut best: Option<usize> = None;
        for offset in 0..count {
            let i = (state.cursor + offset) % count;
            let queue = &state.queues[i];
            if queue.waiting.is_empty() {
                continue;
            }
            if best.is_none_or(|b| queue.virtual_start < state.queues[b].virtual_start) {
                best = Some(i);
            }
        }
        let Some(i) = best else { return };
        let start = state.queues[i].virtual_start;
        let Some(waiter) = state.queues[i].waiting.pop_front() else {
            return;
        };
        state.clock = state.clock.max(start);
        state.queues[i].virtual_start = start + 1;
        state.cursor = (i + 1) % count;
        if waiter.wake.send(()).is_ok() {
            state.queues[i].executing += 1;
            state.executing += 1;
        }
    }
}

/// The queue a request of the flow goes to: the least loaded of the flow's hand.
fn choose_queue(queues: &[Queue], flow_hash: u64, hand_size: usize) -> usize {
    let mut best = 0;
    let mut best_load = usize::MAX;
    for card in deal(flow_hash, queues.len(), hand_size) {
        let load = queues[card].load();
        if load < best_load {
            (best, best_load) = (card, load);
        }
    }
    best
}

/// Shuffle sharding's dealer: `hand_size` distinct cards of a deck of `deck_size`, drawn
/// from the hash as mixed-radix digits (Kubernetes' `shufflesharding.Dealer`).
pub fn deal(mut hash: u64, deck_size: usize, hand_size: usize) -> Vec<usize> {
    let hand_size = hand_size.clamp(1, deck_size.max(1));
    let mut remainders = Vec::with_capacity(hand_size);
    for i in 0..hand_size {
        let base = (deck_size - i).max(1) as u64;
        remainders.push((hash % base) as usize);
        hash /= base;
    }
    let mut hand = Vec::with_capacity(hand_size);
    for i in 0..hand_size {
        let mut card = remainders[i];
        for j in (0..i).rev() {
            if card >= remainders[j] {
                card += 1;
            }
        }
        hand.push(card);
    }
    hand
}

/// FNV-1a over the parts of a flow's identity (schema name, distinguisher), separated so
/// that ("ab", "c") and ("a", "bc") differ.
pub fn flow_hash(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0xff]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::collections::{BTreeSet, HashMap};

    fn queuing(queues: usize, hand_size: usize, queue_length_limit: usize) -> Option<Queuing> {
        Some(Queuing {
            queues,
            hand_size,
            queue_length_limit,
        })
    }

    #[test]
    fn hands_are_distinct_cards_of_the_deck() {
        for hash in [0, 1, 7, 12345, u64::MAX, flow_hash(&["a", "b"])] {
            let hand = deal(hash, 64, 8);
            assert_eq!(hand.len(), 8);
            assert_eq!(hand.iter().collect::<BTreeSet<_>>().len(), 8, "{hand:?}");
            assert!(hand.iter().all(|&c| c < 64));
        }
        // Different flows get (mostly) different hands; the same flow always the same.
        assert_eq!(deal(99, 64, 8), deal(99, 64, 8));
        let hands: BTreeSet<Vec<usize>> = (0..100)
            .map(|i| deal(flow_hash(&["fs", &format!("user-{i}")]), 64, 8))
            .collect();
        assert!(hands.len() > 95);
        // A deck as small as the hand is dealt whole.
        let mut whole = deal(5, 4, 4);
        whole.sort();
        assert_eq!(whole, [0, 1, 2, 3]);
    }

    #[tokio::test]
    async fn limits_concurrency_and_rejects_without_queues() {
        let set = QueueSet::new(Config {
            concurrency_limit: 2,
            queuing: None,
        });
        let a = set.acquire(1, Duration::from_secs(1)).await.unwrap();
        let _b = set.acquire(2, Duration::from_secs(1)).await.unwrap();
        assert_eq!(
            set.acquire(3, Duration::from_secs(1)).await.err(),
            Some(Rejection::ConcurrencyLimit)
        );
        drop(a);
        assert_eq!(set.executing(), 1);
        assert!(set.acquire(3, Duration::from_secs(1)).await.is_ok());
    }

    #[tokio::test]
    async fn full_queues_reject_and_waits_time_out() {
        let set = QueueSet::new(Config {
            concurrency_limit: 1,
            queuing: queuing(1, 1, 2),
        });
        let seat = set.acquire(1, Duration::from_secs(5)).await.unwrap();
        let waiters: Vec<_> = (0..2)
            .map(|i| {
                let set = set.clone();
                tokio::spawn(async move { set.acquire(i, Duration::from_secs(5)).await.is_ok() })
            })
            .collect();
        while set.waiting() < 2 {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            set.acquire(9, Duration::from_secs(5)).await.err(),
            Some(Rejection::QueueFull)
        );
        drop(seat);
        for waiter in waiters {
            assert!(waiter.await.unwrap());
        }
        let _seat = set.acquire(1, Duration::from_secs(5)).await.unwrap();
        assert_eq!(
            set.acquire(2, Duration::from_millis(20)).await.err(),
            Some(Rejection::TimedOut)
        );
        assert_eq!(set.waiting(), 0, "the timed-out request left its queue");
    }

    #[tokio::test]
    async fn a_dropped_waiter_frees_its_place() {
        let set = QueueSet::new(Config {
            concurrency_limit: 1,
            queuing: queuing(1, 1, 5),
        });
        let seat = set.acquire(1, Duration::from_secs(5)).await.unwrap();
        let waiting = {
            let set = set.clone();
            tokio::spawn(async move { set.acquire(2, Duration::from_secs(60)).await.map(|_| ()) })
        };
        while set.waiting() < 1 {
            tokio::task::yield_now().await;
        }
        waiting.abort();
        let _ = waiting.await;
        assert_eq!(set.waiting(), 0);
        drop(seat);
        assert_eq!(set.executing(), 0);
    }

    #[tokio::test]
    async fn seats_go_to_flows_fairly() {
        // One seat; a heavy flow queues 20 requests before a light flow queues 2. The
        // light flow's requests are served within the first few dispatches, not after
        // the heavy flow's backlog.
        let set = QueueSet::new(Config {
            concurrency_limit: 1,
            queuing: queuing(8, 1, 50),
        });
        let (heavy, light) = (flow_hash(&["fs", "heavy"]), flow_hash(&["fs", "light"]));
        assert_ne!(
            deal(heavy, 8, 1),
            deal(light, 8, 1),
            "pick flows in different queues"
        );
        let seat = set.acquire(heavy, Duration::from_secs(5)).await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (flow, name, count) in [(heavy, "heavy", 20), (light, "light", 2)] {
            for _ in 0..count {
                let (queue_set, order) = (set.clone(), order.clone());
                tasks.push(tokio::spawn(async move {
                    let seat = queue_set.acquire(flow, Duration::from_secs(5)).await;
                    order.lock().unwrap().push(name);
                    tokio::task::yield_now().await;
                    drop(seat);
                }));
                while set.waiting() < tasks.len() {
                    tokio::task::yield_now().await;
                }
            }
        }
        drop(seat);
        for task in tasks {
            task.await.unwrap();
        }
        let order = order.lock().unwrap();
        let light_positions: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(_, n)| **n == "light")
            .map(|(i, _)| i)
            .collect();
        assert!(light_positions.iter().all(|&p| p < 5), "{order:?}");
    }

    #[tokio::test]
    async fn shuffle_sharding_spreads_flows_over_queues() {
        let set = QueueSet::new(Config {
            concurrency_limit: 0,
            queuing: queuing(16, 4, 100),
        });
        let state = set.lock();
        let mut used = HashMap::new();
        for i in 0..200 {
            let queue = choose_queue(&state.queues, flow_hash(&["fs", &i.to_string()]), 4);
            *used.entry(queue).or_insert(0) += 1;
        }
        assert_eq!(used.len(), 16, "{used:?}");
    }

    #[tokio::test]
    async fn reconfiguring_keeps_waiters_and_raises_the_limit() {
        let set = QueueSet::new(Config {
            concurrency_limit: 1,
            queuing: queuing(4, 2, 10),
        });
        let _seat = set.acquire(1, Duration::from_secs(5)).await.unwrap();
        let waiter = {
            let set = set.clone();
            tokio::spawn(async move { set.acquire(2, Duration::from_secs(5)).await.is_ok() })
        };
        while set.waiting() < 1 {
            tokio::task::yield_now().await;
        }
        set.configure(Config {
            concurrency_limit: 2,
            queuing: queuing(2, 1, 10),
        });
        assert!(waiter.await.unwrap());
        assert_eq!(set.executing(), 1);
    }
}
