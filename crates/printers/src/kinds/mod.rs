//! The printers for each built-in kind, grouped by API area, plus the column constructors
//! and cell helpers they share.
//!
//! A [`Printer`] pairs a kind's column definitions with the function computing one row's
//! cells. Cells always cover every column, wide ones included: like Kubernetes' API server,
//! we produce the full row and let the client hide columns of priority 1.

pub(crate) mod admission;
pub(crate) mod autoscaling;
pub(crate) mod batch;
pub(crate) mod certificates;
pub(crate) mod cluster;
pub(crate) mod config;
pub(crate) mod events;
pub(crate) mod flowcontrol;
pub(crate) mod generic;
pub(crate) mod metrics;
pub(crate) mod networking;
pub(crate) mod pod;
pub(crate) mod rbac;
pub(crate) mod storage;
pub(crate) mod workloads;

use crate::Column;
use crate::fields;
use jiff::Timestamp;
use serde_json::Value;

/// Computes the cells of one row.
pub(crate) type CellsFn = fn(&Value, Timestamp) -> Vec<Value>;

/// The table layout of one kind.
pub struct Printer {
    pub(crate) columns: &'static [Column],
    pub(crate) cells: CellsFn,
}

/// The object's name; the first column of almost every table.
pub(crate) const NAME: Column = Column {
    name: "Name",
    type_: "string",
    format: "name",
    description: "The object's name, unique within its namespace (or the cluster).",
    priority: 0,
};

/// How long ago the object was created.
pub(crate) const AGE: Column = string("Age", "Time elapsed since the object was created.");

pub(crate) const fn string(name: &'static str, description: &'static str) -> Column {
    Column {
        name,
        type_: "string",
        format: "",
        description,
        priority: 0,
    }
}

pub(crate) const fn integer(name: &'static str, description: &'static str) -> Column {
    Column {
        name,
        type_: "integer",
        format: "",
        description,
        priority: 0,
    }
}

pub(crate) const fn boolean(name: &'static str, description: &'static str) -> Column {
    Column {
        name,
        type_: "boolean",
        format: "",
        description,
        priority: 0,
    }
}

/// The column, shown only with `-o wide`.
pub(crate) const fn wide(column: Column) -> Column {
    Column {
        priority: 1,
        ..column
    }
}

pub(crate) const CONTAINERS: Column = wide(string(
    "Containers",
    "Names of the containers in the pod template.",
));
pub(crate) const IMAGES: Column = wide(string(
    "Images",
    "Images of the containers in the pod template.",
));
pub(crate) const SELECTOR: Column = wide(string(
    "Selector",
    "The label selector choosing the pods this object manages.",
));

/// The Name cell.
pub(crate) fn name(object: &Value) -> Value {
    fields::text(kyb_apimachinery::meta::name(object).unwrap_or_default())
}

/// An integer cell.
pub(crate) fn int(n: i64) -> Value {
    Value::from(n)
}

/// The length of the list or map at `path`, as an integer cell.
pub(crate) fn count_cell(object: &Value, path: &[&str]) -> Value {
    int(kyb_apimachinery::json::count(object, path))
}

/// A string cell.
pub(crate) fn owned(s: String) -> Value {
    Value::String(s)
}

/// The container names and images of a pod spec, each joined by commas.
pub(crate) fn container_cells(pod_spec: Option<&Value>) -> (Value, Value) {
    let containers = pod_spec
        .map(|spec| kyb_apimachinery::json::items(spec, &["containers"]))
        .unwrap_or_default();
    let mut names = String::new();
    let mut images = String::new();
    for (i, container) in containers.iter().enumerate() {
        if i > 0 {
            names.push(',');
            images.push(',');
        }
        names.push_str(kyb_apimachinery::json::str_at(container, &["name"]));
        images.push_str(kyb_apimachinery::json::str_at(container, &["image"]));
    }
    (Value::String(names), Value::String(images))
}

/// `"{a}/{b}"` as a cell.
pub(crate) fn ratio(a: i64, b: i64) -> Value {
    Value::String(format!("{a}/{b}"))
}

/// Shared fixtures for the printers' tests.
#[cfg(test)]
pub(crate) mod testing {
    #![allow(clippy::unwrap_used)]
    use jiff::Timestamp;
    use serde_json::Value;

    /// The moment tests print at.
    pub(crate) fn now() -> Timestamp {
        "2024-05-01T12:00:00Z".parse().unwrap()
    }

    /// A timestamp `seconds` before [`now`], as objects carry it.
    pub(crate) fn ago(seconds: i64) -> String {
        let t = now()
            .checked_sub(jiff::SignedDuration::from_secs(seconds))
            .unwrap();
        crate::timestamp::rfc3339(t)
    }

    /// Cells as plain JSON for comparisons.
    pub(crate) fn row(cells: Vec<Value>) -> Value {
        Value::Array(cells)
    }
}
