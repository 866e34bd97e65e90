//! `discovery.k8s.io/v1`: EndpointSlices — address type, endpoint addresses, node names,
//! hostnames, ports and their limits; the address type never changes.

use std::net::IpAddr;

use serde_json::{Value, json};

use crate::Ctx;
use crate::kinds::Kind;
use crate::meta::{immutable, validate_labels, validate_qualified_name};
use crate::net::{parse_ip, validate_non_special_ip};
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, default_value, each_obj, field, field_at};
use kyb_apimachinery::names;

/// The rules of a `discovery.k8s.io/v1` kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    match kind {
        "EndpointSlice" => Some(
            Kind::new(names::name_is_dns_subdomain)
                .defaults(default_slice)
                .validate(validate_slice)
                .update(|n, o, _| {
                    immutable(
                        field(n, "addressType"),
                        field(o, "addressType"),
                        &Path::new("addressType"),
                    )
                }),
        ),
        _ => None,
    }
}

fn default_slice(obj: &mut Value) {
    if let Some(o) = obj.as_object_mut() {
        each_obj(o, "ports", |p| {
            default_value(p, "name", json!(""));
            default_value(p, "protocol", json!("TCP"));
        });
    }
}

fn validate_fqdn(path: &Path, name: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let errs = names::dns1123_subdomain_errors(name);
    if !errs.is_empty() {
        return vec![FieldError::invalid(path, name, errs.join(","))];
    }
    if name.split('.').count() < 2 {
        return vec![FieldError::invalid(
            path,
            name,
            "should be a domain with at least two segments separated by dots",
        )];
    }
    Vec::new()
}

fn validate_slice(slice: &Value, ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let addr_type = slice.str("addressType");
    if ctx.old.is_none() && !["IPv4", "IPv6", "FQDN"].contains(&addr_type) {
        errs.push(FieldError::not_supported(
            &Path::new("addressType"),
            addr_type,
            &["FQDN", "IPv4", "IPv6"],
        ));
    }
    let ep_path = Path::new("endpoints");
    let endpoints = slice.arr("endpoints");
    if endpoints.len() > 1000 {
        errs.push(FieldError::too_many(&ep_path, endpoints.len(), 1000));
    } else {
        for (i, ep) in endpoints.iter().enumerate() {
            let p = ep_path.index(i);
            let ap = p.child("addresses");
            let addrs = ep.str_list("addresses");
            if addrs.is_empty() {
                errs.push(FieldError::required(&ap, "must contain at least 1 address"));
            } else if addrs.len() > 100 {
                errs.push(FieldError::too_many(&ap, addrs.len(), 100));
            }
            for (j, a) in addrs.iter().enumerate() {
                let aip = ap.index(j);
                match addr_type {
                    "IPv4" | "IPv6" => {
                        let ok = match parse_ip(a) {
                            Some(IpAddr::V4(_)) => addr_type == "IPv4",
                            Some(IpAddr::V6(v6)) => {
                                if addr_type == "IPv4" {
                                    v6.to_ipv4_mapped().is_some()
                                } else {
                                    v6.to_ipv4_mapped().is_none()
                                }
                            }
                            None => false,
                        };
                        if ok {
                            errs.extend(validate_non_special_ip(&aip, a));
                        } else {
                            errs.push(FieldError::invalid(
                                &aip,
                                *a,
                                format!("must be a valid {addr_type} address"),
                            ));
                        }
                    }
                    "FQDN" => errs.extend(validate_fqdn(&aip, a)),
                    _ => {}
                }
            }
            if let Some(node) = ep.opt_str("nodeName") {
                for m in names::name_is_dns_subdomain(node, false) {
                    errs.push(FieldError::invalid(&p.child("nodeName"), node, m));
                }
            }
            let topo = field(ep, "deprecatedTopology");
            let tp = p.child("deprecatedTopology");
            if let Some(m) = topo.as_object() {
                if m.len() > 16 {
                    errs.push(FieldError::too_many(&tp, m.len(), 16));
                }
                errs.extend(validate_labels(topo, &tp));
            }
            if let Some(h) = ep.opt_str("hostname") {
                for m in names::dns1123_label_errors(h) {
                    errs.push(FieldError::invalid(&p.child("hostname"), h, m));
                }
            }
            let zones = field_at(ep, &["hints", "forZones"])
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            let zp = p.child("hints").child("forZones");
            if zones.len() > 8 {
                errs.push(FieldError::too_many(&zp, zones.len(), 8));
            }
            let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
            for (j, z) in zones.iter().enumerate() {
                let name = z.str("name");
                if seen.contains(name) {
                    errs.push(FieldError::duplicate(&zp.index(j), name));
                }
                seen.insert(name);
                for m in names::label_value_errors(name) {
                    errs.push(FieldError::invalid(&zp.index(j).child("name"), name, m));
                }
            }
        }
    }
    let pp = Path::new("ports");
    let ports = slice.arr("ports");
    if ports.len() > 20000 {
        errs.push(FieldError::too_many(&pp, ports.len(), 20000));
    } else {
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for (i, port) in ports.iter().enumerate() {
            let p = pp.index(i);
            let name = port.str("name");
            if !name.is_empty() {
                for m in names::dns1123_label_errors(name) {
                    errs.push(FieldError::invalid(&p.child("name"), name, m));
                }
            }
            if seen.contains(name) {
                errs.push(FieldError::duplicate(&p.child("name"), name));
            }
            seen.insert(name);
            match port.opt_str("protocol") {
                None => errs.push(FieldError::required(&p.child("protocol"), "")),
                Some(proto) if !["SCTP", "TCP", "UDP"].contains(&proto) => {
                    errs.push(FieldError::not_supported(
                        &p.child("protocol"),
                        proto,
                        &["SCTP", "TCP", "UDP"],
                    ));
                }
                _ => {}
            }
            if let Some(ap) = port.opt_str("appProtocol") {
                errs.extend(validate_qualified_name(ap, &p.child("appProtocol")));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices() {
        let ctx = Ctx { old: None };
        let mut s = json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"], "nodeName": "n1"}], "ports": [{"port": 80}]});
        default_slice(&mut s);
        assert_eq!(
            s["ports"][0],
            json!({"port": 80, "name": "", "protocol": "TCP"})
        );
        assert!(validate_slice(&s, &ctx).is_empty());
        let bad = json!({"addressType": "IPv4", "endpoints": [{"addresses": ["fd00::1", "127.0.0.1"]}, {"addresses": []}]});
        let msgs: Vec<String> = validate_slice(&bad, &ctx)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            vec![
                r#"endpoints[0].addresses[0]: Invalid value: "fd00::1": must be a valid IPv4 address"#,
                r#"endpoints[0].addresses[1]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)"#,
                "endpoints[1].addresses: Required value: must contain at least 1 address",
            ]
        );
        assert_eq!(
            validate_slice(&json!({"addressType": "IPv5"}), &ctx).len(),
            1
        );
    }
}
