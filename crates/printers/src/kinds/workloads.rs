//! Workload controllers and their helpers: PodTemplate, ReplicationController, ReplicaSet,
//! Deployment, StatefulSet, DaemonSet, ControllerRevision and PodDisruptionBudget.

use super::{
    AGE, CONTAINERS, IMAGES, NAME, Printer, SELECTOR, container_cells, int, integer, name, owned,
    ratio, string,
};
use crate::fields::text;
use crate::selectors::{format_label_selector, format_labels, selector_string};
use crate::timestamp::age;
use jiff::Timestamp;
use kyb_apimachinery::json::{as_int, at, int_at, items, map_at, str_at};
use serde_json::Value;

pub(crate) static POD_TEMPLATE: Printer = Printer {
    columns: &[
        NAME,
        string("Containers", "Names of the containers in the template."),
        string("Images", "Images of the containers in the template."),
        string("Pod Labels", "Labels given to pods made from the template."),
    ],
    cells: pod_template_cells,
};

fn pod_template_cells(object: &Value, _now: Timestamp) -> Vec<Value> {
    let (names, images) = container_cells(at(object, &["template", "spec"]));
    vec![
        name(object),
        names,
        images,
        owned(format_labels(map_at(
            object,
            &["template", "metadata", "labels"],
        ))),
    ]
}

const DESIRED: super::Column = integer("Desired", "Replicas asked for.");
const CURRENT: super::Column = integer("Current", "Replicas that exist now.");
const READY_COUNT: super::Column = integer("Ready", "Replicas that are ready.");

