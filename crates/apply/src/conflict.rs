//! Apply conflicts and how Kubernetes reports them.
//!
//! A conflict names the manager that owns a field the applied configuration sets to a
//! different value. Kubernetes answers `409 Conflict` with the message
//! [`conflict_message`] builds and one cause per conflict (reason
//! `FieldManagerConflict`, message [`Conflict::message`], field the printed path).

use crate::managed::{self, Operation};
use kyb_apimachinery::gofmt;

/// One field another manager owns with a different value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager's name.
    pub manager: String,
    /// The API version of the other manager's entry when it is an `Update` entry
    /// (printed as `using <apiVersion>`); `None` for appliers.
    pub api_version: Option<String>,
    /// The subresource the other manager wrote through (`status`, `scale`), if any.
    pub subresource: Option<String>,
    /// The field, as Kubernetes prints paths: `.spec.replicas`,
    /// `.spec.template.spec.containers[name="nginx"].image`.
    pub field: String,
}

impl Conflict {
    /// The manager as Kubernetes prints it: `"kubectl"`,
    /// `"kube-controller-manager" with subresource "scale" using apps/v1`.
    pub fn manager_description(&self) -> String {
        let mut out = String::new();
        gofmt::write_quoted(&mut out, &self.manager);
        if let Some(sub) = self.subresource.as_deref().filter(|s| !s.is_empty()) {
            out.push_str(" with subresource ");
            gofmt::write_quoted(&mut out, sub);
        }
        if let Some(version) = &self.api_version {
            out.push_str(" using ");
            out.push_str(version);
        }
        out
    }

    /// The message of this conflict's `StatusCause`: `conflict with "kubectl" using apps/v1`.
    pub fn message(&self) -> String {
        format!("conflict with {}", self.manager_description())
    }

    /// The cause reason Kubernetes gives each conflict.
    pub const CAUSE_REASON: &'static str = "FieldManagerConflict";

    fn identifier(&self) -> String {
        let operation = if self.api_version.is_some() {
            Operation::Update
        } else {
            Operation::Apply
        };
        managed::identifier(
            &self.manager,
            operation,
            self.api_version.as_deref().unwrap_or(""),
            self.subresource.as_deref().unwrap_or(""),
        )
    }
}

/// The `Status` message of a failed apply, as Kubernetes writes it:
///
/// - one conflict: `Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas`
/// - several: `Apply failed with 2 conflicts: conflicts with "a" using apps/v1:\n- .spec.replicas\n- .spec.paused\nconflicts with "b":\n- .data.x`
///   (managers sorted by their identifier, fields in the order given).
pub fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [one] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            one.manager_description(),
            one.field
        );
    }
    let mut groups: Vec<(String, &Conflict, Vec<&str>)> = Vec::new();
    for c in conflicts {
        let id = c.identifier();
        match groups.iter_mut().find(|(g, _, _)| *g == id) {
            Some((_, _, fields)) => fields.push(&c.field),
            None => groups.push((id, c, vec![&c.field])),
        }
    }
    groups.sort_by(|a, b| a.0.cmp(&b.0));
    let mut lines = Vec::new();
    for (_, first, fields) in &groups {
        lines.push(format!("conflicts with {}:", first.manager_description()));
        lines.extend(fields.iter().map(|f| format!("- {f}")));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(manager: &str, version: Option<&str>, sub: Option<&str>, field: &str) -> Conflict {
        Conflict {
            manager: manager.into(),
            api_version: version.map(Into::into),
            subresource: sub.map(Into::into),
            field: field.into(),
        }
    }

    #[test]
    fn one_conflict() {
        let one = [c(
            "kubectl-client-side-apply",
            Some("apps/v1"),
            None,
            ".spec.replicas",
        )];
        assert_eq!(
            conflict_message(&one),
            r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas"#
        );
        assert_eq!(
            one[0].message(),
            r#"conflict with "kubectl-client-side-apply" using apps/v1"#
        );
    }

    #[test]
    fn several_conflicts_grouped_by_manager() {
        let many = [
            c("zeta", None, None, ".data.b"),
            c("alpha", Some("v1"), Some("status"), ".status.x"),
            c("zeta", None, None, ".data.c"),
        ];
        assert_eq!(
            conflict_message(&many),
            "Apply failed with 3 conflicts: conflicts with \"alpha\" with subresource \"status\" using v1:\n- .status.x\nconflicts with \"zeta\":\n- .data.b\n- .data.c"
        );
    }
}
