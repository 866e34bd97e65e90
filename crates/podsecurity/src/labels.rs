//! A namespace's Pod Security policy from its `pod-security.kubernetes.io/*` labels, with
//! Kubernetes' handling of missing and invalid values and its field errors.
//!
//! Missing labels fall back to the defaults (`privileged:latest` unless the admission
//! configuration says otherwise). An invalid value is reported as a field error, and the
//! policy still resolves: an unknown `enforce` level fails closed to `restricted`, an
//! unknown `audit` or `warn` level fails open to `privileged`, and an invalid version reads
//! as `latest`.

use std::fmt;

use kyb_apimachinery::gofmt;
use serde_json::{Map, Value};

use crate::level::{INVALID_LEVEL_DETAIL, INVALID_VERSION_DETAIL, Level, LevelVersion, Version};

/// The prefix of every Pod Security label and audit annotation.
pub const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";
pub const ENFORCE_LEVEL_LABEL: &str = "pod-security.kubernetes.io/enforce";
pub const ENFORCE_VERSION_LABEL: &str = "pod-security.kubernetes.io/enforce-version";
pub const AUDIT_LEVEL_LABEL: &str = "pod-security.kubernetes.io/audit";
pub const AUDIT_VERSION_LABEL: &str = "pod-security.kubernetes.io/audit-version";
pub const WARN_LEVEL_LABEL: &str = "pod-security.kubernetes.io/warn";
pub const WARN_VERSION_LABEL: &str = "pod-security.kubernetes.io/warn-version";

/// The policy of a namespace: one level and version per mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct NamespacePolicy {
    /// Violations reject the pod.
    pub enforce: LevelVersion,
    /// Violations are recorded in the audit event.
    pub audit: LevelVersion,
    /// Violations are returned to the client as warnings.
    pub warn: LevelVersion,
}

impl NamespacePolicy {
    /// The same level and version for all three modes.
    pub const fn uniform(lv: LevelVersion) -> Self {
        NamespacePolicy {
            enforce: lv,
            audit: lv,
            warn: lv,
        }
    }

    /// Kubernetes' `FullyPrivileged`: every mode is privileged.
    pub fn fully_privileged(&self) -> bool {
        self.enforce.level == Level::Privileged
            && self.audit.level == Level::Privileged
            && self.warn.level == Level::Privileged
    }

    /// Kubernetes' `Equivalent`: every mode is equivalent (see [`LevelVersion::equivalent`]).
    pub fn equivalent(&self, other: &NamespacePolicy) -> bool {
        self.enforce.equivalent(&other.enforce)
            && self.audit.equivalent(&other.audit)
            && self.warn.equivalent(&other.warn)
    }
}

/// An invalid Pod Security label value, as Kubernetes' `field.Invalid` on
/// `metadata.labels[<label>]`.
///
/// Displays as Kubernetes prints the field error:
/// `metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "foo": must be one of privileged, baseline, restricted`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct LabelError {
    /// The label key, e.g. [`ENFORCE_LEVEL_LABEL`].
    pub label: &'static str,
    /// The label's value as found (a non-string value reads as empty).
    pub value: String,
    /// Why it is invalid: [`INVALID_LEVEL_DETAIL`] or [`INVALID_VERSION_DETAIL`].
    pub detail: &'static str,
}

impl LabelError {
    /// The field path: `metadata.labels[<label>]`.
    pub fn field(&self) -> String {
        format!("metadata.labels[{}]", self.label)
    }

    /// The message without the field path (a `StatusCause` message):
    /// `Invalid value: "foo": must be one of privileged, baseline, restricted`.
    pub fn body(&self) -> String {
        format!(
            "Invalid value: {}: {}",
            gofmt::quote(&self.value),
            self.detail
        )
    }

    /// The `StatusCause.reason` of this error.
    pub const CAUSE_REASON: &'static str = "FieldValueInvalid";
}

