//! Events as users read them: `kubectl describe` and `kubectl get events` (and `kubectl
//! events --for`) show what each workload controller did, and a controller acting on many
//! pods writes a bounded number of Events (similar ones combined, spam-filtered per object
//! as client-go does).

use crate::cluster::Cluster;
use crate::kubelet::{FakeKubelet, admin_client};
use crate::poll::blocking_wait_for as wait;
use serde_json::{Value, json};

async fn cluster() -> (Cluster, FakeKubelet) {
    let cluster = Cluster::start();
    let client = admin_client(&cluster).await;
    let kubelet = FakeKubelet::start(client, &["node-a", "node-b"]).await;
    cluster.wait_for_default_account("default");
    (cluster, kubelet)
}

fn template(app: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    })
}

/// The Events about `kind/name`, as `kubectl get events` lists them.
fn events_about(cluster: &Cluster, kind: &str, name: &str) -> Vec<Value> {
    let selector = format!("involvedObject.kind={kind},involvedObject.name={name}");
    let out = cluster.kubectl_ok(&["get", "events", "--field-selector", &selector, "-o", "json"]);
    let list: Value = serde_json::from_str(&out).unwrap();
    list["items"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_and_get_events_show_what_each_controller_did() {
    let (cluster, _kubelet) = cluster().await;
    let objects = [
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template("web")}}),
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}}, "template": template("db")}}),
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": template("agent")}}),
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
            "spec": {"template": {"metadata": {"annotations": {"kyb.test/exit": "0"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
    ];
    for object in &objects {
        cluster.kubectl_stdin(&["apply", "-f", "-"], &object.to_string());
    }
    // (kind for describe, kind in events, name, reason, message prefix)
    let expected = [
        (
            "deployment",
            "Deployment",
            "web",
            "ScalingReplicaSet",
            "Scaled up replica set web-",
        ),
        (
            "statefulset",
            "StatefulSet",
            "db",
            "SuccessfulCreate",
            "create Pod db-0 in StatefulSet db successful",
        ),
        (
            "daemonset",
            "DaemonSet",
            "agent",
            "SuccessfulCreate",
            "Created pod: agent-",
        ),
        (
            "job",
            "Job",
            "once",
            "SuccessfulCreate",
            "Created pod: once-",
        ),
        ("job", "Job", "once", "Completed", "Job completed"),
    ];
    for (resource, kind, name, reason, message) in expected {
        let event = wait(&format!("{reason} about {kind}/{name}"), || {
            events_about(&cluster, kind, name).into_iter().find(|e| {
                e["reason"] == reason
                    && e["message"]
                        .as_str()
                        .is_some_and(|m| m.starts_with(message))
            })
        });
        assert_eq!(event["type"], "Normal");
        assert!(event["count"].as_i64().unwrap() >= 1);
        assert!(
            event["source"]["component"]
                .as_str()
                .unwrap()
                .ends_with("-controller"),
            "{event}"
        );
        let described = cluster.kubectl_ok(&["describe", resource, name]);
        let events = described.split("Events:").nth(1).unwrap_or_default();
        assert!(
            events
                .lines()
                .any(|l| l.contains(reason) && l.contains(message)),
            "describe {resource} {name}:\n{described}"
        );
        let listed = cluster.kubectl_ok(&["events", "--for", &format!("{resource}/{name}")]);
        assert!(
            listed.contains(reason) && listed.contains(message),
            "kubectl events:\n{listed}"
        );
    }
    // The ReplicaSet the Deployment made reports its pods.
    let rs = cluster.kubectl_ok(&[
        "get",
        "rs",
        "-l",
        "app=web",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    let described = cluster.kubectl_ok(&["describe", "rs", &rs]);
    assert!(
        described.contains(&format!("Created pod: {rs}-")),
        "{described}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_set_of_many_pods_writes_few_events() {
    let (cluster, _kubelet) = cluster().await;
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "big"},
        "spec": {"replicas": 40, "selector": {"matchLabels": {"app": "big"}}, "template": template("big")}});
    cluster.kubectl_stdin(&["apply", "-f", "-"], &rs.to_string());
    wait("40 pods", || {
        let out = cluster.kubectl_ok(&["get", "pods", "-l", "app=big", "-o", "name"]);
        (out.lines().count() == 40).then_some(())
    });
    // 25 events are allowed at once per object: 9 on their own, then one combined Event
    // counting the rest; the other 15 creations are not reported.
    let events = wait("25 SuccessfulCreate events counted", || {
        let events: Vec<Value> = events_about(&cluster, "ReplicaSet", "big")
            .into_iter()
            .filter(|e| e["reason"] == "SuccessfulCreate")
            .collect();
        let counted: i64 = events.iter().map(|e| e["count"].as_i64().unwrap()).sum();
        (counted == 25).then_some(events)
    });
    assert_eq!(events.len(), 10, "{events:#?}");
    let combined: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e["message"]
                .as_str()
                .unwrap()
                .starts_with("(combined from similar events): Created pod: big-")
        })
        .collect();
    assert_eq!(combined.len(), 1, "{events:#?}");
    assert_eq!(combined[0]["count"], 16);
    let described = cluster.kubectl_ok(&["describe", "rs", "big"]);
    assert!(
        described.contains("(combined from similar events)"),
        "{described}"
    );
}
