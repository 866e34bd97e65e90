//! The metrics kept in memory, as metrics-server's storage keeps them: for the node and
//! each container only the two latest points, from which usage is computed on read — CPU
//! as the rate of the cumulative counter between them, memory as the latest working set.
//! A node's scrape replaces what was known of its pods (pods gone from it are dropped), and
//! nodes no longer scraped are dropped, so memory stays proportional to what runs.

use super::parse::{PodKey, Point, Scrape};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::RwLock;

/// The latest two points of one series.
#[derive(Clone, Copy, Debug)]
struct Series {
    prev: Option<Point>,
    last: Point,
}

impl Series {
    fn new(point: Point) -> Series {
        Series {
            prev: None,
            last: point,
        }
    }

    /// Moves on to `point`: a newer reading becomes the last; a counter that went back or
    /// a changed start time (a restarted container) starts the series over.
    fn advance(&mut self, point: Point) {
        if point.at <= self.last.at {
            return;
        }
        let restarted = point.cpu < self.last.cpu
            || (point.start.is_some()
                && self.last.start.is_some()
                && point.start != self.last.start);
        self.prev = (!restarted).then_some(self.last);
        self.last = point;
    }

    /// Usage between the two points; `None` until there are two.
    fn usage(&self) -> Option<Usage> {
        let prev = self.prev?;
        let window = self.last.at - prev.at;
        if window <= 0 {
            return None;
        }
        let used = u128::from(self.last.cpu.saturating_sub(prev.cpu));
        let nano_cores = used * 1_000_000_000 / window.unsigned_abs() as u128;
        Some(Usage {
            timestamp: self.last.at,
            window,
            cpu_nano_cores: u64::try_from(nano_cores).unwrap_or(u64::MAX),
            memory_bytes: self.last.memory,
        })
    }
}

/// Usage over a window ending at `timestamp` (nanoseconds since the epoch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    pub timestamp: i64,
    /// Nanoseconds.
    pub window: i64,
    pub cpu_nano_cores: u64,
    pub memory_bytes: u64,
}

/// A pod's usage: each container's, over the pod's window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodUsage {
    pub timestamp: i64,
    pub window: i64,
    pub containers: Vec<(String, Usage)>,
}

#[derive(Default)]
struct State {
    nodes: HashMap<String, Series>,
    /// Each pod's containers, and the node it was scraped from.
    pods: HashMap<PodKey, (String, BTreeMap<String, Series>)>,
}

/// The metrics of every node and pod, as last scraped.
#[derive(Default)]
pub struct MetricsStore {
    state: RwLock<State>,
}

impl MetricsStore {
    /// Records a scrape of `node`.
    pub fn record(&self, node: &str, scrape: Scrape) {
        let Ok(mut state) = self.state.write() else {
            return;
        };
        match scrape.node {
            Some(point) => match state.nodes.get_mut(node) {
                Some(series) => series.advance(point),
                None => {
                    state.nodes.insert(node.to_string(), Series::new(point));
                }
            },
            None => {
                state.nodes.remove(node);
            }
        }
        // The pods this node had and no longer reports are gone from it.
        state
            .pods
            .retain(|key, (on, _)| on != node || scrape.pods.contains_key(key));
        for (key, containers) in scrape.pods {
            let entry = state
                .pods
                .entry(key)
                .or_insert_with(|| (node.to_string(), BTreeMap::new()));
            if entry.0 != node {
                // Moved (a new pod of the same name elsewhere): start over.
                *entry = (node.to_string(), BTreeMap::new());
            }
            entry.1.retain(|name, _| containers.contains_key(name));
            for (name, point) in containers {
                match entry.1.get_mut(&name) {
                    Some(series) => series.advance(point),
                    None => {
                        entry.1.insert(name, Series::new(point));
                    }
                }
            }
        }
    }

    /// Keeps only the nodes in `live` (and their pods).
    pub fn retain_nodes(&self, live: &HashSet<String>) {
        let Ok(mut state) = self.state.write() else {
            return;
        };
        state.nodes.retain(|name, _| live.contains(name));
        state.pods.retain(|_, (node, _)| live.contains(node));
    }

