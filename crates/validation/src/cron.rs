//! Cron schedules as CronJobs accept them (the standard five fields, month and weekday
//! names, ranges, steps, `?`, and the `@hourly`-style descriptors including `@every`),
//! with the error messages of the parser Kubernetes uses.

use kyb_apimachinery::gofmt;

/// Allowed range and names of one field.
struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

const MONTHS: &[(&str, u32)] = &[
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("may", 5),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];
const DAYS: &[(&str, u32)] = &[
    ("sun", 0),
    ("mon", 1),
    ("tue", 2),
    ("wed", 3),
    ("thu", 4),
    ("fri", 5),
    ("sat", 6),
];

const FIELDS: [Bounds; 5] = [
    Bounds {
        min: 0,
        max: 59,
        names: &[],
    },
    Bounds {
        min: 0,
        max: 23,
        names: &[],
    },
    Bounds {
        min: 1,
        max: 31,
        names: &[],
    },
    Bounds {
        min: 1,
        max: 12,
        names: MONTHS,
    },
    Bounds {
        min: 0,
        max: 6,
        names: DAYS,
    },
];

/// Go's `strconv.Atoi` error text.
fn atoi(s: &str) -> Result<u32, String> {
    let syntax = || {
        format!(
            "failed to parse int from {s}: strconv.Atoi: parsing {}: invalid syntax",
            gofmt::quote(s)
        )
    };
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(syntax());
    }
    match s.parse::<i64>() {
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {s}")),
        Ok(n) => u32::try_from(n).map_err(|_| {
            format!(
                "failed to parse int from {s}: strconv.Atoi: parsing {}: value out of range",
                gofmt::quote(s)
            )
        }),
        Err(_) => Err(format!(
            "failed to parse int from {s}: strconv.Atoi: parsing {}: value out of range",
            gofmt::quote(s)
        )),
    }
}

fn int_or_name(s: &str, b: &Bounds) -> Result<u32, String> {
    let lower = s.to_lowercase();
    if let Some((_, v)) = b.names.iter().find(|(n, _)| *n == lower) {
        return Ok(*v);
    }
    atoi(s)
}

fn parse_range(expr: &str, b: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = range_and_step
        .first()
        .copied()
        .unwrap_or_default()
        .split('-')
        .collect();
    let single = low_high.len() == 1;
    let (start, mut end) = match low_high.as_slice() {
        ["*"] | ["?"] => (b.min, b.max),
        [one] => {
            let v = int_or_name(one, b)?;
            (v, v)
        }
        [lo, hi] if *lo == "*" || *lo == "?" => {
            let _ = hi;
            (b.min, b.max)
        }
        [lo, hi] => (int_or_name(lo, b)?, int_or_name(hi, b)?),
        _ => return Err(format!("too many hyphens: {expr}")),
    };
    let step = match range_and_step.as_slice() {
        [_] => 1,
        [_, s] => {
            let step = atoi(s)?;
            if single && !matches!(low_high.as_slice(), ["*"] | ["?"]) {
                end = b.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        ));
    }
    if end > b.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

/// Parses a schedule; `Err` holds the parser's message. `TZ=`/`CRON_TZ=` prefixes are
/// accepted here (CronJob validation forbids them separately).
pub(crate) fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".to_string());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let (tz_part, rest) = spec.split_once(' ').unwrap_or((spec, ""));
        let tz = tz_part.split_once('=').map(|(_, t)| t).unwrap_or_default();
        if !time_zone_exists(tz) {
            return Err(format!(
                "provided bad location {tz}: unknown time zone {tz}"
            ));
        }
        spec = rest.trim();
    }
    if spec.starts_with('@') {
        return match spec {
            "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight"
            | "@hourly" => Ok(()),
            s if s.starts_with("@every ") => {
                let d = s.get("@every ".len()..).unwrap_or_default();
                kyb_apimachinery::duration::parse_nanos(d)
                    .map(|_| ())
                    .map_err(|e| format!("failed to parse duration {s}: {e}"))
            }
            s => Err(format!("unrecognized descriptor: {s}")),
        };
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    for (f, b) in fields.iter().zip(FIELDS.iter()) {
        for part in f.split(',') {
            parse_range(part, b)?;
        }
    }
    Ok(())
}

/// Whether an IANA time zone name is known (from the system zone database; names are
/// accepted when the machine has none).
pub(crate) fn time_zone_exists(tz: &str) -> bool {
    if tz == "UTC" || tz == "Local" {
        return true;
    }
    if tz.is_empty() || tz.starts_with('/') || tz.split('/').any(|p| p == ".." || p.is_empty()) {
        return false;
    }
    let root = std::path::Path::new("/usr/share/zoneinfo");
    if !root.is_dir() {
        return true;
    }
    root.join(tz).is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_schedules() {
        for s in [
            "*/5 * * * *",
            "0 0 * * *",
            "0 9-17 * * mon-fri",
            "15,45 */2 1 jan,JUL ?",
            "@hourly",
            "@every 1h30m",
            "5/10 * * * *",
            "0 0 1-31/2 * 0-6",
        ] {
            assert_eq!(parse_standard(s), Ok(()), "{s}");
        }
    }

    #[test]
    fn invalid_schedules() {
        assert_eq!(parse_standard(""), Err("empty spec string".to_string()));
        assert_eq!(
            parse_standard("* * * *"),
            Err("expected exactly 5 fields, found 4: [* * * *]".to_string())
        );
        assert_eq!(
            parse_standard("60 * * * *"),
            Err("end of range (60) above maximum (59): 60".to_string())
        );
        assert_eq!(
            parse_standard("* * 0 * *"),
            Err("beginning of range (0) below minimum (1): 0".to_string())
        );
        assert_eq!(
            parse_standard("5-1 * * * *"),
            Err("beginning of range (5) beyond end of range (1): 5-1".to_string())
        );
        assert_eq!(
            parse_standard("x * * * *"),
            Err(
                r#"failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax"#
                    .to_string()
            )
        );
        assert_eq!(
            parse_standard("*/0 * * * *"),
            Err("step of range should be a positive number: */0".to_string())
        );
        assert_eq!(
            parse_standard("1-2-3 * * * *"),
            Err("too many hyphens: 1-2-3".to_string())
        );
        assert_eq!(
            parse_standard("@sometimes"),
            Err("unrecognized descriptor: @sometimes".to_string())
        );
        assert!(parse_standard("@every 5x").is_err());
        assert!(parse_standard("* * * * 7").is_err());
    }
}
