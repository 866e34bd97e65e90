//! Services get their ClusterIP from the Ready ServiceCIDRs (`service_ips`) and their
//! NodePorts from the node port range. Allocation is serialized and reads every service
//! and IPAddress from the (fresh) cache, so two services never share an address or port;
//! each allocated address is claimed as an IPAddress object before the Service is stored
//! (released again if storing fails); the `service_cidrs` keeper releases the addresses
//! of deleted Services.

use super::Call;
use super::service_ips::{self, Range};
use super::write::store_new;
use kyb_api::Status;
use kyb_api::status::Cause;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::time::Duration;

/// Allocates what a new service needs and stores it.
pub async fn create(
    call: &Call<'_>,
    mut object: Value,
    key: &str,
    dry_run: bool,
) -> Result<Value, Status> {
    let _allocating = call.engine.services.allocation.lock().await;
    call.engine.fresh().await;
    let name = kyb_apimachinery::meta::name(&object)
        .unwrap_or_default()
        .to_string();
    if call.cache.get(key).is_some() {
        return Err(Status::already_exists("", "services", &name));
    }
    let (mut used_ips, used_ports) = in_use(call);
    used_ips.extend(service_ips::allocated(call.engine));
    let ranges = service_ips::allocatable(call.engine);
    let invalid = |field: &str, message: String| {
        Status::invalid(
            "",
            "Service",
            &name,
            &[Cause {
                reason: "FieldValueInvalid".into(),
                message,
                field: field.into(),
            }],
        )
    };
    let config = &call.engine.services;
    let service_type = object
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    let requested = object
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if service_type != "ExternalName" {
        let ip = if requested == "None" {
            None
        } else if requested.is_empty() {
            let free = ranges.iter().find_map(|range| {
                // The default range's first address is the `kubernetes` service's.
                let reserved = *range == config.service_cidr;
                free_ip(*range, reserved, &used_ips)
            });
            Some(
                free.ok_or_else(|| {
                    Status::internal("failed to allocate a serviceIP: range is full")
                })?,
            )
        } else {
            let ip: Ipv4Addr = requested.parse().map_err(|_| {
                invalid(
                    "spec.clusterIPs",
                    format!("Invalid value: {requested:?}: must be a valid IP address"),
                )
            })?;
            if !ranges.iter().any(|range| service_ips::contains(*range, ip)) {
                return Err(invalid(
                    "spec.clusterIPs",
                    format!(
                        "Invalid value: [\"{ip}\"]: failed to allocate IP {ip}: the provided network does not match the current range"
                    ),
                ));
            }
            if used_ips.contains(&ip) {
                return Err(invalid(
                    "spec.clusterIPs",
                    format!(
                        "Invalid value: [\"{ip}\"]: failed to allocate IP {ip}: provided IP is already allocated"
                    ),
                ));
            }
            Some(ip)
        };
        let spec = &mut object["spec"];
        let address = ip.map_or_else(|| "None".to_string(), |ip| ip.to_string());
        spec["clusterIP"] = address.clone().into();
        spec["clusterIPs"] = json!([address]);
        if spec.get("ipFamilies").is_none() {
            spec["ipFamilies"] = json!(["IPv4"]);
        }
        if spec.get("ipFamilyPolicy").is_none() {
            spec["ipFamilyPolicy"] = "SingleStack".into();
        }
    }
    if matches!(service_type.as_str(), "NodePort" | "LoadBalancer") {
        let mut taken = used_ports;
        let (low, high) = config.node_ports;
        if let Some(ports) = object
            .pointer_mut("/spec/ports")
            .and_then(Value::as_array_mut)
        {
            for (i, port) in ports.iter_mut().enumerate() {
                match port.get("nodePort").and_then(Value::as_u64) {
                    Some(requested) => {
                        let field = format!("spec.ports[{i}].nodePort");
                        let requested = u16::try_from(requested).unwrap_or(0);
                        if !(low..=high).contains(&requested) {
                            return Err(invalid(
                                &field,
                                format!(
                                    "Invalid value: {requested}: provided port is not in the valid range. The range of valid ports is {low}-{high}"
                                ),
                            ));
                        }
                        if !taken.insert(requested) {
                            return Err(invalid(
                                &field,
                                format!(
                                    "Invalid value: {requested}: provided port is already allocated"
                                ),
                            ));
                        }
                    }
                    None => {
                        let free = free_port(low, high, &taken).ok_or_else(|| {
                            Status::internal("failed to allocate a nodePort: range is full")
                        })?;
                        taken.insert(free);
                        port["nodePort"] = free.into();
                    }
                }
            }
        }
    }
    call.def.strategy.validate(&object)?;
    super::write::validate_create_admission(call, &object).await?;
    if dry_run {
        return Ok(object);
    }
    let claimed = match object
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .and_then(|ip| ip.parse::<Ipv4Addr>().ok())
    {
        Some(ip) => {
            let namespace = call.namespace.as_deref().unwrap_or_default();
            match service_ips::claim(call.engine, ip, namespace, &name).await {
                Ok(()) => Some(ip),
                Err(status) if status.code == 409 => {
                    return Err(invalid(
                        "spec.clusterIPs",
                        format!(
                            "Invalid value: [\"{ip}\"]: failed to allocate IP {ip}: provided IP is already allocated"
                        ),
                    ));
                }
                Err(status) => return Err(status),
            }
        }
        None => None,
    };
    let created = match store_new(call, key, object).await {
        Ok(created) => created,
        Err(status) => {
            if let Some(ip) = claimed {
                service_ips::release(call.engine, ip).await;
            }
            return Err(status);
        }
    };
    // The next allocation must see this one.
    if let Some(revision) =
        kyb_apimachinery::meta::resource_version(&created).and_then(|r| r.parse().ok())
    {
        call.engine
            .cache
            .wait_for(revision, Duration::from_secs(5))
            .await;
    }
    Ok(created)
}

