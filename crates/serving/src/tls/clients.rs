//! The cap on connections per client address, and log lines that do not flood.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The count of open connections of each client address.
type OpenConnections = Arc<Mutex<HashMap<IpAddr, usize>>>;

/// Open connections by client address.
pub(super) struct Clients {
    limit: usize,
    open: OpenConnections,
    refusals: RateLimitedLog,
}

impl Clients {
    /// At most `limit` connections per address (0: any number).
    pub(super) fn new(limit: usize) -> Clients {
        Clients {
            limit,
            open: Arc::default(),
            refusals: RateLimitedLog::new(Duration::from_secs(10)),
        }
    }

    /// A slot for one more connection from `client`, or `None` (logged now and then) when
    /// it has as many as it may.
    pub(super) fn admit(&self, client: IpAddr) -> Option<Slot> {
        if self.limit == 0 {
            return Some(Slot(None));
        }
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(client).or_insert(0);
        if *count >= self.limit {
            drop(open);
            if let Some(suppressed) = self.refusals.admit() {
                tracing::warn!(
                    %client,
                    limit = self.limit,
                    suppressed,
                    "closing new connections from a client at its connection limit"
                );
            }
            return None;
        }
        *count += 1;
        Some(Slot(Some((client, self.open.clone()))))
    }
}

/// One admitted connection; its address's count goes down when it is dropped.
pub(super) struct Slot(Option<(IpAddr, OpenConnections)>);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some((client, open)) = &self.0 {
            let mut open = open.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(count) = open.get_mut(client) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    open.remove(client);
                }
            }
        }
    }
}

/// Lets one log line through per period, counting the ones held back.
pub(super) struct RateLimitedLog {
    every: Duration,
    state: Mutex<(Option<Instant>, u64)>,
}

impl RateLimitedLog {
    pub(super) fn new(every: Duration) -> RateLimitedLog {
        RateLimitedLog {
            every,
            state: Mutex::new((None, 0)),
        }
    }

    /// `Some(lines held back since the last one)` when a line may be logged now.
    pub(super) fn admit(&self) -> Option<u64> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (last, suppressed) = &mut *state;
        if last.is_some_and(|at| at.elapsed() < self.every) {
            *suppressed += 1;
            return None;
        }
        *last = Some(Instant::now());
        Some(std::mem::take(suppressed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_each_address() {
        let clients = Clients::new(2);
        let a: IpAddr = [127, 0, 0, 2].into();
        let b: IpAddr = [127, 0, 0, 3].into();
        let first = clients.admit(a);
        let second = clients.admit(a);
        assert!(first.is_some() && second.is_some());
        assert!(clients.admit(a).is_none());
        assert!(clients.admit(b).is_some());
        drop(first);
        assert!(clients.admit(a).is_some());
        assert!(Clients::new(0).admit(a).is_some());
    }

    #[test]
    fn logs_once_per_period() {
        let log = RateLimitedLog::new(Duration::from_secs(3600));
        assert_eq!(log.admit(), Some(0));
        assert_eq!(log.admit(), None);
        assert_eq!(log.admit(), None);
    }
}
