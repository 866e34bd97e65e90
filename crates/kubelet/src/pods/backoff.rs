//! Restart back-off (CrashLoopBackOff): a container that keeps exiting is restarted after
//! 10 s, then 20 s, 40 s, … up to 5 minutes; the delay starts over once a container has run
//! for 10 minutes, as kubelet does.

use std::collections::HashMap;
use std::time::Duration;

/// The first restart delay.
pub const INITIAL: Duration = Duration::from_secs(10);
/// The longest restart delay.
pub const MAX: Duration = Duration::from_secs(300);
/// A container that ran this long starts over with [`INITIAL`].
pub const RESET_AFTER: Duration = Duration::from_secs(600);

/// Back-off delays by key (`<pod uid>/<container>`), in terms of the finish times the
/// runtime reports (nanoseconds since the epoch).
#[derive(Debug, Default)]
pub struct Backoff {
    entries: HashMap<String, Entry>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    delay: Duration,
    /// The finish time (ns) of the instance the delay was set for.
    since: i64,
}

impl Backoff {
    /// How long a restart of the instance that finished at `finished_at` (ns) must still
    /// wait at `now` (ns), or `None` when it may restart now.
    pub fn remaining(&self, key: &str, finished_at: i64, now: i64) -> Option<Duration> {
        let entry = self.entries.get(key)?;
        let due = finished_at.saturating_add(entry.delay.as_nanos() as i64);
        (now < due).then(|| Duration::from_nanos((due - now) as u64))
    }

    /// The current delay of `key`, if any.
    pub fn delay(&self, key: &str) -> Option<Duration> {
        self.entries.get(key).map(|e| e.delay)
    }

    /// Records a restart of the instance that ran from `started_at` to `finished_at` (ns):
    /// the next restart waits longer, unless this instance ran for [`RESET_AFTER`].
    pub fn restarted(&mut self, key: &str, started_at: i64, finished_at: i64) {
        let ran = Duration::from_nanos(finished_at.saturating_sub(started_at).max(0) as u64);
        let delay = match self.entries.get(key) {
            Some(entry) if ran < RESET_AFTER && entry.since != finished_at => {
                (entry.delay * 2).min(MAX)
            }
            Some(entry) if entry.since == finished_at => entry.delay,
            _ => INITIAL,
        };
        self.entries.insert(
            key.to_string(),
            Entry {
                delay,
                since: finished_at,
            },
        );
    }

    /// Forgets every key starting with `prefix` (a pod's `<uid>/`).
    pub fn forget_prefix(&mut self, prefix: &str) {
        self.entries.retain(|key, _| !key.starts_with(prefix));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    #[test]
    fn first_restart_is_immediate_then_the_delay_doubles_to_five_minutes() {
        let mut backoff = Backoff::default();
        assert_eq!(backoff.remaining("p/c", 100 * S, 100 * S), None);
        backoff.restarted("p/c", 99 * S, 100 * S);
        // The second instance exits at once: it waits 10 s after its finish.
        assert_eq!(
            backoff.remaining("p/c", 101 * S, 102 * S),
            Some(Duration::from_secs(9))
        );
        assert_eq!(backoff.remaining("p/c", 101 * S, 111 * S), None);
        let mut finished = 111 * S;
        let mut delays = vec![];
        for _ in 0..7 {
            backoff.restarted("p/c", finished - S, finished);
            delays.push(backoff.delay("p/c").map(|d| d.as_secs()));
            finished += 400 * S;
        }
        assert_eq!(delays, [20, 40, 80, 160, 300, 300, 300].map(Some).to_vec());
    }

    #[test]
    fn a_container_that_ran_ten_minutes_starts_over() {
        let mut backoff = Backoff::default();
        backoff.restarted("p/c", 0, S);
        backoff.restarted("p/c", 2 * S, 3 * S);
        assert_eq!(backoff.delay("p/c"), Some(Duration::from_secs(20)));
        backoff.restarted("p/c", 10 * S, 700 * S);
        assert_eq!(backoff.delay("p/c"), Some(INITIAL));
    }

    #[test]
    fn recording_the_same_instance_twice_does_not_double() {
        let mut backoff = Backoff::default();
        backoff.restarted("p/c", 0, S);
        backoff.restarted("p/c", 0, S);
        assert_eq!(backoff.delay("p/c"), Some(INITIAL));
        backoff.forget_prefix("p/");
        assert_eq!(backoff.delay("p/c"), None);
    }
}
