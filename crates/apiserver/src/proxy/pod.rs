//! `pods/proxy`: to the pod's IP and a port (`web`, `web:8080`, `https:web:8443`; without
//! one, the first port a container declares, else the scheme's), as Kubernetes'
//! `ResourceLocation` for pods.

use super::Answer;
use super::backend::Backend;
use super::forward::forward;
use super::path::{proxy_path, proxy_prefix, split_scheme_name_port};
use crate::engine::Engine;
use http::Request;
use kyb_api::Status;
use kyb_serving::{Body, ResourceRequest};
use serde_json::Value;
use std::net::IpAddr;
use std::sync::Arc;

pub fn serve(engine: Arc<Engine>, target: ResourceRequest, request: Request<Body>) -> Answer {
    Box::pin(async move {
        let namespace = target.namespace.unwrap_or_default();
        let id = target.name.unwrap_or_default();
        let (scheme, name, port) = split_scheme_name_port(&id)
            .ok_or_else(|| Status::bad_request(format!("invalid pod request {id:?}")))?;
        let pod = engine
            .cache
            .lookup_shared("", "pods", Some(&namespace), name)
            .ok_or_else(|| Status::not_found("", "pods", name))?;
        let backend = location(&pod, scheme, port)?;
        let prefix = proxy_prefix(request.uri().path(), true);
        let path = proxy_path(request.uri().path(), true);
        Ok(forward(backend, request, prefix, path).await)
    })
}

/// Where a pod is reached: its first IP (a global unicast address only) and the port.
pub fn location(pod: &Value, scheme: &str, port: &str) -> Result<Backend, Status> {
    let https = scheme == "https";
    let ip = pod
        .pointer("/status/podIPs/0/ip")
        .or_else(|| pod.pointer("/status/podIP"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let address: IpAddr = ip
        .parse()
        .ok()
        .filter(is_global_unicast)
        .ok_or_else(|| Status::bad_request("address not allowed"))?;
    let port = if port.is_empty() {
        first_container_port(pod).unwrap_or(if https { 443 } else { 80 })
    } else {
        port.parse::<u16>()
            .map_err(|_| Status::new(500, "", format!("dial tcp {ip}:{port}: unknown port")))?
    };
    Ok(Backend::Direct {
        https,
        host: address.to_string(),
        port,
    })
}

/// The first `containerPort` any container declares.
fn first_container_port(pod: &Value) -> Option<u16> {
    pod.pointer("/spec/containers")?
        .as_array()?
        .iter()
        .find_map(|c| c.pointer("/ports/0/containerPort"))
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
}

/// Go's `IP.IsGlobalUnicast`.
pub fn is_global_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_multicast()
                || v4.is_link_local()
                || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || v6.is_unicast_link_local())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn direct(backend: Result<Backend, Status>) -> Option<(bool, String, u16)> {
        match backend {
            Ok(Backend::Direct { https, host, port }) => Some((https, host, port)),
            _ => None,
        }
    }

    #[test]
    fn the_pod_ip_and_the_port_named_or_declared() {
        let pod = json!({
            "spec": {"containers": [{"name": "a"}, {"name": "b", "ports": [{"containerPort": 8080}]}]},
            "status": {"podIP": "10.42.0.7", "podIPs": [{"ip": "10.42.0.7"}]},
        });
        assert_eq!(
            direct(location(&pod, "", "")),
            Some((false, "10.42.0.7".into(), 8080))
        );
        assert_eq!(
            direct(location(&pod, "https", "8443")),
            Some((true, "10.42.0.7".into(), 8443))
        );
        let bare =
            json!({"spec": {"containers": [{"name": "a"}]}, "status": {"podIP": "10.42.0.7"}});
        assert_eq!(
            direct(location(&bare, "https", "")),
            Some((true, "10.42.0.7".into(), 443))
        );
    }

    #[test]
    fn pods_without_a_routable_ip_are_refused() {
        for status in [
            json!({}),
            json!({"podIP": "127.0.0.1"}),
            json!({"podIP": "169.254.1.1"}),
        ] {
            let pod = json!({"spec": {"containers": []}, "status": status});
            let refused = location(&pod, "", "80").err();
            assert_eq!(
                refused.map(|s| (s.code, s.message)),
                Some((400, "address not allowed".to_string()))
            );
        }
    }
}
