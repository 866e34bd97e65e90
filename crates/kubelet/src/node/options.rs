//! The node's settings and the parsers of their flags: `--register-with-taints`
//! (`key=value:Effect,...`), `--node-labels` (`key=value,...`), `--system-reserved` and
//! `--kube-reserved` (`cpu=100m,memory=100Mi`), with the kubelet's messages.

use super::resources::ResourceList;
use super::thresholds::Thresholds;
use k8s_openapi::api::core::v1::Taint;
use kyb_apimachinery::names;
use kyb_apimachinery::quantity::Quantity;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The node's settings.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// The Node's name (lower case).
    pub node_name: String,
    /// `--node-ip`: the InternalIP; otherwise detected (see [`super::status::addresses`]).
    pub node_ip: Option<IpAddr>,
    /// `--node-labels`, added at registration.
    pub labels: BTreeMap<String, String>,
    /// `--register-with-taints`, set at registration.
    pub taints: Vec<Taint>,
    /// `--max-pods` (110).
    pub max_pods: i64,
    /// `--system-reserved`.
    pub system_reserved: ResourceList,
    /// `--kube-reserved`.
    pub kube_reserved: ResourceList,
    /// `--eviction-hard`.
    pub eviction_hard: Thresholds,
    /// The agent's root directory: its file system is the node's `ephemeral-storage`
    /// and the `nodefs` of eviction.
    pub root_dir: PathBuf,
    /// The version reported as `kubeletVersion` (`v1.33.x`, as `/version` reports).
    pub kubelet_version: String,
    /// `daemonEndpoints.kubeletEndpoint.Port` (10250).
    pub kubelet_port: i32,
    /// How often the status is computed (10 s).
    pub status_update_frequency: Duration,
    /// How often an unchanged status is still sent (1 min).
    pub status_report_frequency: Duration,
    /// The Lease's `leaseDurationSeconds` (40 s).
    pub lease_duration: Duration,
    /// How often the Lease is renewed (10 s).
    pub lease_renew_interval: Duration,
}

impl NodeOptions {
    /// The kubelet's defaults for a node named `node_name` keeping its state in `root_dir`.
    pub fn new(node_name: &str, root_dir: PathBuf, kubelet_version: &str) -> NodeOptions {
        NodeOptions {
            node_name: node_name.to_lowercase(),
            node_ip: None,
            labels: BTreeMap::new(),
            taints: Vec::new(),
            max_pods: 110,
            system_reserved: ResourceList::new(),
            kube_reserved: ResourceList::new(),
            eviction_hard: Thresholds::default_hard(),
            root_dir,
            kubelet_version: kubelet_version.to_string(),
            kubelet_port: 10250,
            status_update_frequency: Duration::from_secs(10),
            status_report_frequency: Duration::from_secs(60),
            lease_duration: Duration::from_secs(40),
            lease_renew_interval: Duration::from_secs(10),
        }
    }
}

/// Parses `--register-with-taints` (`key=value:Effect,key:Effect`) with the kubelet's
/// messages.
pub fn parse_taints(flag: &str) -> Result<Vec<Taint>, String> {
    let mut taints: Vec<Taint> = Vec::new();
    for spec in flag.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let taint = parse_taint(spec)?;
        if taints
            .iter()
            .any(|t| t.key == taint.key && t.effect == taint.effect)
        {
            return Err(format!(
                "duplicated taints with the same key and effect: {}",
                spec
            ));
        }
        taints.push(taint);
    }
    Ok(taints)
}

/// One taint (`key=value:Effect`, `key:Effect`).
pub fn parse_taint(spec: &str) -> Result<Taint, String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let (key, value, effect) = match parts.as_slice() {
        [kv, effect] => {
            if !matches!(*effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
                return Err(format!(
                    "invalid taint effect: {effect}, unsupported taint effect"
                ));
            }
            let kv: Vec<&str> = kv.split('=').collect();
            match kv.as_slice() {
                [key] => (*key, None, *effect),
                [key, value] => {
                    if let Err(e) = names::is_valid_label_value(value) {
                        return Err(format!("invalid taint spec: {spec}, {e}"));
                    }
                    (*key, Some(*value), *effect)
                }
                _ => return Err(format!("invalid taint spec: {spec}")),
            }
        }
        _ => return Err(format!("invalid taint spec: {spec}")),
    };
    if let Err(e) = names::is_qualified_name(key) {
        return Err(format!("invalid taint spec: {spec}, {e}"));
    }
    Ok(Taint {
        key: key.to_string(),
        value: value.filter(|v| !v.is_empty()).map(str::to_string),
        effect: effect.to_string(),
        time_added: None,
    })
}

