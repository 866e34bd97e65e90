//! Timestamps at microsecond precision, written as Kubernetes writes `metav1.MicroTime`:
//! RFC 3339 in UTC with exactly six fractional digits (`2026-11-23T10:00:00.123456Z`).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kyb_apimachinery::time::format_rfc3339;

const MICROS_PER_SECOND: i64 = 1_000_000;

/// An instant, in microseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MicroTime(i64);

impl MicroTime {
    /// The current time.
    pub fn now() -> MicroTime {
        MicroTime::from_system_time(SystemTime::now())
    }

    /// A system time, truncated to the microsecond.
    pub fn from_system_time(time: SystemTime) -> MicroTime {
        let micros = |d: Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        match time.duration_since(UNIX_EPOCH) {
            Ok(after) => MicroTime(micros(after)),
            Err(before) => MicroTime(micros(before.duration()).saturating_neg()),
        }
    }

    /// The instant `micros` microseconds after the epoch.
    pub fn from_unix_micros(micros: i64) -> MicroTime {
        MicroTime(micros)
    }

    /// Microseconds since the epoch.
    pub fn unix_micros(self) -> i64 {
        self.0
    }

    /// Writes the RFC 3339 form into `out`.
    pub(crate) fn write_rfc3339(self, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(out, "{self}");
    }
}

impl fmt::Display for MicroTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = self.0.div_euclid(MICROS_PER_SECOND);
        let nanos = self.0.rem_euclid(MICROS_PER_SECOND) * 1_000;
        // Years beyond 0..=9999 have no RFC 3339 form; no clock gives them.
        f.write_str(&format_rfc3339(seconds, nanos, 6).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_six_digits_in_utc() {
        // 2026-11-23T10:00:00Z is 1_795_428_000 seconds after the epoch.
        let t = MicroTime::from_unix_micros(1_795_428_000 * 1_000_000 + 123_456);
        assert_eq!(t.to_string(), "2026-11-23T10:00:00.123456Z");
        assert_eq!(
            MicroTime::from_unix_micros(0).to_string(),
            "1970-01-01T00:00:00.000000Z"
        );
        assert_eq!(
            MicroTime::from_unix_micros(-1).to_string(),
            "1969-12-31T23:59:59.999999Z"
        );
        assert_eq!(
            MicroTime::from_unix_micros(951_782_400 * 1_000_000 + 7).to_string(),
            "2000-02-29T00:00:00.000007Z"
        );
    }

    #[test]
    fn truncates_system_time() {
        let t = UNIX_EPOCH + Duration::from_nanos(1_500_999);
        assert_eq!(MicroTime::from_system_time(t).unix_micros(), 1_500);
        let before = UNIX_EPOCH - Duration::from_micros(2);
        assert_eq!(MicroTime::from_system_time(before).unix_micros(), -2);
        let now = MicroTime::now().to_string();
        assert_eq!(now.len(), "2026-11-23T10:00:00.123456Z".len());
        assert!(now.ends_with('Z'));
    }
}
