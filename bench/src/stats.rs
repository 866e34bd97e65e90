//! Percentiles of latency samples.

use std::time::Duration;

pub struct Latencies(Vec<Duration>);

impl Latencies {
    pub fn new(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        Self(samples)
    }

    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn percentile(&self, p: f64) -> Duration {
        if self.0.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * (self.0.len() - 1) as f64).round() as usize;
        self.0[rank.min(self.0.len() - 1)]
    }
}

pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}
