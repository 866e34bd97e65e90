//! The objects of the ClusterIP allocator, as Kubernetes 1.33 keeps them: cluster IPs come
//! from the ranges of the Ready ServiceCIDRs (`networking.k8s.io/v1`; the default one,
//! `kubernetes`, holds `--service-cluster-ip-range`), and every allocated address is an
//! IPAddress object named by the address, with its Service as `spec.parentRef`. The
//! Service REST code (`service`) allocates through here; the `service_cidrs` keeper
//! repairs what drifts. IPv4 only, as the allocator is single-stack.

use crate::engine::Engine;
use kyb_api::Status;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::pin::Pin;
use std::sync::Arc;

/// The label saying who manages an IPAddress, and the allocator's value of it.
pub const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "ipallocator.k8s.io";
/// The label with an IPAddress's family.
pub const FAMILY_LABEL: &str = "ipaddress.kubernetes.io/ip-family";
/// Keeps a ServiceCIDR while IP addresses only it contains are allocated.
pub const FINALIZER: &str = "networking.k8s.io/service-cidr-finalizer";
/// The default ServiceCIDR's name.
pub const DEFAULT_SERVICE_CIDR: &str = "kubernetes";
pub const GROUP: &str = "networking.k8s.io";

/// An IPv4 network: base address and prefix length.
pub type Range = (Ipv4Addr, u8);

/// A ServiceCIDR as the allocator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceCidr {
    pub name: String,
    /// Its IPv4 ranges (IPv6 ones are not allocated from).
    pub ranges: Vec<Range>,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    pub deleting: bool,
}

impl ServiceCidr {
    pub fn of(object: &Value) -> ServiceCidr {
        let ranges = object
            .pointer("/spec/cidrs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter_map(parse_range)
            .collect();
        let ready = object
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        ServiceCidr {
            name: kyb_apimachinery::meta::name(object)
                .unwrap_or_default()
                .to_string(),
            ranges,
            ready,
            deleting: kyb_apimachinery::meta::deletion_timestamp(object).is_some(),
        }
    }

    /// Whether new addresses may come from it.
    pub fn allocatable(&self) -> bool {
        self.ready && !self.deleting
    }
}

/// `a.b.c.d/n` as a range, `None` for anything else (IPv6 included).
pub fn parse_range(cidr: &str) -> Option<Range> {
    let (ip, bits) = cidr.split_once('/')?;
    let bits: u8 = bits.parse().ok().filter(|b| *b <= 32)?;
    Some((ip.parse().ok()?, bits))
}

pub fn contains((base, bits): Range, ip: Ipv4Addr) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
    u32::from(base) & mask == u32::from(ip) & mask
}

/// Every ServiceCIDR in the cache.
pub fn service_cidrs(engine: &Engine) -> Vec<ServiceCidr> {
    engine
        .cache
        .objects_shared(GROUP, "servicecidrs", None)
        .iter()
        .map(|o| ServiceCidr::of(o))
        .collect()
}

/// The ranges new cluster IPs may come from: those of the allocatable ServiceCIDRs, the
/// default first; the configured range itself until any ServiceCIDR exists.
pub fn allocatable(engine: &Engine) -> Vec<Range> {
    let mut cidrs = service_cidrs(engine);
    if cidrs.is_empty() {
        return vec![engine.services.service_cidr];
    }
    cidrs.sort_by_key(|c| c.name != DEFAULT_SERVICE_CIDR);
    cidrs
        .into_iter()
        .filter(ServiceCidr::allocatable)
        .flat_map(|c| c.ranges)
        .collect()
}

/// The addresses IPAddress objects hold (read from the cache's keys, nothing parsed).
pub fn allocated(engine: &Engine) -> HashSet<Ipv4Addr> {
    let snapshot = engine.registry.snapshot();
    let Some(def) = snapshot.find_stored(GROUP, "ipaddresses") else {
        return HashSet::new();
    };
    let Some(cache) = engine.cache.resource(def) else {
        return HashSet::new();
    };
    cache
        .list(&def.list_prefix(None), &Default::default(), 0, 0)
        .items
        .iter()
        .filter_map(|o| o.key.rsplit('/').next().and_then(|n| n.parse().ok()))
        .collect()
}

/// The IPAddress object of a Service's cluster IP.
pub fn ip_address(ip: Ipv4Addr, namespace: &str, service: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IPAddress",
        "metadata": {
            "name": ip.to_string(),
            "labels": {FAMILY_LABEL: "IPv4", MANAGED_BY_LABEL: MANAGED_BY},
        },
        "spec": {
            "parentRef": {"group": "", "resource": "services", "namespace": namespace, "name": service},
        },
    })
}

/// Creates the IPAddress of a Service's cluster IP. A 409 means another object holds it.
/// (A boxed future of a declared type: creating a Service claims through `ensure`, which
/// creates Services.)
pub fn claim<'a>(
    engine: &'a Arc<Engine>,
    ip: Ipv4Addr,
    namespace: &'a str,
    service: &'a str,
) -> Pin<Box<dyn Future<Output = Result<(), Status>> + Send + 'a>> {
    Box::pin(async move {
        let def = definition(engine, "ipaddresses")?;
        super::ensure(engine, &def, ip_address(ip, namespace, service), false)
            .await
            .map(|_| ())
    })
}

/// Deletes the IPAddress of `ip` (a Service's creation failed, or the Service is gone).
pub async fn release(engine: &Arc<Engine>, ip: Ipv4Addr) {
    let Ok(def) = definition(engine, "ipaddresses") else {
        return;
    };
    match super::remove(engine, &def, None, &ip.to_string()).await {
        Ok(()) => {}
        Err(status) if status.code == 404 => {}
        Err(status) => {
            tracing::warn!(%ip, error = %status.message, "cannot release a cluster IP");
        }
    }
}

/// The storage form of a `networking.k8s.io` resource.
pub fn definition(engine: &Engine, plural: &str) -> Result<Arc<kyb_api::Resource>, Status> {
    engine
        .registry
        .snapshot()
        .find_stored(GROUP, plural)
        .cloned()
        .ok_or_else(|| Status::internal(format!("{plural}.{GROUP} is not registered")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_cidrs_are_read_as_the_allocator_needs() {
        let object = json!({
            "metadata": {"name": "extra"},
            "spec": {"cidrs": ["10.99.0.0/30", "fd00::/120"]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        });
        let cidr = ServiceCidr::of(&object);
        assert_eq!(cidr.ranges, vec![(Ipv4Addr::new(10, 99, 0, 0), 30)]);
        assert!(cidr.allocatable());
        let deleting = json!({"metadata": {"name": "x", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(!ServiceCidr::of(&deleting).allocatable());
        assert!(!ServiceCidr::of(&json!({"metadata": {"name": "y"}})).allocatable());
        assert!(contains(
            (Ipv4Addr::new(10, 99, 0, 0), 30),
            Ipv4Addr::new(10, 99, 0, 3)
        ));
        assert!(!contains(
            (Ipv4Addr::new(10, 99, 0, 0), 30),
            Ipv4Addr::new(10, 99, 0, 4)
        ));
        let address = ip_address(Ipv4Addr::new(10, 99, 0, 1), "default", "web");
        assert_eq!(address["metadata"]["labels"][MANAGED_BY_LABEL], MANAGED_BY);
        assert_eq!(address["spec"]["parentRef"]["resource"], "services");
    }
}
