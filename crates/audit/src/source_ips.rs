//! The `sourceIPs` of an event: the client addresses a request passed through, as
//! Kubernetes collects them: every valid address of `X-Forwarded-For`, then `X-Real-Ip`
//! unless the chain already holds it, then the connection's remote address unless it is
//! already last.

use std::net::{IpAddr, Ipv4Addr};

/// The source IPs of a request, written as Go writes IP addresses (IPv4-mapped IPv6
/// addresses in dotted IPv4 form).
pub fn source_ips(
    x_forwarded_for: Option<&str>,
    x_real_ip: Option<&str>,
    remote: Option<IpAddr>,
) -> Vec<String> {
    let mut ips: Vec<IpAddr> = Vec::new();
    if let Some(chain) = x_forwarded_for {
        ips.extend(chain.split(',').filter_map(|part| parse_ip(part.trim())));
    }
    if let Some(ip) = x_real_ip.and_then(parse_ip)
        && !ips.contains(&ip)
    {
        ips.push(ip);
    }
    if let Some(ip) = remote.map(canonical)
        && ips.last() != Some(&ip)
    {
        ips.push(ip);
    }
    ips.iter().map(ToString::to_string).collect()
}

/// IPv4-mapped IPv6 addresses are IPv4 addresses, as Go's `net.IP` treats them.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Parses an address as Kubernetes' sloppy parser does: IPv4 parts may have leading
/// zeros (read as decimal).
fn parse_ip(s: &str) -> Option<IpAddr> {
    if s.is_empty() {
        return None;
    }
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(canonical(ip));
    }
    let mut octets = [0u8; 4];
    let mut parts = s.split('.');
    for octet in &mut octets {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *octet = part.parse().ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(IpAddr::V4(Ipv4Addr::from(octets)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Option<IpAddr> {
        s.parse().ok()
    }

    #[test]
    fn remote_only() {
        assert_eq!(source_ips(None, None, ip("10.0.0.1")), vec!["10.0.0.1"]);
        assert_eq!(
            source_ips(None, None, ip("::ffff:10.0.0.1")),
            vec!["10.0.0.1"]
        );
        assert_eq!(source_ips(None, None, ip("fd00::1")), vec!["fd00::1"]);
        assert!(source_ips(None, None, None).is_empty());
    }

    #[test]
    fn forwarded_chain_real_ip_and_remote() {
        assert_eq!(
            source_ips(
                Some("1.2.3.4, bogus, 010.0.0.2 ,fd00::5"),
                Some("1.2.3.4"),
                ip("192.168.0.1")
            ),
            vec!["1.2.3.4", "10.0.0.2", "fd00::5", "192.168.0.1"]
        );
        assert_eq!(
            source_ips(Some("1.2.3.4"), Some("5.6.7.8"), ip("5.6.7.8")),
            vec!["1.2.3.4", "5.6.7.8"]
        );
        assert_eq!(
            source_ips(None, Some("nope"), ip("127.0.0.1")),
            vec!["127.0.0.1"]
        );
    }
}
