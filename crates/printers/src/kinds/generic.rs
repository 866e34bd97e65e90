//! The table for kinds without a printer of their own (Role, ClusterRole, LimitRange,
//! CustomResourceDefinition, …): the name and the creation time as an RFC 3339 date.

use super::{Column, NAME, Printer, name, owned};
use crate::timestamp;
use jiff::Timestamp;
use kyb_apimachinery::json::at;
use serde_json::Value;

pub(crate) static DEFAULT: Printer = Printer {
    columns: &[
        NAME,
        Column {
            name: "Created At",
            type_: "date",
            format: "",
            description: "When the object was created (RFC 3339, UTC).",
            priority: 0,
        },
    ],
    cells: default_cells,
};

fn default_cells(object: &Value, _now: Timestamp) -> Vec<Value> {
    let created = timestamp::or_zero(at(object, &["metadata", "creationTimestamp"]));
    vec![name(object), owned(timestamp::rfc3339(created))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::testing::{now, row};
    use serde_json::json;

    #[test]
    fn name_and_creation_date() {
        let role = json!({"metadata": {"name": "pod-reader", "creationTimestamp": "2024-04-30T08:15:00Z"}});
        assert_eq!(
            row(default_cells(&role, now())),
            json!(["pod-reader", "2024-04-30T08:15:00Z"])
        );
        assert_eq!(
            row(default_cells(&json!({}), now())),
            json!(["", "0001-01-01T00:00:00Z"])
        );
    }
}
