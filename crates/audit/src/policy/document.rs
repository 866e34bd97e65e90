//! Reading a policy document (YAML or JSON) into its fields, as Kubernetes' decoder does:
//! a field of the wrong type fails with Go's `json: cannot unmarshal …` text, `null`
//! reads as an absent field, and unknown fields are reported as warnings (Kubernetes
//! tries a strict decode first and falls back to a lenient one, logging the strict
//! error).

use serde_json::{Map, Value};

/// A policy document's fields, before validation.
#[derive(Debug, Default)]
pub(crate) struct PolicyDocument {
    pub(crate) api_version: String,
    pub(crate) kind: String,
    pub(crate) rules: Vec<RuleDocument>,
    pub(crate) omit_stages: Vec<String>,
    pub(crate) omit_managed_fields: bool,
    /// `unknown field "rules[0].foo"`, one per field the policy type does not have.
    pub(crate) warnings: Vec<String>,
}

/// One `rules[]` entry's fields, before validation.
#[derive(Debug, Default)]
pub(crate) struct RuleDocument {
    pub(crate) level: String,
    pub(crate) users: Vec<String>,
    pub(crate) user_groups: Vec<String>,
    pub(crate) verbs: Vec<String>,
    pub(crate) resources: Vec<GroupResourcesDocument>,
    pub(crate) namespaces: Vec<String>,
    pub(crate) non_resource_urls: Vec<String>,
    pub(crate) omit_stages: Vec<String>,
    pub(crate) omit_managed_fields: Option<bool>,
}

/// One `resources[]` entry's fields.
#[derive(Debug, Default)]
pub(crate) struct GroupResourcesDocument {
    pub(crate) group: String,
    pub(crate) resources: Vec<String>,
    pub(crate) resource_names: Vec<String>,
}

/// Parses YAML or JSON text into a JSON value. Empty input is an empty object.
pub(crate) fn parse_text(text: &[u8]) -> Result<Value, String> {
    let first = text.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        None => Ok(Value::Object(Map::new())),
        Some(b'{') => serde_json::from_slice(text).map_err(|e| e.to_string()),
        Some(_) => match serde_saphyr::from_slice::<Value>(text) {
            Ok(Value::Null) => Ok(Value::Object(Map::new())),
            Ok(value) => Ok(value),
            Err(e) => Err(e.to_string()),
        },
    }
}

/// Where a field sits, for Go's type error text: the Go struct holding it and the JSON
/// path of field names from the root.
struct Field<'a> {
    go_struct: &'a str,
    path: &'a str,
}

