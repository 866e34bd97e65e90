//! The scheduler's configuration, read from a `KubeSchedulerConfiguration`
//! (`kubescheduler.config.k8s.io/v1`) file: profiles (a `schedulerName` each, with plugins
//! enabled and disabled per extension point or for all of them through `multiPoint`, score
//! weights, `pluginConfig` arguments, `percentageOfNodesToScore`), pod backoff, leader
//! election. Without a file, the default profile: Kubernetes' default plugins.

use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
pub const KIND: &str = "KubeSchedulerConfiguration";

/// An extension point, as the configuration names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Point {
    PreEnqueue,
    QueueSort,
    PreFilter,
    Filter,
    PostFilter,
    PreScore,
    Score,
    Reserve,
    Permit,
    PreBind,
    Bind,
    PostBind,
}

impl Point {
    pub const ALL: [Point; 12] = [
        Point::PreEnqueue,
        Point::QueueSort,
        Point::PreFilter,
        Point::Filter,
        Point::PostFilter,
        Point::PreScore,
        Point::Score,
        Point::Reserve,
        Point::Permit,
        Point::PreBind,
        Point::Bind,
        Point::PostBind,
    ];

    /// The field name in `plugins`.
    pub fn field(self) -> &'static str {
        match self {
            Point::PreEnqueue => "preEnqueue",
            Point::QueueSort => "queueSort",
            Point::PreFilter => "preFilter",
            Point::Filter => "filter",
            Point::PostFilter => "postFilter",
            Point::PreScore => "preScore",
            Point::Score => "score",
            Point::Reserve => "reserve",
            Point::Permit => "permit",
            Point::PreBind => "preBind",
            Point::Bind => "bind",
            Point::PostBind => "postBind",
        }
    }
}

/// A plugin named in a profile, with its score weight (0: the default, 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginRef {
    pub name: String,
    pub weight: i64,
}

/// Plugins enabled and disabled at one point (or `multiPoint`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PluginSet {
    pub enabled: Vec<PluginRef>,
    pub disabled: Vec<String>,
}

impl PluginSet {
    fn is_disabled(&self, name: &str) -> bool {
        self.disabled.iter().any(|d| d == name || d == "*")
    }
}

/// One profile.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileConfig {
    pub scheduler_name: String,
    /// 0 < p <= 100; `None`: the scheduler's setting.
    pub percentage_of_nodes_to_score: Option<u32>,
    /// Enabled for every point the plugin implements.
    pub multi_point: PluginSet,
    /// Enabled and disabled per point.
    pub points: BTreeMap<Point, PluginSet>,
    /// `pluginConfig`: arguments by plugin name.
    pub plugin_args: BTreeMap<String, Value>,
}

/// The default plugins and their score weights, enabled through `multiPoint` (Kubernetes'
/// defaults, plus gang and capacity scheduling, which do nothing for pods and namespaces
/// that do not use them).
pub const DEFAULT_PLUGINS: &[(&str, i64)] = &[
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("Coscheduling", 0),
    ("CapacityScheduling", 0),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
];

impl ProfileConfig {
    /// The default profile under `name`.
    pub fn default_named(name: &str) -> ProfileConfig {
        ProfileConfig {
            scheduler_name: name.to_string(),
            percentage_of_nodes_to_score: None,
            multi_point: PluginSet {
                enabled: DEFAULT_PLUGINS
                    .iter()
                    .map(|(name, weight)| PluginRef {
                        name: name.to_string(),
                        weight: *weight,
                    })
                    .collect(),
                disabled: Vec::new(),
            },
            points: BTreeMap::new(),
            plugin_args: BTreeMap::new(),
        }
    }

    /// The plugins enabled at `point`, in order, with their weights: those enabled there
    /// explicitly first, then the multi-point ones not disabled there; `implements` says
    /// whether a plugin extends the point.
    pub fn enabled_at(&self, point: Point, implements: impl Fn(&str) -> bool) -> Vec<PluginRef> {
        let here = self.points.get(&point);
        let mut list: Vec<PluginRef> = here.map(|s| s.enabled.clone()).unwrap_or_default();
        for plugin in &self.multi_point.enabled {
            let disabled = here.is_some_and(|s| s.is_disabled(&plugin.name));
            if !disabled && implements(&plugin.name) && !list.iter().any(|p| p.name == plugin.name)
            {
                list.push(plugin.clone());
            }
        }
        list
    }