pub(crate) static REPLICATION_CONTROLLER: Printer = Printer {
    columns: &[
        NAME,
        DESIRED,
        CURRENT,
        READY_COUNT,
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: replication_controller_cells,
};

fn replication_controller_cells(object: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = container_cells(at(object, &["spec", "template", "spec"]));
    vec![
        name(object),
        int(int_at(object, &["spec", "replicas"])),
        int(int_at(object, &["status", "replicas"])),
        int(int_at(object, &["status", "readyReplicas"])),
        age(object, now),
        names,
        images,
        owned(format_labels(map_at(object, &["spec", "selector"]))),
    ]
}

pub(crate) static REPLICA_SET: Printer = Printer {
    columns: &[
        NAME,
        DESIRED,
        CURRENT,
        READY_COUNT,
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: replica_set_cells,
};

fn replica_set_cells(object: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = container_cells(at(object, &["spec", "template", "spec"]));
    vec![
        name(object),
        int(int_at(object, &["spec", "replicas"])),
        int(int_at(object, &["status", "replicas"])),
        int(int_at(object, &["status", "readyReplicas"])),
        age(object, now),
        names,
        images,
        owned(format_label_selector(at(object, &["spec", "selector"]))),
    ]
}

pub(crate) static DEPLOYMENT: Printer = Printer {
    columns: &[
        NAME,
        string("Ready", "Ready replicas out of those asked for."),
        string("Up-to-date", "Replicas running the latest pod template."),
        string("Available", "Replicas available to serve."),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: deployment_cells,
};

fn deployment_cells(object: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = container_cells(at(object, &["spec", "template", "spec"]));
    // Deployments print the bare selector: empty when it selects everything or nothing.
    let selector = selector_string(at(object, &["spec", "selector"]))
        .unwrap_or_else(|_| "<invalid>".to_owned());
    vec![
        name(object),
        ratio(
            int_at(object, &["status", "readyReplicas"]),
            int_at(object, &["spec", "replicas"]),
        ),
        int(int_at(object, &["status", "updatedReplicas"])),
        int(int_at(object, &["status", "availableReplicas"])),
        age(object, now),
        names,
        images,
        owned(selector),
    ]
}

pub(crate) static STATEFUL_SET: Printer = Printer {
    columns: &[
        NAME,
        string("Ready", "Ready replicas out of those asked for."),
        AGE,
        CONTAINERS,
        IMAGES,
    ],
    cells: stateful_set_cells,
};

fn stateful_set_cells(object: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = container_cells(at(object, &["spec", "template", "spec"]));
    vec![
        name(object),
        ratio(
            int_at(object, &["status", "readyReplicas"]),
            int_at(object, &["spec", "replicas"]),
        ),
        age(object, now),
        names,
        images,
    ]
}

pub(crate) static DAEMON_SET: Printer = Printer {
    columns: &[
        NAME,
        integer("Desired", "Nodes that should run the daemon pod."),
        integer("Current", "Nodes running at least one daemon pod."),
        integer("Ready", "Nodes whose daemon pod is ready."),
        integer(
            "Up-to-date",
            "Nodes running the latest daemon pod template.",
        ),
        integer("Available", "Nodes whose daemon pod is available."),
        string(
            "Node Selector",
            "The node labels a node needs to run the daemon pod.",
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: daemon_set_cells,
};

fn daemon_set_cells(object: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = container_cells(at(object, &["spec", "template", "spec"]));
    vec![
        name(object),
        int(int_at(object, &["status", "desiredNumberScheduled"])),
        int(int_at(object, &["status", "currentNumberScheduled"])),
        int(int_at(object, &["status", "numberReady"])),
        int(int_at(object, &["status", "updatedNumberScheduled"])),
        int(int_at(object, &["status", "numberAvailable"])),
        owned(format_labels(map_at(
            object,
            &["spec", "template", "spec", "nodeSelector"],
        ))),
        age(object, now),
        names,
        images,
        owned(format_label_selector(at(object, &["spec", "selector"]))),
    ]
}

pub(crate) static CONTROLLER_REVISION: Printer = Printer {
    columns: &[
        NAME,
        string("Controller", "The object owning this revision."),
        string("Revision", "The revision number."),
        AGE,
    ],
    cells: controller_revision_cells,
};

/// The controlling owner as `kind.group/name` in lower case (`statefulset.apps/web`).
fn controller_name(object: &Value) -> String {
    let Some(owner) = items(object, &["metadata", "ownerReferences"])
        .iter()
        .find(|r| at(r, &["controller"]).and_then(Value::as_bool) == Some(true))
    else {
        return "<none>".to_owned();
    };
    let api_version = str_at(owner, &["apiVersion"]);
    let group = match api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    };
    let kind = str_at(owner, &["kind"]);
    let owner_name = str_at(owner, &["name"]);
    if kind.is_empty() && group.is_empty() {
        return owner_name.to_owned();
    }
    let qualified = if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    };
    format!("{}/{owner_name}", qualified.to_lowercase())
}

fn controller_revision_cells(object: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(object),
        owned(controller_name(object)),
        int(int_at(object, &["revision"])),
        age(object, now),
    ]
}

pub(crate) static POD_DISRUPTION_BUDGET: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Min Available",
            "Pods that must stay available, as a number or percentage.",
        ),
        string(
            "Max Unavailable",
            "Pods that may be unavailable, as a number or percentage.",
        ),
        integer(
            "Allowed Disruptions",
            "Pods that may be disrupted right now.",
        ),
        AGE,
    ],
    cells: pod_disruption_budget_cells,
};

/// An int-or-string field as text, `N/A` when unset.
fn int_or_string(value: Option<&Value>) -> Value {
    match value {
        Some(Value::String(s)) => text(s),
        Some(other) => match as_int(other) {
            Some(n) => owned(n.to_string()),
            None => text("N/A"),
        },
        None => text("N/A"),
    }
}

