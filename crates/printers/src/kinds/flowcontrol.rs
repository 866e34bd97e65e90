//! API Priority and Fairness (`flowcontrol.apiserver.k8s.io`): FlowSchema and
//! PriorityLevelConfiguration, as `kubectl get flowschemas` and `kubectl get
//! prioritylevelconfigurations` show them.

use super::{AGE, NAME, Printer, int, name, string};
use crate::fields::text;
use crate::timestamp::age;
use jiff::Timestamp;
use kyb_apimachinery::json::{at, items, str_at};
use serde_json::Value;

pub(crate) static FLOW_SCHEMA: Printer = Printer {
    columns: &[
        NAME,
        string(
            "PriorityLevel",
            "The priority level requests matching this schema are assigned to.",
        ),
        string(
            "MatchingPrecedence",
            "Lower values are matched first; 1 to 10000.",
        ),
        string(
            "DistinguisherMethod",
            "How matching requests are split into flows: ByUser, ByNamespace, or none.",
        ),
        AGE,
        string(
            "MissingPL",
            "references a broken or non-existent PriorityLevelConfiguration",
        ),
    ],
    cells: flow_schema_cells,
};

fn flow_schema_cells(schema: &Value, now: Timestamp) -> Vec<Value> {
    let distinguisher = match str_at(schema, &["spec", "distinguisherMethod", "type"]) {
        "" if at(schema, &["spec", "distinguisherMethod"]).is_none() => "<none>",
        method => method,
    };
    let dangling = items(schema, &["status", "conditions"])
        .iter()
        .find(|c| str_at(c, &["type"]) == "Dangling")
        .map_or("?", |c| str_at(c, &["status"]));
    vec![
        name(schema),
        text(str_at(
            schema,
            &["spec", "priorityLevelConfiguration", "name"],
        )),
        int(at(schema, &["spec", "matchingPrecedence"])
            .and_then(Value::as_i64)
            .unwrap_or(0)),
        text(distinguisher),
        age(schema, now),
        text(dangling),
    ]
}

pub(crate) static PRIORITY_LEVEL_CONFIGURATION: Printer = Printer {
    columns: &[
        NAME,
        string("Type", "Exempt (never limited) or Limited."),
        string(
            "NominalConcurrencyShares",
            "The level's share of the server's concurrency limit.",
        ),
        string("Queues", "The number of queues of this level."),
        string(
            "HandSize",
            "The number of queues a flow is shuffle-sharded over.",
        ),
        string(
            "QueueLengthLimit",
            "The most requests a queue of this level holds.",
        ),
        AGE,
    ],
    cells: priority_level_cells,
};

fn priority_level_cells(level: &Value, now: Timestamp) -> Vec<Value> {
    let none = || text("<none>");
    let number = |path: &[&str]| {
        at(level, path)
            .and_then(Value::as_i64)
            .map_or_else(none, int)
    };
    let (mut shares, mut queues, mut hand, mut length) = (none(), none(), none(), none());
    if at(level, &["spec", "limited"]).is_some() {
        shares = int(at(level, &["spec", "limited", "nominalConcurrencyShares"])
            .and_then(Value::as_i64)
            .unwrap_or(0));
        let queuing = ["spec", "limited", "limitResponse", "queuing"];
        if at(level, &queuing).is_some() {
            queues = number(&["spec", "limited", "limitResponse", "queuing", "queues"]);
            hand = number(&["spec", "limited", "limitResponse", "queuing", "handSize"]);
            length = number(&[
                "spec",
                "limited",
                "limitResponse",
                "queuing",
                "queueLengthLimit",
            ]);
        }
    }
    vec![
        name(level),
        text(str_at(level, &["spec", "type"])),
        shares,
        queues,
        hand,
        length,
        age(level, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flow_schema_row() {
        let schema = json!({
            "metadata": {"name": "probes"},
            "spec": {"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 2},
            "status": {"conditions": [{"type": "Dangling", "status": "False"}]},
        });
        let cells = flow_schema_cells(&schema, Timestamp::now());
        assert_eq!(cells[1], json!("exempt"));
        assert_eq!(cells[2], json!(2));
        assert_eq!(cells[3], json!("<none>"));
        assert_eq!(cells[5], json!("False"));
        let fresh =
            json!({"metadata": {"name": "x"}, "spec": {"distinguisherMethod": {"type": "ByUser"}}});
        let cells = flow_schema_cells(&fresh, Timestamp::now());
        assert_eq!((&cells[3], &cells[5]), (&json!("ByUser"), &json!("?")));
    }

    #[test]
    fn priority_level_rows() {
        let exempt = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt"}});
        let cells = priority_level_cells(&exempt, Timestamp::now());
        assert_eq!(
            cells[1..6],
            [
                json!("Exempt"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
        let limited = json!({"metadata": {"name": "x"}, "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 30,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 6, "queueLengthLimit": 50}}}}});
        let cells = priority_level_cells(&limited, Timestamp::now());
        assert_eq!(cells[2..6], [json!(30), json!(64), json!(6), json!(50)]);
    }
}
