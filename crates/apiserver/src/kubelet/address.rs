//! Which of a Node's addresses the API server dials its kubelet at: the first address of
//! the first preferred type the Node reports (kube-apiserver's
//! `--kubelet-preferred-address-types`, `GetPreferredNodeAddress`), `Hostname` falling back
//! to the `kubernetes.io/hostname` label; and the port from
//! `status.daemonEndpoints.kubeletEndpoint.Port`.

use serde_json::Value;

/// kube-apiserver's default `--kubelet-preferred-address-types`.
pub const DEFAULT_PREFERRED_ADDRESS_TYPES: [&str; 5] = [
    "InternalIP",
    "Hostname",
    "InternalDNS",
    "ExternalDNS",
    "ExternalIP",
];

/// The Node address types Kubernetes defines.
pub const NODE_ADDRESS_TYPES: [&str; 5] = [
    "Hostname",
    "InternalIP",
    "ExternalIP",
    "InternalDNS",
    "ExternalDNS",
];

/// The address of `node` to reach its kubelet at, by `preferred` type; Kubernetes' error
/// (`no preferred addresses found; known addresses: [{InternalIP 10.0.0.1}]`) when none fits.
pub fn preferred_address(node: &Value, preferred: &[String]) -> Result<String, String> {
    let addresses = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for wanted in preferred {
        let found = addresses.iter().find(|a| {
            a["type"].as_str() == Some(wanted.as_str())
                && a["address"].as_str().is_some_and(|s| !s.is_empty())
        });
        if let Some(address) = found.and_then(|a| a["address"].as_str()) {
            return Ok(address.to_string());
        }
        if wanted == "Hostname"
            && let Some(hostname) = node
                .pointer("/metadata/labels/kubernetes.io~1hostname")
                .and_then(Value::as_str)
                .filter(|h| !h.is_empty())
        {
            return Ok(hostname.to_string());
        }
    }
    let known: Vec<String> = addresses
        .iter()
        .map(|a| {
            format!(
                "{{{} {}}}",
                a["type"].as_str().unwrap_or_default(),
                a["address"].as_str().unwrap_or_default()
            )
        })
        .collect();
    Err(format!(
        "no preferred addresses found; known addresses: [{}]",
        known.join(" ")
    ))
}

/// The kubelet's port the Node reports, else `default`.
pub fn kubelet_port(node: &Value, default: u16) -> u16 {
    node.pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)
        .unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn defaults() -> Vec<String> {
        DEFAULT_PREFERRED_ADDRESS_TYPES
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    #[test]
    fn the_first_preferred_type_wins_whatever_the_order_reported() {
        let node = json!({"status": {"addresses": [
            {"type": "Hostname", "address": "n1"},
            {"type": "ExternalIP", "address": "203.0.113.7"},
            {"type": "InternalIP", "address": "10.0.0.1"},
            {"type": "InternalIP", "address": "10.0.0.2"},
        ]}});
        assert_eq!(preferred_address(&node, &defaults()), Ok("10.0.0.1".into()));
        let external = vec!["ExternalIP".to_string(), "InternalIP".to_string()];
        assert_eq!(
            preferred_address(&node, &external),
            Ok("203.0.113.7".into())
        );
    }

    #[test]
    fn hostname_falls_back_to_the_hostname_label() {
        let node = json!({
            "metadata": {"labels": {"kubernetes.io/hostname": "from-label"}},
            "status": {"addresses": [{"type": "ExternalIP", "address": "203.0.113.7"}]},
        });
        assert_eq!(
            preferred_address(&node, &defaults()),
            Ok("from-label".into())
        );
    }

    #[test]
    fn no_preferred_address_is_kubernetes_error_listing_the_known_ones() {
        let node = json!({"status": {"addresses": [
            {"type": "ExternalDNS", "address": "n1.example.com"},
        ]}});
        let types = vec!["InternalIP".to_string()];
        assert_eq!(
            preferred_address(&node, &types),
            Err(
                "no preferred addresses found; known addresses: [{ExternalDNS n1.example.com}]"
                    .into()
            )
        );
        assert_eq!(
            preferred_address(&json!({}), &types),
            Err("no preferred addresses found; known addresses: []".into())
        );
    }

    #[test]
    fn the_port_is_the_reported_one_else_the_default() {
        let node = json!({"status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 10251}}}});
        assert_eq!(kubelet_port(&node, 10250), 10251);
        let zero = json!({"status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}}});
        assert_eq!(kubelet_port(&zero, 10250), 10250);
        assert_eq!(kubelet_port(&json!({}), 10250), 10250);
    }
}