impl Field<'_> {
    fn type_error(&self, value: &Value, go_type: &str) -> String {
        format!(
            "json: cannot unmarshal {} into Go struct field {}.{} of type {go_type}",
            json_kind(value),
            self.go_struct,
            self.path
        )
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Reads the document's fields. Errors are Go's decoding errors (without the
/// `failed decoding: ` prefix the caller adds).
pub(crate) fn read_policy(value: &Value) -> Result<PolicyDocument, String> {
    let Value::Object(map) = value else {
        return Err(format!(
            "json: cannot unmarshal {} into Go value of type v1.Policy",
            json_kind(value)
        ));
    };
    let mut doc = PolicyDocument::default();
    for (key, item) in map {
        let field = |path| Field {
            go_struct: "Policy",
            path,
        };
        match key.as_str() {
            "apiVersion" => doc.api_version = string(item, &field("apiVersion"), "string")?,
            "kind" => doc.kind = string(item, &field("kind"), "string")?,
            "metadata" => {
                if !matches!(item, Value::Object(_) | Value::Null) {
                    return Err(field("metadata").type_error(item, "v1.ObjectMeta"));
                }
            }
            "rules" => {
                for (i, rule) in array(item, &field("rules"), "[]v1.PolicyRule")?
                    .iter()
                    .enumerate()
                {
                    let rule = read_rule(rule, i, &mut doc.warnings)?;
                    doc.rules.push(rule);
                }
            }
            "omitStages" => {
                doc.omit_stages = strings(item, &field("omitStages"), "[]v1.Stage", "v1.Stage")?;
            }
            "omitManagedFields" => {
                doc.omit_managed_fields =
                    boolean(item, &field("omitManagedFields"))?.unwrap_or(false);
            }
            other => doc.warnings.push(unknown(other)),
        }
    }
    Ok(doc)
}

fn read_rule(
    value: &Value,
    index: usize,
    warnings: &mut Vec<String>,
) -> Result<RuleDocument, String> {
    let mut rule = RuleDocument::default();
    let map = match value {
        Value::Object(map) => map,
        Value::Null => return Ok(rule),
        other => {
            let field = Field {
                go_struct: "Policy",
                path: "rules",
            };
            return Err(field.type_error(other, "v1.PolicyRule"));
        }
    };
    for (key, item) in map {
        let path = format!("rules.{key}");
        let field = Field {
            go_struct: "PolicyRule",
            path: &path,
        };
        match key.as_str() {
            "level" => rule.level = string(item, &field, "v1.Level")?,
            "users" => rule.users = strings(item, &field, "[]string", "string")?,
            "userGroups" => rule.user_groups = strings(item, &field, "[]string", "string")?,
            "verbs" => rule.verbs = strings(item, &field, "[]string", "string")?,
            "namespaces" => rule.namespaces = strings(item, &field, "[]string", "string")?,
            "nonResourceURLs" => {
                rule.non_resource_urls = strings(item, &field, "[]string", "string")?;
            }
            "omitStages" => rule.omit_stages = strings(item, &field, "[]v1.Stage", "v1.Stage")?,
            "omitManagedFields" => rule.omit_managed_fields = boolean(item, &field)?,
            "resources" => {
                for (j, entry) in array(item, &field, "[]v1.GroupResources")?
                    .iter()
                    .enumerate()
                {
                    let entry = read_group_resources(entry, index, j, warnings)?;
                    rule.resources.push(entry);
                }
            }
            other => warnings.push(unknown(&format!("rules[{index}].{other}"))),
        }
    }
    Ok(rule)
}

fn read_group_resources(
    value: &Value,
    rule: usize,
    index: usize,
    warnings: &mut Vec<String>,
) -> Result<GroupResourcesDocument, String> {
    let mut entry = GroupResourcesDocument::default();
    let map = match value {
        Value::Object(map) => map,
        Value::Null => return Ok(entry),
        other => {
            let field = Field {
                go_struct: "PolicyRule",
                path: "rules.resources",
            };
            return Err(field.type_error(other, "v1.GroupResources"));
        }
    };
    for (key, item) in map {
        let path = format!("rules.resources.{key}");
        let field = Field {
            go_struct: "GroupResources",
            path: &path,
        };
        match key.as_str() {
            "group" => entry.group = string(item, &field, "string")?,
            "resources" => entry.resources = strings(item, &field, "[]string", "string")?,
            "resourceNames" => {
                entry.resource_names = strings(item, &field, "[]string", "string")?;
            }
            other => warnings.push(unknown(&format!(
                "rules[{rule}].resources[{index}].{other}"
            ))),
        }
    }
    Ok(entry)
}

fn unknown(path: &str) -> String {
    format!("unknown field {}", kyb_apimachinery::gofmt::quote(path))
}

fn string(value: &Value, field: &Field<'_>, go_type: &str) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        other => Err(field.type_error(other, go_type)),
    }
}

fn boolean(value: &Value, field: &Field<'_>) -> Result<Option<bool>, String> {
    match value {
        Value::Bool(b) => Ok(Some(*b)),
        Value::Null => Ok(None),
        other => Err(field.type_error(other, "bool")),
    }
}

fn array<'v>(value: &'v Value, field: &Field<'_>, go_type: &str) -> Result<&'v [Value], String> {
    match value {
        Value::Array(items) => Ok(items),
        Value::Null => Ok(&[]),
        other => Err(field.type_error(other, go_type)),
    }
}

fn strings(
    value: &Value,
    field: &Field<'_>,
    go_type: &str,
    element_type: &str,
) -> Result<Vec<String>, String> {
    array(value, field, go_type)?
        .iter()
        .map(|item| string(item, field, element_type))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<PolicyDocument, String> {
        read_policy(&parse_text(text.as_bytes())?)
    }

    #[test]
    fn reads_yaml_and_json() {
        let yaml = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n  resources:\n  - group: \"\"\n    resources: [pods]\n";
        let doc = read(yaml).unwrap_or_default();
        assert_eq!(doc.api_version, "audit.k8s.io/v1");
        assert_eq!(doc.omit_stages, vec!["RequestReceived"]);
        assert_eq!(doc.rules.len(), 1);
        assert_eq!(doc.rules[0].resources[0].resources, vec!["pods"]);

        let json = r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"None","users":["a"],"omitManagedFields":true}]}"#;
        let doc = read(json).unwrap_or_default();
        assert_eq!(doc.rules[0].users, vec!["a"]);
        assert_eq!(doc.rules[0].omit_managed_fields, Some(true));
    }

    #[test]
    fn type_errors_read_like_go() {
        let err = read("kind: Policy\nrules:\n- level: Metadata\n  users: admin\n").err();
        assert_eq!(
            err.as_deref(),
            Some(
                "json: cannot unmarshal string into Go struct field PolicyRule.rules.users of type []string"
            )
        );
        let err = read("rules:\n- resources:\n  - group: 1\n").err();
        assert_eq!(
            err.as_deref(),
            Some(
                "json: cannot unmarshal number into Go struct field GroupResources.rules.resources.group of type string"
            )
        );
        let err = read("rules: 3\n").err();
        assert_eq!(
            err.as_deref(),
            Some(
                "json: cannot unmarshal number into Go struct field Policy.rules of type []v1.PolicyRule"
            )
        );
    }

    #[test]
    fn unknown_fields_are_warnings_and_null_is_absent() {
        let doc = read("kind: Policy\nextra: 1\nrules:\n- level: None\n  userz: [a]\n  users: null\n  resources:\n  - group: apps\n    kinds: [x]\n")
            .unwrap_or_default();
        let mut warnings = doc.warnings.clone();
        warnings.sort();
        assert_eq!(
            warnings,
            vec![
                r#"unknown field "extra""#,
                r#"unknown field "rules[0].resources[0].kinds""#,
                r#"unknown field "rules[0].userz""#,
            ]
        );
        assert!(doc.rules[0].users.is_empty());
    }

    #[test]
    fn empty_input_is_an_empty_object() {
        let doc = read("  \n").unwrap_or_default();
        assert!(doc.api_version.is_empty() && doc.rules.is_empty());
        assert!(read("- a\n- b\n").is_err());
    }
}
