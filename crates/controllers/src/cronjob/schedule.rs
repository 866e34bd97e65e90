//! Cron schedules as CronJobs read them (the standard 5-field format Kubernetes accepts):
//! minute, hour, day of month, month, day of week; `*` and `?`, ranges `a-b`, steps `/n`,
//! lists `a,b`, month (`jan`…`dec`) and day (`sun`…`sat`) names, and the macros
//! `@yearly`/`@annually`, `@monthly`, `@weekly`, `@daily`/`@midnight`, `@hourly`. When both
//! day fields are restricted a day matching either runs (cron's rule). A `TZ=`/`CRON_TZ=`
//! prefix names the schedule's time zone; it is refused when `spec.timeZone` is set, as
//! Kubernetes' validation refuses it.
//!
//! Zones come from the system's tz database ([`time_zone`]). Times are found in the
//! schedule's zone (civil minutes, DST gaps resolved forward) and
//! returned as instants.

use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// The IANA time zone `name`, read from the system's tz database (`$ZONEINFO`,
/// `/usr/share/zoneinfo`, ...) as Go's `time.LoadLocation` reads it; `UTC` and `Local`
/// as Go names them.
pub fn time_zone(name: &str) -> Result<TimeZone, String> {
    if name.is_empty() || name == "UTC" {
        return Ok(TimeZone::UTC);
    }
    if name == "Local" {
        return Ok(TimeZone::system());
    }
    let valid = !name.starts_with('/')
        && name
            .split('/')
            .all(|part| !part.is_empty() && part != ".." && part != ".");
    if !valid {
        return Err(format!("unknown time zone {name}"));
    }
    let mut dirs: Vec<std::path::PathBuf> = vec![];
    if let Some(dir) = std::env::var_os("ZONEINFO") {
        dirs.push(dir.into());
    }
    for dir in [
        "/usr/share/zoneinfo",
        "/usr/share/lib/zoneinfo",
        "/usr/lib/locale/TZ",
        "/etc/zoneinfo",
    ] {
        dirs.push(dir.into());
    }
    for dir in dirs {
        if let Ok(data) = std::fs::read(dir.join(name)) {
            return TimeZone::tzif(name, &data).map_err(|e| e.to_string());
        }
    }
    Err(format!("unknown time zone {name}"))
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
    dom_star: bool,
    dow_star: bool,
    /// The zone named by a `TZ=`/`CRON_TZ=` prefix.
    pub zone: Option<String>,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

struct Bounds {
    min: u32,
    max: u32,
    names: &'static [&'static str],
    /// The value of the first name.
    first_name: u32,
}

fn number(s: &str, b: &Bounds) -> Result<u32, String> {
    if let Some(i) = b.names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
        return Ok(i as u32 + b.first_name);
    }
    s.parse::<u32>()
        .map_err(|_| format!("failed to parse int from {s}"))
}

/// One field: its bits, and whether it was `*`/`?` without a step.
fn field(text: &str, b: &Bounds) -> Result<(u64, bool), String> {
    let mut bits = 0u64;
    let mut star = false;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (
                r,
                Some(
                    s.parse::<u32>()
                        .map_err(|_| format!("failed to parse int from {s}"))?,
                ),
            ),
            None => (part, None),
        };
        let (mut start, mut end, wildcard) = if range == "*" || range == "?" {
            (b.min, b.max, true)
        } else if let Some((a, z)) = range.split_once('-') {
            (number(a, b)?, number(z, b)?, false)
        } else {
            let n = number(range, b)?;
            (n, n, false)
        };
        if let Some(step) = step {
            if step == 0 {
                return Err(format!("step of range should be a positive number: {part}"));
            }
            if !wildcard && !range.contains('-') {
                end = b.max;
            }
        }
        if wildcard && step.is_none_or(|s| s == 1) {
            star = true;
        }
        if start < b.min {
            return Err(format!(
                "beginning of range ({start}) below minimum ({}): {part}",
                b.min
            ));
        }
        if end > b.max {
            return Err(format!(
                "end of range ({end}) above maximum ({}): {part}",
                b.max
            ));
        }
        if start > end {
            return Err(format!(
                "beginning of range ({start}) beyond end of range ({end}): {part}"
            ));
        }
        let step = step.unwrap_or(1);
        while start <= end {
            bits |= 1 << start;
            start += step;
        }
    }
    Ok((bits, star))
}

