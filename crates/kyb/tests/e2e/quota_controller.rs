//! The controller manager's `resourcequota-controller`, seen from kubectl: a quota's
//! `status.used` comes down when counted objects are deleted or a pod fails, a new quota
//! over existing objects gets its status at once (also for `count/<resource>.<group>` of
//! kinds the controller lists through the API, brought down by the periodic resync), and
//! `kubectl describe quota` shows it.

use crate::cluster::{Cluster, DEADLINE};
use crate::kubelet::{FakeKubelet, admin_client};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The quota's `status.used` once it satisfies `want` (or a failure after the deadline).
fn wait_used(cluster: &Cluster, namespace: &str, quota: &str, want: &[(&str, &str)]) -> Value {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let out = cluster.kubectl_ok(&["get", "quota", quota, "-n", namespace, "-o", "json"]);
        let object: Value = serde_json::from_str(&out).unwrap();
        let used = object["status"]["used"].clone();
        if want
            .iter()
            .all(|(name, value)| used[*name].as_str() == Some(*value))
        {
            return used;
        }
        assert!(
            Instant::now() < deadline,
            "quota {namespace}/{quota}: want {want:?}, still {}",
            object["status"]
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn pod(name: &str, cpu: &str, exit: Option<&str>) -> String {
    let annotations = match exit {
        Some(code) => json!({"kyb.test/exit": code}),
        None => json!({}),
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox",
                "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}],
        },
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_usage_comes_down_after_deletes_and_failed_pods() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "namespace", "q"]);
    let client = admin_client(&cluster).await;
    let _kubelet = FakeKubelet::start(client, &["node-a"]).await;
    cluster.wait_for_default_account("q");
    cluster.kubectl_ok(&[
        "create",
        "quota",
        "compute",
        "-n",
        "q",
        "--hard=pods=5,requests.cpu=2,limits.cpu=2,configmaps=10,count/pods=5",
    ]);
    // kube-root-ca.crt counts.
    wait_used(
        &cluster,
        "q",
        "compute",
        &[("configmaps", "1"), ("pods", "0")],
    );

    for i in 0..3 {
        cluster.kubectl_ok(&["create", "configmap", &format!("cm-{i}"), "-n", "q"]);
    }
    cluster.kubectl_stdin(
        &["create", "-n", "q", "-f", "-"],
        &pod("runs", "300m", None),
    );
    cluster.kubectl_stdin(
        &["create", "-n", "q", "-f", "-"],
        &pod("fails", "500m", Some("1")),
    );
    // Charged by admission on creation.
    wait_used(
        &cluster,
        "q",
        "compute",
        &[("configmaps", "4"), ("count/pods", "2")],
    );

    // The failed pod no longer uses compute quota, but still exists as an object.
    let used = wait_used(
        &cluster,
        "q",
        "compute",
        &[
            ("pods", "1"),
            ("requests.cpu", "300m"),
            ("limits.cpu", "300m"),
            ("count/pods", "2"),
        ],
    );
    assert_eq!(used["configmaps"], "4", "{used}");

    cluster.kubectl_ok(&["delete", "configmap", "cm-0", "cm-1", "-n", "q"]);
    wait_used(&cluster, "q", "compute", &[("configmaps", "2")]);
    cluster.kubectl_ok(&[
        "delete",
        "pod",
        "runs",
        "fails",
        "-n",
        "q",
        "--grace-period=0",
        "--force",
    ]);
    wait_used(
        &cluster,
        "q",
        "compute",
        &[
            ("pods", "0"),
            ("count/pods", "0"),
            ("requests.cpu", "0"),
            ("limits.cpu", "0"),
        ],
    );
}

