//! The garbage collector and the namespace controller, through kubectl: cascading
//! deletion in the background, foreground and orphan modes, owners deleted while the
//! collector was off, invalid cross-namespace owner references, and namespaces emptied
//! and finalized (waiting on graceful pods and on finalizers).

use crate::cluster::Cluster;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);

/// Polls `check` until it holds, failing with `what` after [`WAIT`].
fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn exists(cluster: &Cluster, kind: &str, name: &str, namespace: &str) -> bool {
    !cluster
        .kubectl_ok(&[
            "get",
            kind,
            name,
            "-n",
            namespace,
            "--ignore-not-found",
            "-o",
            "name",
        ])
        .trim()
        .is_empty()
}

fn field(cluster: &Cluster, kind: &str, name: &str, namespace: &str, path: &str) -> String {
    cluster.kubectl_ok(&[
        "get",
        kind,
        name,
        "-n",
        namespace,
        "-o",
        &format!("jsonpath={path}"),
    ])
}

fn uid(cluster: &Cluster, kind: &str, name: &str, namespace: &str) -> String {
    field(cluster, kind, name, namespace, "{.metadata.uid}")
}

/// Pods are refused until their namespace's `default` ServiceAccount exists. The API
/// server's keeper sometimes misses the bootstrap namespaces (it reads its cache before
/// the cache has caught up), so the test creates the account if it is still missing.
fn wait_for_service_account(cluster: &Cluster, namespace: &str) {
    let start = Instant::now();
    wait_for("the default service account", || {
        if start.elapsed() > Duration::from_secs(3) {
            let _ = cluster.kubectl(&["create", "serviceaccount", "default", "-n", namespace]);
        }
        exists(cluster, "serviceaccount", "default", namespace)
    });
}

fn apply(cluster: &Cluster, yaml: &str) {
    cluster.kubectl_stdin(&["apply", "-f", "-"], yaml);
}

/// A ConfigMap in `namespace` owned by `owners` (apiVersion, kind, name, uid, block).
fn owned_configmap(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    owners: &[(&str, &str, &str, &str, bool)],
    finalizers: &[&str],
) {
    let owners: Vec<serde_json::Value> = owners
        .iter()
        .map(|(api_version, kind, owner, uid, block)| {
            serde_json::json!({
                "apiVersion": api_version, "kind": kind, "name": owner, "uid": uid,
                "blockOwnerDeletion": block,
            })
        })
        .collect();
    let object = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": name, "namespace": namespace,
            "ownerReferences": owners, "finalizers": finalizers,
        },
    });
    apply(cluster, &object.to_string());
}

