//! The checks Kubernetes makes of a request's options before serving it, with its codes
//! and wording: `ListOptions` for lists and watches (`ValidateListOptions`, with the
//! WatchList feature on as in 1.33) and the `DeleteOptions` combination rules
//! (`ValidateDeleteOptions`). Malformed numbers are the query decoder's 400s
//! ([`kyb_serving::Query::number`]).

use kyb_api::Status;
use kyb_api::status::Cause;
use kyb_serving::Query;

/// `field.Forbidden(field, detail)`.
fn forbidden(field: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueForbidden".into(),
        message: format!("Forbidden: {detail}"),
        field: field.into(),
    }
}

/// `field.NotSupported(field, value, supported)`.
fn not_supported(field: &str, value: &str, supported: &[&str]) -> Cause {
    let supported: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    Cause {
        reason: "FieldValueNotSupported".into(),
        message: format!(
            "Unsupported value: {value:?}: supported values: {}",
            supported.join(", ")
        ),
        field: field.into(),
    }
}

/// `field.Invalid(field, value, detail)`.
fn invalid(field: &str, value: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {value:?}: {detail}"),
        field: field.into(),
    }
}

fn refuse(kind: &str, causes: Vec<Cause>) -> Result<(), Status> {
    if causes.is_empty() {
        Ok(())
    } else {
        Err(Status::invalid("meta.k8s.io", kind, "", &causes))
    }
}

const EXACT: &str = "Exact";
const NOT_OLDER_THAN: &str = "NotOlderThan";

/// `ValidateListOptions`: the `resourceVersionMatch` and `sendInitialEvents` rules of a list
/// (`watch` false) or a watch, refused as a 422 `ListOptions.meta.k8s.io "" is invalid`.
pub fn validate_list(query: &Query, watch: bool) -> Result<(), Status> {
    let resource_version = query.get("resourceVersion").unwrap_or_default();
    let matching = query.get("resourceVersionMatch").unwrap_or_default();
    let continuing = !query.get("continue").unwrap_or_default().is_empty();
    let initial_events = query.get("sendInitialEvents").is_some();
    let mut causes = Vec::new();
    let field = "resourceVersionMatch";
    if watch {
        if initial_events && matching != NOT_OLDER_THAN {
            causes.push(forbidden(
                field,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !matching.is_empty() {
            if !initial_events {
                causes.push(forbidden(
                    field,
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if matching != NOT_OLDER_THAN {
                causes.push(not_supported(field, matching, &[NOT_OLDER_THAN]));
            }
            if continuing {
                causes.push(forbidden(
                    field,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
        return refuse("ListOptions", causes);
    }
    if !matching.is_empty() {
        if resource_version.is_empty() {
            causes.push(forbidden(
                field,
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if continuing {
            causes.push(forbidden(
                field,
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if matching != EXACT && matching != NOT_OLDER_THAN {
            causes.push(not_supported(field, matching, &[EXACT, NOT_OLDER_THAN, ""]));
        }
        if matching == EXACT && resource_version == "0" {
            causes.push(forbidden(
                field,
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if initial_events {
        causes.push(forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    refuse("ListOptions", causes)
}

/// `ValidateDeleteOptions`: `orphanDependents` and `propagationPolicy` are exclusive, and
/// the policy is one of the three.
pub fn validate_delete(
    orphan_dependents: Option<bool>,
    propagation: Option<&str>,
) -> Result<(), Status> {
    let mut causes = Vec::new();
    if let (Some(_), Some(policy)) = (orphan_dependents, propagation) {
        causes.push(invalid(
            "propagationPolicy",
            policy,
            "orphanDependents and deletionPropagation cannot be both set",
        ));
    }
    if let Some(policy) = propagation
        && !matches!(policy, "Foreground" | "Background" | "Orphan")
    {
        causes.push(not_supported(
            "propagationPolicy",
            policy,
            &["Foreground", "Background", "Orphan", "nil"],
        ));
    }
    refuse("DeleteOptions", causes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(query: &str, watch: bool) -> Option<String> {
        validate_list(&Query::parse(Some(query)), watch)
            .err()
            .map(|s| s.message)
    }

    #[test]
    fn list_options_as_kubernetes_checks_them() {
        assert_eq!(
            list("resourceVersion=5&resourceVersionMatch=Exact", false),
            None
        );
        assert_eq!(
            list("resourceVersion=0&resourceVersionMatch=Exact", false).as_deref(),
            Some(
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""
            )
        );
        assert_eq!(
            list("resourceVersionMatch=bogus&resourceVersion=1", false).as_deref(),
            Some(
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported value: \"bogus\": supported values: \"Exact\", \"NotOlderThan\", \"\""
            )
        );
        assert!(
            list("resourceVersionMatch=NotOlderThan", false)
                .is_some_and(|m| m.contains("forbidden unless resourceVersion is provided"))
        );
        assert!(
            list("sendInitialEvents=false", false)
                .is_some_and(|m| m.contains("sendInitialEvents is forbidden for list"))
        );
        assert_eq!(
            list(
                "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
                true
            ),
            None
        );
        assert!(
            list("resourceVersionMatch=NotOlderThan", true).is_some_and(|m| m.contains(
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
            ))
        );
        assert!(list("sendInitialEvents=true", true).is_some_and(|m| {
            m.contains("sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")
        }));
    }

    #[test]
    fn delete_options_as_kubernetes_checks_them() {
        let status = validate_delete(Some(true), Some("Foreground")).err();
        assert_eq!(
            status.as_ref().map(|s| (s.code, s.message.as_str())),
            Some((
                422,
                "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Foreground\": orphanDependents and deletionPropagation cannot be both set"
            ))
        );
        assert!(validate_delete(Some(false), None).is_ok());
        assert!(validate_delete(None, Some("Orphan")).is_ok());
        assert!(
            validate_delete(None, Some("x")).is_err_and(|s| s.message.ends_with(
                "supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
            ))
        );
    }
}