#[test]
fn a_new_quota_counts_existing_objects_and_resyncs_what_it_lists() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::start_with(dir, &["--resource-quota-sync-period=2s"]);
    cluster.kubectl_ok(&["create", "namespace", "existing"]);
    for i in 0..2 {
        cluster.kubectl_ok(&["create", "configmap", &format!("cm-{i}"), "-n", "existing"]);
    }
    cluster.kubectl_ok(&[
        "create",
        "service",
        "nodeport",
        "np",
        "--tcp=80:80",
        "-n",
        "existing",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "service",
        "clusterip",
        "plain",
        "--tcp=80:80",
        "-n",
        "existing",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "role",
        "reader",
        "--verb=get",
        "--resource=pods",
        "-n",
        "existing",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "role",
        "lister",
        "--verb=list",
        "--resource=pods",
        "-n",
        "existing",
    ]);
    // Wait for the namespace's kube-root-ca.crt so the count below is stable.
    let deadline = Instant::now() + DEADLINE;
    while cluster
        .kubectl(&["get", "configmap", "kube-root-ca.crt", "-n", "existing"])
        .status
        .code()
        != Some(0)
    {
        assert!(Instant::now() < deadline, "no kube-root-ca.crt");
        std::thread::sleep(Duration::from_millis(100));
    }

    cluster.kubectl_ok(&[
        "create",
        "quota",
        "objects",
        "-n",
        "existing",
        "--hard=configmaps=10,services=5,services.nodeports=1,count/roles.rbac.authorization.k8s.io=4",
    ]);
    let used = wait_used(
        &cluster,
        "existing",
        "objects",
        &[
            ("configmaps", "3"),
            ("services", "2"),
            ("services.nodeports", "1"),
            ("count/roles.rbac.authorization.k8s.io", "2"),
        ],
    );
    assert_eq!(used.as_object().unwrap().len(), 4, "{used}");
    let status = cluster.kubectl_ok(&[
        "get",
        "quota",
        "objects",
        "-n",
        "existing",
        "-o",
        "jsonpath={.status.hard}",
    ]);
    let hard: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(hard["services.nodeports"], "1", "{hard}");

    let describe = cluster.kubectl_ok(&["describe", "quota", "objects", "-n", "existing"]);
    let rows: Vec<Vec<&str>> = describe
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(rows.contains(&vec!["Name:", "objects"]), "{describe}");
    assert!(
        rows.contains(&vec!["Resource", "Used", "Hard"]),
        "{describe}"
    );
    assert!(rows.contains(&vec!["configmaps", "3", "10"]), "{describe}");
    assert!(
        rows.contains(&vec!["services.nodeports", "1", "1"]),
        "{describe}"
    );
    assert!(
        rows.contains(&vec!["count/roles.rbac.authorization.k8s.io", "2", "4"]),
        "{describe}"
    );

    // The NodePort service goes: replenished at once. A role goes: the next resync
    // (every 2 s here) lists the roles again.
    cluster.kubectl_ok(&["delete", "service", "np", "-n", "existing"]);
    wait_used(
        &cluster,
        "existing",
        "objects",
        &[("services", "1"), ("services.nodeports", "0")],
    );
    cluster.kubectl_ok(&["delete", "role", "lister", "-n", "existing"]);
    wait_used(
        &cluster,
        "existing",
        "objects",
        &[("count/roles.rbac.authorization.k8s.io", "1")],
    );
    // Raising a limit shows in status.hard.
    cluster.kubectl_ok(&[
        "patch",
        "quota",
        "objects",
        "-n",
        "existing",
        "--type=merge",
        "-p",
        r#"{"spec":{"hard":{"configmaps":"20"}}}"#,
    ]);
    let deadline = Instant::now() + DEADLINE;
    loop {
        let hard = cluster.kubectl_ok(&[
            "get",
            "quota",
            "objects",
            "-n",
            "existing",
            "-o",
            "jsonpath={.status.hard.configmaps}",
        ]);
        if hard == "20" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "status.hard.configmaps still {hard}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn deleting_a_counted_object_of_any_kind_brings_usage_down_at_once() {
    // The default sync period (5 minutes): only replenishment can bring the count down
    // within the deadline.
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "namespace", "counted"]);
    cluster.kubectl_ok(&[
        "create",
        "quota",
        "sets",
        "-n",
        "counted",
        "--hard=count/replicasets.apps=3",
    ]);
    wait_used(
        &cluster,
        "counted",
        "sets",
        &[("count/replicasets.apps", "0")],
    );
    let replicaset = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "rs", "namespace": "counted"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "rs"}},
            "template": {
                "metadata": {"labels": {"app": "rs"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    });
    cluster.kubectl_stdin(&["create", "-f", "-"], &replicaset.to_string());
    wait_used(
        &cluster,
        "counted",
        "sets",
        &[("count/replicasets.apps", "1")],
    );
    cluster.kubectl_ok(&["delete", "replicaset", "rs", "-n", "counted"]);
    wait_used(
        &cluster,
        "counted",
        "sets",
        &[("count/replicasets.apps", "0")],
    );
}