#[test]
fn background_deletion_removes_dependents_down_the_chain() {
    let cluster = Cluster::start();
    // A ReplicaSet with a pod it owns (built by hand: no ReplicaSet controller needed).
    apply(
        &cluster,
        r#"{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"x","namespace":"default"},
           "spec":{"replicas":0,"selector":{"matchLabels":{"app":"x"}},
                   "template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}"#,
    );
    let rs = uid(&cluster, "rs", "x", "default");
    wait_for_service_account(&cluster, "default");
    let pod = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "x-pod", "namespace": "default", "labels": {"app": "x"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x",
                "uid": rs, "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    });
    apply(&cluster, &pod.to_string());
    // A chain of ConfigMaps: a ← b ← c.
    cluster.kubectl_ok(&["create", "configmap", "a"]);
    let a = uid(&cluster, "configmap", "a", "default");
    owned_configmap(
        &cluster,
        "default",
        "b",
        &[("v1", "ConfigMap", "a", &a, false)],
        &[],
    );
    let b = uid(&cluster, "configmap", "b", "default");
    owned_configmap(
        &cluster,
        "default",
        "c",
        &[("v1", "ConfigMap", "b", &b, false)],
        &[],
    );
    // A dependent with one owner alive keeps living, without the gone owner's reference.
    cluster.kubectl_ok(&["create", "configmap", "keeper"]);
    let keeper = uid(&cluster, "configmap", "keeper", "default");
    owned_configmap(
        &cluster,
        "default",
        "shared",
        &[
            ("v1", "ConfigMap", "a", &a, false),
            ("v1", "ConfigMap", "keeper", &keeper, false),
        ],
        &[],
    );

    cluster.kubectl_ok(&["delete", "rs", "x"]);
    wait_for("the ReplicaSet's pod to go", || {
        !exists(&cluster, "pod", "x-pod", "default")
    });
    cluster.kubectl_ok(&["delete", "configmap", "a"]);
    wait_for("b and c to go", || {
        !exists(&cluster, "configmap", "b", "default")
            && !exists(&cluster, "configmap", "c", "default")
    });
    wait_for("shared to lose its reference to a", || {
        field(
            &cluster,
            "configmap",
            "shared",
            "default",
            "{.metadata.ownerReferences[*].name}",
        ) == "keeper"
    });
    assert!(exists(&cluster, "configmap", "keeper", "default"));
}

#[test]
fn foreground_deletion_waits_for_blocking_dependents() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "configmap", "owner"]);
    let owner = uid(&cluster, "configmap", "owner", "default");
    // The blocking dependent is held by a finalizer, so the owner must wait.
    owned_configmap(
        &cluster,
        "default",
        "blocker",
        &[("v1", "ConfigMap", "owner", &owner, true)],
        &["example.com/hold"],
    );
    owned_configmap(
        &cluster,
        "default",
        "follower",
        &[("v1", "ConfigMap", "owner", &owner, false)],
        &[],
    );
    cluster.kubectl_ok(&[
        "delete",
        "configmap",
        "owner",
        "--cascade=foreground",
        "--wait=false",
    ]);
    wait_for("the dependents to be deleted", || {
        !exists(&cluster, "configmap", "follower", "default")
            && !field(
                &cluster,
                "configmap",
                "blocker",
                "default",
                "{.metadata.deletionTimestamp}",
            )
            .is_empty()
    });
    // The owner stays, with its finalizer, while the blocker is there.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        field(
            &cluster,
            "configmap",
            "owner",
            "default",
            "{.metadata.finalizers}"
        ),
        r#"["foregroundDeletion"]"#
    );
    cluster.kubectl_ok(&[
        "patch",
        "configmap",
        "blocker",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    wait_for("the owner to go", || {
        !exists(&cluster, "configmap", "owner", "default")
    });
    assert!(!exists(&cluster, "configmap", "blocker", "default"));
}

#[test]
fn orphan_deletion_strips_owner_references() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "configmap", "owner"]);
    let owner = uid(&cluster, "configmap", "owner", "default");
    for name in ["one", "two"] {
        owned_configmap(
            &cluster,
            "default",
            name,
            &[("v1", "ConfigMap", "owner", &owner, true)],
            &[],
        );
    }
    cluster.kubectl_ok(&["delete", "configmap", "owner", "--cascade=orphan"]);
    wait_for("the owner to go", || {
        !exists(&cluster, "configmap", "owner", "default")
    });
    for name in ["one", "two"] {
        assert_eq!(
            field(
                &cluster,
                "configmap",
                name,
                "default",
                "{.metadata.ownerReferences}"
            ),
            ""
        );
    }
    // And they stay.
    std::thread::sleep(Duration::from_secs(2));
    assert!(exists(&cluster, "configmap", "one", "default"));
    assert!(exists(&cluster, "configmap", "two", "default"));
}

#[test]
fn dependents_of_owners_deleted_while_the_collector_was_off_are_collected() {
    let dir = kyb_testkit::temp_dir("cluster").unwrap();
    let cluster = Cluster::start_with(dir, &["--controllers=*,-garbage-collector-controller"]);
    cluster.kubectl_ok(&["create", "configmap", "owner"]);
    let owner = uid(&cluster, "configmap", "owner", "default");
    owned_configmap(
        &cluster,
        "default",
        "dependent",
        &[("v1", "ConfigMap", "owner", &owner, false)],
        &[],
    );
    cluster.kubectl_ok(&["delete", "configmap", "owner"]);
    std::thread::sleep(Duration::from_secs(2));
    assert!(exists(&cluster, "configmap", "dependent", "default"));
    let dir = cluster.stop();
    let cluster = Cluster::start_in(dir);
    wait_for("the dependent to go", || {
        !exists(&cluster, "configmap", "dependent", "default")
    });
}

