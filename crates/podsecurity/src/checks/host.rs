//! Baseline controls on the host's resources: host namespaces, hostPath volumes, host ports
//! and Windows HostProcess containers.

use std::collections::BTreeSet;

use crate::checks::CheckFailure;
use crate::pod::{PodView, boolean, integer, object, present, string};
use crate::text::{containers_phrase, join_quote, pluralize};

/// `hostNamespaces` v1.0: `spec.hostNetwork`, `hostPID` and `hostIPC` must not be true.
pub(crate) fn host_namespaces_1_0(pod: &PodView<'_>) -> Option<CheckFailure> {
    let set: Vec<&str> = [
        ("hostNetwork", "hostNetwork=true"),
        ("hostPID", "hostPID=true"),
        ("hostIPC", "hostIPC=true"),
    ]
    .into_iter()
    .filter(|(field, _)| pod.spec_true(field))
    .map(|(_, text)| text)
    .collect();
    if set.is_empty() {
        return None;
    }
    Some(CheckFailure::new("host namespaces", set.join(", ")))
}

/// `hostPathVolumes` v1.0: no volume may be a hostPath.
pub(crate) fn host_path_volumes_1_0(pod: &PodView<'_>) -> Option<CheckFailure> {
    let names: Vec<&str> = pod
        .volumes()
        .iter()
        .filter_map(|v| {
            let v = v.as_object();
            present(v, "hostPath").map(|_| string(v, "name"))
        })
        .collect();
    if names.is_empty() {
        return None;
    }
    Some(CheckFailure::new(
        "hostPath volumes",
        format!(
            "{} {}",
            pluralize("volume", "volumes", names.len()),
            join_quote(&names)
        ),
    ))
}

/// `hostPorts` v1.0: no container port may set a non-zero `hostPort`.
pub(crate) fn host_ports_1_0(pod: &PodView<'_>) -> Option<CheckFailure> {
    let mut bad = Vec::new();
    // Kubernetes lists the ports as a sorted set of their decimal strings.
    let mut ports = BTreeSet::new();
    for container in pod.containers() {
        let mut valid = true;
        for port in container.ports() {
            let host_port = present(port.as_object(), "hostPort").and_then(integer);
            if let Some(p) = host_port.filter(|p| *p != 0) {
                valid = false;
                ports.insert(p.to_string());
            }
        }
        if !valid {
            bad.push(container.name());
        }
    }
    if bad.is_empty() {
        return None;
    }
    let ports: Vec<String> = ports.into_iter().collect();
    Some(CheckFailure::new(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.join(", ")
        ),
    ))
}

/// `windowsHostProcess` v1.0: neither the pod nor a container may set
/// `securityContext.windowsOptions.hostProcess=true`.
pub(crate) fn windows_host_process_1_0(pod: &PodView<'_>) -> Option<CheckFailure> {
    let host_process = |sc: Option<&serde_json::Map<String, serde_json::Value>>| {
        boolean(object(sc, "windowsOptions"), "hostProcess") == Some(true)
    };
    let bad: Vec<&str> = pod
        .containers()
        .filter(|c| host_process(c.security_context()))
        .map(|c| c.name())
        .collect();
    let mut setters = Vec::new();
    if host_process(pod.security_context()) {
        setters.push("pod".to_string());
    }
    if !bad.is_empty() {
        setters.push(containers_phrase(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    Some(CheckFailure::new(
        "hostProcess",
        format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            setters.join(" and ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn run(f: fn(&PodView<'_>) -> Option<CheckFailure>, spec: Value) -> Option<(String, String)> {
        f(&PodView::new(None, &spec)).map(|c| (c.reason, c.detail))
    }

    fn failure(reason: &str, detail: &str) -> Option<(String, String)> {
        Some((reason.to_string(), detail.to_string()))
    }

    #[test]
    fn host_namespaces() {
        assert_eq!(run(host_namespaces_1_0, json!({})), None);
        assert_eq!(
            run(
                host_namespaces_1_0,
                json!({"hostNetwork": false, "hostPID": false, "hostIPC": false})
            ),
            None
        );
        assert_eq!(
            run(
                host_namespaces_1_0,
                json!({"hostIPC": true, "hostNetwork": true})
            ),
            failure("host namespaces", "hostNetwork=true, hostIPC=true")
        );
        assert_eq!(
            run(host_namespaces_1_0, json!({"hostPID": true})),
            failure("host namespaces", "hostPID=true")
        );
    }

    #[test]
    fn host_path_volumes() {
        assert_eq!(
            run(
                host_path_volumes_1_0,
                json!({"volumes": [{"name": "a", "emptyDir": {}}]})
            ),
            None
        );
        assert_eq!(
            run(
                host_path_volumes_1_0,
                json!({"volumes": [{"name": "a", "hostPath": null}]})
            ),
            None
        );
        assert_eq!(
            run(
                host_path_volumes_1_0,
                json!({"volumes": [{"name": "a", "hostPath": {"path": "/"}}]})
            ),
            failure("hostPath volumes", r#"volume "a""#)
        );
        assert_eq!(
            run(
                host_path_volumes_1_0,
                json!({"volumes": [
                    {"name": "a", "hostPath": {}},
                    {"name": "b", "secret": {}},
                    {"name": "c", "hostPath": {}},
                ]})
            ),
            failure("hostPath volumes", r#"volumes "a", "c""#)
        );
    }

    #[test]
    fn host_ports() {
        assert_eq!(
            run(
                host_ports_1_0,
                json!({"containers": [{"name": "a", "ports": [{"containerPort": 80}, {"hostPort": 0}]}]})
            ),
            None
        );
        assert_eq!(
            run(
                host_ports_1_0,
                json!({"containers": [{"name": "a", "ports": [{"hostPort": 8080}]}]})
            ),
            failure("hostPort", r#"container "a" uses hostPort 8080"#)
        );
        // Ports are sorted as strings, and repeated ports are listed once.
        assert_eq!(
            run(
                host_ports_1_0,
                json!({
                    "initContainers": [{"name": "i", "ports": [{"hostPort": 9}]}],
                    "containers": [
                        {"name": "a", "ports": [{"hostPort": 10}, {"hostPort": 9}]},
                        {"name": "b", "ports": [{"hostPort": 80}]},
                    ]
                })
            ),
            failure(
                "hostPort",
                r#"containers "i", "a", "b" use hostPorts 10, 80, 9"#
            )
        );
    }

    #[test]
    fn windows_host_process() {
        assert_eq!(
            run(
                windows_host_process_1_0,
                json!({"securityContext": {"windowsOptions": {"hostProcess": false}}, "containers": [{"name": "a"}]})
            ),
            None
        );
        assert_eq!(
            run(
                windows_host_process_1_0,
                json!({
                    "securityContext": {"windowsOptions": {"hostProcess": true}},
                    "containers": [
                        {"name": "a", "securityContext": {"windowsOptions": {"hostProcess": true}}},
                        {"name": "b", "securityContext": {"windowsOptions": {"hostProcess": true}}},
                    ]
                })
            ),
            failure(
                "hostProcess",
                r#"pod and containers "a", "b" must not set securityContext.windowsOptions.hostProcess=true"#
            )
        );
        assert_eq!(
            run(
                windows_host_process_1_0,
                json!({"ephemeralContainers": [{"name": "e", "securityContext": {"windowsOptions": {"hostProcess": true}}}]})
            ),
            failure(
                "hostProcess",
                r#"container "e" must not set securityContext.windowsOptions.hostProcess=true"#
            )
        );
    }
}
