//! Pods: READY, STATUS and RESTARTS the way `kubectl get pods` shows them.
//!
//! STATUS starts from `status.phase` (or `status.reason`, or `SchedulingGated` while a
//! scheduling gate holds the pod), then:
//! - init containers are walked in order: a failed one gives `Init:<reason>`,
//!   `Init:Signal:<n>` or `Init:ExitCode:<n>`, a waiting one `Init:<reason>`, one not done
//!   yet `Init:<index>/<count>`; finished ones and started sidecars (init containers with
//!   `restartPolicy: Always`) are skipped;
//! - once initialization is over, app containers are walked last to first: a waiting or
//!   terminated container's reason (or `Signal:<n>` / `ExitCode:<n>`) wins; a `Completed`
//!   pod with a container still running shows `Running` (or `NotReady` without the Ready
//!   condition);
//! - a pod being deleted shows `Terminating`, or `Unknown` when its node was lost.
//!
//! READY counts ready app containers (running ones only) and started, ready sidecars over
//! all app containers plus sidecars. RESTARTS sums restart counts (only sidecar and app
//! containers once initialized) and adds how long ago the last restart was.

use super::{AGE, NAME, Printer, name, owned, string, wide};
use crate::fields;
use crate::timestamp::{self, ZERO};
use jiff::Timestamp;
use kyb_apimachinery::json::{at, int_at, items, opt_bool, str_at};
use serde_json::Value;

pub(crate) static POD: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Ready",
            "Ready containers out of all containers that count toward readiness.",
        ),
        string(
            "Status",
            "A one-word summary of the pod's state and its containers' states.",
        ),
        string(
            "Restarts",
            "Container restarts, and how long ago the latest one happened.",
        ),
        AGE,
        wide(string("IP", "The pod's primary IP address.")),
        wide(string("Node", "The node the pod is bound to.")),
        wide(string(
            "Nominated Node",
            "The node preemption made room on for this pod.",
        )),
        wide(string(
            "Readiness Gates",
            "Readiness gates whose condition is true, out of all.",
        )),
    ],
    cells: pod_cells,
};

/// An init container that keeps running beside the app containers (a sidecar).
fn is_sidecar(init_specs: &[Value], container_name: &str) -> bool {
    init_specs
        .iter()
        .rev()
        .find(|spec| str_at(spec, &["name"]) == container_name)
        .is_some_and(|spec| str_at(spec, &["restartPolicy"]) == "Always")
}

/// The `finishedAt` of a container's previous termination, or the zero time.
fn last_termination(status: &Value) -> Option<Timestamp> {
    at(status, &["lastState", "terminated"])
        .filter(|t| t.is_object())
        .map(|t| timestamp::or_zero(at(t, &["finishedAt"])))
}

fn later(current: Timestamp, candidate: Option<Timestamp>) -> Timestamp {
    match candidate {
        Some(t) if current < t => t,
        _ => current,
    }
}

fn state<'a>(status: &'a Value, which: &str) -> Option<&'a Value> {
    at(status, &["state", which]).filter(|s| s.is_object())
}

fn condition_status<'a>(pod: &'a Value, condition_type: &str) -> Option<&'a str> {
    items(pod, &["status", "conditions"])
        .iter()
        .find(|c| str_at(c, &["type"]) == condition_type)
        .map(|c| str_at(c, &["status"]))
}

fn has_true_condition(pod: &Value, condition_type: &str) -> bool {
    items(pod, &["status", "conditions"])
        .iter()
        .any(|c| str_at(c, &["type"]) == condition_type && str_at(c, &["status"]) == "True")
}

/// How a terminated container without a reason is described: by signal, else exit code.
fn termination_code(terminated: &Value, prefix: &str) -> String {
    let signal = int_at(terminated, &["signal"]);
    if signal != 0 {
        format!("{prefix}Signal:{signal}")
    } else {
        format!("{prefix}ExitCode:{}", int_at(terminated, &["exitCode"]))
    }
}

/// READY, STATUS and RESTARTS of a pod.
pub(crate) struct Summary {
    pub(crate) ready: i64,
    pub(crate) total: i64,
    pub(crate) status: String,
    pub(crate) restarts: i64,
    pub(crate) last_restart: Timestamp,
}

