//! `DefaultPreemptionArgs`: how many nodes preemption's dry run must find candidates on
//! before it stops looking, with Kubernetes' defaults and validation.

use serde_json::Value;

/// The `kind` of the plugin's `pluginConfig` args.
pub const KIND: &str = "DefaultPreemptionArgs";

/// The plugin's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefaultPreemptionArgs {
    /// The share of the nodes (where preemption may help) to find candidates on, 0–100.
    pub min_candidate_nodes_percentage: i32,
    /// The least number of candidates to find, whatever the share says.
    pub min_candidate_nodes_absolute: i32,
}

impl Default for DefaultPreemptionArgs {
    fn default() -> Self {
        DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 100,
        }
    }
}

/// Why the args were refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    #[error("{KIND} must be an object, not {0}")]
    NotAnObject(Value),
    #[error("got args of kind {0:?}, want {KIND}")]
    WrongKind(String),
    #[error("strict decoding error: unknown field \"{0}\"")]
    UnknownField(String),
    #[error("{field}: {value} is not a 32-bit integer")]
    NotAnInteger { field: &'static str, value: Value },
    /// The validation errors, worded and joined as Kubernetes does.
    #[error("{0}")]
    Invalid(String),
}

impl DefaultPreemptionArgs {
    /// Parses `pluginConfig` args (`Value::Null`: none), defaulting what is missing, and
    /// validates them.
    pub fn from_value(value: &Value) -> Result<DefaultPreemptionArgs, ArgsError> {
        let mut args = DefaultPreemptionArgs::default();
        let map = match value {
            Value::Null => return Ok(args),
            Value::Object(map) => map,
            other => return Err(ArgsError::NotAnObject(other.clone())),
        };
        for (key, value) in map {
            match key.as_str() {
                "apiVersion" => {}
                "kind" => {
                    let kind = value.as_str().unwrap_or_default();
                    if kind != KIND {
                        return Err(ArgsError::WrongKind(kind.to_string()));
                    }
                }
                "minCandidateNodesPercentage" => {
                    if let Some(n) = int32("minCandidateNodesPercentage", value)? {
                        args.min_candidate_nodes_percentage = n;
                    }
                }
                "minCandidateNodesAbsolute" => {
                    if let Some(n) = int32("minCandidateNodesAbsolute", value)? {
                        args.min_candidate_nodes_absolute = n;
                    }
                }
                other => return Err(ArgsError::UnknownField(other.to_string())),
            }
        }
        args.validate()?;
        Ok(args)
    }

    /// Kubernetes' validation: the percentage in [0, 100], the absolute number not
    /// negative, and not both zero.
    pub fn validate(&self) -> Result<(), ArgsError> {
        let percentage = self.min_candidate_nodes_percentage;
        let absolute = self.min_candidate_nodes_absolute;
        let mut errors = Vec::new();
        if !(0..=100).contains(&percentage) {
            errors.push(format!(
                "minCandidateNodesPercentage: Invalid value: {percentage}: not in valid range [0, 100]"
            ));
        }
        if absolute < 0 {
            errors.push(format!(
                "minCandidateNodesAbsolute: Invalid value: {absolute}: not in valid range [0, inf)"
            ));
        }
        if percentage == 0 && absolute == 0 {
            errors.push(
                "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"
                    .to_string(),
            );
            errors.push(
                "minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage"
                    .to_string(),
            );
        }
        match errors.len() {
            0 => Ok(()),
            1 => Err(ArgsError::Invalid(errors.remove(0))),
            _ => Err(ArgsError::Invalid(format!("[{}]", errors.join(", ")))),
        }
    }

    /// How many candidates the dry run looks for among `potential_nodes` nodes: the
    /// percentage of them, at least the absolute number, at most all of them.
    pub fn num_candidates(&self, potential_nodes: usize) -> usize {
        let nodes = i64::try_from(potential_nodes).unwrap_or(i64::MAX);
        let share = nodes.saturating_mul(i64::from(self.min_candidate_nodes_percentage)) / 100;
        let wanted = share
            .max(i64::from(self.min_candidate_nodes_absolute))
            .min(nodes);
        usize::try_from(wanted).unwrap_or(0)
    }
}

/// A 32-bit integer field (`null`: unset).
fn int32(field: &'static str, value: &Value) -> Result<Option<i32>, ArgsError> {
    if value.is_null() {
        return Ok(None);
    }
    value
        .as_i64()
        .and_then(|n| i32::try_from(n).ok())
        .map(Some)
        .ok_or_else(|| ArgsError::NotAnInteger {
            field,
            value: value.clone(),
        })
}
