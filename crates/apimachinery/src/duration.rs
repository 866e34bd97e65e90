//! Go durations (`metav1.Duration`, the components' duration flags and configuration
//! fields): [`parse`] accepts exactly what Go's `time.ParseDuration` does — a signed
//! sequence of decimal numbers with optional fractions, each with a unit (`ns`, `us`, `µs`,
//! `ms`, `s`, `m`, `h`): `1h30m`, `1.5s`, `300ms`, `-2m3.5s`, and the bare `0` — with its
//! error messages, and [`format`] writes one as Go's `Duration.String` (`1h30m0s`, `1.5s`,
//! `300ms`, `0s`). Values are whole nanoseconds in an `i64`, as Go's `time.Duration`.
//!
//! [`parse_flag`] is the command line's variant: a bare number there means seconds (`3`).

use std::fmt;
use std::time::Duration;

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000 * NANOSECOND;
const MILLISECOND: u64 = 1_000 * MICROSECOND;
const SECOND: u64 = 1_000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// Why a duration did not parse; `Display` is Go's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DurationError {
    /// `time: invalid duration "…"`
    Invalid(String),
    /// `time: missing unit in duration "…"`
    MissingUnit(String),
    /// `time: unknown unit "…" in duration "…"`
    UnknownUnit { unit: String, text: String },
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Invalid(text) => write!(f, "time: invalid duration {}", quote(text)),
            DurationError::MissingUnit(text) => {
                write!(f, "time: missing unit in duration {}", quote(text))
            }
            DurationError::UnknownUnit { unit, text } => write!(
                f,
                "time: unknown unit {} in duration {}",
                quote(unit),
                quote(text)
            ),
        }
    }
}

impl std::error::Error for DurationError {}

/// Go's `time.quote`: the text in double quotes, `"` and `\` escaped, bytes of non-ASCII
/// or control characters as `\x..`.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c.is_ascii() && !c.is_ascii_control() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    out.push('"');
    out
}

/// Parses a Go duration into signed nanoseconds, as `time.ParseDuration`.
pub fn parse_nanos(text: &str) -> Result<i64, DurationError> {
    let invalid = || DurationError::Invalid(text.to_owned());
    let mut rest = text;
    let mut negative = false;
    if let Some(sign) = rest.chars().next().filter(|c| *c == '-' || *c == '+') {
        negative = sign == '-';
        rest = &rest[1..];
    }
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        // The integer part.
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_digits, after) = rest.split_at(int_len);
        let mut value: u64 = 0;
        for d in int_digits.bytes() {
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(d - b'0')))
                .filter(|v| *v <= 1 << 63)
                .ok_or_else(invalid)?;
        }
        rest = after;
        // The fraction: digits beyond what fits are dropped, as Go does.
        let mut fraction: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut has_fraction_digits = false;
        if let Some(after_dot) = rest.strip_prefix('.') {
            let frac_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            let (frac_digits, after) = after_dot.split_at(frac_len);
            let mut overflow = false;
            for d in frac_digits.bytes() {
                if overflow {
                    continue;
                }
                if fraction > (i64::MAX as u64) / 10 {
                    overflow = true;
                    continue;
                }
                let next = fraction * 10 + u64::from(d - b'0');
                if next > 1 << 63 {
                    overflow = true;
                    continue;
                }
                fraction = next;
                scale *= 10.0;
            }
            has_fraction_digits = frac_len > 0;
            rest = after;
        }
        if int_len == 0 && !has_fraction_digits {
            // No digits at all (`.s`, `h`).
            return Err(invalid());
        }
        // The unit.
        let unit_len = rest
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (unit, after) = rest.split_at(unit_len);
        if unit.is_empty() {
            return Err(DurationError::MissingUnit(text.to_owned()));
        }
        let unit_nanos = match unit {
            "ns" => NANOSECOND,
            "us" | "µs" | "μs" => MICROSECOND,
            "ms" => MILLISECOND,
            "s" => SECOND,
            "m" => MINUTE,
            "h" => HOUR,
            _ => {
                return Err(DurationError::UnknownUnit {
                    unit: unit.to_owned(),
                    text: text.to_owned(),
                });
            }
        };
        rest = after;
        if value > (1 << 63) / unit_nanos {
            return Err(invalid());
        }
        value *= unit_nanos;
        if fraction > 0 {
            // float64 is precise enough here: at most 3.6e12 ns per unit of fraction.
            value += (fraction as f64 * (unit_nanos as f64 / scale)) as u64;
            if value > 1 << 63 {
                return Err(invalid());
            }
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
        if total > 1 << 63 {
            return Err(invalid());
        }
    }
    if negative {
        // -2^63 is the one value whose magnitude is 2^63.
        Ok(0i64.wrapping_sub_unsigned(total))
    } else if total > i64::MAX as u64 {
        Err(invalid())
    } else {
        Ok(total as i64)
    }
}

/// Parses a Go duration that must not be negative (every duration a flag or a
/// configuration field of ours takes).
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let nanos = parse_nanos(text)?;
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| DurationError::Invalid(text.to_owned()))
}

/// A duration given on the command line: a Go duration, or a bare number of seconds
/// (`3`, `0.5`), which our flags have always accepted.
pub fn parse_flag(text: &str) -> Result<Duration, String> {
    if let Ok(seconds) = text.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).map_err(|e| e.to_string());
    }
    parse(text).map_err(|e| e.to_string())
}