/// Parses `--node-labels` (`key=value,...`).
pub fn parse_labels(flag: &str) -> Result<BTreeMap<String, String>, String> {
    let mut labels = BTreeMap::new();
    for pair in flag.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(format!("malformed pair, expect string=string: {pair:?}"));
        };
        names::is_qualified_name(key).map_err(|e| format!("invalid node label {key:?}: {e}"))?;
        names::is_valid_label_value(value)
            .map_err(|e| format!("invalid node label value {value:?}: {e}"))?;
        labels.insert(key.to_string(), value.to_string());
    }
    Ok(labels)
}

/// Parses `--system-reserved`/`--kube-reserved` (`cpu=100m,memory=100Mi,pid=1000`).
pub fn parse_reserved(flag: &str) -> Result<ResourceList, String> {
    let mut list = ResourceList::new();
    for pair in flag.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((name, value)) = pair.split_once('=') else {
            return Err(format!("malformed pair, expect string=string: {pair:?}"));
        };
        if !matches!(name, "cpu" | "memory" | "ephemeral-storage" | "pid") {
            return Err(format!("cannot reserve {name:?} resource"));
        }
        let quantity = Quantity::parse(value).map_err(|e| format!("{value}: {e}"))?;
        if quantity.sign() < 0 {
            return Err(format!(
                "resource quantity for {name:?} cannot be negative: {value}"
            ));
        }
        list.insert(name.to_string(), quantity);
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn taints_parse_as_register_with_taints_does() {
        let taints = parse_taints("dedicated=gpu:NoSchedule,spot:PreferNoSchedule").unwrap();
        assert_eq!(taints[0].key, "dedicated");
        assert_eq!(taints[0].value.as_deref(), Some("gpu"));
        assert_eq!(taints[0].effect, "NoSchedule");
        assert_eq!(taints[1].value, None);
        assert_eq!(
            parse_taints("a=b:Sometimes").unwrap_err(),
            "invalid taint effect: Sometimes, unsupported taint effect"
        );
        assert_eq!(parse_taints("a=b").unwrap_err(), "invalid taint spec: a=b");
        assert_eq!(
            parse_taints("a=b=c:NoSchedule").unwrap_err(),
            "invalid taint spec: a=b=c:NoSchedule"
        );
        assert!(
            parse_taints("-bad:NoSchedule")
                .unwrap_err()
                .starts_with("invalid taint spec: -bad:NoSchedule, ")
        );
        assert!(
            parse_taints("a:NoSchedule,a=x:NoSchedule")
                .unwrap_err()
                .starts_with("duplicated taints")
        );
    }

    #[test]
    fn labels_and_reservations_parse() {
        let labels = parse_labels("zone=a, tier=web").unwrap();
        assert_eq!(labels["zone"], "a");
        assert_eq!(labels["tier"], "web");
        assert!(parse_labels("novalue").is_err());
        assert!(parse_labels("k=bad value").is_err());
        let reserved = parse_reserved("cpu=100m,memory=1Gi").unwrap();
        assert_eq!(reserved["cpu"].milli_value_i64(), 100);
        assert_eq!(reserved["memory"].value(), 1 << 30);
        assert!(parse_reserved("gpu=1").is_err());
        assert!(parse_reserved("cpu=-1").is_err());
        assert!(parse_reserved("cpu=x").is_err());
    }

    #[test]
    fn defaults_are_the_kubelet_s() {
        let options = NodeOptions::new("Node-A", PathBuf::from("/tmp"), "v1.33.0");
        assert_eq!(options.node_name, "node-a");
        assert_eq!(options.max_pods, 110);
        assert_eq!(options.lease_duration, Duration::from_secs(40));
        assert_eq!(options.kubelet_port, 10250);
    }
}
