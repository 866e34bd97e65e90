//! Taint-based eviction (Kubernetes' taint eviction controller, pure logic): a pod on a
//! node with a `NoExecute` taint it does not tolerate is evicted at once; one tolerating
//! every such taint stays for the shortest `tolerationSeconds` of the tolerations used
//! (forever when none sets it), counted from when the taints were added.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Pod, Taint, Toleration};
use kyb_component_helpers::tolerations::tolerates;

/// What to do with a pod on a tainted node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No `NoExecute` taint, or all tolerated forever.
    Stay,
    /// Evict when this time comes.
    EvictAt(Timestamp),
    /// Evict now.
    EvictNow,
}

/// The verdict for `pod` on a node whose taints are `taints`, the `NoExecute` ones in
/// force since `since`.
pub fn verdict(pod: &Pod, taints: &[Taint], since: Timestamp) -> Verdict {
    let tolerations: &[Toleration] = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default();
    let mut shortest: Option<i64> = None;
    let mut any = false;
    for taint in taints.iter().filter(|t| t.effect == "NoExecute") {
        any = true;
        let used: Vec<&Toleration> = tolerations.iter().filter(|t| tolerates(t, taint)).collect();
        if used.is_empty() {
            return Verdict::EvictNow;
        }
        for seconds in used.iter().filter_map(|t| t.toleration_seconds) {
            shortest = Some(shortest.map_or(seconds, |s| s.min(seconds)));
        }
    }
    match shortest {
        _ if !any => Verdict::Stay,
        None => Verdict::Stay,
        Some(seconds) if seconds <= 0 => Verdict::EvictNow,
        Some(seconds) => since
            .checked_add(SignedDuration::from_secs(seconds))
            .map_or(Verdict::Stay, Verdict::EvictAt),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn pod(tolerations: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"spec": {"containers": [], "tolerations": tolerations}}))
            .unwrap()
    }

    fn taint(key: &str, effect: &str) -> Taint {
        Taint {
            key: key.to_string(),
            effect: effect.to_string(),
            value: None,
            time_added: None,
        }
    }

    #[test]
    fn verdicts() {
        let since: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let unreachable = [taint("node.kubernetes.io/unreachable", "NoExecute")];
        assert_eq!(
            verdict(&pod(json!([])), &unreachable, since),
            Verdict::EvictNow
        );
        assert_eq!(
            verdict(&pod(json!([])), &[taint("x", "NoSchedule")], since),
            Verdict::Stay
        );
        let tolerating = pod(json!([
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": 2},
        ]));
        assert_eq!(
            verdict(&tolerating, &unreachable, since),
            Verdict::EvictAt("2026-01-01T00:00:02Z".parse().unwrap())
        );
        let forever = pod(json!([{"operator": "Exists"}]));
        assert_eq!(verdict(&forever, &unreachable, since), Verdict::Stay);
        let wrong_value = pod(json!([{"key": "k", "value": "a", "effect": "NoExecute"}]));
        let mut valued = taint("k", "NoExecute");
        valued.value = Some("b".to_string());
        assert_eq!(verdict(&wrong_value, &[valued], since), Verdict::EvictNow);
    }
}
