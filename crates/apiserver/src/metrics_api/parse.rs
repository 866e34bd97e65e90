//! Reading a kubelet's `/metrics/resource` (the Prometheus text format) into points, as
//! metrics-server decodes it: the node's and each container's cumulative CPU seconds and
//! memory working set, with the samples' timestamps and containers' start times. A point
//! needs both its CPU and its memory sample; lines of other families are skipped.

use std::collections::BTreeMap;

/// One reading: when, the cumulative CPU time, the working set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Point {
    /// When the CPU counter was read, in nanoseconds since the epoch.
    pub at: i64,
    /// Cumulative CPU time in core-nanoseconds.
    pub cpu: u64,
    /// Memory working set in bytes.
    pub memory: u64,
    /// The container's start time (nanoseconds since the epoch), when known: a changed
    /// start time means a new counter.
    pub start: Option<i64>,
}

/// A pod by namespace and name.
pub type PodKey = (String, String);

/// What one scrape of a node gives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scrape {
    pub node: Option<Point>,
    /// Each pod's containers' points, by container name.
    pub pods: BTreeMap<PodKey, BTreeMap<String, Point>>,
}

/// A point being assembled from its samples.
#[derive(Default)]
struct Partial {
    cpu: Option<(u64, i64)>,
    memory: Option<u64>,
    start: Option<i64>,
}

impl Partial {
    fn point(&self) -> Option<Point> {
        let (cpu, at) = self.cpu?;
        Some(Point {
            at,
            cpu,
            memory: self.memory?,
            start: self.start,
        })
    }
}

/// Parses the text; `now` (nanoseconds) stamps samples without a timestamp. A malformed
/// line is an error naming it.
pub fn parse(text: &str, now: i64) -> Result<Scrape, String> {
    let mut node = Partial::default();
    let mut containers: BTreeMap<(String, String, String), Partial> = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let sample = sample(line).map_err(|e| format!("line {}: {e}: {line:?}", number + 1))?;
        let at = sample
            .timestamp_ms
            .map_or(now, |ms| ms.saturating_mul(1_000_000));
        let label = |name: &str| {
            sample
                .labels
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let key = || (label("namespace"), label("pod"), label("container"));
        match sample.name {
            "node_cpu_usage_seconds_total" => node.cpu = Some((seconds_to_nanos(sample.value), at)),
            "node_memory_working_set_bytes" => node.memory = Some(non_negative(sample.value)),
            "container_cpu_usage_seconds_total" => {
                containers.entry(key()).or_default().cpu =
                    Some((seconds_to_nanos(sample.value), at));
            }
            "container_memory_working_set_bytes" => {
                containers.entry(key()).or_default().memory = Some(non_negative(sample.value));
            }
            "container_start_time_seconds" => {
                containers.entry(key()).or_default().start =
                    Some(seconds_to_nanos(sample.value) as i64);
            }
            _ => {}
        }
    }
    let mut scrape = Scrape {
        node: node.point(),
        pods: BTreeMap::new(),
    };
    for ((namespace, pod, container), partial) in containers {
        if let Some(point) = partial.point() {
            scrape
                .pods
                .entry((namespace, pod))
                .or_default()
                .insert(container, point);
        }
    }
    Ok(scrape)
}

fn seconds_to_nanos(seconds: f64) -> u64 {
    non_negative(seconds * 1e9)
}

fn non_negative(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        value.round() as u64
    } else {
        0
    }
}

/// A sample's labels, in the order written.
type Labels = Vec<(String, String)>;

/// One sample line's parts.
struct Sample<'a> {
    name: &'a str,
    labels: Labels,
    value: f64,
    timestamp_ms: Option<i64>,
}

