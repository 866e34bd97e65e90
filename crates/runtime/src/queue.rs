//! A controller's work queue, with client-go's workqueue semantics:
//!
//! - **Deduplication**: a key queued twice before a worker takes it is handed out once.
//! - **One worker per key**: a key being processed is not handed to another worker; added
//!   again meanwhile, it is queued once the first worker calls [`WorkQueue::done`].
//! - **Delays**: [`WorkQueue::add_after`] queues a key later (the earliest request wins).
//! - **Rate limiting** of retries: [`WorkQueue::add_rate_limited`] delays a key by the
//!   larger of its own exponential backoff (5 ms doubling to 1,000 s, with jitter) and a
//!   token bucket shared by all keys (10/s, burst 100), as client-go's default controller
//!   rate limiter does. [`WorkQueue::forget`] clears a key's backoff after a success.

use crate::metrics::QueueMetrics;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// How retries are spaced.
#[derive(Clone, Debug)]
pub struct RateLimits {
    /// The first retry's delay for one key; each failure doubles it.
    pub base_delay: Duration,
    /// The longest delay for one key.
    pub max_delay: Duration,
    /// Retries per second across all keys (the token bucket's rate).
    pub qps: f64,
    /// Retries allowed at once before the bucket's rate applies.
    pub burst: f64,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(1000),
            qps: 10.0,
            burst: 100.0,
        }
    }
}

/// A token bucket that lends: asking when it is empty reserves a future token and says how
/// long to wait for it.
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    refreshed: Instant,
}

impl TokenBucket {
    pub fn new(qps: f64, burst: f64) -> TokenBucket {
        let burst = burst.max(1.0);
        TokenBucket {
            qps: qps.max(f64::MIN_POSITIVE),
            burst,
            tokens: burst,
            refreshed: Instant::now(),
        }
    }

    /// Takes a token; returns how long to wait before using it.
    pub fn reserve(&mut self, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.refreshed).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        self.refreshed = now;
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.qps)
        }
    }
}

struct State<T> {
    queue: VecDeque<(T, Instant)>,
    dirty: HashSet<T>,
    processing: HashSet<T>,
    /// When each delayed key is due, and the same as a heap ordered by time.
    waiting: HashMap<T, Instant>,
    heap: BinaryHeap<Reverse<(Instant, u64, T)>>,
    sequence: u64,
    failures: HashMap<T, u32>,
    bucket: TokenBucket,
    shut_down: bool,
}

/// A deduplicating, delaying, rate-limited queue of keys (see the module docs).
pub struct WorkQueue<T> {
    state: Mutex<State<T>>,
    /// Wakes workers waiting for a key.
    ready: Notify,
    /// Wakes the timer when an earlier delay is asked for.
    timer: Arc<Notify>,
    limits: RateLimits,
    metrics: Arc<QueueMetrics>,
}

