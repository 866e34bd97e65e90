//! `/metrics`: a few of kubelet's own metrics in the Prometheus text format —
//! `kubelet_node_name`, `kubelet_running_pods` (ready sandboxes),
//! `kubelet_running_containers{container_state}` (from the runtime) and
//! `kubelet_pod_start_duration_seconds` (from the agent first seeing a pod to all its
//! containers running, as the pods' status tells).

use crate::cri::Cri;
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::Pod;
use std::collections::{HashMap, HashSet};

use std::sync::Mutex;
use std::time::Instant;

/// `kubelet_pod_start_duration_seconds`' buckets (kubelet's).
const BUCKETS: [f64; 21] = [
    0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 20.0, 30.0, 45.0, 60.0, 120.0, 180.0, 240.0,
    300.0, 360.0, 480.0, 600.0, 900.0,
];

/// A histogram of seconds.
#[derive(Debug, Default, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    pub fn observe(&mut self, seconds: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS.len()];
        }
        for (i, bound) in BUCKETS.iter().enumerate() {
            if seconds <= *bound {
                self.counts[i] += 1;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }

    fn render(&self, name: &str, out: &mut String) {
        for (i, bound) in BUCKETS.iter().enumerate() {
            let n = self.counts.get(i).copied().unwrap_or(0);
            out.push_str(&format!("{name}_bucket{{le=\"{bound}\"}} {n}\n"));
        }
        out.push_str(&format!("{name}_bucket{{le=\"+Inf\"}} {}\n", self.count));
        out.push_str(&format!("{name}_sum {}\n", self.sum));
        out.push_str(&format!("{name}_count {}\n", self.count));
    }
}

/// Pod start durations: when each pod was first seen, observed once it runs.
#[derive(Default)]
pub struct PodStartTracker {
    state: Mutex<PodStarts>,
}

#[derive(Default)]
struct PodStarts {
    first_seen: HashMap<String, Instant>,
    started: HashSet<String>,
    histogram: Histogram,
}

/// Whether every container of the pod is running (its start is over).
fn all_running(pod: &Pod) -> bool {
    let Some(status) = &pod.status else {
        return false;
    };
    let statuses = status.container_statuses.as_deref().unwrap_or_default();
    let containers = pod.spec.as_ref().map_or(0, |s| s.containers.len());
    containers > 0
        && statuses.len() == containers
        && statuses
            .iter()
            .all(|s| s.state.as_ref().is_some_and(|st| st.running.is_some()))
}

impl PodStartTracker {
    /// A pod was added or changed: remembered when new, observed once when it runs.
    pub fn seen(&self, pod: &Pod) {
        let Some(uid) = pod.metadata.uid.clone() else {
            return;
        };
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let seen = *state.first_seen.entry(uid.clone()).or_insert(now);
        if !state.started.contains(&uid) && all_running(pod) {
            state.started.insert(uid);
            state.histogram.observe((now - seen).as_secs_f64());
        }
    }

    /// A pod is gone.
    pub fn forget(&self, pod: &Pod) {
        if let Some(uid) = &pod.metadata.uid {
            let mut state = self
                .state
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            state.first_seen.remove(uid);
            state.started.remove(uid);
        }
    }

    fn histogram(&self) -> Histogram {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .histogram
            .clone()
    }
}

/// The `/metrics` text.
pub async fn render(node_name: &str, cri: &Cri, starts: &PodStartTracker) -> String {
    let mut out = String::new();
    out.push_str("# HELP kubelet_node_name [ALPHA] The node's name. The count is always 1.\n# TYPE kubelet_node_name gauge\n");
    out.push_str(&format!(
        "kubelet_node_name{{node=\"{}\"}} 1\n",
        crate::probes::metrics::escape(node_name)
    ));
    let mut runtime = cri.runtime.clone();
    if let Ok(sandboxes) = runtime
        .list_pod_sandbox(cri::ListPodSandboxRequest { filter: None })
        .await
    {
        let ready = sandboxes
            .into_inner()
            .items
            .iter()
            .filter(|s| s.state == cri::PodSandboxState::SandboxReady as i32)
            .count();
        out.push_str("# HELP kubelet_running_pods [ALPHA] Number of pods that have a running pod sandbox\n# TYPE kubelet_running_pods gauge\n");
        out.push_str(&format!("kubelet_running_pods {ready}\n"));
    }
    if let Ok(containers) = runtime
        .list_containers(cri::ListContainersRequest { filter: None })
        .await
    {
        let mut by_state: std::collections::BTreeMap<&str, u64> = [
            ("created", 0),
            ("exited", 0),
            ("running", 0),
            ("unknown", 0),
        ]
        .into();
        for container in containers.into_inner().containers {
            let state = match cri::ContainerState::try_from(container.state) {
                Ok(cri::ContainerState::ContainerCreated) => "created",
                Ok(cri::ContainerState::ContainerRunning) => "running",
                Ok(cri::ContainerState::ContainerExited) => "exited",
                _ => "unknown",
            };
            *by_state.entry(state).or_default() += 1;
        }
        out.push_str("# HELP kubelet_running_containers [ALPHA] Number of containers currently running\n# TYPE kubelet_running_containers gauge\n");
        for (state, n) in by_state {
            out.push_str(&format!(
                "kubelet_running_containers{{container_state=\"{state}\"}} {n}\n"
            ));
        }
    }
    out.push_str("# HELP kubelet_pod_start_duration_seconds [ALPHA] Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run\n# TYPE kubelet_pod_start_duration_seconds histogram\n");
    starts
        .histogram()
        .render("kubelet_pod_start_duration_seconds", &mut out);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn histogram_renders_cumulative_buckets() {
        let mut histogram = Histogram::default();
        histogram.observe(0.2);
        histogram.observe(7.0);
        let mut out = String::new();
        histogram.render("h", &mut out);
        assert!(out.contains("h_bucket{le=\"0.5\"} 1\n"), "{out}");
        assert!(out.contains("h_bucket{le=\"6\"} 1\n"), "{out}");
        assert!(out.contains("h_bucket{le=\"8\"} 2\n"));
        assert!(out.contains("h_bucket{le=\"+Inf\"} 2\n"));
        assert!(out.contains("h_count 2\n"));
    }
}
