//! Calendar arithmetic for Kubernetes timestamps: converting between dates of the
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

#[cfg(test)]
mod tests {
    use super::*;

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
