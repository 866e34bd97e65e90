//! Taints and tolerations, as Kubernetes' `Toleration.ToleratesTaint` and
//! `FindMatchingUntoleratedTaint` (`k8s.io/api/core/v1`, `component-helpers/scheduling`).
//!
//! A toleration tolerates a taint when its effect is empty or the taint's, its key is empty
//! or the taint's, and its operator is `Exists`, or `Equal` (the default, also when empty)
//! with a value equal to the taint's. So an empty key with `Exists` tolerates every taint,
//! and an empty key with `Equal` tolerates every taint whose value equals the toleration's
//! (any key). (Two of the four copies this replaces answered "no" for an empty key with
//! `Equal`; Kubernetes checks the value. Validation refuses such a toleration on a pod, so
//! only objects that skipped validation can hold one.) Any other operator tolerates nothing.

use k8s_openapi::api::core::v1::{Taint, Toleration};

/// `NoSchedule`: new pods are not scheduled onto the node.
pub const NO_SCHEDULE: &str = "NoSchedule";
/// `PreferNoSchedule`: the scheduler tries to avoid the node.
pub const PREFER_NO_SCHEDULE: &str = "PreferNoSchedule";
/// `NoExecute`: pods that do not tolerate the taint are evicted.
pub const NO_EXECUTE: &str = "NoExecute";

/// Whether `toleration` tolerates `taint` (Kubernetes' `ToleratesTaint`).
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let effect = toleration.effect.as_deref().unwrap_or_default();
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or_default()
                == taint.value.as_deref().unwrap_or_default()
        }
        "Exists" => true,
        _ => false,
    }
}

/// Whether any of `tolerations` tolerates `taint` (`TolerationsTolerateTaint`).
pub fn tolerations_tolerate(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| tolerates(t, taint))
}

/// The first of `taints` selected by `considered` that no toleration tolerates
/// (`FindMatchingUntoleratedTaint`).
pub fn find_untolerated_taint<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    considered: impl Fn(&Taint) -> bool,
) -> Option<&'a Taint> {
    taints
        .iter()
        .find(|taint| considered(taint) && !tolerations_tolerate(tolerations, taint))
}

/// Whether a taint keeps pods off the node: `NoSchedule` or `NoExecute` (what the
/// scheduler's Filter and the DaemonSet controller check).
pub fn is_do_not_schedule(taint: &Taint) -> bool {
    taint.effect == NO_SCHEDULE || taint.effect == NO_EXECUTE
}

/// Whether `tolerations` tolerate every `NoSchedule` and `NoExecute` taint of `taints`.
pub fn tolerate_do_not_schedule(tolerations: &[Toleration], taints: &[Taint]) -> bool {
    find_untolerated_taint(taints, tolerations, is_do_not_schedule).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
        Taint {
            key: key.to_string(),
            value: value.map(str::to_string),
            effect: effect.to_string(),
            time_added: None,
        }
    }

    fn toleration(key: &str, operator: &str, value: &str, effect: &str) -> Toleration {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        Toleration {
            key: opt(key),
            operator: opt(operator),
            value: opt(value),
            effect: opt(effect),
            toleration_seconds: None,
        }
    }

    #[test]
    fn keys_values_and_effects() {
        let t = taint("dedicated", Some("db"), NO_SCHEDULE);
        assert!(tolerates(&toleration("dedicated", "Equal", "db", ""), &t));
        assert!(tolerates(
            &toleration("dedicated", "", "db", NO_SCHEDULE),
            &t
        ));
        assert!(!tolerates(&toleration("dedicated", "Equal", "web", ""), &t));
        assert!(!tolerates(
            &toleration("dedicated", "Equal", "db", NO_EXECUTE),
            &t
        ));
        assert!(!tolerates(&toleration("other", "Exists", "", ""), &t));
        assert!(tolerates(&toleration("dedicated", "Exists", "", ""), &t));
        assert!(!tolerates(&toleration("dedicated", "Gt", "db", ""), &t));
        // A taint without a value is tolerated by `Equal` with no value.
        let bare = taint("k", None, NO_EXECUTE);
        assert!(tolerates(&toleration("k", "Equal", "", ""), &bare));
    }

    #[test]
    fn an_empty_key_with_exists_tolerates_everything() {
        let everything = toleration("", "Exists", "", "");
        for t in [
            taint("a", Some("1"), NO_SCHEDULE),
            taint("b", None, NO_EXECUTE),
            taint("c", None, PREFER_NO_SCHEDULE),
        ] {
            assert!(tolerates(&everything, &t));
        }
        assert!(!tolerates(
            &toleration("", "Exists", "", NO_SCHEDULE),
            &taint("b", None, NO_EXECUTE)
        ));
    }

    #[test]
    fn an_empty_key_with_equal_compares_values_as_kubernetes_does() {
        // The DaemonSet and taint-eviction copies refused these; Kubernetes compares the
        // value and ignores the key.
        let equal = toleration("", "Equal", "v", "");
        assert!(tolerates(&equal, &taint("any", Some("v"), NO_SCHEDULE)));
        assert!(!tolerates(&equal, &taint("any", Some("w"), NO_SCHEDULE)));
        let default_operator = toleration("", "", "", NO_EXECUTE);
        assert!(tolerates(&default_operator, &taint("k", None, NO_EXECUTE)));
        assert!(!tolerates(
            &default_operator,
            &taint("k", Some("x"), NO_EXECUTE)
        ));
    }

    #[test]
    fn untolerated_taints() {
        let taints = [
            taint("a", None, PREFER_NO_SCHEDULE),
            taint("b", None, NO_SCHEDULE),
            taint("c", None, NO_EXECUTE),
        ];
        let tolerations = [toleration("b", "Exists", "", "")];
        assert_eq!(
            find_untolerated_taint(&taints, &tolerations, is_do_not_schedule).map(|t| &t.key),
            Some(&"c".to_string())
        );
        assert!(!tolerate_do_not_schedule(&tolerations, &taints));
        assert!(tolerate_do_not_schedule(
            &[toleration("", "Exists", "", "")],
            &taints
        ));
    }
}
