//! Kubernetes' textual form of time: `metav1.Time` and `metav1.MicroTime` as RFC 3339
//! strings in UTC.

use kyb_api::time::{civil_from_days, days_from_civil};

const NANOS_PER_SECOND: i128 = 1_000_000_000;
/// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the years four digits can write.
const MIN_SECONDS: i64 = -62_167_219_200;
const MAX_SECONDS: i64 = 253_402_300_799;
/// The Unix time of Go's zero `time.Time` (0001-01-01T00:00:00Z).
pub(crate) const GO_ZERO_SECONDS: i64 = -62_135_596_800;

/// Formats a Unix time (seconds and nanoseconds, normalized like Go's `time.Unix`) as
/// "2006-01-02T15:04:05Z", with `fraction_digits` truncated fractional digits (0 or 6).
/// `None` if the year is outside 0..=9999.
pub(crate) fn format_rfc3339(seconds: i64, nanos: i64, fraction_digits: u32) -> Option<String> {
    let total = i128::from(seconds) * NANOS_PER_SECOND + i128::from(nanos);
    let seconds = i64::try_from(total.div_euclid(NANOS_PER_SECOND)).ok()?;
    let nanos = total.rem_euclid(NANOS_PER_SECOND) as u32;
    if !(MIN_SECONDS..=MAX_SECONDS).contains(&seconds) {
        return None;
    }
    let days = seconds.div_euclid(86_400);
    let of_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let mut text = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    );
    if fraction_digits > 0 {
        let scaled = nanos / 10u32.pow(9 - fraction_digits.min(9));
        text.push_str(&format!(
            ".{scaled:0width$}",
            width = fraction_digits as usize
        ));
    }
    text.push('Z');
    Some(text)
}

/// Parses an RFC 3339 timestamp ("2006-01-02T15:04:05.999999999Z07:00") into Unix
/// seconds and nanoseconds.
pub(crate) fn parse_rfc3339(text: &str) -> Option<(i64, i32)> {
    let b = text.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = b.get(range)?;
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        digits
            .iter()
            .try_fold(0i64, |acc, d| Some(acc * 10 + i64::from(d - b'0')))
    };
    let sep = |i: usize, allowed: &[u8]| b.get(i).is_some_and(|c| allowed.contains(c));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut i = 19;
    let mut nanos: i64 = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        let mut end = start;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        if end == start || end - start > 9 {
            return None;
        }
        nanos = num(start..end)? * 10i64.pow((9 - (end - start)) as u32);
        i = end;
    }
    let offset = match b.get(i) {
        Some(b'Z' | b'z') if b.len() == i + 1 => 0,
        Some(sign @ (b'+' | b'-')) if b.len() == i + 6 && sep(i + 3, b":") => {
            let (h, m) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            if h > 23 || m > 59 {
                return None;
            }
            let offset = h * 3600 + m * 60;
            if *sign == b'-' { -offset } else { offset }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some((seconds, nanos as i32))
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn formats_times_like_kubernetes() {
        assert_eq!(format_rfc3339(0, 0, 0).unwrap(), "1970-01-01T00:00:00Z");
        assert_eq!(
            format_rfc3339(1_704_164_645, 999_999_999, 0).unwrap(),
            "2024-01-02T03:04:05Z"
        );
        assert_eq!(
            format_rfc3339(1_704_164_645, 123_456_789, 6).unwrap(),
            "2024-01-02T03:04:05.123456Z"
        );
        assert_eq!(
            format_rfc3339(951_782_400, 0, 0).unwrap(),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(format_rfc3339(-1, 0, 0).unwrap(), "1969-12-31T23:59:59Z");
        // Nanoseconds out of range carry into the seconds, as with Go's time.Unix.
        assert_eq!(
            format_rfc3339(0, -1, 6).unwrap(),
            "1969-12-31T23:59:59.999999Z"
        );
        assert_eq!(
            format_rfc3339(GO_ZERO_SECONDS, 0, 0).unwrap(),
            "0001-01-01T00:00:00Z"
        );
        assert!(format_rfc3339(MAX_SECONDS + 1, 0, 0).is_none());
        assert!(format_rfc3339(i64::MIN, i64::MIN, 0).is_none());
    }

    #[test]
    fn parses_what_it_formats_and_offsets() {
        for seconds in [
            0,
            1,
            -1,
            1_704_164_645,
            951_782_400,
            GO_ZERO_SECONDS,
            MAX_SECONDS,
        ] {
            let text = format_rfc3339(seconds, 0, 0).unwrap();
            assert_eq!(parse_rfc3339(&text), Some((seconds, 0)), "{text}");
        }
        assert_eq!(
            parse_rfc3339("2024-01-02T03:04:05.5Z"),
            Some((1_704_164_645, 500_000_000))
        );
        assert_eq!(
            parse_rfc3339("2024-01-02T04:04:05+01:00"),
            Some((1_704_164_645, 0))
        );
        assert_eq!(
            parse_rfc3339("2024-01-02T02:34:05-00:30"),
            Some((1_704_164_645, 0))
        );
        for bad in [
            "",
            "2024-01-02",
            "2024-01-02T03:04:05",
            "2024-13-02T03:04:05Z",
            "2023-02-29T03:04:05Z",
            "2024-01-02T24:04:05Z",
            "2024-01-02T03:04:05.Z",
            "2024-01-02T03:04:05.1234567891Z",
            "2024-01-02T03:04:05+0100",
            "2024-01-02T03:04:05Zjunk",
            "２０２４-01-02T03:04:05Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
