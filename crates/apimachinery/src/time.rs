//! Kubernetes timestamps: `metav1.Time` and `metav1.MicroTime` as RFC 3339 text (parsed
//! as Go's `time.Parse(time.RFC3339, …)` does, written in UTC with 0 or 6 fractional
//! digits), and the calendar arithmetic under it: converting between dates of the
//! proleptic Gregorian calendar (the one RFC 3339 and Go's `time` package use) and days
//! since the Unix epoch, without a time library.
//!
//! Both directions work in 400-year eras, the period after which the Gregorian calendar
//! repeats (146 097 days), and shift the year to start in March so that the leap day
//! falls at its end. They are exact for any year a timestamp can carry; the arithmetic
//! can overflow only for years beyond ±10¹⁵.

/// Days in one 400-year era.
const DAYS_PER_ERA: i64 = 146_097;

/// Days from 0000-03-01, where the eras are counted from, to 1970-01-01.
const EPOCH_SHIFT: i64 = 719_468;

/// The number of days from 1970-01-01 to the date `year-month-day` (negative before
/// it). `month` is 1 to 12 and `day` 1 to 31; a day past the end of its month counts on
/// into the next (February 30 is March 1 or 2).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    // Years begin in March, so January and February belong to the year before.
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * DAYS_PER_ERA + day_of_era - EPOCH_SHIFT
}

/// The date `(year, month, day)` that lies `days` days after 1970-01-01 (before it when
/// negative); the inverse of [`days_from_civil`].
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let shifted = days + EPOCH_SHIFT;
    let era = shifted.div_euclid(DAYS_PER_ERA);
    let day_of_era = shifted.rem_euclid(DAYS_PER_ERA);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

const NANOS_PER_SECOND: i128 = 1_000_000_000;
/// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the years four digits can write.
const MIN_SECONDS: i64 = -62_167_219_200;
const MAX_SECONDS: i64 = 253_402_300_799;
/// The Unix time of Go's zero `time.Time` (0001-01-01T00:00:00Z).
pub const GO_ZERO_SECONDS: i64 = -62_135_596_800;

/// Formats a Unix time (seconds and nanoseconds, normalized like Go's `time.Unix`) as
/// "2006-01-02T15:04:05Z", with `fraction_digits` truncated fractional digits (0 to 9;
/// Kubernetes writes 0 for `Time` and 6 for `MicroTime`). `None` if the year is outside
/// 0..=9999.
pub fn format_rfc3339(seconds: i64, nanos: i64, fraction_digits: u32) -> Option<String> {
    let total = i128::from(seconds) * NANOS_PER_SECOND + i128::from(nanos);
    let seconds = i64::try_from(total.div_euclid(NANOS_PER_SECOND)).ok()?;
    let nanos = u32::try_from(total.rem_euclid(NANOS_PER_SECOND)).ok()?;
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
    let digits = fraction_digits.min(9);
    if digits > 0 {
        let scaled = nanos / 10u32.pow(9 - digits);
        text.push_str(&format!(".{scaled:0width$}", width = digits as usize));
    }
    text.push('Z');
    Some(text)
}

/// Parses an RFC 3339 timestamp (`2006-01-02T15:04:05.999999999Z07:00`) into Unix seconds
/// and nanoseconds, as Go's `time.Parse(time.RFC3339, …)`: a `T` (or `t`) between date and
/// time, real calendar dates, seconds up to 59, any number of fractional digits (beyond
/// nine truncated), and `Z` or a `±hh:mm` offset.
pub fn parse_rfc3339(text: &str) -> Option<(i64, i32)> {
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
        if end == start {
            return None;
        }
        let kept = (end - start).min(9);
        nanos = num(start..start + kept)? * 10i64.pow(u32::try_from(9 - kept).ok()?);
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
    Some((seconds, i32::try_from(nanos).ok()?))
}

/// Whole seconds since the Unix epoch of an RFC 3339 timestamp (see [`parse_rfc3339`]).
pub fn unix_seconds(text: &str) -> Option<i64> {
    parse_rfc3339(text).map(|(seconds, _)| seconds)
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
        assert_eq!(unix_seconds("2024-02-29T12:34:56Z"), Some(1_709_210_096));
        assert_eq!(
            unix_seconds("2024-02-29T14:34:56.789+02:00"),
            Some(1_709_210_096)
        );
        for bad in [
            "",
            "yesterday",
            "2024-01-02",
            "2024-01-02T03:04:05",
            "2024-13-02T03:04:05Z",
            "2023-02-29T03:04:05Z",
            "2024-01-02T24:04:05Z",
            "2024-01-02T03:04:60Z",
            "2024-01-02 03:04:05Z",
            "2024-01-02T03:04:05.Z",
            "2024-01-02T03:04:05+0100",
            "2024-01-02T03:04:05Zjunk",
            "２０２４-01-02T03:04:05Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn fractions_beyond_nanoseconds_are_truncated_as_go_does() {
        // The protobuf codec refused ten digits and the managed-fields reader accepted
        // any number; Go's parser accepts them and keeps nine.
        assert_eq!(
            parse_rfc3339("2024-01-02T03:04:05.1234567891Z"),
            Some((1_704_164_645, 123_456_789))
        );
    }

    #[test]
    fn known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2024, 2, 29), 19_782);
        assert_eq!(days_from_civil(1, 1, 1), -719_162);
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-719_162), (1, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn directions_are_inverse() {
        for days in (-800_000..3_000_000).step_by(997) {
            let (year, month, day) = civil_from_days(days);
            assert!((1..=12).contains(&month) && (1..=31).contains(&day));
            assert_eq!(
                days_from_civil(year, month, day),
                days,
                "{year}-{month}-{day}"
            );
        }
    }
}