impl Schedule {
    /// Parses a schedule; `time_zone_field` says whether `spec.timeZone` is set (a
    /// `TZ=` prefix is then refused).
    pub fn parse(text: &str, time_zone_field: bool) -> Result<Schedule, String> {
        let mut text = text.trim();
        let mut zone = None;
        if text.starts_with("TZ=") || text.starts_with("CRON_TZ=") {
            if time_zone_field {
                return Err(
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead".to_string(),
                );
            }
            let (prefix, rest) = text.split_once(' ').ok_or("missing fields")?;
            zone = prefix.split_once('=').map(|(_, z)| z.to_string());
            text = rest.trim();
        }
        let expanded = match text {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other if other.starts_with('@') => {
                return Err(format!("unrecognized descriptor: {other}"));
            }
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "expected exactly 5 fields, found {}: {text}",
                fields.len()
            ));
        }
        let plain = |min, max| Bounds {
            min,
            max,
            names: &[],
            first_name: 0,
        };
        let (minute, _) = field(fields[0], &plain(0, 59))?;
        let (hour, _) = field(fields[1], &plain(0, 23))?;
        let (dom, dom_star) = field(fields[2], &plain(1, 31))?;
        let (month, _) = field(
            fields[3],
            &Bounds {
                min: 1,
                max: 12,
                names: &MONTHS,
                first_name: 1,
            },
        )?;
        let (dow, dow_star) = field(
            fields[4],
            &Bounds {
                min: 0,
                max: 6,
                names: &DAYS,
                first_name: 0,
            },
        )?;
        Ok(Schedule {
            minute,
            hour,
            dom,
            month,
            dow,
            dom_star,
            dow_star,
            zone,
        })
    }

    fn day_matches(&self, date: Date) -> bool {
        let dom = self.dom & (1 << date.day()) != 0;
        let dow = self.dow & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        if self.dom_star || self.dow_star {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// The first scheduled time strictly after `after`, within five years.
    pub fn next(&self, after: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let local = after.to_zoned(tz.clone()).datetime();
        let mut t = local
            .with()
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .ok()?
            .checked_add(1.minute())
            .ok()?;
        let limit = t.year() + 5;
        while t.year() <= limit {
            if self.month & (1 << t.month()) == 0 {
                t = DateTime::from(t.date().first_of_month().checked_add(1.month()).ok()?);
                continue;
            }
            if !self.day_matches(t.date()) {
                t = DateTime::from(t.date().checked_add(1.day()).ok()?);
                continue;
            }
            if self.hour & (1 << t.hour()) == 0 {
                t = t
                    .with()
                    .minute(0)
                    .build()
                    .ok()?
                    .checked_add(1.hour())
                    .ok()?;
                continue;
            }
            if self.minute & (1 << t.minute()) == 0 {
                t = t.checked_add(1.minute()).ok()?;
                continue;
            }
            let at = tz.to_ambiguous_zoned(t).compatible().ok()?.timestamp();
            if at > after {
                return Some(at);
            }
            t = t.checked_add(1.minute()).ok()?;
        }
        None
    }
}

/// What is due between `earliest` and `now`: the most recent scheduled time (if any) and
/// how many were missed in all.
pub fn most_recent(
    schedule: &Schedule,
    tz: &TimeZone,
    earliest: Timestamp,
    now: Timestamp,
) -> (Option<Timestamp>, u64) {
    let mut missed = 0;
    let mut latest = None;
    let mut t = earliest;
    while let Some(next) = schedule.next(t, tz) {
        if next > now {
            return (latest, missed);
        }
        missed += 1;
        latest = Some(next);
        t = next;
        if missed > 100 {
            break;
        }
    }
    let Some(first) = latest else {
        return (None, 0);
    };
    // Many were missed: count the rest by the schedule's interval, and find the latest
    // by searching back from now.
    let interval = schedule
        .next(first, tz)
        .map(|second| second.duration_since(first).as_secs().max(60))
        .unwrap_or(60);
    let elapsed = now.duration_since(first).as_secs().max(0);
    missed = (elapsed / interval) as u64 + 1;
    let mut back = jiff::SignedDuration::from_secs(interval.max(60) * 2);
    loop {
        let from = now.checked_sub(back).unwrap_or(first).max(first);
        let mut found = None;
        let mut t = from;
        while let Some(next) = schedule.next(t, tz) {
            if next > now {
                break;
            }
            found = Some(next);
            t = next;
        }
        if found.is_some() || from == first {
            return (found.or(latest), missed);
        }
        back = back.checked_mul(2).unwrap_or(back);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn next(schedule: &str, after: &str) -> String {
        Schedule::parse(schedule, false)
            .unwrap()
            .next(ts(after), &TimeZone::UTC)
            .unwrap()
            .to_string()
    }

    #[test]
    fn next_times() {
        assert_eq!(
            next("*/5 * * * *", "2026-03-01T10:02:30Z"),
            "2026-03-01T10:05:00Z"
        );
        assert_eq!(
            next("*/5 * * * *", "2026-03-01T10:05:00Z"),
            "2026-03-01T10:10:00Z"
        );
        assert_eq!(
            next("0 9 * * mon-fri", "2026-11-27T12:00:00Z"),
            "2026-11-30T09:00:00Z"
        );
        assert_eq!(
            next("30 2 1,15 * *", "2026-01-15T03:00:00Z"),
            "2026-02-01T02:30:00Z"
        );
        assert_eq!(
            next("@yearly", "2026-06-01T00:00:00Z"),
            "2027-01-01T00:00:00Z"
        );
        assert_eq!(
            next("@monthly", "2026-01-31T00:00:00Z"),
            "2026-02-01T00:00:00Z"
        );
        assert_eq!(
            next("@weekly", "2026-11-24T00:00:00Z"),
            "2026-11-29T00:00:00Z"
        );
        assert_eq!(
            next("@hourly", "2026-11-24T23:59:00Z"),
            "2026-11-25T00:00:00Z"
        );
        assert_eq!(
            next("0 0 29 feb *", "2026-03-01T00:00:00Z"),
            "2028-02-29T00:00:00Z"
        );
        assert_eq!(
            next("0 12 * JAN,Jul SUN", "2026-01-02T00:00:00Z"),
            "2026-01-04T12:00:00Z"
        );
        assert_eq!(
            next("5/20 * * * *", "2026-01-01T00:06:00Z"),
            "2026-01-01T00:25:00Z"
        );
        // Both day fields restricted: either day matches (the 13th or a Friday).
        assert_eq!(
            next("0 0 13 * 5", "2026-02-01T00:00:00Z"),
            "2026-02-06T00:00:00Z"
        );
        assert_eq!(
            next("0 0 13 * 5", "2026-02-12T00:00:00Z"),
            "2026-02-13T00:00:00Z"
        );
    }

    #[test]
    fn time_zones() {
        let berlin = time_zone("Europe/Berlin").unwrap();
        assert!(time_zone("Mars/Olympus").is_err());
        assert!(time_zone("../etc/passwd").is_err());
        let s = Schedule::parse("0 9 * * *", true).unwrap();
        assert_eq!(
            s.next(ts("2026-07-01T00:00:00Z"), &berlin)
                .unwrap()
                .to_string(),
            "2026-07-01T07:00:00Z"
        );
        assert_eq!(
            s.next(ts("2026-12-01T00:00:00Z"), &berlin)
                .unwrap()
                .to_string(),
            "2026-12-01T08:00:00Z"
        );
        let prefixed = Schedule::parse("CRON_TZ=Asia/Tokyo 0 0 * * *", false).unwrap();
        assert_eq!(prefixed.zone.as_deref(), Some("Asia/Tokyo"));
        assert!(
            Schedule::parse("TZ=Asia/Tokyo 0 0 * * *", true)
                .unwrap_err()
                .contains("use timeZone field instead")
        );
    }

    #[test]
    fn refuses_malformed_schedules() {
        for bad in [
            "* * * *",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * * 13 *",
            "* * * * 7",
            "5-1 * * * *",
            "*/0 * * * *",
            "x * * * *",
            "@every 5m",
            "* * * foo *",
        ] {
            assert!(Schedule::parse(bad, false).is_err(), "{bad}");
        }
    }

    #[test]
    fn missed_times() {
        let s = Schedule::parse("* * * * *", false).unwrap();
        let (latest, missed) = most_recent(
            &s,
            &TimeZone::UTC,
            ts("2026-01-01T00:00:00Z"),
            ts("2026-01-01T00:00:59Z"),
        );
        assert_eq!((latest, missed), (None, 0));
        let (latest, missed) = most_recent(
            &s,
            &TimeZone::UTC,
            ts("2026-01-01T00:00:00Z"),
            ts("2026-01-01T00:03:10Z"),
        );
        assert_eq!(latest, Some(ts("2026-01-01T00:03:00Z")));
        assert_eq!(missed, 3);
        let (latest, missed) = most_recent(
            &s,
            &TimeZone::UTC,
            ts("2026-01-01T00:00:00Z"),
            ts("2026-01-02T00:00:30Z"),
        );
        assert_eq!(latest, Some(ts("2026-01-02T00:00:00Z")));
        assert!(missed > 100);
        let weekdays = Schedule::parse("0 9 * * 1-5", false).unwrap();
        let (latest, _) = most_recent(
            &weekdays,
            &TimeZone::UTC,
            ts("2026-01-01T00:00:00Z"),
            ts("2026-11-29T12:00:00Z"),
        );
        assert_eq!(
            latest,
            Some(ts("2026-11-27T09:00:00Z")),
            "the Friday before"
        );
    }
}