impl fmt::Display for LabelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field(), self.body())
    }
}

/// Several errors as Go's `utilerrors.NewAggregate(...).Error()` prints them: the one message
/// alone, or `[first, second]` with repeated messages printed once.
pub fn aggregate(errors: &[LabelError]) -> String {
    let mut seen: Vec<String> = Vec::with_capacity(errors.len());
    for error in errors {
        let message = error.to_string();
        if !seen.contains(&message) {
            seen.push(message);
        }
    }
    match seen.len() {
        0 => String::new(),
        1 => seen.concat(),
        _ => format!("[{}]", seen.join(", ")),
    }
}

/// The namespace's policy from its labels, with `privileged:latest` defaults, or the label
/// errors when a Pod Security label is invalid (what namespace create and update validation
/// reject). See [`effective_policy`] for the policy Kubernetes still applies in that case.
pub fn namespace_policy(
    labels: Option<&Map<String, Value>>,
) -> Result<NamespacePolicy, Vec<LabelError>> {
    let (policy, errors) = effective_policy(labels, &NamespacePolicy::default());
    if errors.is_empty() {
        Ok(policy)
    } else {
        Err(errors)
    }
}

/// Kubernetes' `PolicyToEvaluate`: the policy to apply to the namespace's pods, falling back
/// to `defaults` for labels that are not set, and the field errors of invalid labels (in the
/// order enforce, enforce-version, audit, audit-version, warn, warn-version).
///
/// A policy is always returned: an invalid `enforce` level enforces `restricted` (fail
/// closed), an invalid `audit` or `warn` level is `privileged` (fail open), an invalid version
/// is `latest`. When a valid `enforce` label is stricter than the warn level and no `warn`
/// label is set, warn takes the enforce level (and its version, unless `warn-version` is
/// set), so that workloads get warnings about pods the namespace would reject.
pub fn effective_policy(
    labels: Option<&Map<String, Value>>,
    defaults: &NamespacePolicy,
) -> (NamespacePolicy, Vec<LabelError>) {
    let mut policy = *defaults;
    let mut errors = Vec::new();
    let Some(labels) = labels else {
        return (policy, errors);
    };
    let enforce_level = parse_level(labels, ENFORCE_LEVEL_LABEL, Level::Restricted, &mut errors);
    let enforce_version = parse_version(labels, ENFORCE_VERSION_LABEL, &mut errors);
    let audit_level = parse_level(labels, AUDIT_LEVEL_LABEL, Level::Privileged, &mut errors);
    let audit_version = parse_version(labels, AUDIT_VERSION_LABEL, &mut errors);
    let warn_level = parse_level(labels, WARN_LEVEL_LABEL, Level::Privileged, &mut errors);
    let warn_version = parse_version(labels, WARN_VERSION_LABEL, &mut errors);

    let value = |parsed: Result<Level, Level>| parsed.unwrap_or_else(|fallback| fallback);
    if let Some(level) = enforce_level {
        policy.enforce.level = value(level);
    }
    if let Some(version) = enforce_version {
        policy.enforce.version = version;
    }
    if let Some(level) = audit_level {
        policy.audit.level = value(level);
    }
    if let Some(version) = audit_version {
        policy.audit.version = version;
    }
    if let Some(level) = warn_level {
        policy.warn.level = value(level);
    }
    if let Some(version) = warn_version {
        policy.warn.version = version;
    }
    // A valid enforce label stricter than the warn level also warns at that level, unless
    // the warn level is labeled (and its version too, unless the warn version is labeled).
    if warn_level.is_none()
        && matches!(enforce_level, Some(Ok(_)))
        && policy.enforce.level > policy.warn.level
    {
        policy.warn.level = policy.enforce.level;
        if warn_version.is_none() {
            policy.warn.version = policy.enforce.version;
        }
    }
    (policy, errors)
}

