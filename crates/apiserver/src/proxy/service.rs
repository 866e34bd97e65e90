//! `services/proxy`: to one ready endpoint of the service (`web`, `web:http` by port
//! name, `web:80` by port number, `https:web:443`), chosen at random among the
//! EndpointSlices' ready endpoints that are pods with that IP, as Kubernetes'
//! `ResourceLocation` for services (which proxies only to pod IPs).

use super::Answer;
use super::backend::Backend;
use super::forward::forward;
use super::path::{proxy_path, proxy_prefix, split_scheme_name_port};
use crate::engine::Engine;
use http::Request;
use kyb_api::Status;
use kyb_serving::{Body, ResourceRequest};
use serde_json::Value;
use std::sync::Arc;

pub fn serve(engine: Arc<Engine>, target: ResourceRequest, request: Request<Body>) -> Answer {
    Box::pin(async move {
        let namespace = target.namespace.unwrap_or_default();
        let id = target.name.unwrap_or_default();
        let (scheme, name, port) = split_scheme_name_port(&id)
            .ok_or_else(|| Status::bad_request(format!("invalid service request {id:?}")))?;
        let port_name = match port.parse::<i64>() {
            Ok(number) => {
                let service = engine
                    .cache
                    .lookup_shared("", "services", Some(&namespace), name)
                    .ok_or_else(|| Status::not_found("", "services", name))?;
                port_name_of(&service, number).ok_or_else(|| {
                    Status::service_unavailable(format!(
                        "no service port {number} found for service {name:?}"
                    ))
                })?
            }
            Err(_) => port.to_string(),
        };
        let slices: Vec<Value> = engine
            .cache
            .objects("discovery.k8s.io", "endpointslices", Some(&namespace))
            .into_iter()
            .filter(|s| {
                s.pointer("/metadata/labels/kubernetes.io~1service-name")
                    .and_then(Value::as_str)
                    == Some(name)
            })
            .collect();
        let is_pod_with_ip = |pod_name: &str, ip: &str| {
            engine
                .cache
                .lookup_shared("", "pods", Some(&namespace), pod_name)
                .is_some_and(|pod| pod_ips(&pod).any(|p| p == ip))
        };
        let candidates = ready_endpoints(&slices, &port_name, &namespace, is_pod_with_ip);
        if candidates.is_empty() {
            return Err(Status::service_unavailable(format!(
                "no endpoints available for service {id:?}"
            )));
        }
        let (ip, port) = candidates[fastrand::usize(..candidates.len())].clone();
        let backend = Backend::Direct {
            https: scheme == "https",
            host: ip,
            port,
        };
        let prefix = proxy_prefix(request.uri().path(), true);
        let path = proxy_path(request.uri().path(), true);
        Ok(forward(backend, request, prefix, path).await)
    })
}

/// The name of the service port numbered `number` (`""` for an unnamed one).
fn port_name_of(service: &Value, number: i64) -> Option<String> {
    service
        .pointer("/spec/ports")?
        .as_array()?
        .iter()
        .find(|p| p["port"].as_i64() == Some(number))
        .map(|p| p["name"].as_str().unwrap_or_default().to_string())
}

fn pod_ips(pod: &Value) -> impl Iterator<Item = &str> {
    pod.pointer("/status/podIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p["ip"].as_str())
}

/// The `(ip, port)` of every ready endpoint serving the port named `port_name` whose
/// target is a pod of `namespace` that has that IP.
fn ready_endpoints(
    slices: &[Value],
    port_name: &str,
    namespace: &str,
    is_pod_with_ip: impl Fn(&str, &str) -> bool,
) -> Vec<(String, u16)> {
    let mut found = Vec::new();
    for slice in slices {
        let Some(port) = slice["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"].as_str().unwrap_or_default() == port_name)
            .and_then(|p| p["port"].as_u64())
            .and_then(|p| u16::try_from(p).ok())
        else {
            continue;
        };
        for endpoint in slice["endpoints"].as_array().into_iter().flatten() {
            // An endpoint whose readiness is unknown counts as ready.
            if endpoint.pointer("/conditions/ready") == Some(&Value::Bool(false)) {
                continue;
            }
            let target = &endpoint["targetRef"];
            let Some(pod_name) = target["name"].as_str() else {
                continue;
            };
            if target["kind"] != "Pod" || target["namespace"].as_str() != Some(namespace) {
                continue;
            }
            for ip in endpoint["addresses"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if is_pod_with_ip(pod_name, ip) {
                    found.push((ip.to_string(), port));
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn endpoint(ip: &str, pod: &str, ready: Option<bool>) -> Value {
        let mut endpoint = json!({
            "addresses": [ip],
            "targetRef": {"kind": "Pod", "namespace": "default", "name": pod},
        });
        if let Some(ready) = ready {
            endpoint["conditions"] = json!({"ready": ready});
        }
        endpoint
    }

    #[test]
    fn only_ready_endpoints_of_live_pods_on_the_named_port() {
        let slices = vec![json!({
            "ports": [{"name": "http", "port": 8080}, {"name": "metrics", "port": 9090}],
            "endpoints": [
                endpoint("10.42.0.5", "web-1", Some(true)),
                endpoint("10.42.0.6", "web-2", Some(false)),
                endpoint("10.42.0.7", "web-3", None),
                endpoint("10.42.0.8", "gone", Some(true)),
                {"addresses": ["192.0.2.1"], "conditions": {"ready": true}},
            ],
        })];
        let live = |pod: &str, ip: &str| {
            matches!(
                (pod, ip),
                ("web-1", "10.42.0.5") | ("web-2", "10.42.0.6") | ("web-3", "10.42.0.7")
            )
        };
        assert_eq!(
            ready_endpoints(&slices, "http", "default", live),
            vec![
                ("10.42.0.5".to_string(), 8080),
                ("10.42.0.7".to_string(), 8080)
            ]
        );
        assert_eq!(
            ready_endpoints(&slices, "metrics", "default", live).len(),
            2
        );
        assert!(ready_endpoints(&slices, "", "default", live).is_empty());
        assert!(ready_endpoints(&slices, "http", "other", live).is_empty());
    }

    #[test]
    fn port_numbers_name_the_service_port() {
        let service = json!({"spec": {"ports": [{"name": "http", "port": 80}, {"port": 443}]}});
        assert_eq!(port_name_of(&service, 80), Some("http".to_string()));
        assert_eq!(port_name_of(&service, 443), Some(String::new()));
        assert_eq!(port_name_of(&service, 8080), None);
    }
}
