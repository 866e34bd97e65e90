//! Names of rotated audit log files, as kube-apiserver's rotation (lumberjack) writes and
//! recognises them: `<name>-<UTC time>.<ext>` for a log `<name>.<ext>`, the time written
//! `2006-01-02T15-04-05.000` (milliseconds; dashes instead of colons), e.g.
//! `/var/log/audit.log` → `/var/log/audit-2026-11-23T10-00-00.123.log`.

use std::fmt::Write;

use kyb_apimachinery::time::{civil_from_days, days_from_civil};

const MILLIS_PER_DAY: i64 = 86_400_000;

/// The parts of a log file name a backup name is built from: everything before the
/// extension, followed by `-`, and the extension with its dot (empty when none). The
/// extension starts at the last dot, as Go's `filepath.Ext` has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BackupNames {
    prefix: String,
    ext: String,
}

impl BackupNames {
    pub(crate) fn for_file(file_name: &str) -> BackupNames {
        let (stem, ext) = match file_name.rfind('.') {
            Some(dot) => file_name.split_at(dot),
            None => (file_name, ""),
        };
        BackupNames {
            prefix: format!("{stem}-"),
            ext: ext.to_string(),
        }
    }

    /// The backup name for a rotation at `millis` (milliseconds since the epoch).
    pub(crate) fn name_at(&self, millis: i64) -> String {
        let mut name = String::with_capacity(self.prefix.len() + 23 + self.ext.len());
        name.push_str(&self.prefix);
        write_time(&mut name, millis);
        name.push_str(&self.ext);
        name
    }

    /// The rotation time of a backup, or `None` when `file_name` is not a backup of this
    /// log (compressed backups, with `.gz` after the extension, are recognised too).
    pub(crate) fn time_of(&self, file_name: &str) -> Option<i64> {
        let rest = file_name.strip_prefix(&self.prefix)?;
        let time = rest
            .strip_suffix(&self.ext)
            .or_else(|| rest.strip_suffix(".gz")?.strip_suffix(&self.ext))?;
        parse_time(time)
    }

    /// The name a backup is counted under: compressed and uncompressed copies of one
    /// backup count once.
    pub(crate) fn base_name(file_name: &str) -> &str {
        file_name.strip_suffix(".gz").unwrap_or(file_name)
    }
}

fn write_time(out: &mut String, millis: i64) {
    let days = millis.div_euclid(MILLIS_PER_DAY);
    let of_day = millis.rem_euclid(MILLIS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let seconds = of_day / 1000;
    let _ = write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}-{:02}-{:02}.{:03}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        of_day % 1000
    );
}

/// Parses `2006-01-02T15-04-05.000` exactly (Go's layout: fixed widths, three fractional
/// digits) into milliseconds since the epoch.
fn parse_time(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 23 {
        return None;
    }
    let separators = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b'-'),
        (16, b'-'),
        (19, b'.'),
    ];
    if separators.iter().any(|&(at, c)| b[at] != c) {
        return None;
    }
    let number = |from: usize, to: usize| -> Option<i64> {
        let digits = s.get(from..to)?;
        if !digits.bytes().all(|d| d.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    };
    let (year, month, day) = (number(0, 4)?, number(5, 7)?, number(8, 10)?);
    let (hour, minute, second, millis) = (
        number(11, 13)?,
        number(14, 16)?,
        number(17, 19)?,
        number(20, 23)?,
    );
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => return None,
    };
    if day < 1 || day > days_in_month || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(days * MILLIS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2026-11-23T10:00:00.123Z
    const T: i64 = 1_795_428_000_123;

    #[test]
    fn names_like_lumberjack() {
        let names = BackupNames::for_file("audit.log");
        assert_eq!(names.name_at(T), "audit-2026-11-23T10-00-00.123.log");
        assert_eq!(
            BackupNames::for_file("audit").name_at(T),
            "audit-2026-11-23T10-00-00.123"
        );
        assert_eq!(
            BackupNames::for_file("a.b.json").name_at(0),
            "a.b-1970-01-01T00-00-00.000.json"
        );
    }

    #[test]
    fn recognises_backups() {
        let names = BackupNames::for_file("audit.log");
        assert_eq!(names.time_of("audit-2026-11-23T10-00-00.123.log"), Some(T));
        assert_eq!(
            names.time_of("audit-2026-11-23T10-00-00.123.log.gz"),
            Some(T)
        );
        assert_eq!(names.time_of("audit.log"), None);
        assert_eq!(names.time_of("audit-2026-11-23T10:00:00.123.log"), None);
        assert_eq!(names.time_of("audit-2026-02-30T10-00-00.123.log"), None);
        assert_eq!(names.time_of("audit-2026-11-23T10-00-00.12.log"), None);
        assert_eq!(names.time_of("other-2026-11-23T10-00-00.123.log"), None);
        assert_eq!(names.time_of("audit-2026-11-23T10-00-00.123.txt"), None);
        assert_eq!(BackupNames::base_name("x.log.gz"), "x.log");
    }

    #[test]
    fn round_trip() {
        let names = BackupNames::for_file("kube-apiserver-audit.log");
        for millis in [0, 951_782_400_999, T, 4_102_444_799_999] {
            assert_eq!(names.time_of(&names.name_at(millis)), Some(millis));
        }
    }
}
