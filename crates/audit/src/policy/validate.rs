//! Validation of a policy document, with Kubernetes' field paths and texts: levels,
//! stages, non-resource URL forms, API group names, `resourceNames` without resources,
//! and rules that mix resources and non-resource URLs.

use kyb_apimachinery::field::{ErrorKind, FieldError};
use serde_json::Value;

use super::document::{GroupResourcesDocument, PolicyDocument, RuleDocument};
use crate::level::{Level, Stage};

/// Every problem of the document, in Kubernetes' order: the policy's `omitStages`, then
/// each rule.
pub(crate) fn validate(doc: &PolicyDocument) -> Vec<FieldError> {
    let mut errors = Vec::new();
    validate_stages(&doc.omit_stages, "omitStages", &mut errors);
    for (i, rule) in doc.rules.iter().enumerate() {
        validate_rule(rule, &format!("rules[{i}]"), &mut errors);
    }
    errors
}

fn validate_rule(rule: &RuleDocument, path: &str, errors: &mut Vec<FieldError>) {
    validate_level(&rule.level, &format!("{path}.level"), errors);
    validate_non_resource_urls(
        &rule.non_resource_urls,
        &format!("{path}.nonResourceURLs"),
        errors,
    );
    validate_resources(&rule.resources, &format!("{path}.resources"), errors);
    validate_stages(&rule.omit_stages, &format!("{path}.omitStages"), errors);
    if !rule.non_resource_urls.is_empty()
        && (!rule.resources.is_empty() || !rule.namespaces.is_empty())
    {
        errors.push(error(
            ErrorKind::Invalid,
            format!("{path}.nonResourceURLs"),
            Some(string_list(&rule.non_resource_urls)),
            "rules cannot apply to both regular resources and non-resource URLs",
        ));
    }
}

fn validate_level(level: &str, path: &str, errors: &mut Vec<FieldError>) {
    if level.is_empty() {
        errors.push(error(ErrorKind::Required, path.to_string(), None, ""));
    } else if Level::parse(level).is_none() {
        let supported: Vec<String> = Level::ALL
            .iter()
            .map(|l| kyb_apimachinery::gofmt::quote(l.as_str()))
            .collect();
        errors.push(error(
            ErrorKind::NotSupported,
            path.to_string(),
            Some(Value::from(level)),
            &format!("supported values: {}", supported.join(", ")),
        ));
    }
}

fn validate_non_resource_urls(urls: &[String], path: &str, errors: &mut Vec<FieldError>) {
    for (i, url) in urls.iter().enumerate() {
        if url == "*" {
            continue;
        }
        if !url.starts_with('/') {
            errors.push(error(
                ErrorKind::Invalid,
                format!("{path}[{i}]"),
                Some(Value::from(url.as_str())),
                "non-resource URL rules must begin with a '/' character",
            ));
        }
        // Everything but the last character must be free of wildcards.
        let mut head = url.chars();
        head.next_back();
        if head.as_str().contains('*') {
            errors.push(error(
                ErrorKind::Invalid,
                format!("{path}[{i}]"),
                Some(Value::from(url.as_str())),
                "non-resource URL wildcards '*' must be the final character of the rule",
            ));
        }
    }
}

fn validate_resources(
    entries: &[GroupResourcesDocument],
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    // Kubernetes names these fields without the entry's index.
    for entry in entries {
        // The empty group is the core group.
        if !entry.group.is_empty() {
            let problems = kyb_apimachinery::names::name_is_dns_subdomain(&entry.group, false);
            if !problems.is_empty() {
                errors.push(error(
                    ErrorKind::Invalid,
                    format!("{path}.group"),
                    Some(Value::from(entry.group.as_str())),
                    &problems.join(","),
                ));
            }
        }
        if !entry.resource_names.is_empty() && entry.resources.is_empty() {
            errors.push(error(
                ErrorKind::Invalid,
                format!("{path}.resourceNames"),
                Some(string_list(&entry.resource_names)),
                "using resourceNames requires at least one resource",
            ));
        }
    }
}

fn validate_stages(stages: &[String], path: &str, errors: &mut Vec<FieldError>) {
    for (i, stage) in stages.iter().enumerate() {
        if Stage::parse(stage).is_none() {
            let allowed: Vec<&str> = Stage::ALL.iter().map(|s| s.as_str()).collect();
            errors.push(error(
                ErrorKind::Invalid,
                format!("{path}[{i}]"),
                Some(Value::from(stage.as_str())),
                &format!("allowed stages are {}", allowed.join(",")),
            ));
        }
    }
}

fn string_list(items: &[String]) -> Value {
    Value::Array(items.iter().map(|s| Value::from(s.as_str())).collect())
}

fn error(kind: ErrorKind, field: String, value: Option<Value>, detail: &str) -> FieldError {
    FieldError {
        kind,
        field,
        value,
        detail: detail.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::document::{parse_text, read_policy};
    use super::*;

    fn messages(yaml: &str) -> Vec<String> {
        let doc = parse_text(yaml.as_bytes())
            .and_then(|v| read_policy(&v))
            .unwrap_or_default();
        validate(&doc).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn levels() {
        assert_eq!(
            messages("rules:\n- users: [a]\n"),
            vec!["rules[0].level: Required value"]
        );
        assert_eq!(
            messages("rules:\n- level: Everything\n"),
            vec![
                r#"rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse""#
            ]
        );
    }

    #[test]
    fn stages() {
        assert_eq!(
            messages("omitStages: [Done]\nrules:\n- level: None\n  omitStages: [Panic, Later]\n"),
            vec![
                r#"omitStages[0]: Invalid value: "Done": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic"#,
                r#"rules[0].omitStages[1]: Invalid value: "Later": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic"#,
            ]
        );
    }

    #[test]
    fn non_resource_urls() {
        assert_eq!(
            messages("rules:\n- level: None\n  nonResourceURLs: ['*', healthz, '/a*b', '/ok*']\n"),
            vec![
                r#"rules[0].nonResourceURLs[1]: Invalid value: "healthz": non-resource URL rules must begin with a '/' character"#,
                r#"rules[0].nonResourceURLs[2]: Invalid value: "/a*b": non-resource URL wildcards '*' must be the final character of the rule"#,
            ]
        );
        assert_eq!(
            messages(
                "rules:\n- level: None\n  namespaces: [kube-system]\n  nonResourceURLs: [/healthz]\n"
            ),
            vec![
                r#"rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: rules cannot apply to both regular resources and non-resource URLs"#
            ]
        );
    }

    #[test]
    fn resources() {
        assert_eq!(
            messages(
                "rules:\n- level: None\n  resources:\n  - group: rbac.authorization.k8s.io/v1\n  - group: apps\n    resourceNames: [web]\n"
            ),
            vec![
                r#"rules[0].resources.group: Invalid value: "rbac.authorization.k8s.io/v1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
                r#"rules[0].resources.resourceNames: Invalid value: []string{"web"}: using resourceNames requires at least one resource"#,
            ]
        );
        assert!(messages("rules:\n- level: None\n  resources:\n  - group: ''\n    resources: [pods]\n    resourceNames: [a]\n").is_empty());
    }
}