    /// A node's usage, once it has been scraped twice.
    pub fn node(&self, name: &str) -> Option<Usage> {
        self.state.read().ok()?.nodes.get(name)?.usage()
    }

    /// A pod's usage: the containers with two points; `None` when none has.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<PodUsage> {
        let state = self.state.read().ok()?;
        let (_, containers) = state.pods.get(&(namespace.to_string(), name.to_string()))?;
        let containers: Vec<(String, Usage)> = containers
            .iter()
            .filter_map(|(name, series)| Some((name.clone(), series.usage()?)))
            .collect();
        let timestamp = containers.iter().map(|(_, u)| u.timestamp).max()?;
        let window = containers.iter().map(|(_, u)| u.window).max()?;
        Some(PodUsage {
            timestamp,
            window,
            containers,
        })
    }

    /// How many series are kept (nodes plus containers): what memory grows with.
    pub fn series(&self) -> usize {
        self.state.read().map_or(0, |state| {
            state.nodes.len() + state.pods.values().map(|(_, c)| c.len()).sum::<usize>()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn point(at: i64, cpu: u64, memory: u64) -> Point {
        Point {
            at,
            cpu,
            memory,
            start: Some(1),
        }
    }

    fn scrape(at: i64, node_cpu: u64, pods: &[(&str, &str, u64)]) -> Scrape {
        let mut scrape = Scrape {
            node: Some(point(at, node_cpu, 1 << 20)),
            ..Default::default()
        };
        for (pod, container, cpu) in pods {
            scrape
                .pods
                .entry(("default".to_string(), pod.to_string()))
                .or_default()
                .insert(container.to_string(), point(at, *cpu, 4096));
        }
        scrape
    }

    #[test]
    fn usage_is_the_rate_between_the_two_latest_points() {
        let store = MetricsStore::default();
        store.record("n1", scrape(10 * S, 0, &[("web", "app", 0)]));
        assert_eq!(store.node("n1"), None);
        assert_eq!(store.pod("default", "web"), None);
        store.record(
            "n1",
            scrape(25 * S, 15 * S as u64, &[("web", "app", 3 * S as u64)]),
        );
        let node = store.node("n1").unwrap_or_else(|| panic!("no node usage"));
        assert_eq!(node.cpu_nano_cores, 1_000_000_000);
        assert_eq!(node.window, 15 * S);
        assert_eq!(node.memory_bytes, 1 << 20);
        let pod = store
            .pod("default", "web")
            .unwrap_or_else(|| panic!("no pod usage"));
        assert_eq!(pod.containers[0].0, "app");
        assert_eq!(pod.containers[0].1.cpu_nano_cores, 200_000_000);
        // The same reading again changes nothing.
        store.record(
            "n1",
            scrape(25 * S, 15 * S as u64, &[("web", "app", 3 * S as u64)]),
        );
        assert_eq!(store.node("n1").map(|u| u.window), Some(15 * S));
        // A counter that went back (a restart) needs two new points.
        store.record("n1", scrape(40 * S, 16 * S as u64, &[("web", "app", 1)]));
        assert_eq!(store.pod("default", "web"), None);
    }

    #[test]
    fn gone_pods_and_nodes_are_dropped() {
        let store = MetricsStore::default();
        store.record("n1", scrape(S, 0, &[("a", "c", 0), ("b", "c", 0)]));
        store.record("n2", scrape(S, 0, &[("z", "c", 0)]));
        assert_eq!(store.series(), 5);
        store.record("n1", scrape(2 * S, 1, &[("a", "c", 1)]));
        assert_eq!(store.series(), 4);
        store.retain_nodes(&["n1".to_string()].into_iter().collect());
        assert_eq!(store.series(), 2);
        assert!(store.pod("default", "a").is_some());
        assert_eq!(store.pod("default", "z"), None);
    }
}
