//! Human-readable durations, as `k8s.io/apimachinery/pkg/util/duration.HumanDuration` writes
//! them: about two or three significant figures ("45s", "5m30s", "2d3h", "3y120d").
//!
//! The rules, for a duration `d`:
//! - less than −1 s (whole seconds, truncated toward zero, below −1): `<invalid>`;
//!   between −2 s and 0 exclusive: `0s` (a little clock skew counts as "now");
//! - under 2 minutes: seconds, `"{s}s"`;
//! - under 10 minutes: `"{m}m"` or `"{m}m{s}s"`;
//! - under 3 hours: minutes only;
//! - under 8 hours: `"{h}h"` or `"{h}h{m}m"`;
//! - under 48 hours: hours only;
//! - under 8 days: `"{d}d"` or `"{d}d{h}h"`;
//! - under 2 years (of 365 days): days only;
//! - under 8 years: `"{y}y"` or `"{y}y{d}d"`;
//! - otherwise years only.

const SECOND: i64 = 1_000_000_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;

/// Formats a duration given in nanoseconds.
pub fn human_duration(nanos: i64) -> String {
    let seconds = nanos / SECOND;
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = nanos / MINUTE;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = nanos / HOUR;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        let d = days % 365;
        return if d == 0 {
            format!("{years}y")
        } else {
            format!("{years}y{d}d")
        };
    }
    format!("{years}y")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: i64) -> i64 {
        s * SECOND
    }

    #[test]
    fn negative_durations_tolerate_small_skew() {
        assert_eq!(human_duration(-SECOND / 2), "0s");
        assert_eq!(human_duration(-SECOND), "0s");
        assert_eq!(human_duration(-SECOND - SECOND / 2), "0s");
        assert_eq!(human_duration(-2 * SECOND), "<invalid>");
        assert_eq!(human_duration(i64::MIN), "<invalid>");
    }

    #[test]
    fn seconds_up_to_two_minutes() {
        assert_eq!(human_duration(0), "0s");
        assert_eq!(human_duration(SECOND - 1), "0s");
        assert_eq!(human_duration(secs(1)), "1s");
        assert_eq!(human_duration(secs(59)), "59s");
        assert_eq!(human_duration(secs(60)), "60s");
        assert_eq!(human_duration(secs(119) + SECOND - 1), "119s");
    }

    #[test]
    fn minutes_with_seconds_below_ten_minutes() {
        assert_eq!(human_duration(secs(120)), "2m");
        assert_eq!(human_duration(secs(121)), "2m1s");
        assert_eq!(human_duration(secs(5 * 60 + 30)), "5m30s");
        assert_eq!(human_duration(secs(9 * 60 + 59)), "9m59s");
        assert_eq!(human_duration(secs(10 * 60)), "10m");
        assert_eq!(human_duration(secs(10 * 60 + 59)), "10m");
        assert_eq!(human_duration(secs(3 * 3600 - 1)), "179m");
    }

    #[test]
    fn hours_with_minutes_below_eight_hours() {
        assert_eq!(human_duration(secs(3 * 3600)), "3h");
        assert_eq!(human_duration(secs(3 * 3600 + 60)), "3h1m");
        assert_eq!(human_duration(secs(7 * 3600 + 59 * 60 + 59)), "7h59m");
        assert_eq!(human_duration(secs(8 * 3600)), "8h");
        assert_eq!(human_duration(secs(8 * 3600 + 30 * 60)), "8h");
        assert_eq!(human_duration(secs(47 * 3600 + 3599)), "47h");
    }

    #[test]
    fn days_with_hours_below_eight_days() {
        assert_eq!(human_duration(secs(48 * 3600)), "2d");
        assert_eq!(human_duration(secs(51 * 3600)), "2d3h");
        assert_eq!(human_duration(secs(7 * 86400 + 23 * 3600)), "7d23h");
        assert_eq!(human_duration(secs(8 * 86400)), "8d");
        assert_eq!(human_duration(secs(8 * 86400 + 5 * 3600)), "8d");
        assert_eq!(human_duration(secs(729 * 86400)), "729d");
    }

    #[test]
    fn years_with_days_below_eight_years() {
        assert_eq!(human_duration(secs(730 * 86400)), "2y");
        assert_eq!(human_duration(secs(731 * 86400)), "2y1d");
        assert_eq!(human_duration(secs((3 * 365 + 120) * 86400)), "3y120d");
        assert_eq!(human_duration(secs(8 * 365 * 86400)), "8y");
        assert_eq!(human_duration(secs((8 * 365 + 100) * 86400)), "8y");
        assert_eq!(human_duration(i64::MAX), "292y");
    }
}