/// Releases the cluster IPs of a Service a delete removed, as Kubernetes does when the
/// delete returns (the `service_cidrs` keeper releases those of Services removed later,
/// once their finalizers are gone).
pub async fn release_deleted(
    call: &Call<'_>,
    outcome: &super::delete::Outcome,
    options: &super::delete::DeleteOptions,
) {
    let super::delete::Outcome::Deleted(service) = outcome else {
        return;
    };
    if options.dry_run || !call.def.group.is_empty() || call.def.plural != "services" {
        return;
    }
    for ip in service
        .pointer("/spec/clusterIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|ip| ip.as_str()?.parse::<Ipv4Addr>().ok())
    {
        service_ips::release(call.engine, ip).await;
    }
}

/// Addresses and node ports of the existing services.
fn in_use(call: &Call<'_>) -> (HashSet<Ipv4Addr>, HashSet<u16>) {
    let mut ips = HashSet::new();
    let mut ports = HashSet::new();
    let page = call
        .cache
        .list(&call.def.list_prefix(None), &Default::default(), 0, 0);
    for service in &page.items {
        let Ok(service) = service.shared_value() else {
            continue;
        };
        for ip in service
            .pointer("/spec/clusterIPs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(ip) = ip.as_str().and_then(|s| s.parse().ok()) {
                ips.insert(ip);
            }
        }
        for port in service
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(port) = port
                .get("nodePort")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
            {
                ports.insert(port);
            }
        }
    }
    (ips, ports)
}

/// The first address of the range (the `kubernetes` service's).
pub fn first_ip((base, _): (Ipv4Addr, u8)) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(base) + 1)
}

/// A random free address of `range`, skipping the network and broadcast addresses, and
/// the first one when it is `reserved`.
fn free_ip((base, bits): Range, reserved: bool, used: &HashSet<Ipv4Addr>) -> Option<Ipv4Addr> {
    let size = 1u64 << (32 - u32::from(bits.min(30)));
    let first = if reserved { 2 } else { 1 };
    let usable = size.checked_sub(first + 1).filter(|n| *n > 0)?;
    let start = fastrand::u64(..usable);
    (0..usable)
        .map(|i| {
            Ipv4Addr::from(u32::from(base).wrapping_add((first + (start + i) % usable) as u32))
        })
        .find(|ip| !used.contains(ip))
}

fn free_port(low: u16, high: u16, used: &HashSet<u16>) -> Option<u16> {
    let span = u32::from(high - low) + 1;
    let start = fastrand::u32(..span);
    (0..span)
        .map(|i| low + ((start + i) % span) as u16)
        .find(|port| !used.contains(port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_stays_in_range_and_avoids_used() {
        let cidr = (Ipv4Addr::new(10, 43, 0, 0), 16);
        assert_eq!(first_ip(cidr), Ipv4Addr::new(10, 43, 0, 1));
        let contains = service_ips::contains;
        assert!(contains(cidr, Ipv4Addr::new(10, 43, 255, 254)));
        assert!(!contains(cidr, Ipv4Addr::new(10, 44, 0, 1)));
        let small = (Ipv4Addr::new(10, 0, 0, 0), 29);
        let mut used = HashSet::new();
        for _ in 0..5 {
            let ip = free_ip(small, true, &used);
            let Some(ip) = ip else {
                panic!("range has room")
            };
            assert!(
                contains(small, ip)
                    && ip != Ipv4Addr::new(10, 0, 0, 1)
                    && ip != Ipv4Addr::new(10, 0, 0, 7)
            );
            used.insert(ip);
        }
        assert_eq!(free_ip(small, true, &used), None);
        // Another range's first address is allocatable.
        let tiny = (Ipv4Addr::new(10, 99, 0, 0), 30);
        let mut taken = HashSet::new();
        for _ in 0..2 {
            taken.extend(free_ip(tiny, false, &taken));
        }
        assert_eq!(
            taken,
            HashSet::from([Ipv4Addr::new(10, 99, 0, 1), Ipv4Addr::new(10, 99, 0, 2)])
        );
        assert_eq!(free_ip(tiny, false, &taken), None);
        let ports: HashSet<u16> = (30000..30010).collect();
        assert_eq!(free_port(30000, 30010, &ports), Some(30010));
    }
}
