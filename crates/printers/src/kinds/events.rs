//! Events, in both their core (`v1`) and `events.k8s.io/v1` shapes, which print alike.
//!
//! LAST SEEN is the last occurrence (the series' last observation, else `lastTimestamp`,
//! else the first occurrence); FIRST SEEN is `firstTimestamp`, else `eventTime`. COUNT is
//! the series count, else the recorded count, and 1 for a singleton event.

use super::{Column, NAME, Printer, int, owned, string, wide};
use crate::fields::text;
use crate::timestamp::{self, ZERO};
use jiff::Timestamp;
use kyb_apimachinery::json::{at, int_at, str_at};
use serde_json::Value;

/// Where each piece of an event lives in one API version.
struct Shape {
    first_timestamp: &'static str,
    last_timestamp: &'static str,
    count: &'static str,
    regarding: &'static str,
    message: &'static str,
    source: &'static str,
    reporting_controller: &'static str,
}

const CORE_SHAPE: Shape = Shape {
    first_timestamp: "firstTimestamp",
    last_timestamp: "lastTimestamp",
    count: "count",
    regarding: "involvedObject",
    message: "message",
    source: "source",
    reporting_controller: "reportingComponent",
};

const EVENTS_V1_SHAPE: Shape = Shape {
    first_timestamp: "deprecatedFirstTimestamp",
    last_timestamp: "deprecatedLastTimestamp",
    count: "deprecatedCount",
    regarding: "regarding",
    message: "note",
    source: "deprecatedSource",
    reporting_controller: "reportingController",
};

const COLUMNS: &[Column] = &[
    string("Last Seen", "How long ago the event last happened."),
    string("Type", "Normal or Warning."),
    string("Reason", "A short machine-readable reason for the event."),
    string("Object", "The object the event is about, as kind/name."),
    wide(string(
        "Subobject",
        "The part of the object concerned, such as a container.",
    )),
    wide(string(
        "Source",
        "The component that reported the event, and where.",
    )),
    string("Message", "What happened, in words."),
    wide(string(
        "First Seen",
        "How long ago the event first happened.",
    )),
    wide(string("Count", "How many times the event happened.")),
    wide(NAME),
];

pub(crate) static CORE_EVENT: Printer = Printer {
    columns: COLUMNS,
    cells: core_event_cells,
};

pub(crate) static EVENTS_V1_EVENT: Printer = Printer {
    columns: COLUMNS,
    cells: events_v1_cells,
};

fn core_event_cells(event: &Value, now: Timestamp) -> Vec<Value> {
    event_cells(event, &CORE_SHAPE, now)
}

fn events_v1_cells(event: &Value, now: Timestamp) -> Vec<Value> {
    event_cells(event, &EVENTS_V1_SHAPE, now)
}

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() { b } else { a }
}