pub(crate) fn summarize(pod: &Value) -> Summary {
    let phase = str_at(pod, &["status", "phase"]);
    let pod_reason = str_at(pod, &["status", "reason"]);
    let mut reason = if pod_reason.is_empty() {
        phase.to_owned()
    } else {
        pod_reason.to_owned()
    };
    if items(pod, &["status", "conditions"]).iter().any(|c| {
        str_at(c, &["type"]) == "PodScheduled" && str_at(c, &["reason"]) == "SchedulingGated"
    }) {
        reason = "SchedulingGated".to_owned();
    }

    let init_specs = items(pod, &["spec", "initContainers"]);
    let sidecars = init_specs
        .iter()
        .filter(|c| str_at(c, &["restartPolicy"]) == "Always")
        .count();
    let total = items(pod, &["spec", "containers"]).len() + sidecars;

    let mut ready = 0i64;
    let mut restarts = 0i64;
    let mut sidecar_restarts = 0i64;
    let mut last_restart = ZERO;
    let mut last_sidecar_restart = ZERO;
    let mut initializing = false;

    for (index, container) in items(pod, &["status", "initContainerStatuses"])
        .iter()
        .enumerate()
    {
        let restart_count = int_at(container, &["restartCount"]);
        restarts = restarts.saturating_add(restart_count);
        let terminated_at = last_termination(container);
        last_restart = later(last_restart, terminated_at);
        let sidecar = is_sidecar(init_specs, str_at(container, &["name"]));
        if sidecar {
            sidecar_restarts = sidecar_restarts.saturating_add(restart_count);
            last_sidecar_restart = later(last_sidecar_restart, terminated_at);
        }
        let terminated = state(container, "terminated");
        let waiting = state(container, "waiting");
        if terminated.is_some_and(|t| int_at(t, &["exitCode"]) == 0) {
            continue;
        }
        if sidecar && opt_bool(container, &["started"]) == Some(true) {
            if kyb_apimachinery::json::bool_at(container, &["ready"]) {
                ready += 1;
            }
            continue;
        }
        if let Some(terminated) = terminated {
            let why = str_at(terminated, &["reason"]);
            reason = if why.is_empty() {
                termination_code(terminated, "Init:")
            } else {
                format!("Init:{why}")
            };
        } else if let Some(why) = waiting
            .map(|w| str_at(w, &["reason"]))
            .filter(|why| !why.is_empty() && *why != "PodInitializing")
        {
            reason = format!("Init:{why}");
        } else {
            reason = format!("Init:{index}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }

    if !initializing || condition_status(pod, "Initialized") == Some("True") {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        for container in items(pod, &["status", "containerStatuses"]).iter().rev() {
            restarts = restarts.saturating_add(int_at(container, &["restartCount"]));
            last_restart = later(last_restart, last_termination(container));
            let waiting_reason = state(container, "waiting").map(|w| str_at(w, &["reason"]));
            let terminated = state(container, "terminated");
            if let Some(why) = waiting_reason.filter(|why| !why.is_empty()) {
                reason = why.to_owned();
            } else if let Some(terminated) = terminated {
                let why = str_at(terminated, &["reason"]);
                reason = if why.is_empty() {
                    termination_code(terminated, "")
                } else {
                    why.to_owned()
                };
            } else if kyb_apimachinery::json::bool_at(container, &["ready"])
                && state(container, "running").is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if has_true_condition(pod, "Ready") {
                "Running"
            } else {
                "NotReady"
            }
            .to_owned();
        }
    }

    if kyb_apimachinery::meta::is_deleting(pod) {
        if pod_reason == "NodeLost" {
            reason = "Unknown".to_owned();
        } else if phase != "Succeeded" && phase != "Failed" {
            reason = "Terminating".to_owned();
        }
    }

    Summary {
        ready,
        total: i64::try_from(total).unwrap_or(i64::MAX),
        status: reason,
        restarts,
        last_restart,
    }
}

/// The RESTARTS cell: the count, with the age of the last restart when there is one.
pub(crate) fn restarts_text(summary: &Summary, now: Timestamp) -> String {
    if summary.restarts != 0 && summary.last_restart != ZERO {
        format!(
            "{} ({} ago)",
            summary.restarts,
            timestamp::since(summary.last_restart, now)
        )
    } else {
        summary.restarts.to_string()
    }
}

fn pod_ip(pod: &Value) -> &str {
    // The singular field wins when both are set (as the v1 conversion does).
    let ip = str_at(pod, &["status", "podIP"]);
    if !ip.is_empty() {
        return ip;
    }
    items(pod, &["status", "podIPs"])
        .first()
        .map(|p| str_at(p, &["ip"]))
        .unwrap_or("")
}

fn readiness_gates(pod: &Value) -> String {
    let gates = items(pod, &["spec", "readinessGates"]);
    if gates.is_empty() {
        return "<none>".to_owned();
    }
    let passing = gates
        .iter()
        .filter(|gate| condition_status(pod, str_at(gate, &["conditionType"])) == Some("True"))
        .count();
    format!("{passing}/{}", gates.len())
}

fn pod_cells(pod: &Value, now: Timestamp) -> Vec<Value> {
    let summary = summarize(pod);
    let restarts = restarts_text(&summary, now);
    vec![
        name(pod),
        owned(format!("{}/{}", summary.ready, summary.total)),
        owned(summary.status),
        owned(restarts),
        timestamp::age(pod, now),
        fields::text_or(pod_ip(pod), "<none>"),
        fields::text_or(str_at(pod, &["spec", "nodeName"]), "<none>"),
        fields::text_or(str_at(pod, &["status", "nominatedNodeName"]), "<none>"),
        owned(readiness_gates(pod)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::testing::{ago, now, row};
    use serde_json::json;

    fn pod(spec: Value, status: Value) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "default", "creationTimestamp": ago(300)},
            "spec": spec,
            "status": status,
        })
    }

    fn two_containers() -> Value {
        json!({"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "busybox"}]})
    }

    fn running(name: &str, ready: bool, restarts: i64) -> Value {
        json!({"name": name, "ready": ready, "restartCount": restarts,
               "state": {"running": {"startedAt": ago(200)}}})
    }

    fn status_of(pod: &Value) -> (String, String, String) {
        let s = summarize(pod);
        (
            format!("{}/{}", s.ready, s.total),
            s.status.clone(),
            restarts_text(&s, now()),
        )
    }

    #[test]
    fn running_pod_full_row() {
        let p = pod(
            json!({"containers": [{"name": "a"}], "nodeName": "node-1",
                   "readinessGates": [{"conditionType": "example.com/lb"}]}),
            json!({"phase": "Running", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}],
                   "conditions": [{"type": "Ready", "status": "True"},
                                  {"type": "example.com/lb", "status": "True"}],
                   "containerStatuses": [running("a", true, 0)]}),
        );
        assert_eq!(
            row(pod_cells(&p, now())),
            json!([
                "web-0", "1/1", "Running", "0", "5m", "10.0.0.5", "node-1", "<none>", "1/1"
            ])
        );
    }

    #[test]
    fn pending_pod_with_nothing_reported() {
        let p = pod(two_containers(), json!({"phase": "Pending"}));
        assert_eq!(
            row(pod_cells(&p, now())),
            json!([
                "web-0", "0/2", "Pending", "0", "5m", "<none>", "<none>", "<none>", "<none>"
            ])
        );
    }

    #[test]
    fn missing_everything_does_not_panic() {
        assert_eq!(
            row(pod_cells(&json!({}), now())),
            json!([
                "",
                "0/0",
                "",
                "0",
                "<unknown>",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ])
        );
        assert_eq!(pod_cells(&json!(null), now()).len(), 9);
        let odd = json!({"spec": {"containers": "x", "initContainers": [1, null]},
                         "status": {"initContainerStatuses": [7, {"state": 3}], "containerStatuses": {}}});
        assert_eq!(pod_cells(&odd, now()).len(), 9);
    }

    #[test]
    fn waiting_container_reason_wins() {
        let p = pod(
            two_containers(),
            json!({"phase": "Running", "containerStatuses": [
                running("a", true, 0),
                {"name": "b", "ready": false, "restartCount": 4,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(90)}}}
            ]}),
        );
        assert_eq!(
            status_of(&p),
            (
                "1/2".into(),
                "CrashLoopBackOff".into(),
                "4 (90s ago)".into()
            )
        );
    }

    #[test]
    fn terminated_without_reason_shows_signal_or_exit_code() {
        let with = |terminated: Value| {
            pod(
                json!({"containers": [{"name": "a"}]}),
                json!({"phase": "Running", "containerStatuses": [
                    {"name": "a", "state": {"terminated": terminated}}]}),
            )
        };
        assert_eq!(
            status_of(&with(json!({"exitCode": 137, "signal": 9}))).1,
            "Signal:9"
        );
        assert_eq!(status_of(&with(json!({"exitCode": 2}))).1, "ExitCode:2");
        assert_eq!(
            status_of(&with(json!({"exitCode": 1, "reason": "Error"}))).1,
            "Error"
        );
        assert_eq!(
            status_of(&with(json!({"exitCode": 0, "reason": "Completed"}))).1,
            "Completed"
        );
    }

    #[test]
    fn completed_pod_with_a_running_container_is_running_or_not_ready() {
        let status = |ready_condition: &str| {
            json!({"phase": "Running",
                   "conditions": [{"type": "Ready", "status": ready_condition}],
                   "containerStatuses": [
                       running("a", true, 0),
                       {"name": "b", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]})
        };
        assert_eq!(
            status_of(&pod(two_containers(), status("True"))).1,
            "Running"
        );
        assert_eq!(
            status_of(&pod(two_containers(), status("False"))).1,
            "NotReady"
        );
    }

    #[test]
    fn succeeded_pod_shows_completed() {
        let p = pod(
            json!({"containers": [{"name": "a"}]}),
            json!({"phase": "Succeeded", "containerStatuses": [
                {"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}),
        );
        assert_eq!(
            status_of(&p),
            ("0/1".into(), "Completed".into(), "0".into())
        );
    }

    #[test]
    fn pod_reason_replaces_phase() {
        let p = pod(
            json!({"containers": [{"name": "a"}]}),
            json!({"phase": "Failed", "reason": "Evicted"}),
        );
        assert_eq!(status_of(&p).1, "Evicted");
    }

    #[test]
    fn scheduling_gated() {
        let p = pod(
            json!({"containers": [{"name": "a"}]}),
            json!({"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
        );
        assert_eq!(status_of(&p).1, "SchedulingGated");
    }

    fn init_pod(init_statuses: Value, extra_status: Value) -> Value {
        let mut status = json!({"phase": "Pending", "initContainerStatuses": init_statuses,
                                "containerStatuses": [{"name": "app", "ready": false,
                                    "state": {"waiting": {"reason": "PodInitializing"}}}]});
        if let (Some(s), Some(extra)) = (status.as_object_mut(), extra_status.as_object()) {
            s.extend(extra.clone());
        }
        pod(
            json!({"initContainers": [{"name": "init-1"}, {"name": "init-2"}],
                   "containers": [{"name": "app"}]}),
            status,
        )
    }

    #[test]
    fn init_container_progress() {
        let p = init_pod(
            json!([
                {"name": "init-1", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                {"name": "init-2", "state": {"running": {}}}
            ]),
            json!({}),
        );
        assert_eq!(status_of(&p), ("0/1".into(), "Init:1/2".into(), "0".into()));
        let p = init_pod(
            json!([{"name": "init-1", "state": {"waiting": {"reason": "PodInitializing"}}}]),
            json!({}),
        );
        assert_eq!(status_of(&p).1, "Init:0/2");
    }

    #[test]
    fn init_container_failures() {
        let failing = |state: Value| {
            init_pod(
                json!([{"name": "init-1", "restartCount": 3, "state": state,
                             "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(30)}}}]),
                json!({}),
            )
        };
        assert_eq!(
            status_of(&failing(json!({"waiting": {"reason": "CrashLoopBackOff"}}))),
            (
                "0/1".into(),
                "Init:CrashLoopBackOff".into(),
                "3 (30s ago)".into()
            )
        );
        assert_eq!(
            status_of(&failing(
                json!({"terminated": {"exitCode": 1, "reason": "Error"}})
            ))
            .1,
            "Init:Error"
        );
        assert_eq!(
            status_of(&failing(json!({"terminated": {"exitCode": 3}}))).1,
            "Init:ExitCode:3"
        );
        assert_eq!(
            status_of(&failing(
                json!({"terminated": {"exitCode": 143, "signal": 15}})
            ))
            .1,
            "Init:Signal:15"
        );
    }

    #[test]
    fn all_init_done_shows_pod_initializing() {
        let p = init_pod(
            json!([
                {"name": "init-1", "restartCount": 2,
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(60)}}},
                {"name": "init-2", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
            ]),
            json!({"conditions": [{"type": "Initialized", "status": "True"}]}),
        );
        // Init containers' restarts no longer count once the pod is initialized.
        assert_eq!(
            status_of(&p),
            ("0/1".into(), "PodInitializing".into(), "0".into())
        );
    }

    #[test]
    fn sidecars_count_in_ready_and_restarts() {
        let p = pod(
            json!({"initContainers": [{"name": "setup"}, {"name": "proxy", "restartPolicy": "Always"}],
                   "containers": [{"name": "app"}]}),
            json!({"phase": "Running",
                   "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}],
                   "initContainerStatuses": [
                       {"name": "setup", "restartCount": 5,
                        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
                        "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(10)}}},
                       {"name": "proxy", "ready": true, "started": true, "restartCount": 1,
                        "state": {"running": {}},
                        "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(600)}}}],
                   "containerStatuses": [running("app", true, 2)]}),
        );
        // READY counts the sidecar; RESTARTS counts sidecar + app only, last restart is the sidecar's.
        assert_eq!(
            status_of(&p),
            ("2/2".into(), "Running".into(), "3 (10m ago)".into())
        );
    }

    #[test]
    fn sidecar_not_started_blocks_initialization() {
        let p = pod(
            json!({"initContainers": [{"name": "proxy", "restartPolicy": "Always"}],
                   "containers": [{"name": "app"}]}),
            json!({"phase": "Pending", "initContainerStatuses": [
                {"name": "proxy", "ready": false, "started": false, "state": {"running": {}}}]}),
        );
        assert_eq!(status_of(&p), ("0/2".into(), "Init:0/1".into(), "0".into()));
    }

    #[test]
    fn deleting_pods() {
        let deleting = |phase: &str, reason: Option<&str>| {
            let mut p = pod(
                json!({"containers": [{"name": "a"}]}),
                json!({"phase": phase, "containerStatuses": [running("a", true, 0)]}),
            );
            p["metadata"]["deletionTimestamp"] = json!(ago(5));
            if let Some(reason) = reason {
                p["status"]["reason"] = json!(reason);
            }
            p
        };
        assert_eq!(status_of(&deleting("Running", None)).1, "Terminating");
        assert_eq!(
            status_of(&deleting("Running", Some("NodeLost"))).1,
            "Unknown"
        );
        // A finished pod keeps its final status while being deleted.
        let mut done = deleting("Succeeded", None);
        done["status"]["containerStatuses"] =
            json!([{"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]);
        assert_eq!(status_of(&done).1, "Completed");
    }

    #[test]
    fn restarts_without_a_termination_time_show_only_the_count() {
        let p = pod(
            json!({"containers": [{"name": "a"}]}),
            json!({"phase": "Running", "containerStatuses": [running("a", true, 7)]}),
        );
        assert_eq!(status_of(&p).2, "7");
    }

    #[test]
    fn latest_termination_across_containers_is_used() {
        let p = pod(
            two_containers(),
            json!({"phase": "Running", "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 1, "state": {"running": {}},
                 "lastState": {"terminated": {"finishedAt": ago(7200)}}},
                {"name": "b", "ready": true, "restartCount": 2, "state": {"running": {}},
                 "lastState": {"terminated": {"finishedAt": ago(45)}}}]}),
        );
        assert_eq!(
            status_of(&p),
            ("2/2".into(), "Running".into(), "3 (45s ago)".into())
        );
    }

    #[test]
    fn pod_ips_and_readiness_gates() {
        let p = pod(
            json!({"containers": [], "readinessGates": [
                {"conditionType": "a"}, {"conditionType": "b"}, {"conditionType": "c"}]}),
            json!({"podIPs": [{"ip": "fd00::1"}, {"ip": "10.0.0.1"}], "nominatedNodeName": "n2",
                   "conditions": [{"type": "a", "status": "True"}, {"type": "b", "status": "False"}]}),
        );
        let cells = pod_cells(&p, now());
        assert_eq!(cells[5], json!("fd00::1"));
        assert_eq!(cells[7], json!("n2"));
        assert_eq!(cells[8], json!("1/3"));
    }
}