    /// Every plugin the profile names.
    pub fn plugin_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .multi_point
            .enabled
            .iter()
            .chain(self.points.values().flat_map(|s| s.enabled.iter()))
            .map(|p| p.name.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

/// The scheduler's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedulerConfig {
    pub profiles: Vec<ProfileConfig>,
    /// 0: adaptive (50% of small clusters, down to 5% of large ones; at least 100 nodes).
    pub percentage_of_nodes_to_score: u32,
    pub pod_initial_backoff: Duration,
    pub pod_max_backoff: Duration,
    pub leader_elect: bool,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
    pub lease_namespace: String,
    pub lease_name: String,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            profiles: vec![ProfileConfig::default_named(
                crate::framework::DEFAULT_SCHEDULER_NAME,
            )],
            percentage_of_nodes_to_score: 0,
            pod_initial_backoff: Duration::from_secs(1),
            pod_max_backoff: Duration::from_secs(10),
            leader_elect: true,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            lease_namespace: "kube-system".into(),
            lease_name: "kube-scheduler".into(),
        }
    }
}

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
}

fn seconds(value: &Value) -> Option<Duration> {
    value.as_u64().map(Duration::from_secs)
}

/// A `metav1.Duration` field (`15s`, `1m30s`, `500ms`), as Go's `time.ParseDuration`.
fn duration(value: &Value) -> Result<Option<Duration>, String> {
    let Some(text) = value.as_str() else {
        return Ok(None);
    };
    kyb_apimachinery::duration::parse(text)
        .map(Some)
        .map_err(|e| e.to_string())
}

fn plugin_set(value: &Value, field: &str) -> Result<PluginSet, String> {
    let list = |key: &str| value[key].as_array().cloned().unwrap_or_default();
    let mut enabled = Vec::new();
    for (i, plugin) in list("enabled").iter().enumerate() {
        let name = plugin["name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| format!("{field}.enabled[{i}].name: Required value"))?;
        enabled.push(PluginRef {
            name: name.to_string(),
            weight: plugin["weight"].as_i64().unwrap_or(0),
        });
    }
    let disabled = list("disabled")
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_string))
        .collect();
    Ok(PluginSet { enabled, disabled })
}

