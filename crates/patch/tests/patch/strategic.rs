//! Strategic merge patch rules, one case each, on built-in types. Expected results follow
//! the Kubernetes documentation ("Update API Objects in Place Using kubectl patch", the
//! strategic merge patch design document) and Kubernetes' own test cases (those written
//! on a test type are rewritten here on Pods and Deployments).

use crate::{Case, DEPLOYMENT, POD, run};
use serde_json::{Value, json};

fn pod_with_containers(containers: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}})
}

fn containers_patch(patch: Value) -> Value {
    json!({"spec": patch})
}

fn names(list: &[&str]) -> Value {
    Value::Array(list.iter().map(|n| json!({"name": n})).collect())
}

#[test]
fn maps_and_scalars() {
    run(vec![
        Case {
            name: "labels merge, null deletes a label",
            definition: POD,
            live: json!({"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}}}),
            patch: json!({"metadata": {"labels": {"a": null, "c": "3"}}}),
            expected: json!({"metadata": {"name": "p", "labels": {"b": "2", "c": "3"}}}),
        },
        Case {
            name: "null deletes a whole field",
            definition: POD,
            live: json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n", "hostname": "h"}}),
            patch: json!({"spec": {"nodeName": null, "missing": null}}),
            expected: json!({"metadata": {"name": "p"}, "spec": {"hostname": "h"}}),
        },
        Case {
            name: "scalars replace",
            definition: POD,
            live: json!({"spec": {"restartPolicy": "Always", "priority": 1}}),
            patch: json!({"spec": {"restartPolicy": "Never", "priority": 2.5}}),
            expected: json!({"spec": {"restartPolicy": "Never", "priority": 2.5}}),
        },
        Case {
            name: "a value of another type replaces, without its nulls",
            definition: POD,
            live: json!({"spec": {"x": "text"}}),
            patch: json!({"spec": {"x": {"a": null, "b": 1}}}),
            expected: json!({"spec": {"x": {"b": 1}}}),
        },
        Case {
            name: "a new map is added without its nulls and maps carrying $patch",
            definition: POD,
            live: json!({"spec": {}}),
            patch: json!({"spec": {"affinity": {"nodeAffinity": null, "podAffinity": {"$patch": "delete"}, "x": [{"$patch": "replace"}, 1]}}}),
            expected: json!({"spec": {"affinity": {"x": [1]}}}),
        },
        Case {
            name: "nodeSelector (map-type atomic) still merges key by key",
            definition: POD,
            live: json!({"spec": {"nodeSelector": {"disk": "ssd"}}}),
            patch: json!({"spec": {"nodeSelector": {"zone": "a"}}}),
            expected: json!({"spec": {"nodeSelector": {"disk": "ssd", "zone": "a"}}}),
        },
        Case {
            name: "unknown fields: maps merge, lists are replaced",
            definition: POD,
            live: json!({"spec": {"extra": {"a": 1, "l": [1, 2]}, "list": [{"name": "x"}]}}),
            patch: json!({"spec": {"extra": {"b": 2, "l": [3]}, "list": [{"name": "y"}]}}),
            expected: json!({"spec": {"extra": {"a": 1, "b": 2, "l": [3]}, "list": [{"name": "y"}]}}),
        },
        Case {
            name: "a replace strategy replaces the whole map (PodDisruptionBudget selector)",
            definition: "io.k8s.api.policy.v1.PodDisruptionBudget",
            live: json!({"spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "1"}}}}),
            patch: json!({"spec": {"selector": {"matchLabels": {"b": "2"}}}}),
            expected: json!({"spec": {"minAvailable": 1, "selector": {"matchLabels": {"b": "2"}}}}),
        },
        Case {
            name: "an empty patch and a null patch change nothing",
            definition: POD,
            live: json!({"spec": {"a": 1}}),
            patch: json!({}),
            expected: json!({"spec": {"a": 1}}),
        },
        Case {
            name: "unknown $-keys are kept as fields",
            definition: POD,
            live: json!({"spec": {}}),
            patch: json!({"spec": {"$foo": 1}}),
            expected: json!({"spec": {"$foo": 1}}),
        },
    ]);
    assert_eq!(
        crate::smp(POD, &json!({"a": 1}), &Value::Null).unwrap(),
        json!({"a": 1})
    );
}

#[test]
fn map_directives() {
    run(vec![
        Case {
            name: "$patch: replace replaces a map by the patch's",
            definition: POD,
            live: json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            patch: json!({"metadata": {"labels": {"$patch": "replace", "c": "3", "d": null}}}),
            expected: json!({"metadata": {"labels": {"c": "3", "d": null}}}),
        },
        Case {
            name: "$patch: delete empties a map",
            definition: POD,
            live: json!({"spec": {"securityContext": {"runAsUser": 1}, "hostname": "h"}}),
            patch: json!({"spec": {"securityContext": {"$patch": "delete", "runAsUser": 2}}}),
            expected: json!({"spec": {"securityContext": {}, "hostname": "h"}}),
        },
        Case {
            name: "$patch: replace at the top replaces the object",
            definition: POD,
            live: json!({"metadata": {"name": "p"}, "spec": {"hostname": "h"}}),
            patch: json!({"$patch": "replace", "metadata": {"name": "q"}}),
            expected: json!({"metadata": {"name": "q"}}),
        },
        Case {
            name: "$retainKeys clears the keys it does not list (Deployment strategy)",
            definition: DEPLOYMENT,
            live: json!({"spec": {"replicas": 1, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}}}),
            patch: json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
            expected: json!({"spec": {"replicas": 1, "strategy": {"type": "Recreate"}}}),
        },
        Case {
            name: "without $retainKeys a retainKeys field merges",
            definition: DEPLOYMENT,
            live: json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
            patch: json!({"spec": {"strategy": {"type": "Recreate"}}}),
            expected: json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}}}),
        },
        Case {
            name: "$retainKeys with a deleted and a merged key",
            definition: DEPLOYMENT,
            live: json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}, "other": "x"}}}),
            patch: json!({"spec": {"strategy": {"$retainKeys": ["rollingUpdate", "type"], "rollingUpdate": {"maxSurge": 2}}}}),
            expected: json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": 0}}}}),
        },
    ]);
}