/// Writes signed nanoseconds as Go's `Duration.String`: `72h3m0.5s`, `1.5s`, `300ms`,
/// `2µs`, `0s`.
pub fn format_nanos(nanos: i64) -> String {
    let negative = nanos < 0;
    let mut u = nanos.unsigned_abs();
    let sign = if negative { "-" } else { "" };
    if u < SECOND {
        // Below one second: a smaller unit, with a fraction.
        let (unit, digits) = match u {
            0 => return "0s".to_owned(),
            u if u < MICROSECOND => return format!("{sign}{u}ns"),
            u if u < MILLISECOND => ("µs", 3),
            _ => ("ms", 6),
        };
        return format!("{sign}{}{unit}", fraction_text(u, digits));
    }
    let mut out = fraction_text(u % MINUTE, 9);
    out.push('s');
    u /= MINUTE;
    if u > 0 {
        out = format!("{}m{out}", u % 60);
        u /= 60;
        if u > 0 {
            out = format!("{u}h{out}");
        }
    }
    format!("{sign}{out}")
}

/// `value / 10^digits` with its fraction, trailing zeros (and a bare point) dropped.
fn fraction_text(value: u64, digits: u32) -> String {
    let divisor = 10u64.pow(digits);
    let whole = value / divisor;
    let fraction = value % divisor;
    if fraction == 0 {
        return whole.to_string();
    }
    let text = format!("{fraction:0width$}", width = digits as usize);
    format!("{whole}.{}", text.trim_end_matches('0'))
}

/// Writes a duration as Go's `Duration.String` (saturating beyond Go's range).
pub fn format(duration: Duration) -> String {
    format_nanos(i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nanos(text: &str) -> i64 {
        parse_nanos(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn accepts_what_go_accepts() {
        let s = SECOND as i64;
        for (text, want) in [
            ("0", 0),
            ("5s", 5 * s),
            ("30s", 30 * s),
            ("1478s", 1478 * s),
            ("-5s", -5 * s),
            ("+5s", 5 * s),
            ("-0", 0),
            ("+0", 0),
            ("5.0s", 5 * s),
            ("5.6s", 5 * s + 600_000_000),
            ("5.s", 5 * s),
            (".5s", 500_000_000),
            ("1.0s", s),
            ("1.00s", s),
            ("1.004s", s + 4_000_000),
            ("1.0040s", s + 4_000_000),
            ("100.00100s", 100 * s + 1_000_000),
            ("10ns", 10),
            ("11us", 11_000),
            ("12µs", 12_000),
            ("12μs", 12_000),
            ("13ms", 13_000_000),
            ("14s", 14 * s),
            ("15m", 15 * 60 * s),
            ("16h", 16 * 3600 * s),
            ("3h30m", (3 * 3600 + 30 * 60) * s),
            ("1h30m", 5400 * s),
            ("300ms", 300_000_000),
            ("1.5s", 1_500_000_000),
            ("10.5s4m", (4 * 60 + 10) * s + 500_000_000),
            ("-2m3.4s", -(2 * 60 * s + 3 * s + 400_000_000)),
            ("1h2m3s4ms5us6ns", 3_723_004_005_006),
            ("39h9m14.425s", 140_954_425_000_000),
            ("52763797000ns", 52_763_797_000),
            ("0.3333333333333333333h", 20 * 60 * s),
            ("9007199254740993ns", (1 << 53) + 1),
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("0.100000000000000000000h", 6 * 60 * s),
            ("0.830103483285477580700h", 2_988_372_539_827),
        ] {
            assert_eq!(nanos(text), want, "{text}");
        }
    }

    #[test]
    fn refuses_what_go_refuses_with_its_messages() {
        for text in [
            "",
            "3",
            "-",
            "s",
            ".",
            "-.",
            ".s",
            "+.s",
            "1d",
            "\u{fffd}",
            "2h3x",
            "9223372036854775808ns",
            "9223372036854775.808us",
            "-9223372036854775809ns",
            "3000000h",
        ] {
            assert!(parse_nanos(text).is_err(), "{text:?}");
        }
        let message = |text: &str| parse_nanos(text).map_err(|e| e.to_string()).err();
        assert_eq!(message("").as_deref(), Some("time: invalid duration \"\""));
        assert_eq!(
            message("3").as_deref(),
            Some("time: missing unit in duration \"3\"")
        );
        assert_eq!(
            message("1d").as_deref(),
            Some("time: unknown unit \"d\" in duration \"1d\"")
        );
        assert_eq!(
            message("1é").as_deref(),
            Some("time: unknown unit \"\\xc3\\xa9\" in duration \"1\\xc3\\xa9\"")
        );
    }

    #[test]
    fn formats_as_go_does() {
        let s = SECOND as i64;
        for (nanos, want) in [
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (3_300_000_000, "3.3s"),
            (4 * 60 * s + 5 * s, "4m5s"),
            (4 * 60 * s + 5 * s + 1_000_000, "4m5.001s"),
            (5 * 3600 * s + 6 * 60 * s + 7 * s + 1_000_000, "5h6m7.001s"),
            (8 * 60 * s + 1, "8m0.000000001s"),
            (3600 * s + 30 * 60 * s, "1h30m0s"),
            (-s, "-1s"),
            (300_000_000, "300ms"),
            (i64::MAX, "2562047h47m16.854775807s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ] {
            assert_eq!(format_nanos(nanos), want, "{nanos}");
        }
        assert_eq!(format(Duration::from_secs(90)), "1m30s");
    }

    #[test]
    fn flags_also_take_bare_seconds() {
        assert_eq!(parse_flag("40s"), Ok(Duration::from_secs(40)));
        assert_eq!(parse_flag("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_flag("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_flag("3"), Ok(Duration::from_secs(3)));
        assert!(parse_flag("3x").is_err());
        assert!(parse_flag("s").is_err());
        assert!(parse("-1s").is_err());
    }
}
