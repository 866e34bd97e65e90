//! The patches kubectl v1.32 sends, applied to the live object.
//!
//! `kubectl apply` computes a three-way strategic merge patch from the last applied
//! configuration (the annotation), the new configuration and the live object: deletions
//! from last-applied to new, changes and additions from live to new, and for every list
//! it merges a `$setElementOrder` with the new configuration's order. The patches below
//! have the shapes it computes for each change.

use crate::{DEPLOYMENT, smp};
use serde_json::{Value, json};

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A live Deployment as the API server serves it: defaulted, with status.
fn live_deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "default", "uid": "0b5f1c66-4a4c-4a39-9b1a-3f0d3c0c2a51",
            "resourceVersion": "812", "generation": 1,
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": {"app": "web"},
            "annotations": {LAST_APPLIED: "{\"old\":true}\n", "deployment.kubernetes.io/revision": "1"}
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "template": {
                "metadata": {"labels": {"app": "web", "tier": "frontend"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web", "image": "nginx:1.25",
                            "env": [{"name": "MODE", "value": "prod"}],
                            "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}],
                            "resources": {},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                            "imagePullPolicy": "IfNotPresent"
                        },
                        {
                            "name": "sidecar", "image": "busybox", "args": ["sleep", "3600"],
                            "resources": {},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                            "imagePullPolicy": "Always"
                        }
                    ],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "securityContext": {},
                    "schedulerName": "default-scheduler"
                }
            }
        },
        "status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2,
                   "conditions": [{"type": "Available", "status": "True"}]}
    })
}

fn web_container(deployment: &mut Value) -> &mut Value {
    &mut deployment["spec"]["template"]["spec"]["containers"][0]
}

#[test]
fn apply_changes_an_image_adds_an_env_var_and_removes_a_port() {
    let patch = json!({
        "metadata": {"annotations": {LAST_APPLIED: "{\"new\":true}\n"}},
        "spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "web"}, {"name": "sidecar"}],
            "containers": [{
                "$setElementOrder/env": [{"name": "MODE"}, {"name": "LOG_LEVEL"}],
                "$setElementOrder/ports": [{"containerPort": 80}],
                "env": [{"name": "LOG_LEVEL", "value": "debug"}],
                "image": "nginx:1.26",
                "name": "web",
                "ports": [{"$patch": "delete", "containerPort": 443}]
            }]
        }}}
    });
    let mut expected = live_deployment();
    expected["metadata"]["annotations"][LAST_APPLIED] = json!("{\"new\":true}\n");
    let web = web_container(&mut expected);
    web["image"] = json!("nginx:1.26");
    web["env"] =
        json!([{"name": "MODE", "value": "prod"}, {"name": "LOG_LEVEL", "value": "debug"}]);
    web["ports"] = json!([{"containerPort": 80, "protocol": "TCP"}]);

    assert_eq!(
        smp(DEPLOYMENT, &live_deployment(), &patch).unwrap(),
        expected
    );
}

#[test]
fn apply_removes_a_container_and_a_label_and_switches_strategy() {
    // Last applied had the sidecar, the tier label and a RollingUpdate strategy; the new
    // configuration drops them and asks for Recreate. `strategy` has the retainKeys
    // strategy, so kubectl lists the keys to keep.
    let patch = json!({
        "metadata": {"annotations": {LAST_APPLIED: "{\"new\":true}\n"}},
        "spec": {
            "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
            "template": {
                "metadata": {"labels": {"tier": null}},
                "spec": {
                    "$setElementOrder/containers": [{"name": "web"}],
                    "containers": [{"$patch": "delete", "name": "sidecar"}]
                }
            }
        }
    });
    let mut expected = live_deployment();
    expected["metadata"]["annotations"][LAST_APPLIED] = json!("{\"new\":true}\n");
    expected["spec"]["strategy"] = json!({"type": "Recreate"});
    expected["spec"]["template"]["metadata"]["labels"] = json!({"app": "web"});
    let web = web_container(&mut expected).clone();
    expected["spec"]["template"]["spec"]["containers"] = json!([web]);

    assert_eq!(
        smp(DEPLOYMENT, &live_deployment(), &patch).unwrap(),
        expected
    );
}

#[test]
fn apply_adds_a_container_and_an_init_container() {
    let patch = json!({
        "metadata": {"annotations": {LAST_APPLIED: "{\"new\":true}\n"}},
        "spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "web"}, {"name": "metrics"}, {"name": "sidecar"}],
            "containers": [{"image": "exporter:1", "name": "metrics"}],
            "initContainers": [{"image": "busybox", "name": "init", "command": ["true"]}]
        }}}
    });
    let mut expected = live_deployment();
    expected["metadata"]["annotations"][LAST_APPLIED] = json!("{\"new\":true}\n");
    let containers = expected["spec"]["template"]["spec"]["containers"].clone();
    expected["spec"]["template"]["spec"]["containers"] = json!([
        containers[0], {"image": "exporter:1", "name": "metrics"}, containers[1]
    ]);
    expected["spec"]["template"]["spec"]["initContainers"] =
        json!([{"image": "busybox", "name": "init", "command": ["true"]}]);

    assert_eq!(
        smp(DEPLOYMENT, &live_deployment(), &patch).unwrap(),
        expected
    );
}

#[test]
fn set_image_and_set_env() {
    // kubectl set image deployment/web web=nginx:1.27
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "web"}, {"name": "sidecar"}],
        "containers": [{"image": "nginx:1.27", "name": "web"}]
    }}}});
    let mut expected = live_deployment();
    web_container(&mut expected)["image"] = json!("nginx:1.27");
    assert_eq!(
        smp(DEPLOYMENT, &live_deployment(), &patch).unwrap(),
        expected
    );

    // kubectl set env deployment/web -c web MODE=dev X=1
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "web"}, {"name": "sidecar"}],
        "containers": [{
            "$setElementOrder/env": [{"name": "MODE"}, {"name": "X"}],
            "env": [{"name": "MODE", "value": "dev"}, {"name": "X", "value": "1"}],
            "name": "web"
        }]
    }}}});
    let mut expected = live_deployment();
    web_container(&mut expected)["env"] =
        json!([{"name": "MODE", "value": "dev"}, {"name": "X", "value": "1"}]);
    assert_eq!(
        smp(DEPLOYMENT, &live_deployment(), &patch).unwrap(),
        expected
    );
}

#[test]
fn patch_with_the_documentation_examples() {
    // "Update API Objects in Place Using kubectl patch": a patch file adding a container.
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "patch-demo-ctr-2", "image": "redis"}]}}}});
    let result = smp(DEPLOYMENT, &live_deployment(), &patch).unwrap();
    let names: Vec<&str> = result["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, vec!["patch-demo-ctr-2", "web", "sidecar"]);

    // The retainKeys example: switching to Recreate clears rollingUpdate.
    let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
    let result = smp(DEPLOYMENT, &live_deployment(), &patch).unwrap();
    assert_eq!(result["spec"]["strategy"], json!({"type": "Recreate"}));
}
