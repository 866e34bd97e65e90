//! `PodTopologySpreadArgs`: the cluster-level default constraints, for pods without
//! constraints of their own, validated as Kubernetes validates them.
//!
//! - `defaultingType: System` (the default): Kubernetes' built-in defaults, hostname with
//!   maxSkew 3 and zone with maxSkew 5, both `ScheduleAnyway`; `defaultConstraints` must
//!   then be empty.
//! - `defaultingType: List`: the `defaultConstraints` given (possibly none, which turns
//!   default spreading off). They must not have a `labelSelector`: the selector is deduced
//!   for each pod from its Services and controller.

use super::constraints::Action;
use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use serde_json::Value;

/// `defaultingType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultingType {
    System,
    List,
}

/// The plugin's arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Args {
    pub default_constraints: Vec<TopologySpreadConstraint>,
    pub defaulting_type: DefaultingType,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            default_constraints: Vec::new(),
            defaulting_type: DefaultingType::System,
        }
    }
}

/// A field error, worded as Kubernetes' `field.Error`.
fn invalid(path: &str, value: impl std::fmt::Display, detail: &str) -> String {
    format!("{path}: Invalid value: {value}: {detail}")
}

impl Args {
    /// Parses and validates `args` (`Value::Null`: the defaults).
    pub fn parse(args: &Value) -> Result<Args, String> {
        if args.is_null() {
            return Ok(Args::default());
        }
        if !args.is_object() {
            return Err("PodTopologySpreadArgs: expected an object".to_string());
        }
        let mut errors = Vec::new();
        let defaulting_type = match args.get("defaultingType") {
            None | Some(Value::Null) => DefaultingType::System,
            Some(Value::String(s)) if s.is_empty() || s == "System" => DefaultingType::System,
            Some(Value::String(s)) if s == "List" => DefaultingType::List,
            Some(other) => {
                errors.push(format!(
                    "defaultingType: Unsupported value: {other}: supported values: \"List\", \"System\""
                ));
                DefaultingType::System
            }
        };
        let mut default_constraints = Vec::new();
        match args.get("defaultConstraints") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let constraint: TopologySpreadConstraint = serde_json::from_value(item.clone())
                        .map_err(|e| format!("defaultConstraints[{i}]: {e}"))?;
                    default_constraints.push(constraint);
                }
            }
            Some(_) => return Err("defaultConstraints: expected a list".to_string()),
        }
        if defaulting_type == DefaultingType::System && !default_constraints.is_empty() {
            errors.push(invalid(
                "defaultingType",
                "\"System\"",
                "when .defaultConstraints are not empty",
            ));
        }
        for (i, c) in default_constraints.iter().enumerate() {
            let path = format!("defaultConstraints[{i}]");
            if c.max_skew <= 0 {
                errors.push(invalid(
                    &format!("{path}.maxSkew"),
                    c.max_skew,
                    "not in valid range (0, inf)",
                ));
            }
            if c.topology_key.is_empty() {
                errors.push(format!(
                    "{path}.topologyKey: Required value: can not be empty"
                ));
            } else {
                for message in kyb_apimachinery::names::qualified_name_errors(&c.topology_key) {
                    errors.push(invalid(
                        &format!("{path}.topologyKey"),
                        format!("{:?}", c.topology_key),
                        &message,
                    ));
                }
            }
            let action = c.when_unsatisfiable.as_str();
            if action.is_empty() {
                errors.push(format!(
                    "{path}.whenUnsatisfiable: Required value: can not be empty"
                ));
            } else if action != Action::DoNotSchedule.as_str()
                && action != Action::ScheduleAnyway.as_str()
            {
                errors.push(format!(
                    "{path}.whenUnsatisfiable: Unsupported value: {action:?}: supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
                ));
            }
            if c.label_selector.is_some() {
                errors.push(format!(
                    "{path}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
                ));
            }
            if default_constraints[..i].iter().any(|other| {
                other.topology_key == c.topology_key
                    && other.when_unsatisfiable == c.when_unsatisfiable
            }) {
                errors.push(format!(
                    "defaultConstraints[{i}]: Duplicate value: \"{{{}, {}}}\"",
                    c.topology_key, c.when_unsatisfiable
                ));
            }
        }
        match errors.len() {
            0 => Ok(Args {
                default_constraints,
                defaulting_type,
            }),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }
}
