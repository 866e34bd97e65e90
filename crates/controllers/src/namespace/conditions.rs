//! The status conditions Kubernetes' namespace controller sets on a terminating
//! namespace, with their reasons and messages, from the outcome of one deletion pass.

use k8s_openapi::api::core::v1::NamespaceCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::BTreeMap;

/// What one pass over a namespace's content found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Discovery failed (its message).
    pub discovery_failure: Option<String>,
    /// Errors deleting content, one per resource.
    pub content_failures: Vec<String>,
    /// `resource.group` → objects remaining.
    pub remaining: BTreeMap<String, usize>,
    /// finalizer → objects carrying it.
    pub finalizers: BTreeMap<String, usize>,
}

fn condition(type_: &str, status: bool, reason: &str, message: String) -> NamespaceCondition {
    NamespaceCondition {
        type_: type_.to_string(),
        status: if status { "True" } else { "False" }.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message),
        last_transition_time: None,
    }
}

impl Outcome {
    /// The five deletion conditions, in Kubernetes' order.
    pub fn conditions(&self) -> Vec<NamespaceCondition> {
        let discovery = match &self.discovery_failure {
            Some(message) => condition(
                "NamespaceDeletionDiscoveryFailure",
                true,
                "DiscoveryFailed",
                message.clone(),
            ),
            None => condition(
                "NamespaceDeletionDiscoveryFailure",
                false,
                "ResourcesDiscovered",
                "All resources successfully discovered".into(),
            ),
        };
        let parsing = condition(
            "NamespaceDeletionGroupVersionParsingFailure",
            false,
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed".into(),
        );
        let content = if self.content_failures.is_empty() {
            condition(
                "NamespaceDeletionContentFailure",
                false,
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization".into(),
            )
        } else {
            condition(
                "NamespaceDeletionContentFailure",
                true,
                "ContentDeletionFailed",
                format!(
                    "Failed to delete all resource types, {} remaining: {}",
                    self.content_failures.len(),
                    self.content_failures.join(", ")
                ),
            )
        };
        let remaining = if self.remaining.is_empty() {
            condition(
                "NamespaceContentRemaining",
                false,
                "ContentRemoved",
                "All content successfully removed".into(),
            )
        } else {
            let list: Vec<String> = self
                .remaining
                .iter()
                .map(|(resource, n)| format!("{resource} has {n} resource instances"))
                .collect();
            condition(
                "NamespaceContentRemaining",
                true,
                "SomeResourcesRemain",
                format!("Some resources are remaining: {}", list.join(", ")),
            )
        };
        let finalizers = if self.finalizers.is_empty() {
            condition(
                "NamespaceFinalizersRemaining",
                false,
                "ContentHasNoFinalizers",
                "All content-preserving finalizers finished".into(),
            )
        } else {
            let list: Vec<String> = self
                .finalizers
                .iter()
                .map(|(finalizer, n)| format!("{finalizer} in {n} resource instances"))
                .collect();
            condition(
                "NamespaceFinalizersRemaining",
                true,
                "SomeFinalizersRemain",
                format!(
                    "Some content in the namespace has finalizers remaining: {}",
                    list.join(", ")
                ),
            )
        };
        vec![discovery, parsing, content, remaining, finalizers]
    }
}

/// `wanted` merged into `current`: conditions of other types are kept, and a condition
/// whose status did not change keeps its lastTransitionTime. `None` when nothing changes.
pub fn merge(
    current: &[NamespaceCondition],
    wanted: Vec<NamespaceCondition>,
    now: Time,
) -> Option<Vec<NamespaceCondition>> {
    let mut merged: Vec<NamespaceCondition> = current
        .iter()
        .filter(|c| !wanted.iter().any(|w| w.type_ == c.type_))
        .cloned()
        .collect();
    let mut changed = false;
    for mut condition in wanted {
        match current.iter().find(|c| c.type_ == condition.type_) {
            Some(old) if old.status == condition.status => {
                condition.last_transition_time = old.last_transition_time.clone();
                changed |= old.reason != condition.reason || old.message != condition.message;
            }
            _ => {
                condition.last_transition_time = Some(now.clone());
                changed = true;
            }
        }
        merged.push(condition);
    }
    changed.then_some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_pass_reports_everything_done() {
        let conditions = Outcome::default().conditions();
        let text: Vec<_> = conditions
            .iter()
            .map(|c| {
                (
                    c.type_.as_str(),
                    c.status.as_str(),
                    c.reason.as_deref().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(
            text,
            vec![
                (
                    "NamespaceDeletionDiscoveryFailure",
                    "False",
                    "ResourcesDiscovered"
                ),
                (
                    "NamespaceDeletionGroupVersionParsingFailure",
                    "False",
                    "ParsedGroupVersions"
                ),
                ("NamespaceDeletionContentFailure", "False", "ContentDeleted"),
                ("NamespaceContentRemaining", "False", "ContentRemoved"),
                (
                    "NamespaceFinalizersRemaining",
                    "False",
                    "ContentHasNoFinalizers"
                ),
            ]
        );
    }

    #[test]
    fn remaining_content_and_finalizers_are_listed() {
        let outcome = Outcome {
            remaining: [
                ("configmaps.".to_string(), 1),
                ("widgets.example.com".to_string(), 2),
            ]
            .into(),
            finalizers: [("example.com/keep".to_string(), 1)].into(),
            ..Default::default()
        };
        let conditions = outcome.conditions();
        assert_eq!(
            conditions[3].message.as_deref(),
            Some(
                "Some resources are remaining: configmaps. has 1 resource instances, widgets.example.com has 2 resource instances"
            )
        );
        assert_eq!(
            conditions[4].message.as_deref(),
            Some(
                "Some content in the namespace has finalizers remaining: example.com/keep in 1 resource instances"
            )
        );
        assert_eq!(conditions[4].status, "True");
    }

    #[test]
    fn merging_keeps_transition_times_and_reports_no_change() {
        let now = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let first = merge(&[], Outcome::default().conditions(), now.clone());
        let Some(first) = first else {
            panic!("the first merge changes the status");
        };
        let later = Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH
                + k8s_openapi::jiff::SignedDuration::from_secs(60),
        );
        assert!(merge(&first, Outcome::default().conditions(), later).is_none());
    }
}
