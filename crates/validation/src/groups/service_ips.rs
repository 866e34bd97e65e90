//! `networking.k8s.io/v1` ServiceCIDRs (the ranges Services' cluster IPs come from) and
//! IPAddresses (one per allocated cluster IP, named by the address), with Kubernetes 1.33's
//! strict IP and CIDR rules: canonical form, no leading zeros, no IPv4-mapped IPv6
//! addresses, no host bits in a prefix.

use serde_json::{Value, json};
use std::net::IpAddr;

use crate::Ctx;
use crate::core::reset_status;
use crate::kinds::Kind;
use crate::meta::immutable;
use crate::net::{parse_cidr, parse_ip};
use kyb_apimachinery::field::{FieldError, Path};
use kyb_apimachinery::json::{Obj, field, field_at};
use kyb_apimachinery::names;

/// ServiceCIDR's rules.
pub(crate) fn service_cidr() -> Kind {
    Kind::new(names::name_is_dns_subdomain)
        .with_status()
        .prepare(|o| reset_status(o, json!({})))
        .validate(validate_service_cidr)
        .update(|n, o, _| {
            immutable(
                field_at(n, &["spec", "cidrs"]),
                field_at(o, &["spec", "cidrs"]),
                &Path::new("spec").child("cidrs"),
            )
        })
}

/// IPAddress's rules.
pub(crate) fn ip_address() -> Kind {
    Kind::new(ip_address_name)
        .validate(validate_ip_address)
        .update(|n, o, _| {
            immutable(
                field_at(n, &["spec", "parentRef"]),
                field_at(o, &["spec", "parentRef"]),
                &Path::new("spec").child("parentRef"),
            )
        })
}

/// An IPAddress's name is an IP address in canonical form (`ValidateIPAddressName`).
fn ip_address_name(name: &str, _prefix: bool) -> Vec<String> {
    strict_ip_errors(name)
}

/// Kubernetes' strict `IsValidIP`, as messages.
pub(crate) fn strict_ip_errors(value: &str) -> Vec<String> {
    let Some(ip) = parse_ip(value) else {
        return vec!["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into()];
    };
    let mut errs = Vec::new();
    if value.parse::<IpAddr>().is_err() && ip.is_ipv4() {
        errs.push("must not have leading 0s".to_string());
    }
    if let IpAddr::V6(v6) = ip
        && v6.to_ipv4_mapped().is_some()
    {
        errs.push("must not be an IPv4-mapped IPv6 address".to_string());
    }
    if errs.is_empty() && ip.to_string() != value {
        errs.push(format!("must be in canonical form (\"{ip}\")"));
    }
    errs
}

/// Kubernetes' strict `IsValidCIDR`, as messages.
pub(crate) fn strict_cidr_errors(value: &str) -> Vec<String> {
    let Some((ip, bits)) = parse_cidr(value) else {
        return vec!["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)".into()];
    };
    let (address, length) = value.split_once('/').unwrap_or((value, ""));
    if address.parse::<IpAddr>().is_err() || (length.len() > 1 && length.starts_with('0')) {
        return vec!["must not have leading 0s in IP or prefix length".into()];
    }
    if let IpAddr::V6(v6) = ip
        && v6.to_ipv4_mapped().is_some()
    {
        return vec!["must not have an IPv4-mapped IPv6 address".into()];
    }
    let masked = mask(ip, bits);
    if masked != ip {
        return vec!["must not have bits set beyond the prefix length".into()];
    }
    let canonical = format!("{ip}/{bits}");
    if canonical != value {
        return vec![format!("must be in canonical form (\"{canonical}\")")];
    }
    Vec::new()
}

/// The network address of `ip/bits`.
fn mask(ip: IpAddr, bits: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let m = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4((u32::from(v4) & m).into())
        }
        IpAddr::V6(v6) => {
            let m = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6((u128::from(v6) & m).into())
        }
    }
}

