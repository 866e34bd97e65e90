//! Zones and the rate at which their unhealthy nodes are tainted for eviction, as the
//! node lifecycle controller limits it: a zone (region + zone labels) is `Normal`,
//! `PartialDisruption` (more than two nodes and at least `unhealthy_zone_threshold` of
//! them not Ready) or `FullDisruption` (none Ready). Normal and fully disrupted zones evict
//! at `node_eviction_rate` nodes per second; partially disrupted ones at
//! `secondary_node_eviction_rate` if larger than `large_cluster_size_threshold`, else not
//! at all; and when every zone is fully disrupted nothing is evicted anywhere (the
//! controller assumes its own connectivity is the problem).

use crate::options::Options;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Node;
use std::collections::HashMap;

/// A zone's health.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneState {
    Normal,
    PartialDisruption,
    FullDisruption,
}

/// The zone key of a node: its region and zone labels (empty for neither).
pub fn zone_of(node: &Node) -> String {
    let labels = node.metadata.labels.as_ref();
    let label = |new: &str, old: &str| {
        labels
            .and_then(|l| l.get(new).or_else(|| l.get(old)))
            .cloned()
            .unwrap_or_default()
    };
    let region = label(
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/region",
    );
    let zone = label(
        "topology.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/zone",
    );
    if region.is_empty() && zone.is_empty() {
        String::new()
    } else {
        format!("{region}:\x00:{zone}")
    }
}

/// A zone's state from its counts of Ready and not-Ready nodes.
pub fn zone_state(ready: usize, not_ready: usize, threshold: f64) -> ZoneState {
    if ready == 0 && not_ready > 0 {
        ZoneState::FullDisruption
    } else if not_ready > 2 && not_ready as f64 / (ready + not_ready) as f64 >= threshold {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    }
}

/// Per-zone eviction rate limits (a token bucket of burst one per zone).
#[derive(Debug, Default)]
pub struct Limiter {
    /// Per zone: (state, size, when the next node may be tainted).
    zones: HashMap<String, (ZoneState, usize, Option<Timestamp>)>,
    all_disrupted: bool,
}

impl Limiter {
    /// Recomputes every zone's state from `nodes` (`ready` tells a node's health).
    pub fn observe<'a>(
        &mut self,
        nodes: impl Iterator<Item = (&'a Node, bool)>,
        options: &Options,
    ) -> Vec<(String, ZoneState)> {
        let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
        for (node, ready) in nodes {
            let entry = counts.entry(zone_of(node)).or_default();
            if ready {
                entry.0 += 1;
            } else {
                entry.1 += 1;
            }
        }
        let mut changed = vec![];
        self.zones.retain(|zone, _| counts.contains_key(zone));
        for (zone, (ready, not_ready)) in &counts {
            let state = zone_state(*ready, *not_ready, options.unhealthy_zone_threshold);
            let entry = self
                .zones
                .entry(zone.clone())
                .or_insert((ZoneState::Normal, 0, None));
            if entry.0 != state {
                changed.push((zone.clone(), state));
            }
            entry.0 = state;
            entry.1 = ready + not_ready;
        }
        self.all_disrupted = !self.zones.is_empty()
            && self
                .zones
                .values()
                .all(|(s, _, _)| *s == ZoneState::FullDisruption);
        changed
    }

    /// Whether every zone is fully disrupted (no evictions at all).
    pub fn all_disrupted(&self) -> bool {
        self.all_disrupted
    }

    /// The eviction rate of `zone` (nodes per second).
    pub fn rate(&self, zone: &str, options: &Options) -> f64 {
        if self.all_disrupted {
            return 0.0;
        }
        match self.zones.get(zone) {
            Some((ZoneState::PartialDisruption, size, _)) => {
                if *size > options.large_cluster_size_threshold as usize {
                    options.secondary_node_eviction_rate
                } else {
                    0.0
                }
            }
            _ => options.node_eviction_rate,
        }
    }

    /// Takes the zone's token to taint one node now: `Ok` if allowed, else `Err(wait)`
    /// with how long until it may be (`None`: not while the zone stays as it is).
    pub fn take(
        &mut self,
        zone: &str,
        now: Timestamp,
        options: &Options,
    ) -> Result<(), Option<std::time::Duration>> {
        let rate = self.rate(zone, options);
        if rate <= 0.0 || !rate.is_finite() {
            return Err(None);
        }
        let entry = self
            .zones
            .entry(zone.to_string())
            .or_insert((ZoneState::Normal, 0, None));
        if let Some(next) = entry.2
            && next > now
        {
            let wait = now.duration_until(next).unsigned_abs();
            return Err(Some(wait));
        }
        let interval = SignedDuration::try_from_secs_f64(1.0 / rate).unwrap_or(SignedDuration::MAX);
        entry.2 = now.checked_add(interval).ok();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn node(zone: &str) -> Node {
        serde_json::from_value(json!({"metadata": {"name": "n",
            "labels": {"topology.kubernetes.io/zone": zone}}}))
        .unwrap()
    }

    #[test]
    fn states() {
        assert_eq!(zone_state(0, 1, 0.55), ZoneState::FullDisruption);
        assert_eq!(zone_state(1, 1, 0.55), ZoneState::Normal);
        assert_eq!(zone_state(2, 3, 0.55), ZoneState::PartialDisruption);
        assert_eq!(zone_state(3, 3, 0.55), ZoneState::Normal);
        assert_eq!(zone_state(0, 0, 0.55), ZoneState::Normal);
    }

    #[test]
    fn rates_and_tokens() {
        let options = Options::default();
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let (a, b) = (node("a"), node("b"));
        let mut limiter = Limiter::default();
        limiter.observe([(&a, true), (&a, false), (&b, false)].into_iter(), &options);
        let za = zone_of(&a);
        assert_eq!(limiter.rate(&za, &options), 0.1);
        assert!(limiter.take(&za, now, &options).is_ok());
        assert_eq!(
            limiter.take(&za, now, &options),
            Err(Some(std::time::Duration::from_secs(10)))
        );
        assert!(
            limiter
                .take(
                    &za,
                    now.checked_add(SignedDuration::from_secs(10)).unwrap(),
                    &options
                )
                .is_ok()
        );
        // A fully disrupted zone still evicts, unless every zone is.
        assert_eq!(limiter.rate(&zone_of(&b), &options), 0.1);
        limiter.observe([(&a, false), (&b, false)].into_iter(), &options);
        assert!(limiter.all_disrupted());
        assert_eq!(limiter.take(&za, now, &options), Err(None));
        // A small partially disrupted zone stops evicting.
        let nodes = [(&a, true), (&a, false), (&a, false), (&a, false)];
        limiter.observe(nodes.into_iter(), &options);
        assert_eq!(limiter.rate(&za, &options), 0.0);
    }
}
