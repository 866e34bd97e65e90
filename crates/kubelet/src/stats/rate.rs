//! CPU usage rates from cumulative counters, as cAdvisor derives `usageNanoCores`: each
//! container, pod and the node keep a reference sample (cumulative core-nanoseconds and
//! when), and a new sample's rate is the difference over the time between them.
//!
//! A reference is replaced only once a new sample is at least [`MIN_WINDOW_NANOS`] newer, so two
//! scrapes close together (the metrics API and a `/stats/summary` reader) do not make a
//! window of a few microseconds whose rate is noise. Keys not seen in a sampling round are
//! forgotten, so the table stays as large as what runs.

use std::collections::HashMap;

/// The shortest window a rate is computed over before the reference moves on.
pub const MIN_WINDOW_NANOS: i64 = 1_000_000_000;

#[derive(Clone, Copy, Debug)]
struct Sample {
    at: i64,
    cumulative: u64,
}

/// The rates of one kind of counter, keyed by what they measure.
#[derive(Debug, Default)]
pub struct Rates {
    samples: HashMap<String, (Sample, Option<u64>)>,
}

impl Rates {
    /// Records `cumulative` core-nanoseconds read at `at` (nanoseconds since the epoch)
    /// for `key`; the usage in nanocores since the reference sample, `None` for the first
    /// sample (or a counter that went backwards: a restarted container).
    pub fn observe(&mut self, key: &str, at: i64, cumulative: u64) -> Option<u64> {
        let new = Sample { at, cumulative };
        let Some((reference, last_rate)) = self.samples.get_mut(key) else {
            self.samples.insert(key.to_string(), (new, None));
            return None;
        };
        if cumulative < reference.cumulative || at < reference.at {
            *reference = new;
            *last_rate = None;
            return None;
        }
        let window = at - reference.at;
        if window < MIN_WINDOW_NANOS {
            // Too close to the reference: the last rate computed still stands.
            return *last_rate;
        }
        let used = u128::from(cumulative - reference.cumulative);
        let rate = used * 1_000_000_000 / u128::from(window.unsigned_abs());
        let rate = u64::try_from(rate).unwrap_or(u64::MAX);
        *reference = new;
        *last_rate = Some(rate);
        Some(rate)
    }

    /// Forgets every key but those in `live`.
    pub fn retain(&mut self, live: &std::collections::HashSet<String>) {
        self.samples.retain(|key, _| live.contains(key));
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    #[test]
    fn the_rate_is_the_difference_over_the_window() {
        let mut rates = Rates::default();
        assert_eq!(rates.observe("c", 10 * S, 1_000), None);
        // Half a core for two seconds.
        assert_eq!(
            rates.observe("c", 12 * S, 1_000 + S as u64),
            Some(500_000_000)
        );
        // A sample too close to the reference keeps the last rate and the reference.
        assert_eq!(
            rates.observe("c", 12 * S + 10, 1_000 + S as u64 + 5),
            Some(500_000_000)
        );
        // Two cores over one second, measured from the reference at 12 s.
        assert_eq!(
            rates.observe("c", 13 * S, 1_000 + 3 * S as u64),
            Some(2_000_000_000)
        );
    }

    #[test]
    fn a_counter_that_goes_back_starts_over_and_gone_keys_are_forgotten() {
        let mut rates = Rates::default();
        rates.observe("a", S, 5 * S as u64);
        rates.observe("b", S, 0);
        assert_eq!(rates.observe("a", 3 * S, 10), None);
        assert_eq!(rates.observe("a", 5 * S, 10 + S as u64), Some(500_000_000));
        rates.retain(&["a".to_string()].into_iter().collect());
        assert_eq!(rates.len(), 1);
        assert_eq!(rates.observe("b", 9 * S, 10), None);
    }
}