fn pod_disruption_budget_cells(object: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(object),
        int_or_string(at(object, &["spec", "minAvailable"])),
        int_or_string(at(object, &["spec", "maxUnavailable"])),
        int(int_at(object, &["status", "disruptionsAllowed"])),
        age(object, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::testing::{ago, now, row};
    use serde_json::json;

    fn template() -> Value {
        json!({"metadata": {"labels": {"app": "web", "tier": "front"}},
               "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"},
                                       {"name": "log", "image": "busybox"}]}})
    }

    #[test]
    fn deployment_row() {
        let d = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "creationTimestamp": ago(3 * 86400 + 7200)},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template()},
            "status": {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
        });
        assert_eq!(
            row(deployment_cells(&d, now())),
            json!([
                "web",
                "2/3",
                3,
                2,
                "3d2h",
                "nginx,log",
                "nginx:1.27,busybox",
                "app=web"
            ])
        );
        assert_eq!(DEPLOYMENT.columns.len(), deployment_cells(&d, now()).len());
    }

    #[test]
    fn deployment_selector_edge_cases() {
        let with = |selector: Value| {
            let d = json!({"spec": {"selector": selector}});
            deployment_cells(&d, now())[7].clone()
        };
        assert_eq!(with(json!({})), json!(""));
        assert_eq!(with(json!(null)), json!(""));
        assert_eq!(
            with(json!({"matchExpressions": [{"key": "a", "operator": "Nope"}]})),
            json!("<invalid>")
        );
    }

    #[test]
    fn replica_set_and_replication_controller_rows() {
        let rs = json!({
            "metadata": {"name": "web-5d4f", "creationTimestamp": ago(600)},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d4f"}},
                     "template": template()},
            "status": {"replicas": 2, "readyReplicas": 1}
        });
        assert_eq!(
            row(replica_set_cells(&rs, now())),
            json!([
                "web-5d4f",
                2,
                2,
                1,
                "10m",
                "nginx,log",
                "nginx:1.27,busybox",
                "app=web,pod-template-hash=5d4f"
            ])
        );
        let rc = json!({
            "metadata": {"name": "old", "creationTimestamp": ago(30)},
            "spec": {"replicas": 1, "selector": {"app": "old"}},
            "status": {"replicas": 1}
        });
        assert_eq!(
            row(replication_controller_cells(&rc, now())),
            json!(["old", 1, 1, 0, "30s", "", "", "app=old"])
        );
    }

    #[test]
    fn stateful_set_row() {
        let s = json!({
            "metadata": {"name": "db", "creationTimestamp": ago(4000)},
            "spec": {"replicas": 3, "template": template()},
            "status": {"readyReplicas": 3}
        });
        assert_eq!(
            row(stateful_set_cells(&s, now())),
            json!(["db", "3/3", "66m", "nginx,log", "nginx:1.27,busybox"])
        );
    }

    #[test]
    fn daemon_set_row() {
        let d = json!({
            "metadata": {"name": "agent", "creationTimestamp": ago(86400)},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                                           "containers": [{"name": "agent", "image": "agent:2"}]}}},
            "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                       "updatedNumberScheduled": 3, "numberAvailable": 2}
        });
        assert_eq!(
            row(daemon_set_cells(&d, now())),
            json!([
                "agent",
                3,
                3,
                2,
                3,
                2,
                "kubernetes.io/os=linux",
                "24h",
                "agent",
                "agent:2",
                "app=agent"
            ])
        );
        let bare = daemon_set_cells(&json!({}), now());
        assert_eq!(bare[6], json!("<none>"));
        assert_eq!(bare[10], json!("<none>"));
    }

    #[test]
    fn pod_template_row() {
        let t = json!({"metadata": {"name": "tpl"}, "template": template()});
        assert_eq!(
            row(pod_template_cells(&t, now())),
            json!([
                "tpl",
                "nginx,log",
                "nginx:1.27,busybox",
                "app=web,tier=front"
            ])
        );
        assert_eq!(
            row(pod_template_cells(&json!({}), now())),
            json!(["", "", "", "<none>"])
        );
    }

    #[test]
    fn controller_revision_row() {
        let r = json!({
            "metadata": {"name": "web-7c9", "creationTimestamp": ago(100),
                         "ownerReferences": [
                             {"apiVersion": "v1", "kind": "Pod", "name": "other"},
                             {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": true}]},
            "revision": 4
        });
        assert_eq!(
            row(controller_revision_cells(&r, now())),
            json!(["web-7c9", "statefulset.apps/web", 4, "100s"])
        );
        let core = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "controller": true}]}});
        assert_eq!(controller_name(&core), "replicationcontroller/rc");
        assert_eq!(controller_name(&json!({})), "<none>");
    }

    #[test]
    fn pod_disruption_budget_row() {
        let p = json!({
            "metadata": {"name": "web-pdb", "creationTimestamp": ago(60)},
            "spec": {"minAvailable": "50%"},
            "status": {"disruptionsAllowed": 1}
        });
        assert_eq!(
            row(pod_disruption_budget_cells(&p, now())),
            json!(["web-pdb", "50%", "N/A", 1, "60s"])
        );
        let p = json!({"metadata": {"name": "x"}, "spec": {"maxUnavailable": 1}});
        assert_eq!(
            row(pod_disruption_budget_cells(&p, now())),
            json!(["x", "N/A", "1", 0, "<unknown>"])
        );
    }
}