#[test]
fn owners_in_another_namespace_are_invalid_and_cluster_scoped_owners_are_fine() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "namespace", "other"]);
    cluster.kubectl_ok(&["create", "configmap", "owner", "-n", "other"]);
    let owner = uid(&cluster, "configmap", "owner", "other");
    cluster.kubectl_ok(&[
        "create",
        "clusterrole",
        "cluster-owner",
        "--verb=get",
        "--resource=pods",
    ]);
    let role = uid(&cluster, "clusterrole", "cluster-owner", "");
    owned_configmap(
        &cluster,
        "default",
        "misplaced",
        &[("v1", "ConfigMap", "owner", &owner, false)],
        &[],
    );
    owned_configmap(
        &cluster,
        "default",
        "cluster-owned",
        &[(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "cluster-owner",
            &role,
            false,
        )],
        &[],
    );
    // An owner of the right name but another UID counts as gone.
    cluster.kubectl_ok(&["create", "configmap", "namesake"]);
    owned_configmap(
        &cluster,
        "default",
        "fooled",
        &[(
            "v1",
            "ConfigMap",
            "namesake",
            "00000000-0000-0000-0000-000000000001",
            false,
        )],
        &[],
    );
    wait_for("the dependent of a replaced owner to go", || {
        !exists(&cluster, "configmap", "fooled", "default")
    });
    assert!(exists(&cluster, "configmap", "namesake", "default"));
    wait_for("the dependent of an owner elsewhere to go", || {
        !exists(&cluster, "configmap", "misplaced", "default")
    });
    wait_for("an OwnerRefInvalidNamespace event", || {
        cluster
            .kubectl_ok(&[
                "get",
                "events",
                "-n",
                "default",
                "--field-selector",
                "reason=OwnerRefInvalidNamespace",
                "-o",
                "jsonpath={.items[*].message}",
            ])
            .contains("does not exist in namespace \"default\"")
    });
    assert!(exists(&cluster, "configmap", "owner", "other"));
    assert!(exists(&cluster, "configmap", "cluster-owned", "default"));
    cluster.kubectl_ok(&["delete", "clusterrole", "cluster-owner"]);
    wait_for("the dependent of the cluster-scoped owner to go", || {
        !exists(&cluster, "configmap", "cluster-owned", "default")
    });
}

fn condition(cluster: &Cluster, namespace: &str, type_: &str) -> String {
    field(
        cluster,
        "namespace",
        namespace,
        "",
        &format!(
            "{{.status.conditions[?(@.type==\"{type_}\")].status}}: {{.status.conditions[?(@.type==\"{type_}\")].message}}"
        ),
    )
}

