//! Admission configuration: webhook configurations, ValidatingAdmissionPolicy and
//! ValidatingAdmissionPolicyBinding.

use super::{AGE, Column, NAME, Printer, count_cell, integer, name, owned, string};
use crate::fields::text;
use crate::selectors::label_selector_debug_string;
use crate::timestamp::age;
use jiff::Timestamp;
use kyb_apimachinery::json::{at, str_at};
use serde_json::Value;

const WEBHOOK_COLUMNS: &[Column] = &[
    NAME,
    integer("Webhooks", "How many webhooks the configuration registers."),
    AGE,
];

pub(crate) static MUTATING_WEBHOOK_CONFIGURATION: Printer = Printer {
    columns: WEBHOOK_COLUMNS,
    cells: webhook_cells,
};

pub(crate) static VALIDATING_WEBHOOK_CONFIGURATION: Printer = Printer {
    columns: WEBHOOK_COLUMNS,
    cells: webhook_cells,
};

fn webhook_cells(configuration: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(configuration),
        count_cell(configuration, &["webhooks"]),
        age(configuration, now),
    ]
}

pub(crate) static VALIDATING_ADMISSION_POLICY: Printer = Printer {
    columns: &[
        NAME,
        integer(
            "Validations",
            "How many validation rules the policy defines.",
        ),
        string(
            "ParamKind",
            "The kind of resource that parameterizes the policy.",
        ),
        AGE,
    ],
    cells: policy_cells,
};

fn policy_cells(policy: &Value, now: Timestamp) -> Vec<Value> {
    let param_kind = match at(policy, &["spec", "paramKind"]) {
        Some(kind) => format!(
            "{}/{}",
            str_at(kind, &["apiVersion"]),
            str_at(kind, &["kind"])
        ),
        None => "<unset>".to_owned(),
    };
    vec![
        name(policy),
        count_cell(policy, &["spec", "validations"]),
        owned(param_kind),
        age(policy, now),
    ]
}

pub(crate) static VALIDATING_ADMISSION_POLICY_BINDING: Printer = Printer {
    columns: &[
        NAME,
        string("PolicyName", "The policy this binding applies."),
        string("ParamRef", "The parameter resource configuring the policy."),
        AGE,
    ],
    cells: binding_cells,
};

fn binding_cells(binding: &Value, now: Timestamp) -> Vec<Value> {
    let param = match at(binding, &["spec", "paramRef"]) {
        Some(reference) => {
            let param_name = str_at(reference, &["name"]);
            let namespace = str_at(reference, &["namespace"]);
            if !param_name.is_empty() {
                // Without a namespace the scope is unknown here, so any namespace is shown.
                let namespace = if namespace.is_empty() { "*" } else { namespace };
                format!("{namespace}/{param_name}")
            } else if let Some(selector) = at(reference, &["selector"]) {
                label_selector_debug_string(selector)
            } else {
                "<unset>".to_owned()
            }
        }
        None => "<unset>".to_owned(),
    };
    vec![
        name(binding),
        text(str_at(binding, &["spec", "policyName"])),
        owned(param),
        age(binding, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::testing::{ago, now, row};
    use serde_json::json;

    #[test]
    fn webhook_configuration_row() {
        let c = json!({"metadata": {"name": "hooks", "creationTimestamp": ago(60)},
                       "webhooks": [{"name": "a.example.com"}, {"name": "b.example.com"}]});
        assert_eq!(row(webhook_cells(&c, now())), json!(["hooks", 2, "60s"]));
        assert_eq!(
            row(webhook_cells(&json!({}), now())),
            json!(["", 0, "<unknown>"])
        );
    }

    #[test]
    fn validating_admission_policy_row() {
        let p = json!({"metadata": {"name": "replicas", "creationTimestamp": ago(60)},
                       "spec": {"paramKind": {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"},
                                "validations": [{"expression": "object.spec.replicas <= 5"}]}});
        assert_eq!(
            row(policy_cells(&p, now())),
            json!(["replicas", 1, "rules.example.com/v1/ReplicaLimit", "60s"])
        );
        assert_eq!(policy_cells(&json!({}), now())[2], json!("<unset>"));
    }

    #[test]
    fn validating_admission_policy_binding_rows() {
        let with = |param_ref: Value| {
            let b = json!({"metadata": {"name": "b"}, "spec": {"policyName": "replicas", "paramRef": param_ref}});
            binding_cells(&b, now())[2].clone()
        };
        assert_eq!(
            with(json!({"name": "limit", "namespace": "prod"})),
            json!("prod/limit")
        );
        assert_eq!(with(json!({"name": "limit"})), json!("*/limit"));
        assert_eq!(
            with(json!({"selector": {"matchLabels": {"env": "test"}}})),
            json!(
                "&LabelSelector{MatchLabels:map[string]string{env: test,},MatchExpressions:[]LabelSelectorRequirement{},}"
            )
        );
        assert_eq!(
            with(json!({"parameterNotFoundAction": "Deny"})),
            json!("<unset>")
        );
        assert_eq!(with(json!(null)), json!("<unset>"));
        let b = json!({"metadata": {"name": "b", "creationTimestamp": ago(5)}, "spec": {"policyName": "p"}});
        assert_eq!(
            row(binding_cells(&b, now())),
            json!(["b", "p", "<unset>", "5s"])
        );
    }
}
