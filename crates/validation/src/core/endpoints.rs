//! Endpoints: addresses (valid, not special), hostnames, node names and ports of each
//! subset.

use serde_json::Value;

use crate::Ctx;
use crate::meta::validate_qualified_name;
use crate::net::{validate_ip, validate_non_special_ip};
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, default_str, each_obj};
use kyb_apimachinery::names;

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

/// `SetDefaults_Endpoints`: port protocols default to TCP.
pub(crate) fn default_endpoints(obj: &mut Value) {
    if let Some(o) = obj.as_object_mut() {
        each_obj(o, "subsets", |s| {
            each_obj(s, "ports", |p| default_str(p, "protocol", "TCP"))
        });
    }
}

fn validate_address(a: &Value, path: &Path) -> Vec<FieldError> {
    let ip = a.str("ip");
    let mut errs = validate_ip(&path.child("ip"), ip);
    let host = a.str("hostname");
    if !host.is_empty() {
        for m in names::dns1123_label_errors(host) {
            errs.push(FieldError::invalid(&path.child("hostname"), host, m));
        }
    }
    if let Some(node) = a.opt_str("nodeName") {
        for m in names::name_is_dns_subdomain(node, false) {
            errs.push(FieldError::invalid(&path.child("nodeName"), node, m));
        }
    }
    errs.extend(validate_non_special_ip(&path.child("ip"), ip));
    errs
}

/// A port of an Endpoints subset or an EndpointSlice.
pub(crate) fn validate_endpoint_port(
    p: &Value,
    require_name: bool,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = p.str("name");
    if require_name && name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else if !name.is_empty() {
        for m in names::dns1123_label_errors(name) {
            errs.push(FieldError::invalid(&path.child("name"), name, m));
        }
    }
    let port = p.int("port").unwrap_or(0);
    for m in names::port_number_errors(port) {
        errs.push(FieldError::invalid(&path.child("port"), port, m));
    }
    let proto = p.str("protocol");
    if proto.is_empty() {
        errs.push(FieldError::required(&path.child("protocol"), ""));
    } else if !PROTOCOLS.contains(&proto) {
        errs.push(FieldError::not_supported(
            &path.child("protocol"),
            proto,
            PROTOCOLS,
        ));
    }
    if let Some(ap) = p.opt_str("appProtocol") {
        errs.extend(validate_qualified_name(ap, &path.child("appProtocol")));
    }
    errs
}

/// `ValidateEndpoints`.
pub(crate) fn validate(ep: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = Path::new("subsets");
    for (i, ss) in ep.arr("subsets").iter().enumerate() {
        let p = path.index(i);
        let addrs = ss.arr("addresses");
        let not_ready = ss.arr("notReadyAddresses");
        if addrs.is_empty() && not_ready.is_empty() {
            errs.push(FieldError::required(
                &p,
                "must specify `addresses` or `notReadyAddresses`",
            ));
        }
        for (j, a) in addrs.iter().enumerate() {
            errs.extend(validate_address(a, &p.child("addresses").index(j)));
        }
        for (j, a) in not_ready.iter().enumerate() {
            errs.extend(validate_address(a, &p.child("notReadyAddresses").index(j)));
        }
        let ports = ss.arr("ports");
        for (j, port) in ports.iter().enumerate() {
            errs.extend(validate_endpoint_port(
                port,
                ports.len() > 1,
                &p.child("ports").index(j),
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn endpoints() {
        let ctx = Ctx { old: None };
        let mut ep =
            json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]});
        default_endpoints(&mut ep);
        assert_eq!(ep["subsets"][0]["ports"][0]["protocol"], json!("TCP"));
        assert!(validate(&ep, &ctx).is_empty());
        let bad = json!({"subsets": [{"ports": [{"port": 80, "protocol": "TCP"}, {"port": 81, "protocol": "TCP"}]}, {"addresses": [{"ip": "127.0.0.1"}]}]});
        let msgs: Vec<String> = validate(&bad, &ctx)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            vec![
                "subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`",
                "subsets[0].ports[0].name: Required value",
                "subsets[0].ports[1].name: Required value",
                r#"subsets[1].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)"#,
            ]
        );
    }
}