/// The level label `label`, when set: `Ok(level)`, or `Err(on_invalid)` with an error
/// recorded.
fn parse_level(
    labels: &Map<String, Value>,
    label: &'static str,
    on_invalid: Level,
    errors: &mut Vec<LabelError>,
) -> Option<Result<Level, Level>> {
    let value = labels.get(label)?.as_str().unwrap_or("");
    Some(Level::parse(value).ok_or_else(|| {
        errors.push(LabelError {
            label,
            value: value.to_string(),
            detail: INVALID_LEVEL_DETAIL,
        });
        on_invalid
    }))
}

/// The version label `label`, when set: its version, or `latest` with an error recorded.
fn parse_version(
    labels: &Map<String, Value>,
    label: &'static str,
    errors: &mut Vec<LabelError>,
) -> Option<Version> {
    let value = labels.get(label)?.as_str().unwrap_or("");
    Some(Version::parse(value).unwrap_or_else(|| {
        errors.push(LabelError {
            label,
            value: value.to_string(),
            detail: INVALID_VERSION_DETAIL,
        });
        Version::Latest
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn defaults_are_privileged_latest() {
        let policy = namespace_policy(None).unwrap();
        assert_eq!(policy, NamespacePolicy::default());
        assert_eq!(policy.enforce.to_string(), "privileged:latest");
        assert!(policy.fully_privileged());
        let unrelated = labels(json!({"app": "x", "pod-security.kubernetes.io/other": "y"}));
        assert_eq!(namespace_policy(Some(&unrelated)).unwrap(), policy);
    }

    #[test]
    fn labels_set_each_mode() {
        let l = labels(json!({
            "pod-security.kubernetes.io/enforce": "baseline",
            "pod-security.kubernetes.io/enforce-version": "v1.29",
            "pod-security.kubernetes.io/audit": "restricted",
            "pod-security.kubernetes.io/warn": "restricted",
            "pod-security.kubernetes.io/warn-version": "latest",
        }));
        let p = namespace_policy(Some(&l)).unwrap();
        assert_eq!(p.enforce.to_string(), "baseline:v1.29");
        assert_eq!(p.audit.to_string(), "restricted:latest");
        assert_eq!(p.warn.to_string(), "restricted:latest");
        assert!(!p.fully_privileged());
    }

    #[test]
    fn version_without_level_keeps_default_level() {
        let l = labels(json!({"pod-security.kubernetes.io/enforce-version": "v1.25"}));
        let p = namespace_policy(Some(&l)).unwrap();
        assert_eq!(p.enforce.to_string(), "privileged:v1.25");
        assert!(p.fully_privileged());
    }

    #[test]
    fn invalid_enforce_level_fails_closed() {
        let l = labels(json!({"pod-security.kubernetes.io/enforce": "strict"}));
        let (p, errors) = effective_policy(Some(&l), &NamespacePolicy::default());
        assert_eq!(p.enforce.to_string(), "restricted:latest");
        assert_eq!(p.audit.to_string(), "privileged:latest");
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].to_string(),
            r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted"#
        );
        assert_eq!(
            errors[0].field(),
            "metadata.labels[pod-security.kubernetes.io/enforce]"
        );
        assert!(namespace_policy(Some(&l)).is_err());
    }

    #[test]
    fn invalid_audit_and_warn_fail_open_and_versions_read_latest() {
        let defaults = NamespacePolicy::uniform(LevelVersion::new(Level::Baseline, Version::V(20)));
        let l = labels(json!({
            "pod-security.kubernetes.io/audit": "bogus",
            "pod-security.kubernetes.io/warn": "",
            "pod-security.kubernetes.io/enforce-version": "1.25",
            "pod-security.kubernetes.io/warn-version": 7,
        }));
        let (p, errors) = effective_policy(Some(&l), &defaults);
        assert_eq!(p.enforce.to_string(), "baseline:latest");
        assert_eq!(p.audit.to_string(), "privileged:v1.20");
        assert_eq!(p.warn.to_string(), "privileged:latest");
        let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                r#"metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "1.25": must be "latest" or "v1.x""#,
                r#"metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "bogus": must be one of privileged, baseline, restricted"#,
                r#"metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "": must be one of privileged, baseline, restricted"#,
                r#"metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "": must be "latest" or "v1.x""#,
            ]
        );
        assert_eq!(
            aggregate(&errors[..1]),
            r#"metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "1.25": must be "latest" or "v1.x""#
        );
        assert!(
            aggregate(&errors)
                .starts_with("[metadata.labels[pod-security.kubernetes.io/enforce-version]: ")
        );
        assert!(aggregate(&errors).ends_with(r#"must be "latest" or "v1.x"]"#));
        assert_eq!(aggregate(&[]), "");
    }

    #[test]
    fn warn_defaults_to_a_stricter_enforce_label() {
        let policy = |v: Value| effective_policy(Some(&labels(v)), &NamespacePolicy::default()).0;
        let p = policy(json!({
            "pod-security.kubernetes.io/enforce": "restricted",
            "pod-security.kubernetes.io/enforce-version": "v1.28",
        }));
        assert_eq!(p.warn.to_string(), "restricted:v1.28");
        assert_eq!(p.audit.to_string(), "privileged:latest");
        // A labeled warn version is kept.
        let p = policy(json!({
            "pod-security.kubernetes.io/enforce": "baseline",
            "pod-security.kubernetes.io/enforce-version": "v1.28",
            "pod-security.kubernetes.io/warn-version": "v1.30",
        }));
        assert_eq!(p.warn.to_string(), "baseline:v1.30");
        // A labeled warn level is kept, even when less strict.
        let p = policy(json!({
            "pod-security.kubernetes.io/enforce": "restricted",
            "pod-security.kubernetes.io/warn": "privileged",
        }));
        assert_eq!(p.warn.to_string(), "privileged:latest");
        // No defaulting from an invalid enforce label, nor from a version label alone.
        let p = policy(json!({"pod-security.kubernetes.io/enforce": "bogus"}));
        assert_eq!(
            (p.enforce.level, p.warn.level),
            (Level::Restricted, Level::Privileged)
        );
        let p = policy(json!({"pod-security.kubernetes.io/enforce-version": "v1.2"}));
        assert_eq!(p.warn.level, Level::Privileged);
        // Not when the default warn level is already as strict.
        let defaults = NamespacePolicy {
            warn: LevelVersion::new(Level::Restricted, Version::V(20)),
            ..NamespacePolicy::default()
        };
        let l = labels(json!({"pod-security.kubernetes.io/enforce": "baseline"}));
        assert_eq!(
            effective_policy(Some(&l), &defaults).0.warn.to_string(),
            "restricted:v1.20"
        );
    }

    #[test]
    fn aggregate_prints_repeated_messages_once() {
        let e = LabelError {
            label: ENFORCE_LEVEL_LABEL,
            value: "x".into(),
            detail: INVALID_LEVEL_DETAIL,
        };
        assert_eq!(aggregate(&[e.clone(), e.clone()]), e.to_string());
    }

    #[test]
    fn values_are_quoted_as_go_does() {
        let e = LabelError {
            label: WARN_LEVEL_LABEL,
            value: "a\"b\n".into(),
            detail: INVALID_LEVEL_DETAIL,
        };
        assert_eq!(
            e.body(),
            r#"Invalid value: "a\"b\n": must be one of privileged, baseline, restricted"#
        );
    }

    #[test]
    fn policy_equivalence() {
        let a = NamespacePolicy::default();
        let mut b = a;
        b.warn.version = Version::V(3);
        assert!(a.equivalent(&b));
        b.warn.level = Level::Baseline;
        assert!(!a.equivalent(&b));
    }
}