fn event_cells(event: &Value, shape: &Shape, now: Timestamp) -> Vec<Value> {
    let first_time = timestamp::or_zero(at(event, &[shape.first_timestamp]));
    let first_seen = if first_time == ZERO {
        timestamp::since_value(at(event, &["eventTime"]), now)
    } else {
        timestamp::since(first_time, now)
    };
    let last_time = timestamp::or_zero(at(event, &[shape.last_timestamp]));
    let mut last_seen = if last_time == ZERO {
        first_seen.clone()
    } else {
        timestamp::since(last_time, now)
    };
    let mut count = int_at(event, &[shape.count]);
    if let Some(series) = at(event, &["series"]).filter(|s| s.is_object()) {
        last_seen = timestamp::since_value(at(series, &["lastObservedTime"]), now);
        count = int_at(series, &["count"]);
    } else if count == 0 {
        count = 1;
    }

    let kind = str_at(event, &[shape.regarding, "kind"]).to_lowercase();
    let regarding_name = str_at(event, &[shape.regarding, "name"]);
    let target = if regarding_name.is_empty() {
        kind
    } else {
        format!("{kind}/{regarding_name}")
    };

    let component = first_non_empty(
        str_at(event, &[shape.source, "component"]),
        str_at(event, &[shape.reporting_controller]),
    );
    let instance = first_non_empty(
        str_at(event, &[shape.source, "host"]),
        str_at(event, &["reportingInstance"]),
    );
    let source = if instance.is_empty() {
        component.to_owned()
    } else {
        format!("{component}, {instance}")
    };

    vec![
        owned(last_seen),
        text(str_at(event, &["type"])),
        text(str_at(event, &["reason"])),
        owned(target),
        text(str_at(event, &[shape.regarding, "fieldPath"])),
        owned(source),
        text(str_at(event, &[shape.message]).trim()),
        owned(first_seen),
        int(count),
        text(kyb_apimachinery::meta::name(event).unwrap_or_default()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::testing::{ago, now, row};
    use serde_json::json;

    #[test]
    fn core_event_row() {
        let e = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web-0.17c2", "namespace": "default", "creationTimestamp": ago(300)},
            "involvedObject": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{nginx}"},
            "reason": "Pulled", "type": "Normal", "message": "  Container image \"nginx\" already present\n",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": ago(300), "lastTimestamp": ago(60), "count": 3
        });
        assert_eq!(
            row(core_event_cells(&e, now())),
            json!([
                "60s",
                "Normal",
                "Pulled",
                "pod/web-0",
                "spec.containers{nginx}",
                "kubelet, node-1",
                "Container image \"nginx\" already present",
                "5m",
                3,
                "web-0.17c2"
            ])
        );
    }

    #[test]
    fn event_with_only_event_time_and_reporting_fields() {
        let e = json!({
            "metadata": {"name": "n"},
            "involvedObject": {"kind": "Node"},
            "eventTime": "2024-05-01T11:59:50.000000Z",
            "reportingComponent": "scheduler", "reportingInstance": "",
            "type": "Warning", "reason": "FailedScheduling", "message": "0/3 nodes are available"
        });
        assert_eq!(
            row(core_event_cells(&e, now())),
            json!([
                "10s",
                "Warning",
                "FailedScheduling",
                "node",
                "",
                "scheduler",
                "0/3 nodes are available",
                "10s",
                1,
                "n"
            ])
        );
    }

    #[test]
    fn series_overrides_last_seen_and_count() {
        let e = json!({
            "eventTime": "2024-05-01T11:00:00.000000Z",
            "series": {"count": 12, "lastObservedTime": "2024-05-01T11:59:00.000000Z"},
            "involvedObject": {"kind": "Pod", "name": "p"}
        });
        let cells = core_event_cells(&e, now());
        assert_eq!(cells[0], json!("60s"));
        assert_eq!(cells[7], json!("60m"));
        assert_eq!(cells[8], json!(12));
    }

    #[test]
    fn events_v1_row() {
        let e = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "web.1"},
            "eventTime": "2024-05-01T11:58:00.000000Z",
            "reportingController": "deployment-controller", "reportingInstance": "cp-1",
            "action": "Scaling", "reason": "ScalingReplicaSet", "type": "Normal",
            "regarding": {"kind": "Deployment", "name": "web"},
            "note": "Scaled up replica set web-5d4f to 3"
        });
        assert_eq!(
            row(events_v1_cells(&e, now())),
            json!([
                "2m",
                "Normal",
                "ScalingReplicaSet",
                "deployment/web",
                "",
                "deployment-controller, cp-1",
                "Scaled up replica set web-5d4f to 3",
                "2m",
                1,
                "web.1"
            ])
        );
        let legacy = json!({"deprecatedFirstTimestamp": ago(100), "deprecatedLastTimestamp": ago(20),
                            "deprecatedCount": 4, "deprecatedSource": {"component": "kubelet"}});
        let cells = events_v1_cells(&legacy, now());
        assert_eq!(
            (
                cells[0].clone(),
                cells[5].clone(),
                cells[7].clone(),
                cells[8].clone()
            ),
            (json!("20s"), json!("kubelet"), json!("100s"), json!(4))
        );
    }

    #[test]
    fn empty_event_does_not_panic() {
        assert_eq!(
            row(core_event_cells(&json!({}), now())),
            json!(["<unknown>", "", "", "", "", "", "", "<unknown>", 1, ""])
        );
    }
}
