//! The checks Kubernetes makes of a request's options before serving it, with its codes
//! and wording: `ListOptions` for lists and watches (`ValidateListOptions`, with the
//! WatchList feature on as in 1.33) and the `DeleteOptions` combination rules
//! (`ValidateDeleteOptions`); and of writes, `dryRun`, `fieldValidation` and `fieldManager`
//! (`ValidateCreateOptions` and its siblings), each refused as a 422 of the verb's options
//! kind. Malformed numbers are the query decoder's 400s ([`kyb_serving::Query::number`]).

use super::Call;
use kyb_api::Status;
use kyb_api::status::Cause;
use kyb_serving::{Query, Verb};

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

/// The options object of a write verb, which its refusals name.
pub fn options_kind(verb: Verb) -> &'static str {
    match verb {
        Verb::Update => "UpdateOptions",
        Verb::Patch => "PatchOptions",
        Verb::Delete | Verb::DeleteCollection => "DeleteOptions",
        _ => "CreateOptions",
    }
}

/// `dryRun`: every value must be `All` (`ValidateDryRun`).
pub fn dry_run(call: &Call<'_>) -> Result<bool, Status> {
    let values = call.query.all("dryRun");
    if values.iter().any(|v| v != "All") {
        let listed = serde_json::to_string(values).unwrap_or_default();
        return Err(Status::invalid(
            "meta.k8s.io",
            options_kind(call.verb),
            "",
            &[Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!("Unsupported value: {listed}: supported values: \"All\""),
                field: "dryRun".into(),
            }],
        ));
    }
    Ok(!values.is_empty())
}

/// `fieldValidation`: `Ignore`, `Warn`, `Strict` or empty (`ValidateFieldValidation`).
pub fn check_field_validation(call: &Call<'_>) -> Result<(), Status> {
    match call.query.get("fieldValidation") {
        None | Some("" | "Ignore" | "Warn" | "Strict") => Ok(()),
        Some(other) => Err(Status::invalid(
            "meta.k8s.io",
            options_kind(call.verb),
            "",
            &[not_supported(
                "fieldValidation",
                other,
                &["", "Ignore", "Strict", "Warn"],
            )],
        )),
    }
}

/// The longest field manager Kubernetes accepts, in bytes.
const MAX_FIELD_MANAGER: usize = 128;

/// `fieldManager`: at most 128 bytes, printable characters only (`ValidateFieldManager`).
pub fn check_field_manager(verb: Verb, manager: &str) -> Result<(), Status> {
    let mut causes = Vec::new();
    if manager.len() > MAX_FIELD_MANAGER {
        causes.push(Cause {
            reason: "FieldValueTooLong".into(),
            message: format!("Too long: may not be more than {MAX_FIELD_MANAGER} bytes"),
            field: "fieldManager".into(),
        });
    }
    for (at, c) in manager.char_indices() {
        if c.is_control() {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: {}: invalid character U+{:04X} (at position {at})",
                    kyb_apimachinery::gofmt::quote(manager),
                    u32::from(c)
                ),
                field: "fieldManager".into(),
            });
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(Status::invalid(
            "meta.k8s.io",
            options_kind(verb),
            "",
            &causes,
        ))
    }
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
    fn field_managers_as_kubernetes_checks_them() {
        assert!(check_field_manager(Verb::Create, "kubectl").is_ok());
        assert_eq!(
            check_field_manager(Verb::Create, &"m".repeat(129))
                .err()
                .map(|s| s.message),
            Some(
                "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
                    .to_string()
            )
        );
        assert_eq!(
            check_field_manager(Verb::Patch, "a\u{7}b").err().map(|s| s.message),
            Some(
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: \"a\\ab\": invalid character U+0007 (at position 1)"
                    .to_string()
            )
        );
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
