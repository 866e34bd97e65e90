//! Prometheus metrics: counters, gauges and histograms registered under a family name and
//! labels, rendered in the text exposition format (version 0.0.4) for `/metrics`.
//!
//! The work queues report client-go's `workqueue_*` families (labelled `name`), the
//! controller loop reports `controller_reconcile_*` (labelled `controller`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A count that only goes up.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn inc(&self) {
        self.add(1);
    }
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down.
#[derive(Debug, Default)]
pub struct Gauge(AtomicI64);

impl Gauge {
    pub fn set(&self, v: i64) {
        self.0.store(v, Ordering::Relaxed);
    }
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Durations in seconds, counted into buckets.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    counts: Vec<AtomicU64>,
    sum_nanos: AtomicU64,
    count: AtomicU64,
}

/// client-go's work queue buckets: 1 µs to 10 s, by tens.
pub const QUEUE_BUCKETS: &[f64] = &[1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0];
/// Reconcile times: 1 ms to 60 s.
pub const RECONCILE_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            sum_nanos: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, d: Duration) {
        let seconds = d.as_secs_f64();
        if let Some(i) = self.bounds.iter().position(|b| seconds <= *b) {
            self.counts[i].fetch_add(1, Ordering::Relaxed);
        }
        self.sum_nanos.fetch_add(
            u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The upper bound of the bucket holding the `q` quantile (0..=1), or `None` when
    /// nothing was observed (or it is beyond the last bucket).
    pub fn quantile_bound(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let wanted = (q * total as f64).ceil() as u64;
        let mut seen = 0;
        for (bound, count) in self.bounds.iter().zip(&self.counts) {
            seen += count.load(Ordering::Relaxed);
            if seen >= wanted {
                return Some(*bound);
            }
        }
        None
    }
}

#[derive(Clone)]
enum Metric {
    Counter(Arc<Counter>),
    Gauge(Arc<Gauge>),
    Histogram(Arc<Histogram>),
}

struct Family {
    help: &'static str,
    kind: &'static str,
    series: Vec<(String, Metric)>,
}

/// Every metric a process exposes.
#[derive(Default)]
pub struct Registry {
    families: Mutex<BTreeMap<&'static str, Family>>,
}

impl Registry {
    fn register(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&str, &str)],
        metric: Metric,
    ) {
        let kind = match metric {
            Metric::Counter(_) => "counter",
            Metric::Gauge(_) => "gauge",
            Metric::Histogram(_) => "histogram",
        };
        let labels = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect::<Vec<_>>()
            .join(",");
        let mut families = self.families.lock().unwrap_or_else(|e| e.into_inner());
        families
            .entry(name)
            .or_insert_with(|| Family {
                help,
                kind,
                series: vec![],
            })
            .series
            .push((labels, metric));
    }

    pub fn counter(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&str, &str)],
    ) -> Arc<Counter> {
        let c = Arc::new(Counter::default());
        self.register(name, help, labels, Metric::Counter(c.clone()));
        c
    }

    pub fn gauge(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&str, &str)],
    ) -> Arc<Gauge> {
        let g = Arc::new(Gauge::default());
        self.register(name, help, labels, Metric::Gauge(g.clone()));
        g
    }

    pub fn histogram(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&str, &str)],
        bounds: &'static [f64],
    ) -> Arc<Histogram> {
        let h = Arc::new(Histogram::new(bounds));
        self.register(name, help, labels, Metric::Histogram(h.clone()));
        h
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        let families = self.families.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        for (name, family) in families.iter() {
            let _ = writeln!(out, "# HELP {name} {}", family.help);
            let _ = writeln!(out, "# TYPE {name} {}", family.kind);
            for (labels, metric) in &family.series {
                match metric {
                    Metric::Counter(c) => sample(&mut out, name, "", labels, c.get()),
                    Metric::Gauge(g) => sample(&mut out, name, "", labels, g.get()),
                    Metric::Histogram(h) => {
                        let mut cumulative = 0;
                        for (bound, count) in h.bounds.iter().zip(&h.counts) {
                            cumulative += count.load(Ordering::Relaxed);
                            let le = join(labels, &format!("le=\"{bound}\""));
                            sample(&mut out, name, "_bucket", &le, cumulative);
                        }
                        let le = join(labels, "le=\"+Inf\"");
                        sample(&mut out, name, "_bucket", &le, h.count());
                        let sum = h.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
                        sample(&mut out, name, "_sum", labels, sum);
                        sample(&mut out, name, "_count", labels, h.count());
                    }
                }
            }
        }
        out
    }
}

fn join(labels: &str, more: &str) -> String {
    if labels.is_empty() {
        more.to_string()
    } else {
        format!("{labels},{more}")
    }
}