fn validate_service_cidr(cidr: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let path = Path::new("spec").child("cidrs");
    let cidrs: Vec<String> = field(cidr, "spec")
        .str_list("cidrs")
        .into_iter()
        .map(str::to_string)
        .collect();
    if cidrs.is_empty() {
        return vec![FieldError::required(&path, "at least one CIDR required")];
    }
    let spec = field(cidr, "spec").clone();
    if cidrs.len() > 2 {
        return vec![FieldError::invalid(
            &path,
            spec,
            "may only hold up to 2 values",
        )];
    }
    if cidrs.len() == 2 {
        let families: Vec<Option<bool>> = cidrs
            .iter()
            .map(|c| parse_cidr(c).map(|(ip, _)| ip.is_ipv4()))
            .collect();
        let dual = matches!(families.as_slice(), [Some(a), Some(b)] if a != b);
        if !dual {
            return vec![FieldError::invalid(
                &path,
                spec,
                "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
            )];
        }
    }
    let mut errs = Vec::new();
    for (i, c) in cidrs.iter().enumerate() {
        for m in strict_cidr_errors(c) {
            errs.push(FieldError::invalid(&path.index(i), c.as_str(), m));
        }
    }
    errs
}

fn validate_ip_address(address: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let spec = Path::new("spec");
    let parent = field_at(address, &["spec", "parentRef"]);
    // The typed decoding gives a missing reference its required fields, empty.
    let unset = ["group", "resource", "namespace", "name"]
        .iter()
        .all(|key| parent.str(key).is_empty());
    if !parent.is_object() || unset {
        return vec![FieldError::required(&spec.child("parentRef"), "")];
    }
    let path = spec.child("parentRef");
    let mut errs = Vec::new();
    let group = parent.str("group");
    if !group.is_empty() {
        for m in names::dns1123_subdomain_errors(group) {
            errs.push(FieldError::invalid(&path.child("group"), group, m));
        }
    }
    for (key, required) in [("resource", true), ("name", true), ("namespace", false)] {
        let value = parent.str(key);
        if value.is_empty() {
            if required {
                errs.push(FieldError::required(&path.child(key), ""));
            }
            continue;
        }
        for m in names::path_segment_name_errors(value, false) {
            errs.push(FieldError::invalid(&path.child(key), value, m));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_addresses_must_be_canonical() {
        assert!(strict_ip_errors("10.96.0.10").is_empty());
        assert!(strict_ip_errors("2001:db8::1").is_empty());
        assert_eq!(
            strict_ip_errors("foo"),
            vec!["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
        );
        assert_eq!(
            strict_ip_errors("10.96.0.010"),
            vec!["must not have leading 0s"]
        );
        assert_eq!(
            strict_ip_errors("::ffff:1.1.1.1"),
            vec!["must not be an IPv4-mapped IPv6 address"]
        );
        assert_eq!(
            strict_ip_errors("2001:DB8::1"),
            vec!["must be in canonical form (\"2001:db8::1\")"]
        );
    }

    #[test]
    fn cidrs_must_be_canonical_networks() {
        assert!(strict_cidr_errors("10.96.0.0/16").is_empty());
        assert!(strict_cidr_errors("2001:db8::/64").is_empty());
        assert_eq!(
            strict_cidr_errors("10.96.0.1/16"),
            vec!["must not have bits set beyond the prefix length"]
        );
        assert_eq!(
            strict_cidr_errors("10.96.0.0/016"),
            vec!["must not have leading 0s in IP or prefix length"]
        );
        assert_eq!(
            strict_cidr_errors("10.96.0.0"),
            vec!["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
        );
        assert_eq!(
            strict_cidr_errors("2001:DB8::/64"),
            vec!["must be in canonical form (\"2001:db8::/64\")"]
        );
    }

    #[test]
    fn service_cidrs_hold_one_range_per_family() {
        let ctx = Ctx { old: None };
        let ok = json!({"spec": {"cidrs": ["10.0.0.0/24", "2001:db8::/64"]}});
        assert!(validate_service_cidr(&ok, &ctx).is_empty());
        let same = json!({"spec": {"cidrs": ["10.0.0.0/24", "10.1.0.0/24"]}});
        assert_eq!(validate_service_cidr(&same, &ctx).len(), 1);
        let none = json!({"spec": {}});
        assert_eq!(
            validate_service_cidr(&none, &ctx)[0].detail,
            "at least one CIDR required"
        );
    }

    #[test]
    fn ip_addresses_need_a_parent() {
        let ctx = Ctx { old: None };
        let errs = validate_ip_address(&json!({"spec": {}}), &ctx);
        assert_eq!(errs[0].field, "spec.parentRef");
        let errs = validate_ip_address(
            &json!({"spec": {"parentRef": {"resource": "services", "name": "a/b"}}}),
            &ctx,
        );
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.parentRef.name");
    }
}