impl<T: Clone + Eq + Hash + Ord + Send + 'static> WorkQueue<T> {
    /// A queue; its delays are served by a task spawned on the current runtime.
    pub fn new(limits: RateLimits, metrics: Arc<QueueMetrics>) -> Arc<WorkQueue<T>> {
        let queue = Arc::new(WorkQueue {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashSet::new(),
                waiting: HashMap::new(),
                heap: BinaryHeap::new(),
                sequence: 0,
                failures: HashMap::new(),
                bucket: TokenBucket::new(limits.qps, limits.burst),
                shut_down: false,
            }),
            ready: Notify::new(),
            timer: Arc::new(Notify::new()),
            limits,
            metrics,
        });
        tokio::spawn(Self::serve_delays(Arc::downgrade(&queue)));
        queue
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic while holding the lock leaves consistent state (each step is one
        // collection operation), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `item` now, unless it is already queued.
    pub fn add(&self, item: T) {
        let mut state = self.lock();
        self.add_locked(&mut state, item);
    }

    fn add_locked(&self, state: &mut State<T>, item: T) {
        if state.shut_down || state.dirty.contains(&item) {
            return;
        }
        self.metrics.adds.inc();
        state.dirty.insert(item.clone());
        if state.processing.contains(&item) {
            return;
        }
        state.queue.push_back((item, Instant::now()));
        self.metrics.depth.set(state.queue.len() as i64);
        self.ready.notify_one();
    }

    /// Queues `item` once `delay` has passed (at once for a zero delay). A key already
    /// waiting keeps the earlier of its two times.
    pub fn add_after(&self, item: T, delay: Duration) {
        if delay.is_zero() {
            return self.add(item);
        }
        let due = Instant::now() + delay;
        let mut state = self.lock();
        if state.shut_down {
            return;
        }
        if state.waiting.get(&item).is_some_and(|at| *at <= due) {
            return;
        }
        state.waiting.insert(item.clone(), due);
        state.sequence += 1;
        let sequence = state.sequence;
        let earliest = state
            .heap
            .peek()
            .is_none_or(|Reverse((at, _, _))| due < *at);
        state.heap.push(Reverse((due, sequence, item)));
        drop(state);
        if earliest {
            self.timer.notify_one();
        }
    }

    /// Queues `item` after its backoff: the larger of its own exponential delay and the
    /// shared token bucket's.
    pub fn add_rate_limited(&self, item: T) {
        let delay = {
            let mut state = self.lock();
            let failures = state.failures.entry(item.clone()).or_insert(0);
            let exponent = (*failures).min(40);
            *failures = failures.saturating_add(1);
            let own = self
                .limits
                .base_delay
                .saturating_mul(1u32 << exponent.min(31))
                .min(self.limits.max_delay);
            // Up to 10% jitter, so keys failing together do not retry in lockstep.
            let own = own.mul_f64(1.0 + fastrand::f64() * 0.1);
            let shared = state.bucket.reserve(Instant::now());
            own.max(shared)
        };
        self.metrics.retries.inc();
        self.add_after(item, delay);
    }

    /// Clears `item`'s failure count (after it was processed successfully).
    pub fn forget(&self, item: &T) {
        self.lock().failures.remove(item);
    }

    /// How many times `item` has been retried since it last succeeded.
    pub fn retries(&self, item: &T) -> u32 {
        self.lock().failures.get(item).copied().unwrap_or(0)
    }

    /// The next key to process, waiting for one; `None` once the queue is shut down. The
    /// caller must call [`WorkQueue::done`] with it.
    pub async fn get(&self) -> Option<T> {
        loop {
            let notified = self.ready.notified();
            {
                let mut state = self.lock();
                if let Some((item, queued)) = state.queue.pop_front() {
                    state.dirty.remove(&item);
                    state.processing.insert(item.clone());
                    self.metrics.depth.set(state.queue.len() as i64);
                    self.metrics.queue_latency.observe(queued.elapsed());
                    if !state.queue.is_empty() {
                        self.ready.notify_one();
                    }
                    return Some(item);
                }
                if state.shut_down {
                    self.ready.notify_waiters();
                    return None;
                }
            }
            notified.await;
        }
    }

    /// Marks `item` processed; if it was added meanwhile, queues it again.
    pub fn done(&self, item: &T) {
        let mut state = self.lock();
        state.processing.remove(item);
        if state.dirty.contains(item) {
            state.queue.push_back((item.clone(), Instant::now()));
            self.metrics.depth.set(state.queue.len() as i64);
            self.ready.notify_one();
        }
    }

    /// Keys queued and not yet handed out.
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops handing out keys: workers' [`WorkQueue::get`] returns `None` once the queue
    /// is drained, and nothing more is queued.
    pub fn shut_down(&self) {
        self.lock().shut_down = true;
        self.ready.notify_waiters();
        self.ready.notify_one();
        self.timer.notify_one();
    }

    /// Moves delayed keys into the queue when they are due.
    async fn serve_delays(queue: std::sync::Weak<WorkQueue<T>>) {
        loop {
            let Some(this) = queue.upgrade() else { return };
            let timer = this.timer.clone();
            let woken = timer.notified();
            let next = {
                let mut state = this.lock();
                if state.shut_down {
                    return;
                }
                let now = Instant::now();
                loop {
                    let due = match state.heap.peek() {
                        Some(Reverse((at, _, _))) if *at <= now => true,
                        Some(_) | None => false,
                    };
                    if !due {
                        break;
                    }
                    let Some(Reverse((at, _, item))) = state.heap.pop() else {
                        break;
                    };
                    // A stale entry: the key was re-delayed to an earlier time and queued.
                    if state.waiting.get(&item) == Some(&at) {
                        state.waiting.remove(&item);
                        this.add_locked(&mut state, item);
                    }
                }
                state.heap.peek().map(|Reverse((at, _, _))| *at)
            };
            drop(this);
            // Hold only a weak reference while asleep, so a dropped queue ends this task.
            let sleep = async {
                match next {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = sleep => {}
                () = woken => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn queue() -> Arc<WorkQueue<String>> {
        WorkQueue::new(RateLimits::default(), Arc::new(QueueMetrics::default()))
    }

    #[tokio::test]
    async fn a_key_queued_twice_is_handed_out_once() {
        let q = queue();
        q.add("a".into());
        q.add("a".into());
        q.add("b".into());
        assert_eq!(q.len(), 2);
        assert_eq!(q.get().await.as_deref(), Some("a"));
        assert_eq!(q.get().await.as_deref(), Some("b"));
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn a_key_in_process_is_requeued_only_when_done() {
        let q = queue();
        q.add("a".into());
        let a = q.get().await.unwrap();
        q.add("a".into());
        assert!(q.is_empty(), "not handed to a second worker meanwhile");
        q.done(&a);
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await.as_deref(), Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_keys_arrive_when_due_and_the_earlier_delay_wins() {
        let q = queue();
        q.add_after("a".into(), Duration::from_secs(10));
        q.add_after("a".into(), Duration::from_secs(2));
        q.add_after("b".into(), Duration::from_secs(5));
        let start = Instant::now();
        assert_eq!(q.get().await.as_deref(), Some("a"));
        assert_eq!(start.elapsed().as_secs(), 2);
        assert_eq!(q.get().await.as_deref(), Some("b"));
        assert_eq!(start.elapsed().as_secs(), 5);
        q.done(&"a".to_string());
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(
            q.is_empty(),
            "the later, superseded delay of a does not fire"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retries_back_off_exponentially_until_forgotten() {
        let q = queue();
        let key = "a".to_string();
        let mut waits = vec![];
        for _ in 0..4 {
            let start = Instant::now();
            q.add_rate_limited(key.clone());
            q.get().await.unwrap();
            q.done(&key);
            waits.push(start.elapsed().as_millis());
        }
        // 5, 10, 20, 40 ms, each with up to 10% jitter.
        for (wait, base) in waits.iter().zip([5u128, 10, 20, 40]) {
            assert!(*wait >= base && *wait <= base + base / 10 + 1, "{waits:?}");
        }
        assert_eq!(q.retries(&key), 4);
        q.forget(&key);
        assert_eq!(q.retries(&key), 0);
    }

    #[test]
    fn the_bucket_lends_at_its_rate_after_the_burst() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(10.0, 2.0);
        assert_eq!(bucket.reserve(start), Duration::ZERO);
        assert_eq!(bucket.reserve(start), Duration::ZERO);
        let third = bucket.reserve(start);
        assert!((third.as_secs_f64() - 0.1).abs() < 1e-6, "{third:?}");
        let fourth = bucket.reserve(start);
        assert!((fourth.as_secs_f64() - 0.2).abs() < 1e-6, "{fourth:?}");
        // Refills at 10/s, never beyond the burst.
        let later = start + Duration::from_secs(10);
        assert_eq!(bucket.reserve(later), Duration::ZERO);
        assert_eq!(bucket.reserve(later), Duration::ZERO);
        assert!(bucket.reserve(later) > Duration::ZERO);
    }

    #[tokio::test]
    async fn shut_down_releases_waiting_workers() {
        let q = queue();
        let worker = {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        };
        tokio::task::yield_now().await;
        q.shut_down();
        assert_eq!(worker.await.unwrap(), None);
        q.add("late".into());
        assert!(q.is_empty());
    }
}