impl SchedulerConfig {
    /// Reads a KubeSchedulerConfiguration (YAML or JSON).
    pub fn load(path: &std::path::Path) -> Result<SchedulerConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let value: Value = serde_saphyr::from_str(&text)
            .map_err(|e| ConfigError::Invalid(format!("{}: {e}", path.display())))?;
        SchedulerConfig::from_value(&value).map_err(ConfigError::Invalid)
    }

    pub fn from_value(value: &Value) -> Result<SchedulerConfig, String> {
        if value["apiVersion"].as_str() != Some(API_VERSION) || value["kind"].as_str() != Some(KIND)
        {
            return Err(format!(
                "no kind \"{}\" is registered for version \"{}\" (want {KIND} in {API_VERSION})",
                value["kind"].as_str().unwrap_or_default(),
                value["apiVersion"].as_str().unwrap_or_default()
            ));
        }
        let mut config = SchedulerConfig::default();
        if let Some(p) = value["percentageOfNodesToScore"].as_u64() {
            config.percentage_of_nodes_to_score = u32::try_from(p.min(100)).unwrap_or(100);
        }
        if let Some(d) = seconds(&value["podInitialBackoffSeconds"]) {
            config.pod_initial_backoff = d;
        }
        if let Some(d) = seconds(&value["podMaxBackoffSeconds"]) {
            config.pod_max_backoff = d;
        }
        let election = &value["leaderElection"];
        if let Some(elect) = election["leaderElect"].as_bool() {
            config.leader_elect = elect;
        }
        for (field, target) in [
            ("leaseDuration", &mut config.lease_duration),
            ("renewDeadline", &mut config.renew_deadline),
            ("retryPeriod", &mut config.retry_period),
        ] {
            if let Some(d) = duration(&election[field])? {
                *target = d;
            }
        }
        if let Some(ns) = election["resourceNamespace"].as_str() {
            config.lease_namespace = ns.to_string();
        }
        if let Some(name) = election["resourceName"].as_str() {
            config.lease_name = name.to_string();
        }
        if let Some(profiles) = value["profiles"].as_array().filter(|p| !p.is_empty()) {
            config.profiles.clear();
            let mut names = std::collections::BTreeSet::new();
            for (i, profile) in profiles.iter().enumerate() {
                let name = profile["schedulerName"]
                    .as_str()
                    .unwrap_or(crate::framework::DEFAULT_SCHEDULER_NAME);
                if !names.insert(name.to_string()) {
                    return Err(format!(
                        "profiles[{i}].schedulerName: Duplicate value: {name:?}"
                    ));
                }
                let mut built = ProfileConfig::default_named(name);
                built.percentage_of_nodes_to_score = profile["percentageOfNodesToScore"]
                    .as_u64()
                    .map(|p| u32::try_from(p.min(100)).unwrap_or(100));
                let plugins = &profile["plugins"];
                let multi = plugin_set(
                    &plugins["multiPoint"],
                    &format!("profiles[{i}].plugins.multiPoint"),
                )?;
                if multi.is_disabled("*") {
                    built.multi_point.enabled.clear();
                } else {
                    built
                        .multi_point
                        .enabled
                        .retain(|p| !multi.disabled.contains(&p.name));
                }
                for plugin in multi.enabled {
                    match built
                        .multi_point
                        .enabled
                        .iter_mut()
                        .find(|p| p.name == plugin.name)
                    {
                        Some(existing) => existing.weight = plugin.weight,
                        None => built.multi_point.enabled.push(plugin),
                    }
                }
                for point in Point::ALL {
                    if plugins.get(point.field()).is_some() {
                        let set = plugin_set(
                            &plugins[point.field()],
                            &format!("profiles[{i}].plugins.{}", point.field()),
                        )?;
                        built.points.insert(point, set);
                    }
                }
                for entry in profile["pluginConfig"].as_array().into_iter().flatten() {
                    if let Some(name) = entry["name"].as_str() {
                        built
                            .plugin_args
                            .insert(name.to_string(), entry["args"].clone());
                    }
                }
                config.profiles.push(built);
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn leader_election_durations_are_go_durations() {
        let config = SchedulerConfig::from_value(&json!({
            "apiVersion": API_VERSION, "kind": KIND,
            "leaderElection": {"leaseDuration": "1h30m", "renewDeadline": "1.5s",
                               "retryPeriod": "300ms"},
        }))
        .unwrap();
        assert_eq!(config.lease_duration, Duration::from_secs(5400));
        assert_eq!(config.renew_deadline, Duration::from_millis(1500));
        assert_eq!(config.retry_period, Duration::from_millis(300));
        let bad = SchedulerConfig::from_value(&json!({
            "apiVersion": API_VERSION, "kind": KIND,
            "leaderElection": {"leaseDuration": "15"},
        }));
        assert!(bad.is_err());
    }

    #[test]
    fn profiles_plugins_weights_and_args() {
        let config = SchedulerConfig::from_value(&json!({
            "apiVersion": API_VERSION, "kind": KIND,
            "podMaxBackoffSeconds": 5,
            "leaderElection": {"leaderElect": false, "leaseDuration": "3s"},
            "profiles": [
                {"schedulerName": "default-scheduler"},
                {"schedulerName": "bin-packer", "percentageOfNodesToScore": 100,
                 "plugins": {
                    "multiPoint": {"disabled": [{"name": "ImageLocality"}], "enabled": [{"name": "NodeAffinity", "weight": 5}]},
                    "score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]},
                    "filter": {"enabled": [{"name": "Custom"}]}},
                 "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]},
            ],
        }))
        .unwrap();
        assert_eq!(config.pod_max_backoff, Duration::from_secs(5));
        assert!(!config.leader_elect);
        assert_eq!(config.lease_duration, Duration::from_secs(3));
        let packer = &config.profiles[1];
        assert_eq!(packer.percentage_of_nodes_to_score, Some(100));
        let score = packer.enabled_at(Point::Score, |_| true);
        assert!(!score.iter().any(|p| p.name == "ImageLocality"));
        assert!(
            !score
                .iter()
                .any(|p| p.name == "NodeResourcesBalancedAllocation")
        );
        assert_eq!(
            score
                .iter()
                .find(|p| p.name == "NodeAffinity")
                .unwrap()
                .weight,
            5
        );
        let filter = packer.enabled_at(Point::Filter, |_| true);
        assert_eq!(filter[0].name, "Custom");
        assert_eq!(
            packer.plugin_args["NodeResourcesFit"]["scoringStrategy"]["type"],
            "MostAllocated"
        );
        assert!(SchedulerConfig::from_value(&json!({"apiVersion": "v1", "kind": "Pod"})).is_err());
    }
}
