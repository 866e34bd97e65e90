//! IP address and CIDR checks with Kubernetes' (Go's "sloppy") parsing rules and messages.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;

/// Parses an IP address; IPv4 octets may carry leading zeros (read as decimal), as
/// Kubernetes' `ParseIPSloppy` allows.
pub(crate) fn parse_ip(s: &str) -> Option<IpAddr> {
    if let Some(v4) = parse_ipv4_sloppy(s) {
        return Some(IpAddr::V4(v4));
    }
    if s.contains(':') && !s.contains('%') {
        return s.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    None
}

fn parse_ipv4_sloppy(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (slot, part) in octets.iter_mut().zip(parts) {
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        *slot = part.parse::<u8>().ok()?;
    }
    Some(Ipv4Addr::from(octets))
}

/// IPv4-mapped IPv6 addresses count as IPv4, as in Go.
fn unmap(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// Whether the string is an IPv6 address.
pub(crate) fn is_ipv6(s: &str) -> bool {
    matches!(parse_ip(s).map(unmap), Some(IpAddr::V6(_)))
}

/// Parses `ip/prefix`.
pub(crate) fn parse_cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (ip, bits) = s.split_once('/')?;
    let ip = parse_ip(ip)?;
    if bits.is_empty() || bits.len() > 3 || !bits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let bits: u8 = bits.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (bits <= max).then_some((ip, bits))
}

fn ip_bits(ip: IpAddr) -> (u128, u8) {
    match unmap(ip) {
        IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
        IpAddr::V6(v6) => (u128::from(v6), 128),
    }
}

/// Whether `inner` (a CIDR) lies strictly inside `outer`: its network is contained and its
/// prefix is longer, as NetworkPolicy `ipBlock.except` requires.
pub(crate) fn is_strict_subset(outer: &str, inner: &str) -> bool {
    let (Some((oip, obits)), Some((iip, ibits))) = (parse_cidr(outer), parse_cidr(inner)) else {
        return false;
    };
    let (o, olen) = ip_bits(oip);
    let (i, ilen) = ip_bits(iip);
    if olen != ilen {
        return false;
    }
    let obits = obits.min(olen);
    let shift = u32::from(olen - obits);
    let mask = |v: u128| if shift >= 128 { 0 } else { v >> shift };
    mask(o) == mask(i) && obits < ibits
}

/// Kubernetes' `IsValidIP`.
pub(crate) fn validate_ip(path: &Path, value: &str) -> Vec<FieldError> {
    if parse_ip(value).is_some() {
        Vec::new()
    } else {
        vec![FieldError::invalid(
            path,
            value,
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        )]
    }
}

/// Kubernetes' `IsValidCIDR`.
pub(crate) fn validate_cidr(path: &Path, value: &str) -> Vec<FieldError> {
    if parse_cidr(value).is_some() {
        Vec::new()
    } else {
        vec![FieldError::invalid(
            path,
            value,
            "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
        )]
    }
}

/// Kubernetes' `ValidateNonSpecialIP`: no unspecified, loopback or link-local addresses.
pub(crate) fn validate_non_special_ip(path: &Path, value: &str) -> Vec<FieldError> {
    let Some(ip) = parse_ip(value).map(unmap) else {
        return vec![FieldError::invalid(
            path,
            value,
            "must be a valid IP address",
        )];
    };
    let mut errs = Vec::new();
    let (unspecified, loopback, ll_unicast, ll_multicast) = match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (
                v4.is_unspecified(),
                v4.is_loopback(),
                o[0] == 169 && o[1] == 254,
                o[0] == 224 && o[1] == 0 && o[2] == 0,
            )
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            (
                v6.is_unspecified(),
                v6.is_loopback(),
                (s[0] & 0xffc0) == 0xfe80,
                (s[0] & 0xff0f) == 0xff02,
            )
        }
    };
    if unspecified {
        errs.push(FieldError::invalid(
            path,
            value,
            format!("may not be unspecified ({value})"),
        ));
    }
    if loopback {
        errs.push(FieldError::invalid(
            path,
            value,
            "may not be in the loopback range (127.0.0.0/8, ::1/128)",
        ));
    }
    if ll_unicast {
        errs.push(FieldError::invalid(
            path,
            value,
            "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ));
    }
    if ll_multicast {
        errs.push(FieldError::invalid(
            path,
            value,
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ));
    }
    errs
}

/// Whether a list of IPs holds exactly one address of each family.
pub(crate) fn is_dual_stack(ips: &[&str]) -> bool {
    let mut v4 = false;
    let mut v6 = false;
    for ip in ips {
        match parse_ip(ip).map(unmap) {
            Some(IpAddr::V4(_)) => v4 = true,
            Some(IpAddr::V6(_)) => v6 = true,
            None => return false,
        }
    }
    v4 && v6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sloppy_ips() {
        assert!(parse_ip("10.0.0.1").is_some());
        assert!(parse_ip("010.000.000.001").is_some());
        assert!(parse_ip("2001:db8::1").is_some());
        assert!(parse_ip("::ffff:1.2.3.4").is_some());
        assert!(parse_ip("256.0.0.1").is_none());
        assert!(parse_ip("1.2.3").is_none());
        assert!(parse_ip("fe80::1%eth0").is_none());
        assert!(parse_ip("").is_none());
        assert!(is_ipv6("::1"));
        assert!(!is_ipv6("::ffff:1.2.3.4"));
    }

    #[test]
    fn parses_cidrs() {
        assert!(parse_cidr("10.0.0.0/8").is_some());
        assert!(parse_cidr("2001:db8::/64").is_some());
        assert!(parse_cidr("10.0.0.0/33").is_none());
        assert!(parse_cidr("10.0.0.0").is_none());
        assert!(parse_cidr("10.0.0.0/").is_none());
    }

    #[test]
    fn special_ips() {
        let p = Path::new("ip");
        assert!(validate_non_special_ip(&p, "10.1.2.3").is_empty());
        assert_eq!(validate_non_special_ip(&p, "127.0.0.1").len(), 1);
        assert_eq!(validate_non_special_ip(&p, "0.0.0.0").len(), 1);
        assert_eq!(validate_non_special_ip(&p, "169.254.1.1").len(), 1);
        assert_eq!(validate_non_special_ip(&p, "fe80::1").len(), 1);
        assert_eq!(validate_non_special_ip(&p, "224.0.0.5").len(), 1);
        assert!(is_dual_stack(&["10.0.0.1", "fd00::1"]));
        assert!(!is_dual_stack(&["10.0.0.1", "10.0.0.2"]));
    }
}