#[test]
fn deleting_a_namespace_empties_it_then_finalizes_it() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "namespace", "leaving"]);
    for name in ["one", "two"] {
        cluster.kubectl_ok(&["create", "configmap", name, "-n", "leaving"]);
        cluster.kubectl_ok(&["create", "secret", "generic", name, "-n", "leaving"]);
    }
    owned_configmap(&cluster, "leaving", "held", &[], &["example.com/hold"]);
    cluster.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "-n",
        "leaving",
    ]);
    wait_for_service_account(&cluster, "leaving");
    // A pod bound to a node is deleted gracefully: it stays until its kubelet (here the
    // test) finishes it.
    apply(
        &cluster,
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bound","namespace":"leaving"},
           "spec":{"nodeName":"node-1","containers":[{"name":"c","image":"nginx"}]}}"#,
    );
    apply(
        &cluster,
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pending","namespace":"leaving"},
           "spec":{"containers":[{"name":"c","image":"nginx"}]}}"#,
    );
    cluster.kubectl_ok(&["delete", "namespace", "leaving", "--wait=false"]);
    wait_for("the content to be deleted", || {
        !exists(&cluster, "configmap", "one", "leaving")
            && !exists(&cluster, "secret", "one", "leaving")
            && !exists(&cluster, "deployment", "web", "leaving")
            && !exists(&cluster, "pod", "pending", "leaving")
    });
    wait_for("the bound pod to be terminating", || {
        !field(
            &cluster,
            "pod",
            "bound",
            "leaving",
            "{.metadata.deletionTimestamp}",
        )
        .is_empty()
    });
    wait_for(
        "NamespaceContentRemaining to name the pod and the configmap",
        || {
            let remaining = condition(&cluster, "leaving", "NamespaceContentRemaining");
            remaining.starts_with("True: Some resources are remaining: ")
                && remaining.contains("configmaps. has 1 resource instances")
                && remaining.contains("pods. has 1 resource instances")
        },
    );
    cluster.kubectl_ok(&[
        "delete",
        "pod",
        "bound",
        "-n",
        "leaving",
        "--grace-period=0",
        "--force",
    ]);
    wait_for("only the finalizer to hold the namespace", || {
        condition(&cluster, "leaving", "NamespaceFinalizersRemaining")
            == "True: Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
            && condition(&cluster, "leaving", "NamespaceContentRemaining")
                == "True: Some resources are remaining: configmaps. has 1 resource instances"
    });
    assert_eq!(
        condition(&cluster, "leaving", "NamespaceDeletionDiscoveryFailure"),
        "False: All resources successfully discovered"
    );
    assert_eq!(
        condition(&cluster, "leaving", "NamespaceDeletionContentFailure"),
        "False: All content successfully deleted, may be waiting on finalization"
    );
    assert_eq!(
        field(&cluster, "namespace", "leaving", "", "{.status.phase}"),
        "Terminating"
    );
    cluster.kubectl_ok(&[
        "patch",
        "configmap",
        "held",
        "-n",
        "leaving",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    wait_for("the namespace to go", || {
        cluster
            .kubectl_ok(&[
                "get",
                "namespace",
                "leaving",
                "--ignore-not-found",
                "-o",
                "name",
            ])
            .trim()
            .is_empty()
    });
}

#[test]
fn foreground_deletion_recurses_through_blocking_dependents() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "configmap", "top"]);
    let top = uid(&cluster, "configmap", "top", "default");
    owned_configmap(
        &cluster,
        "default",
        "middle",
        &[("v1", "ConfigMap", "top", &top, true)],
        &[],
    );
    let middle = uid(&cluster, "configmap", "middle", "default");
    owned_configmap(
        &cluster,
        "default",
        "leaf",
        &[("v1", "ConfigMap", "middle", &middle, true)],
        &["example.com/hold"],
    );
    cluster.kubectl_ok(&[
        "delete",
        "configmap",
        "top",
        "--cascade=foreground",
        "--wait=false",
    ]);
    // The middle object is deleted in the foreground too: it waits for the leaf.
    wait_for("the middle to wait for the leaf", || {
        field(
            &cluster,
            "configmap",
            "middle",
            "default",
            "{.metadata.finalizers}",
        ) == r#"["foregroundDeletion"]"#
            && !field(
                &cluster,
                "configmap",
                "leaf",
                "default",
                "{.metadata.deletionTimestamp}",
            )
            .is_empty()
    });
    assert!(exists(&cluster, "configmap", "top", "default"));
    cluster.kubectl_ok(&[
        "patch",
        "configmap",
        "leaf",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    wait_for("the whole chain to go", || {
        !exists(&cluster, "configmap", "top", "default")
            && !exists(&cluster, "configmap", "middle", "default")
            && !exists(&cluster, "configmap", "leaf", "default")
    });
}

#[test]
fn foreground_deletion_through_an_ownership_cycle_completes() {
    // Kubernetes' "should not be blocked by dependency circle", in the foreground: three
    // unscheduled pods owning each other in a ring, all with blockOwnerDeletion.
    let cluster = Cluster::start();
    for name in ["ring-a", "ring-b", "ring-c"] {
        cluster.kubectl_ok(&["run", name, "--image=busybox", "--restart=Never"]);
    }
    let own = |dependent: &str, owner: &str| {
        let owner_uid = uid(&cluster, "pod", owner, "default");
        let patch = serde_json::json!({"metadata": {"ownerReferences": [{
            "apiVersion": "v1", "kind": "Pod", "name": owner, "uid": owner_uid,
            "blockOwnerDeletion": true,
        }]}});
        cluster.kubectl_ok(&[
            "patch",
            "pod",
            dependent,
            "--type=merge",
            "-p",
            &patch.to_string(),
        ]);
    };
    own("ring-b", "ring-a");
    own("ring-c", "ring-b");
    own("ring-a", "ring-c");
    cluster.kubectl_ok(&[
        "delete",
        "pod",
        "ring-a",
        "--cascade=foreground",
        "--wait=false",
    ]);
    wait_for("the whole ring to go", || {
        ["ring-a", "ring-b", "ring-c"]
            .iter()
            .all(|name| !exists(&cluster, "pod", name, "default"))
    });
}
