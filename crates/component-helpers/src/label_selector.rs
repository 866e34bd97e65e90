//! Typed `metav1.LabelSelector`s as `kyb_apimachinery::labels` selectors
//! (`LabelSelectorAsSelector`): an empty one selects everything; a malformed one (bad key
//! or value, unknown operator, values where none are allowed or none where some are
//! needed) is an error.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kyb_apimachinery::labels::Selector;

/// The selector a `LabelSelector` stands for, or the reason it is malformed.
pub fn as_selector(selector: &LabelSelector) -> Result<Selector, String> {
    Selector::from_parts(
        selector
            .match_labels
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str())),
        selector.match_expressions.iter().flatten().map(|e| {
            (
                e.key.as_str(),
                Some(e.operator.as_str()),
                e.values.iter().flatten().map(String::as_str),
            )
        }),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_selectors_read_as_their_json_form() {
        let value = json!({"matchLabels": {"app": "web"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]}]});
        let typed: LabelSelector = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(as_selector(&typed), Selector::from_label_selector(&value));
        let bad: LabelSelector =
            serde_json::from_value(json!({"matchExpressions": [{"key": "k", "operator": "Near"}]}))
                .unwrap();
        assert_eq!(
            as_selector(&bad).err().as_deref(),
            Some("\"Near\" is not a valid label selector operator")
        );
    }
}