#[test]
fn lists_of_maps() {
    let live = pod_with_containers(json!([
        {"name": "a", "image": "x", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
         "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}],
         "volumeMounts": [{"name": "v1", "mountPath": "/a"}, {"name": "v2", "mountPath": "/b"}]},
        {"name": "b", "image": "y"}
    ]));
    let with_containers = |containers: Value| {
        let mut pod = live.clone();
        pod["spec"]["containers"] = containers;
        pod
    };
    let a = live["spec"]["containers"][0].clone();
    let b = live["spec"]["containers"][1].clone();
    let mut a_changed = a.clone();
    a_changed["image"] = json!("z");

    run(vec![
        Case {
            name: "containers merge by name",
            definition: POD,
            live: live.clone(),
            patch: containers_patch(json!({"containers": [{"name": "a", "image": "z"}]})),
            expected: with_containers(json!([a_changed, b])),
        },
        Case {
            // As in "Update API Objects in Place Using kubectl patch": the new container
            // comes first when the patch does not order the list.
            name: "a new container without $setElementOrder goes first",
            definition: POD,
            live: live.clone(),
            patch: containers_patch(json!({"containers": [{"name": "c", "image": "w"}]})),
            expected: with_containers(json!([{"name": "c", "image": "w"}, a, b])),
        },
        Case {
            name: "new list items are added as they are, nulls included",
            definition: POD,
            live: live.clone(),
            patch: containers_patch(
                json!({"containers": [{"name": "c", "image": "w", "workingDir": null}]}),
            ),
            expected: with_containers(
                json!([{"name": "c", "image": "w", "workingDir": null}, a, b]),
            ),
        },
        Case {
            name: "env merges by name (nested in containers)",
            definition: POD,
            live: live.clone(),
            patch: containers_patch(
                json!({"containers": [{"name": "a", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}]}),
            ),
            expected: with_containers(json!([
                {"name": "a", "image": "x",
                 "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                 "ports": a["ports"], "volumeMounts": a["volumeMounts"]},
                b
            ])),
        },
        Case {
            name: "ports merge by containerPort; a new port goes first",
            definition: POD,
            live: live.clone(),
            patch: containers_patch(
                json!({"containers": [{"name": "a", "ports": [{"containerPort": 443, "name": "https"}, {"containerPort": 8080}]}]}),
            ),
            expected: with_containers(json!([
                {"name": "a", "image": "x", "env": a["env"],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP", "name": "https"}, {"containerPort": 8080}],
                 "volumeMounts": a["volumeMounts"]},
                b
            ])),
        },
        Case {
            name: "volumeMounts merge by mountPath",
            definition: POD,
            live: live.clone(),
            patch: containers_patch(
                json!({"containers": [{"name": "a", "volumeMounts": [{"mountPath": "/b", "readOnly": true}]}]}),
            ),
            expected: with_containers(json!([
                {"name": "a", "image": "x", "env": a["env"], "ports": a["ports"],
                 "volumeMounts": [{"name": "v1", "mountPath": "/a"}, {"name": "v2", "mountPath": "/b", "readOnly": true}]},
                b
            ])),
        },
        Case {
            name: "$patch: delete removes the item with that key",
            definition: POD,
            live: live.clone(),
            patch: containers_patch(json!({"containers": [{"name": "a", "$patch": "delete"}]})),
            expected: with_containers(json!([b])),
        },
        Case {
            name: "$patch: delete of an item the list does not have changes nothing",
            definition: POD,
            live: live.clone(),
            patch: containers_patch(json!({"containers": [{"name": "zz", "$patch": "delete"}]})),
            expected: live.clone(),
        },
        Case {
            name: "$patch: replace replaces the list by the patch's other items",
            definition: POD,
            live: live.clone(),
            patch: containers_patch(
                json!({"containers": [{"name": "z", "image": "i"}, {"$patch": "replace"}]}),
            ),
            expected: with_containers(json!([{"name": "z", "image": "i"}])),
        },
        Case {
            name: "$patch: replace alone empties the list",
            definition: POD,
            live: live.clone(),
            patch: containers_patch(json!({"containers": [{"$patch": "replace"}]})),
            expected: with_containers(json!([])),
        },
        Case {
            name: "the patch's order wins for the items it lists",
            definition: POD,
            live: live.clone(),
            patch: containers_patch(
                json!({"containers": [{"name": "b", "image": "y2"}, {"name": "a"}]}),
            ),
            expected: with_containers(json!([{"name": "b", "image": "y2"}, a])),
        },
        Case {
            name: "all items with a deleted key are deleted",
            definition: POD,
            live: pod_with_containers(names(&["a", "b", "a"])),
            patch: containers_patch(json!({"containers": [{"name": "a", "$patch": "delete"}]})),
            expected: pod_with_containers(names(&["b"])),
        },
        Case {
            name: "empty lists merge to an empty list",
            definition: POD,
            live: pod_with_containers(json!([])),
            patch: containers_patch(json!({"containers": []})),
            expected: pod_with_containers(json!([])),
        },
    ]);
}

#[test]
fn other_merged_lists() {
    run(vec![
        Case {
            name: "volumes merge by name; $retainKeys switches a volume's source",
            definition: POD,
            live: json!({"spec": {"volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "cfg", "configMap": {"name": "old"}}
            ]}}),
            patch: json!({"spec": {"volumes": [{"name": "data", "$retainKeys": ["configMap", "name"], "configMap": {"name": "cm"}}]}}),
            expected: json!({"spec": {"volumes": [
                {"name": "data", "configMap": {"name": "cm"}},
                {"name": "cfg", "configMap": {"name": "old"}}
            ]}}),
        },
        Case {
            name: "tolerations have no merge strategy: the list is replaced",
            definition: POD,
            live: json!({"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}}),
            patch: json!({"spec": {"tolerations": [{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}]}}),
            expected: json!({"spec": {"tolerations": [{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}]}}),
        },
        Case {
            name: "args (atomic) are replaced",
            definition: POD,
            live: pod_with_containers(json!([{"name": "a", "args": ["1", "2"]}])),
            patch: containers_patch(json!({"containers": [{"name": "a", "args": ["3"]}]})),
            expected: pod_with_containers(json!([{"name": "a", "args": ["3"]}])),
        },
        Case {
            name: "finalizers: union, new values first",
            definition: POD,
            live: json!({"metadata": {"finalizers": ["a", "b"]}}),
            patch: json!({"metadata": {"finalizers": ["c", "a"]}}),
            expected: json!({"metadata": {"finalizers": ["c", "a", "b"]}}),
        },
        Case {
            name: "finalizers: duplicates collapse",
            definition: POD,
            live: json!({"metadata": {"finalizers": ["a", "a", "b"]}}),
            patch: json!({"metadata": {"finalizers": ["b"]}}),
            expected: json!({"metadata": {"finalizers": ["a", "b"]}}),
        },
        Case {
            name: "finalizers: $deleteFromPrimitiveList removes values",
            definition: POD,
            live: json!({"metadata": {"finalizers": ["a", "b", "c", "b"]}}),
            patch: json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "x"]}}),
            expected: json!({"metadata": {"finalizers": ["a", "c"]}}),
        },
        Case {
            name: "$deleteFromPrimitiveList on a list without merge strategy still deletes",
            definition: POD,
            live: pod_with_containers(json!([{"name": "a", "args": ["1", "2", "3"]}])),
            patch: containers_patch(
                json!({"containers": [{"name": "a", "$deleteFromPrimitiveList/args": ["2"]}]}),
            ),
            expected: pod_with_containers(json!([{"name": "a", "args": ["1", "3"]}])),
        },
        Case {
            name: "$deleteFromPrimitiveList of a missing list does nothing",
            definition: POD,
            live: json!({"metadata": {"name": "p"}}),
            patch: json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}}),
            expected: json!({"metadata": {"name": "p"}}),
        },
        Case {
            name: "conditions merge by type",
            definition: POD,
            live: json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]}}),
            patch: json!({"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "ok"}]}}),
            expected: json!({"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "ok"}, {"type": "PodScheduled", "status": "True"}]}}),
        },
        Case {
            name: "ownerReferences merge by uid",
            definition: POD,
            live: json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a", "kind": "ReplicaSet"}, {"uid": "2", "name": "b", "kind": "ReplicaSet"}]}}),
            patch: json!({"metadata": {"ownerReferences": [{"uid": "2", "controller": true}]}}),
            expected: json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a", "kind": "ReplicaSet"}, {"uid": "2", "name": "b", "kind": "ReplicaSet", "controller": true}]}}),
        },
        Case {
            name: "service ports merge by port",
            definition: "io.k8s.api.core.v1.Service",
            live: json!({"spec": {"ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}}),
            patch: json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}),
            expected: json!({"spec": {"ports": [{"port": 80, "targetPort": 9090, "protocol": "TCP"}]}}),
        },
        Case {
            // Kubernetes issue 108255: ports are keyed by containerPort alone, so a patch
            // meant for the UDP port merges into the TCP one.
            name: "two ports with one containerPort: the first is merged",
            definition: POD,
            live: pod_with_containers(
                json!([{"name": "dns", "ports": [{"containerPort": 53, "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}]}]),
            ),
            patch: containers_patch(
                json!({"containers": [{"name": "dns", "ports": [{"containerPort": 53, "protocol": "UDP", "name": "dns"}]}]}),
            ),
            expected: pod_with_containers(
                json!([{"name": "dns", "ports": [{"containerPort": 53, "protocol": "UDP", "name": "dns"}, {"containerPort": 53, "protocol": "UDP"}]}]),
            ),
        },
        Case {
            name: "a CRD's versions (atomic) are replaced; schemas inside merge as maps",
            definition: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
            live: json!({"spec": {"group": "g", "versions": [{"name": "v1", "served": true}, {"name": "v2"}]}}),
            patch: json!({"spec": {"versions": [{"name": "v1", "served": false}]}}),
            expected: json!({"spec": {"group": "g", "versions": [{"name": "v1", "served": false}]}}),
        },
        Case {
            name: "node podCIDRs merge as a set",
            definition: "io.k8s.api.core.v1.Node",
            live: json!({"spec": {"podCIDRs": ["10.0.0.0/24"]}}),
            patch: json!({"spec": {"podCIDRs": ["10.0.0.0/24", "fd00::/64"]}}),
            expected: json!({"spec": {"podCIDRs": ["10.0.0.0/24", "fd00::/64"]}}),
        },
    ]);
}

#[test]
fn set_element_order() {
    let pod = |list: &[&str]| pod_with_containers(names(list));
    let order = |list: &[&str]| names(list);
    run(vec![
        Case {
            name: "reorders the list",
            definition: POD,
            live: pod(&["a", "b", "c"]),
            patch: containers_patch(
                json!({"$setElementOrder/containers": order(&["c", "a", "b"])}),
            ),
            expected: pod(&["c", "a", "b"]),
        },
        Case {
            name: "adds items in the given order",
            definition: POD,
            live: pod(&["1", "2"]),
            patch: containers_patch(
                json!({"$setElementOrder/containers": order(&["4", "1", "2", "3"]), "containers": names(&["4", "3"])}),
            ),
            expected: pod(&["4", "1", "2", "3"]),
        },
        Case {
            name: "live-only items stay where the live list had them",
            definition: POD,
            live: pod(&["1", "2", "9", "3", "4"]),
            patch: containers_patch(
                json!({"$setElementOrder/containers": order(&["2", "1", "4", "3"])}),
            ),
            expected: pod(&["2", "1", "9", "4", "3"]),
        },
        Case {
            name: "live-only items stay together",
            definition: POD,
            live: pod(&["1", "2", "7", "9", "8", "3", "4"]),
            patch: containers_patch(
                json!({"$setElementOrder/containers": order(&["2", "1", "4", "3"])}),
            ),
            expected: pod(&["2", "1", "7", "9", "8", "4", "3"]),
        },
        Case {
            name: "a live-only item trails the items moved in front of it",
            definition: POD,
            live: pod(&["1", "3", "4", "2", "9"]),
            patch: containers_patch(
                json!({"$setElementOrder/containers": order(&["4", "2", "3", "1"])}),
            ),
            expected: pod(&["4", "2", "3", "1", "9"]),
        },
        Case {
            name: "an added item goes before live-only items",
            definition: POD,
            live: pod(&["1", "3"]),
            patch: containers_patch(
                json!({"$setElementOrder/containers": order(&["1", "2"]), "containers": names(&["1", "2"])}),
            ),
            expected: pod(&["1", "2", "3"]),
        },
        Case {
            name: "delete and add in one patch, with live-only items",
            definition: POD,
            live: pod(&["1", "2", "4"]),
            patch: containers_patch(json!({"$setElementOrder/containers": order(&["2", "3"]),
                "containers": [{"name": "3"}, {"name": "1", "$patch": "delete"}]})),
            expected: pod(&["2", "4", "3"]),
        },
        Case {
            name: "delete and add in one patch, the added item first in the freed slot",
            definition: POD,
            live: pod(&["1", "4"]),
            patch: containers_patch(json!({"$setElementOrder/containers": order(&["2", "3"]),
                "containers": [{"name": "2"}, {"name": "3"}, {"name": "1", "$patch": "delete"}]})),
            expected: pod(&["4", "2", "3"]),
        },
        Case {
            name: "delete an item and reorder",
            definition: POD,
            live: pod(&["1", "2", "3"]),
            patch: containers_patch(json!({"$setElementOrder/containers": order(&["2", "1"]),
                "containers": [{"name": "3", "$patch": "delete"}]})),
            expected: pod(&["2", "1"]),
        },
        Case {
            name: "duplicates keep their relative order",
            definition: POD,
            live: pod_with_containers(
                json!([{"name": "1"}, {"name": "2", "image": "dup1"}, {"name": "3"}, {"name": "2", "image": "dup2"}, {"name": "4"}]),
            ),
            patch: containers_patch(
                json!({"$setElementOrder/containers": order(&["2", "1", "4", "3", "2"])}),
            ),
            expected: pod_with_containers(
                json!([{"name": "2", "image": "dup1"}, {"name": "2", "image": "dup2"}, {"name": "1"}, {"name": "4"}, {"name": "3"}]),
            ),
        },
        Case {
            name: "orders a list the live object does not have",
            definition: POD,
            live: json!({"spec": {}}),
            patch: containers_patch(json!({"$setElementOrder/containers": order(&["b", "a"]),
                "containers": [{"name": "b"}, {"name": "a"}, {"name": "c", "$patch": "delete"}]})),
            expected: pod_with_containers(names(&["b", "a"]))
                .pointer("/spec")
                .map(|s| json!({"spec": s}))
                .unwrap(),
        },
        Case {
            name: "an order for a list nobody has changes nothing",
            definition: POD,
            live: json!({"spec": {}}),
            patch: containers_patch(json!({"$setElementOrder/initContainers": order(&["a"])})),
            expected: json!({"spec": {}}),
        },
        Case {
            name: "nested order inside a merged item",
            definition: POD,
            live: pod_with_containers(
                json!([{"name": "a", "env": [{"name": "1"}, {"name": "2", "value": "2"}]}, {"name": "b"}]),
            ),
            patch: containers_patch(json!({"$setElementOrder/containers": order(&["a", "b"]),
                "containers": [{"name": "a", "$setElementOrder/env": order(&["2", "1"]), "env": [{"name": "1", "value": "1"}]}]})),
            expected: pod_with_containers(
                json!([{"name": "a", "env": [{"name": "2", "value": "2"}, {"name": "1", "value": "1"}]}, {"name": "b"}]),
            ),
        },
        Case {
            name: "two lists ordered in one map",
            definition: POD,
            live: json!({"spec": {"containers": names(&["a", "b"]), "initContainers": names(&["c", "d"])}}),
            patch: json!({"spec": {"$setElementOrder/containers": order(&["b"]), "$setElementOrder/initContainers": order(&["d", "c"]),
                "containers": [{"name": "a", "$patch": "delete"}]}}),
            expected: json!({"spec": {"containers": names(&["b"]), "initContainers": names(&["d", "c"])}}),
        },
        Case {
            name: "finalizers: add and preserve order",
            definition: POD,
            live: json!({"metadata": {"finalizers": ["1", "4", "2"]}}),
            patch: json!({"metadata": {"$setElementOrder/finalizers": ["3", "1", "2"], "finalizers": ["3"]}}),
            expected: json!({"metadata": {"finalizers": ["3", "1", "4", "2"]}}),
        },
        Case {
            name: "finalizers: add, delete and order",
            definition: POD,
            live: json!({"metadata": {"finalizers": ["1", "2", "3", "4"]}}),
            patch: json!({"metadata": {"$setElementOrder/finalizers": ["1", "3", "5"], "finalizers": ["5"], "$deleteFromPrimitiveList/finalizers": ["2"]}}),
            expected: json!({"metadata": {"finalizers": ["1", "3", "5", "4"]}}),
        },
        Case {
            name: "finalizers: reorder with live-only values",
            definition: POD,
            live: json!({"metadata": {"finalizers": ["1", "2", "9", "3", "4"]}}),
            patch: json!({"metadata": {"$setElementOrder/finalizers": ["2", "1", "4", "3"]}}),
            expected: json!({"metadata": {"finalizers": ["2", "1", "9", "4", "3"]}}),
        },
        Case {
            name: "volumes: $retainKeys and order together",
            definition: POD,
            live: json!({"spec": {"volumes": [{"name": "bar"}, {"name": "foo", "emptyDir": {}, "secret": {"secretName": "s"}}]}}),
            patch: json!({"spec": {"$setElementOrder/volumes": order(&["bar", "foo"]),
                "volumes": [{"$retainKeys": ["name", "secret"], "name": "foo"}]}}),
            expected: json!({"spec": {"volumes": [{"name": "bar"}, {"name": "foo", "secret": {"secretName": "s"}}]}}),
        },
    ]);
}
