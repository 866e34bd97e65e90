//! The probes' counters as kubelet's prober exports them on `/metrics/probes`:
//! `prober_probe_total{probe_type,result,container,pod,namespace,pod_uid}`, one count per
//! probe run by its result (`successful`, `failed`, `unknown`), forgotten with the pod.

use super::ProbeKind;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The labels of one counter.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ProbeLabels {
    pub probe_type: ProbeKind,
    /// `successful`, `failed` or `unknown`.
    pub result: &'static str,
    pub container: String,
    pub pod: String,
    pub namespace: String,
    pub pod_uid: String,
}

/// Every probe counter.
#[derive(Default)]
pub struct ProbeCounters {
    counts: Mutex<BTreeMap<ProbeLabels, u64>>,
}

impl ProbeCounters {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<ProbeLabels, u64>> {
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts one probe run.
    pub fn count(&self, labels: ProbeLabels) {
        *self.lock().entry(labels).or_default() += 1;
    }

    /// Forgets the pod's counters.
    pub fn remove_pod(&self, pod_uid: &str) {
        self.lock().retain(|labels, _| labels.pod_uid != pod_uid);
    }

    /// The counters, in label order.
    pub fn snapshot(&self) -> Vec<(ProbeLabels, u64)> {
        self.lock().iter().map(|(l, n)| (l.clone(), *n)).collect()
    }

    /// The counters in the Prometheus text format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut text = String::from(
            "# HELP prober_probe_total [BETA] Cumulative number of a liveness, readiness or \
             startup probe for a container by result.\n# TYPE prober_probe_total counter\n",
        );
        for (l, n) in self.snapshot() {
            text.push_str(&format!(
                "prober_probe_total{{container=\"{}\",namespace=\"{}\",pod=\"{}\",pod_uid=\"{}\",probe_type=\"{}\",result=\"{}\"}} {n}\n",
                escape(&l.container),
                escape(&l.namespace),
                escape(&l.pod),
                escape(&l.pod_uid),
                l.probe_type,
                l.result,
            ));
        }
        text
    }
}

/// A label value escaped as the Prometheus text format requires.
pub fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn labels(uid: &str, result: &'static str) -> ProbeLabels {
        ProbeLabels {
            probe_type: ProbeKind::Readiness,
            result,
            container: "app".into(),
            pod: "web".into(),
            namespace: "default".into(),
            pod_uid: uid.into(),
        }
    }

    #[test]
    fn counts_render_and_forget() {
        let counters = ProbeCounters::default();
        counters.count(labels("u1", "successful"));
        counters.count(labels("u1", "successful"));
        counters.count(labels("u2", "failed"));
        let text = counters.render();
        assert!(text.contains(
            "prober_probe_total{container=\"app\",namespace=\"default\",pod=\"web\",pod_uid=\"u1\",probe_type=\"Readiness\",result=\"successful\"} 2\n"
        ), "{text}");
        assert!(text.contains("pod_uid=\"u2\",probe_type=\"Readiness\",result=\"failed\"} 1"));
        counters.remove_pod("u1");
        assert_eq!(counters.snapshot().len(), 1);
        assert_eq!(escape("a\"b\\"), "a\\\"b\\\\");
    }
}
