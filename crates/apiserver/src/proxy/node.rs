//! `nodes/proxy`: to the node's kubelet (`/api/v1/nodes/N/proxy/stats/summary`,
//! `/proxy/metrics/resource`, `/proxy/configz`, …) with the API server's kubelet client
//! certificate, or, for `N:port` naming another port, to that port on the node's address,
//! as Kubernetes' `ResourceLocation` for nodes.

use super::Answer;
use super::backend::Backend;
use super::forward::forward;
use super::path::{proxy_path, proxy_prefix, split_scheme_name_port};
use crate::engine::Engine;
use http::Request;
use kyb_api::Status;
use kyb_serving::{Body, ResourceRequest};
use std::net::IpAddr;
use std::sync::Arc;

pub fn serve(engine: Arc<Engine>, target: ResourceRequest, request: Request<Body>) -> Answer {
    Box::pin(async move {
        let id = target.name.unwrap_or_default();
        let (scheme, name, port) = split_scheme_name_port(&id)
            .ok_or_else(|| Status::bad_request(format!("invalid node request {id:?}")))?;
        let client = engine.kubelet.clone();
        let location = client.location(&engine, name).await?;
        if !is_proxyable(&location.host) {
            return Err(Status::bad_request("address not allowed"));
        }
        let backend = if port.is_empty() || port == location.port.to_string() {
            Backend::Kubelet { client, location }
        } else {
            let port = port.parse::<u16>().map_err(|_| {
                Status::new(
                    500,
                    "",
                    format!("dial tcp {}:{port}: unknown port", location.host),
                )
            })?;
            Backend::Direct {
                https: scheme == "https",
                host: location.host,
                port,
            }
        };
        let prefix = proxy_prefix(request.uri().path(), false);
        let path = proxy_path(request.uri().path(), false);
        Ok(forward(backend, request, prefix, path).await)
    })
}

/// Kubernetes' `isProxyableIP` for an address given as an IP: not loopback, not
/// link-local; names are left to the resolver.
fn is_proxyable(host: &str) -> bool {
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => !(ip.is_loopback() || ip.is_link_local()),
        Ok(IpAddr::V6(ip)) => {
            !(ip.is_loopback() || ip.is_unicast_link_local() || ip.is_multicast())
        }
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_link_local_nodes_are_not_proxied() {
        assert!(is_proxyable("10.0.0.1"));
        assert!(is_proxyable("node-1.example.com"));
        assert!(!is_proxyable("127.0.0.1"));
        assert!(!is_proxyable("169.254.169.254"));
        assert!(!is_proxyable("::1"));
    }
}