fn sample(out: &mut String, name: &str, suffix: &str, labels: &str, value: impl std::fmt::Display) {
    if labels.is_empty() {
        let _ = writeln!(out, "{name}{suffix} {value}");
    } else {
        let _ = writeln!(out, "{name}{suffix}{{{labels}}} {value}");
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// One work queue's metrics (client-go's names).
#[derive(Debug)]
pub struct QueueMetrics {
    pub depth: Arc<Gauge>,
    pub adds: Arc<Counter>,
    pub retries: Arc<Counter>,
    pub queue_latency: Arc<Histogram>,
    pub work_duration: Arc<Histogram>,
}

impl Default for QueueMetrics {
    /// Unregistered metrics (for tests).
    fn default() -> Self {
        QueueMetrics {
            depth: Arc::default(),
            adds: Arc::default(),
            retries: Arc::default(),
            queue_latency: Arc::new(Histogram::new(QUEUE_BUCKETS)),
            work_duration: Arc::new(Histogram::new(QUEUE_BUCKETS)),
        }
    }
}

impl QueueMetrics {
    pub fn register(registry: &Registry, name: &str) -> Arc<QueueMetrics> {
        let labels = [("name", name)];
        Arc::new(QueueMetrics {
            depth: registry.gauge("workqueue_depth", "Current depth of workqueue", &labels),
            adds: registry.counter(
                "workqueue_adds_total",
                "Total number of adds handled by workqueue",
                &labels,
            ),
            retries: registry.counter(
                "workqueue_retries_total",
                "Total number of retries handled by workqueue",
                &labels,
            ),
            queue_latency: registry.histogram(
                "workqueue_queue_duration_seconds",
                "How long in seconds an item stays in workqueue before being requested.",
                &labels,
                QUEUE_BUCKETS,
            ),
            work_duration: registry.histogram(
                "workqueue_work_duration_seconds",
                "How long in seconds processing an item from workqueue takes.",
                &labels,
                QUEUE_BUCKETS,
            ),
        })
    }
}

/// One controller's reconcile metrics.
#[derive(Debug)]
pub struct ReconcileMetrics {
    pub total: Arc<Counter>,
    pub errors: Arc<Counter>,
    pub duration: Arc<Histogram>,
}

impl ReconcileMetrics {
    pub fn register(registry: &Registry, controller: &str) -> Arc<ReconcileMetrics> {
        let labels = [("controller", controller)];
        Arc::new(ReconcileMetrics {
            total: registry.counter(
                "controller_reconcile_total",
                "Total number of reconciliations per controller",
                &labels,
            ),
            errors: registry.counter(
                "controller_reconcile_errors_total",
                "Total number of reconciliation errors per controller",
                &labels,
            ),
            duration: registry.histogram(
                "controller_reconcile_time_seconds",
                "Length of time per reconciliation per controller",
                &labels,
                RECONCILE_BUCKETS,
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn renders_the_text_format() {
        let registry = Registry::default();
        let q = QueueMetrics::register(&registry, "deployment");
        q.depth.set(3);
        q.adds.add(7);
        q.work_duration.observe(Duration::from_micros(50));
        let text = registry.render();
        assert!(
            text.contains("# TYPE workqueue_depth gauge\nworkqueue_depth{name=\"deployment\"} 3\n")
        );
        assert!(text.contains("workqueue_adds_total{name=\"deployment\"} 7\n"));
        assert!(text.contains(
            "workqueue_work_duration_seconds_bucket{name=\"deployment\",le=\"0.0001\"} 1\n"
        ));
        assert!(text.contains(
            "workqueue_work_duration_seconds_bucket{name=\"deployment\",le=\"0.00001\"} 0\n"
        ));
        assert!(text.contains("workqueue_work_duration_seconds_count{name=\"deployment\"} 1\n"));
        // One HELP/TYPE per family, however many series.
        QueueMetrics::register(&registry, "job");
        let text = registry.render();
        assert_eq!(text.matches("# TYPE workqueue_depth gauge").count(), 1);
        assert!(text.contains("workqueue_depth{name=\"job\"} 0\n"));
    }

    #[test]
    fn quantile_bounds() {
        let h = Histogram::new(RECONCILE_BUCKETS);
        assert_eq!(h.quantile_bound(0.99), None);
        for _ in 0..99 {
            h.observe(Duration::from_millis(2));
        }
        h.observe(Duration::from_millis(400));
        assert_eq!(h.quantile_bound(0.5), Some(0.0025));
        assert_eq!(h.quantile_bound(0.99), Some(0.0025));
        assert_eq!(h.quantile_bound(1.0), Some(0.5));
    }
}
