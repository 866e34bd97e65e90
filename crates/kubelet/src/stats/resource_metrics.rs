//! `/metrics/resource`: the kubelet's resource metrics in the Prometheus text format
//! (0.0.4), written from a CPU-and-memory summary exactly as kubelet's resource metrics
//! collector writes them — the same families, help texts and stability markers, families
//! in name order, labels in name order, values as Go formats a float64 and samples stamped
//! with the time they were read, in milliseconds.

use super::summary::{ContainerStats, PodStats, Summary, Time};
use std::fmt::Write as _;

/// The content type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One family: name, help (with its stability marker), type.
struct Family {
    name: &'static str,
    help: &'static str,
    kind: &'static str,
}

const CONTAINER_CPU: Family = Family {
    name: "container_cpu_usage_seconds_total",
    help: "[STABLE] Cumulative cpu time consumed by the container in core-seconds",
    kind: "counter",
};
const CONTAINER_MEMORY: Family = Family {
    name: "container_memory_working_set_bytes",
    help: "[STABLE] Current working set of the container in bytes",
    kind: "gauge",
};
const CONTAINER_START: Family = Family {
    name: "container_start_time_seconds",
    help: "[STABLE] Start time of the container since unix epoch in seconds",
    kind: "gauge",
};
const NODE_CPU: Family = Family {
    name: "node_cpu_usage_seconds_total",
    help: "[STABLE] Cumulative cpu time consumed by the node in core-seconds",
    kind: "counter",
};
const NODE_MEMORY: Family = Family {
    name: "node_memory_working_set_bytes",
    help: "[STABLE] Current working set of the node in bytes",
    kind: "gauge",
};
const POD_CPU: Family = Family {
    name: "pod_cpu_usage_seconds_total",
    help: "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
    kind: "counter",
};
const POD_MEMORY: Family = Family {
    name: "pod_memory_working_set_bytes",
    help: "[STABLE] Current working set of the pod in bytes",
    kind: "gauge",
};
const RESOURCE_SCRAPE_ERROR: Family = Family {
    name: "resource_scrape_error",
    help: "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise",
    kind: "gauge",
};
/// One sample line's parts.
struct Sample {
    labels: Vec<(&'static str, String)>,
    value: f64,
    at: Option<Time>,
}

/// The text of `/metrics/resource` for `summary`; `None` (a failed read) writes only the
/// scrape-error gauge, set to 1. (`scrape_error`, its ALPHA twin deprecated in 1.29, is
/// hidden in 1.33 as component-base hides deprecated metrics, so it is not written.)
pub fn write(summary: Option<&Summary>) -> String {
    let mut families: Vec<(Family, Vec<Sample>)> = Vec::new();
    let error = if summary.is_some() { 0.0 } else { 1.0 };
    if let Some(summary) = summary {
        let mut container_cpu = Vec::new();
        let mut container_memory = Vec::new();
        let mut container_start = Vec::new();
        let mut pod_cpu = Vec::new();
        let mut pod_memory = Vec::new();
        for pod in &summary.pods {
            for container in &pod.containers {
                collect_container(
                    pod,
                    container,
                    &mut container_cpu,
                    &mut container_memory,
                    &mut container_start,
                );
            }
            let labels = || {
                vec![
                    ("namespace", pod.pod_ref.namespace.clone()),
                    ("pod", pod.pod_ref.name.clone()),
                ]
            };
            if let Some((at, used)) = cpu(pod.cpu.as_ref()) {
                pod_cpu.push(sample(labels(), used, at));
            }
            if let Some((at, bytes)) = working_set(pod.memory.as_ref()) {
                pod_memory.push(sample(labels(), bytes, at));
            }
        }
        let mut node_cpu = Vec::new();
        if let Some((at, used)) = cpu(summary.node.cpu.as_ref()) {
            node_cpu.push(sample(Vec::new(), used, at));
        }
        let mut node_memory = Vec::new();
        if let Some((at, bytes)) = working_set(summary.node.memory.as_ref()) {
            node_memory.push(sample(Vec::new(), bytes, at));
        }
        families.extend([
            (CONTAINER_CPU, container_cpu),
            (CONTAINER_MEMORY, container_memory),
            (CONTAINER_START, container_start),
            (NODE_CPU, node_cpu),
            (NODE_MEMORY, node_memory),
            (POD_CPU, pod_cpu),
            (POD_MEMORY, pod_memory),
        ]);
    }
    families.push((
        RESOURCE_SCRAPE_ERROR,
        vec![Sample {
            labels: Vec::new(),
            value: error,
            at: None,
        }],
    ));
    let mut out = String::new();
    for (family, samples) in families {
        // The Go registry writes no HELP/TYPE for a family without samples.
        if samples.is_empty() {
            continue;
        }
        let _ = writeln!(out, "# HELP {} {}", family.name, family.help);
        let _ = writeln!(out, "# TYPE {} {}", family.name, family.kind);
        for sample in samples {
            out.push_str(family.name);
            if !sample.labels.is_empty() {
                out.push('{');
                for (i, (name, value)) in sample.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{name}=\"{}\"", escape_label(value));
                }
                out.push('}');
            }
            let _ = write!(out, " {}", go_float(sample.value));
            if let Some(at) = sample.at {
                let _ = write!(out, " {}", at.millis());
            }
            out.push('\n');
        }
    }
    out
}

