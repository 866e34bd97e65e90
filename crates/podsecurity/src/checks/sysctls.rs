//! Sysctls (baseline): only the namespaced, isolated "safe" sysctls may be set; the safe
//! set grew at policy versions 1.27, 1.29 and 1.32.

use crate::checks::CheckFailure;
use crate::pod::{PodView, array, present, string};

const SAFE_1_0: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
];
const ADDED_1_27: &[&str] = &["net.ipv4.ip_local_reserved_ports"];
const ADDED_1_29: &[&str] = &[
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];
const ADDED_1_32: &[&str] = &["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"];

pub(crate) fn sysctls_1_0(pod: &PodView<'_>) -> Option<CheckFailure> {
    sysctls(pod, &[SAFE_1_0])
}

pub(crate) fn sysctls_1_27(pod: &PodView<'_>) -> Option<CheckFailure> {
    sysctls(pod, &[SAFE_1_0, ADDED_1_27])
}

pub(crate) fn sysctls_1_29(pod: &PodView<'_>) -> Option<CheckFailure> {
    sysctls(pod, &[SAFE_1_0, ADDED_1_27, ADDED_1_29])
}

pub(crate) fn sysctls_1_32(pod: &PodView<'_>) -> Option<CheckFailure> {
    sysctls(pod, &[SAFE_1_0, ADDED_1_27, ADDED_1_29, ADDED_1_32])
}

/// `spec.securityContext.sysctls[*].name` must be in one of the `safe` sets; the others
/// are listed in the pod's order (repeats included).
fn sysctls(pod: &PodView<'_>, safe: &[&[&str]]) -> Option<CheckFailure> {
    let forbidden: Vec<&str> = array(present(pod.security_context(), "sysctls"))
        .iter()
        .map(|s| string(s.as_object(), "name"))
        .filter(|name| !safe.iter().any(|set| set.contains(name)))
        .collect();
    if forbidden.is_empty() {
        return None;
    }
    Some(CheckFailure::new("forbidden sysctls", forbidden.join(", ")))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn spec(names: &[&str]) -> Value {
        let sysctls: Vec<Value> = names
            .iter()
            .map(|n| json!({"name": n, "value": "1"}))
            .collect();
        json!({"securityContext": {"sysctls": sysctls}})
    }

    #[test]
    fn safe_sets_by_version() {
        let s = spec(&[
            "kernel.shm_rmid_forced",
            "net.ipv4.ip_unprivileged_port_start",
        ]);
        assert_eq!(sysctls_1_0(&PodView::new(None, &s)), None);

        let s = spec(&["net.ipv4.ip_local_reserved_ports"]);
        assert!(sysctls_1_0(&PodView::new(None, &s)).is_some());
        assert_eq!(sysctls_1_27(&PodView::new(None, &s)), None);

        let s = spec(&["net.ipv4.tcp_keepalive_time"]);
        assert!(sysctls_1_27(&PodView::new(None, &s)).is_some());
        assert_eq!(sysctls_1_29(&PodView::new(None, &s)), None);

        let s = spec(&["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"]);
        assert_eq!(
            sysctls_1_29(&PodView::new(None, &s)),
            Some(CheckFailure::new(
                "forbidden sysctls",
                "net.ipv4.tcp_rmem, net.ipv4.tcp_wmem"
            ))
        );
        assert_eq!(sysctls_1_32(&PodView::new(None, &s)), None);
    }

    #[test]
    fn unsafe_listed_in_order() {
        let s = spec(&[
            "net.core.somaxconn",
            "kernel.shm_rmid_forced",
            "kernel.msgmax",
            "net.core.somaxconn",
        ]);
        assert_eq!(
            sysctls_1_32(&PodView::new(None, &s)),
            Some(CheckFailure::new(
                "forbidden sysctls",
                "net.core.somaxconn, kernel.msgmax, net.core.somaxconn"
            ))
        );
    }
}
