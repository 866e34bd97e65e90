//! Time as controllers see it: the real clock, or (in tests) a clock a test sets, so
//! time-driven behaviour (CronJob schedules, minReadySeconds, node grace periods) is
//! tested without waiting.

use jiff::Timestamp;
use std::sync::Mutex;
use std::time::Duration;

/// Where controllers read the time.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct FakeClock(Mutex<Timestamp>);

impl FakeClock {
    pub fn new(at: Timestamp) -> FakeClock {
        FakeClock(Mutex::new(at))
    }

    pub fn set(&self, at: Timestamp) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = at;
    }

    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(later) = now.checked_add(jiff::SignedDuration::try_from(by).unwrap_or_default()) {
            *now = later;
        }
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