/// `name{label="value",…} value [timestamp]`.
fn sample(line: &str) -> Result<Sample<'_>, String> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .ok_or("no value")?;
    let name = &line[..name_end];
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        let (parsed, remaining) = label_pairs(after)?;
        labels = parsed;
        rest = remaining;
    }
    let mut words = rest.split_whitespace();
    let value = words.next().ok_or("no value")?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v.parse().map_err(|_| format!("bad value {v:?}"))?,
    };
    let timestamp_ms = words
        .next()
        .map(|t| t.parse::<i64>().map_err(|_| format!("bad timestamp {t:?}")))
        .transpose()?;
    Ok(Sample {
        name,
        labels,
        value,
        timestamp_ms,
    })
}

/// The label pairs after `{`, up to and including the closing `}`; the rest of the line.
fn label_pairs(mut text: &str) -> Result<(Labels, &str), String> {
    let mut labels = Vec::new();
    loop {
        text = text.trim_start_matches([' ', ',']);
        if let Some(rest) = text.strip_prefix('}') {
            return Ok((labels, rest));
        }
        let (key, after) = text.split_once('=').ok_or("a label without a value")?;
        let mut chars = after
            .strip_prefix('"')
            .ok_or("an unquoted label value")?
            .char_indices();
        let mut value = String::new();
        let end = loop {
            match chars.next() {
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => return Err("an unterminated label value".into()),
                },
                Some((_, c)) => value.push(c),
                None => return Err("an unterminated label value".into()),
            }
        };
        labels.push((key.trim().to_string(), value));
        text = &after[end + 2..];
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const TEXT: &str = r#"# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 0.5 1700000000123
container_cpu_usage_seconds_total{container="side",namespace="default",pod="web"} 2 1700000000123
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 4096 1700000000123
container_memory_working_set_bytes{container="side",namespace="default",pod="web"} 1.2079104e+07 1700000000123
container_start_time_seconds{container="app",namespace="default",pod="web"} 1.7e+09
container_cpu_usage_seconds_total{container="lonely",namespace="x",pod="y"} 1 1700000000123
node_cpu_usage_seconds_total 7.932 1700000000100
node_memory_working_set_bytes 1.2079104e+07 1700000000100
pod_cpu_usage_seconds_total{namespace="default",pod="web"} 2.5 1700000000123
resource_scrape_error 0
"#;

    #[test]
    fn nodes_and_containers_with_both_samples_become_points() {
        let scrape = parse(TEXT, 5).unwrap();
        assert_eq!(
            scrape.node,
            Some(Point {
                at: 1_700_000_000_100_000_000,
                cpu: 7_932_000_000,
                memory: 12_079_104,
                start: None,
            })
        );
        let web = &scrape.pods[&("default".to_string(), "web".to_string())];
        assert_eq!(web["app"].cpu, 500_000_000);
        assert_eq!(web["app"].memory, 4096);
        assert_eq!(web["app"].start, Some(1_700_000_000_000_000_000));
        assert_eq!(web["side"].memory, 12_079_104);
        assert_eq!(web["side"].at, 1_700_000_000_123_000_000);
        // A container with CPU but no memory sample has no point, so no pod.
        assert_eq!(scrape.pods.len(), 1);
    }

    #[test]
    fn escapes_missing_timestamps_and_bad_lines() {
        let scrape = parse(
            "container_cpu_usage_seconds_total{namespace=\"a\\\"b\", pod=\"p\",container=\"c\"} 1\ncontainer_memory_working_set_bytes{namespace=\"a\\\"b\",pod=\"p\",container=\"c\"} 2\n",
            77,
        )
        .unwrap();
        let point = scrape.pods[&("a\"b".to_string(), "p".to_string())]["c"];
        assert_eq!(point.at, 77);
        assert_eq!(point.memory, 2);
        assert!(parse("node_cpu_usage_seconds_total x\n", 0).is_err());
        assert!(parse("node_cpu_usage_seconds_total{a=\"b} 1\n", 0).is_err());
        assert!(parse("node_cpu_usage_seconds_total\n", 0).is_err());
        assert_eq!(parse("", 0).unwrap(), Scrape::default());
    }
}
