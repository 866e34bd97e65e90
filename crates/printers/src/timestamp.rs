//! Timestamps as objects carry them (`metav1.Time`, `metav1.MicroTime`: RFC 3339 strings)
//! and the age strings computed from them.
//!
//! Go's zero time (`0001-01-01T00:00:00Z`) is what a missing timestamp decodes to, and the
//! printers treat it as "unknown"; a timestamp that cannot be parsed is treated the same way.

use crate::duration::human_duration;
use jiff::Timestamp;
use serde_json::Value;

/// Go's zero `time.Time`: 0001-01-01T00:00:00Z.
pub(crate) const ZERO: Timestamp = Timestamp::constant(-62_135_596_800, 0);

/// The timestamp in `value` when it is present and parses (possibly [`ZERO`]).
pub(crate) fn parse(value: Option<&Value>) -> Option<Timestamp> {
    value
        .and_then(Value::as_str)
        .and_then(|s| s.trim().parse::<Timestamp>().ok())
}

/// The timestamp in `value`, or [`ZERO`] when it is missing or unparsable.
pub(crate) fn or_zero(value: Option<&Value>) -> Timestamp {
    parse(value).unwrap_or(ZERO)
}

/// `to - from` in nanoseconds, saturating like Go's `time.Duration`.
pub(crate) fn nanos_between(from: Timestamp, to: Timestamp) -> i64 {
    let nanos = to.as_nanosecond() - from.as_nanosecond();
    i64::try_from(nanos).unwrap_or(if nanos < 0 { i64::MIN } else { i64::MAX })
}

/// How long ago `then` was, or `<unknown>` for the zero time.
pub(crate) fn since(then: Timestamp, now: Timestamp) -> String {
    if then == ZERO {
        return "<unknown>".to_owned();
    }
    human_duration(nanos_between(then, now))
}

/// [`since`] for a timestamp field: `<unknown>` when missing.
pub(crate) fn since_value(value: Option<&Value>, now: Timestamp) -> String {
    since(or_zero(value), now)
}

/// The Age cell: how long ago `metadata.creationTimestamp` was.
pub(crate) fn age(object: &Value, now: Timestamp) -> Value {
    Value::String(since_value(
        kyb_apimachinery::json::at(object, &["metadata", "creationTimestamp"]),
        now,
    ))
}

/// RFC 3339 in UTC without fractional seconds (Go's `Format(time.RFC3339)` of a UTC time).
pub(crate) fn rfc3339(ts: Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn zero_and_missing_times_are_unknown() {
        let now = ts("2024-05-01T12:00:00Z");
        assert_eq!(since_value(None, now), "<unknown>");
        assert_eq!(
            since_value(Some(&json!("0001-01-01T00:00:00Z")), now),
            "<unknown>"
        );
        assert_eq!(since_value(Some(&json!("garbage")), now), "<unknown>");
        assert_eq!(since_value(Some(&json!(17)), now), "<unknown>");
    }

    #[test]
    fn ages_follow_human_duration() {
        let now = ts("2024-05-01T12:00:00.5Z");
        assert_eq!(since_value(Some(&json!("2024-05-01T11:55:00Z")), now), "5m");
        assert_eq!(
            since_value(Some(&json!("2024-04-29T09:00:00Z")), now),
            "2d3h"
        );
        assert_eq!(
            since_value(Some(&json!("2024-05-01T14:00:00+02:00")), now),
            "0s"
        );
        assert_eq!(
            since_value(Some(&json!("2024-05-01T12:00:10Z")), now),
            "<invalid>"
        );
        // A date far in the past saturates like Go's Duration (~292 years).
        assert_eq!(
            since_value(Some(&json!("0001-01-01T00:00:01Z")), now),
            "292y"
        );
    }

    #[test]
    fn micro_times_parse() {
        let t = parse(Some(&json!("2024-05-01T11:59:30.123456Z"))).unwrap();
        assert_eq!(since(t, ts("2024-05-01T12:00:00Z")), "29s");
    }

    #[test]
    fn rfc3339_is_utc_without_fractions() {
        assert_eq!(
            rfc3339(ts("2024-05-01T14:00:00.75+02:00")),
            "2024-05-01T12:00:00Z"
        );
        assert_eq!(rfc3339(ZERO), "0001-01-01T00:00:00Z");
    }
}