fn sample(labels: Vec<(&'static str, String)>, value: f64, at: Time) -> Sample {
    Sample {
        labels,
        value,
        at: Some(at),
    }
}

fn collect_container(
    pod: &PodStats,
    container: &ContainerStats,
    cpu_out: &mut Vec<Sample>,
    memory_out: &mut Vec<Sample>,
    start_out: &mut Vec<Sample>,
) {
    let labels = || {
        vec![
            ("container", container.name.clone()),
            ("namespace", pod.pod_ref.namespace.clone()),
            ("pod", pod.pod_ref.name.clone()),
        ]
    };
    if container.start_time.0 >= 1_000_000_000 {
        start_out.push(Sample {
            labels: labels(),
            value: container.start_time.0 as f64 / 1e9,
            at: None,
        });
    }
    if let Some((at, used)) = cpu(container.cpu.as_ref()) {
        cpu_out.push(sample(labels(), used, at));
    }
    if let Some((at, bytes)) = working_set(container.memory.as_ref()) {
        memory_out.push(sample(labels(), bytes, at));
    }
}

/// Cumulative CPU seconds, when known.
fn cpu(stats: Option<&super::summary::CpuStats>) -> Option<(Time, f64)> {
    let stats = stats?;
    Some((stats.time, stats.usage_core_nano_seconds? as f64 / 1e9))
}

fn working_set(stats: Option<&super::summary::MemoryStats>) -> Option<(Time, f64)> {
    let stats = stats?;
    Some((stats.time, stats.working_set_bytes? as f64))
}

/// A label value escaped as the text format requires.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('"', "\\\"")
}

/// `v` as Go's `strconv.FormatFloat(v, 'g', -1, 64)` writes it (the text format's value):
/// the shortest digits that read back exactly, in exponent form (`1.2079104e+07`, at least
/// two exponent digits) when the decimal exponent is below -4 or at least 6, as `%g` with
/// the shortest precision decides.
pub fn go_float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if v == 0.0 {
        return "0".into();
    }
    // Rust's `{:e}` is the shortest round-tripping form: `d.ddde<exp>`.
    let sci = format!("{v:e}");
    let Some((mantissa, exponent)) = sci.split_once('e') else {
        return sci;
    };
    let Ok(exponent) = exponent.parse::<i32>() else {
        return sci;
    };
    if !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.abs());
    }
    // Plain decimal form: Rust's Display is the shortest round-tripping decimal too.
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use super::super::summary::{CpuStats, MemoryStats, NodeStats, PodReference};
    use super::*;

    #[test]
    fn floats_are_written_as_go_writes_them() {
        assert_eq!(go_float(0.0), "0");
        assert_eq!(go_float(1.0), "1");
        assert_eq!(go_float(7.932), "7.932");
        assert_eq!(go_float(123_456.0), "123456");
        assert_eq!(go_float(12_079_104.0), "1.2079104e+07");
        assert_eq!(go_float(1_691_587_645.296), "1.691587645296e+09");
        assert_eq!(go_float(0.000_1), "0.0001");
        assert_eq!(go_float(0.000_012_5), "1.25e-05");
    }

    #[test]
    fn the_text_is_kubelets() {
        let at = Time(1_700_000_000_123_000_000);
        let summary = Summary {
            node: NodeStats {
                node_name: "n1".into(),
                cpu: Some(CpuStats {
                    time: at,
                    usage_nano_cores: Some(1),
                    usage_core_nano_seconds: Some(7_932_000_000),
                }),
                memory: Some(MemoryStats {
                    time: at,
                    working_set_bytes: Some(12_079_104),
                    ..Default::default()
                }),
                ..Default::default()
            },
            pods: vec![PodStats {
                pod_ref: PodReference {
                    name: "web".into(),
                    namespace: "default".into(),
                    uid: "u".into(),
                },
                containers: vec![ContainerStats {
                    name: "app".into(),
                    start_time: Time(1_700_000_000_000_000_000),
                    cpu: Some(CpuStats {
                        time: at,
                        usage_nano_cores: None,
                        usage_core_nano_seconds: Some(500_000_000),
                    }),
                    memory: Some(MemoryStats {
                        time: at,
                        working_set_bytes: Some(4096),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                cpu: Some(CpuStats {
                    time: at,
                    usage_nano_cores: None,
                    usage_core_nano_seconds: Some(500_000_000),
                }),
                memory: None,
                ..Default::default()
            }],
        };
        let text = write(Some(&summary));
        let expected = "\
# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container=\"app\",namespace=\"default\",pod=\"web\"} 0.5 1700000000123
# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container=\"app\",namespace=\"default\",pod=\"web\"} 4096 1700000000123
# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container=\"app\",namespace=\"default\",pod=\"web\"} 1.7e+09
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 7.932 1700000000123
# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 1.2079104e+07 1700000000123
# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace=\"default\",pod=\"web\"} 0.5 1700000000123
# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
";
        assert_eq!(text, expected);
        let failed = write(None);
        assert!(failed.contains("\nresource_scrape_error 1\n"), "{failed}");
        assert!(!failed.contains("node_cpu"), "{failed}");
    }
}
