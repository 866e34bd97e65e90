//! Tests of the Node authorizer: the graph's reachability as pods, PVs and pinned objects
//! come and go, and the per-resource rules with Kubernetes' reason texts.

#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;

fn node_groups() -> Vec<String> {
    vec!["system:nodes".into(), "system:authenticated".into()]
}

fn attrs<'a>(
    verb: &'a str,
    group: &'a str,
    resource: &'a str,
    namespace: &'a str,
    name: &'a str,
) -> RequestAttributes<'a> {
    RequestAttributes {
        verb,
        namespace,
        api_group: group,
        resource,
        name,
        resource_request: true,
        ..RequestAttributes::default()
    }
}

fn ask(graph: &NodeGraph, node: &str, a: &RequestAttributes<'_>) -> Decision {
    graph.authorize(&format!("system:node:{node}"), &node_groups(), a)
}

fn get_secret(graph: &NodeGraph, node: &str, name: &str) -> Decision {
    ask(graph, node, &attrs("get", "", "secrets", "ns", name))
}

fn pod(name: &str, node: &str, spec: Value) -> Value {
    let mut spec = spec;
    if !node.is_empty() {
        spec["nodeName"] = json!(node);
    }
    json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")}, "spec": spec})
}

fn denied(node: &str) -> Decision {
    Decision::NoOpinion(format!(
        "no relationship found between node '{node}' and this object"
    ))
}

#[test]
fn secret_of_a_bound_pod_is_readable_by_its_node_only() {
    let mut graph = NodeGraph::new();
    graph.apply(
        "pods",
        &pod(
            "p",
            "node-a",
            json!({"volumes": [{"name": "v", "secret": {"secretName": "s"}}]}),
        ),
    );
    assert_eq!(get_secret(&graph, "node-a", "s"), Decision::Allow);
    assert_eq!(get_secret(&graph, "node-b", "s"), denied("node-b"));
    assert_eq!(get_secret(&graph, "node-a", "other"), denied("node-a"));
    // list/watch of the single secret too; other verbs and collections are refused.
    assert_eq!(
        ask(&graph, "node-a", &attrs("watch", "", "secrets", "ns", "s")),
        Decision::Allow
    );
    assert_eq!(
        ask(&graph, "node-a", &attrs("list", "", "secrets", "ns", "")),
        Decision::NoOpinion("No Object name found".into())
    );
    assert_eq!(
        ask(&graph, "node-a", &attrs("update", "", "secrets", "ns", "s")),
        Decision::NoOpinion("can only read resources of this type".into())
    );
    assert_eq!(
        ask(&graph, "node-a", &attrs("get", "", "secrets", "", "s")),
        Decision::NoOpinion("can only read namespaced object of this type".into())
    );
}

#[test]
fn unbinding_or_deleting_the_pod_removes_access() {
    let mut graph = NodeGraph::new();
    let spec = json!({"containers": [{"envFrom": [{"secretRef": {"name": "s"}}, {"configMapRef": {"name": "c"}}]}]});
    graph.apply("pods", &pod("p", "node-a", spec.clone()));
    assert_eq!(get_secret(&graph, "node-a", "s"), Decision::Allow);
    // Moving (rebinding) the pod moves the access.
    graph.apply("pods", &pod("p", "node-b", spec.clone()));
    assert_eq!(get_secret(&graph, "node-a", "s"), denied("node-a"));
    assert_eq!(get_secret(&graph, "node-b", "s"), Decision::Allow);
    // Unbinding removes it.
    graph.apply("pods", &pod("p", "", spec.clone()));
    assert_eq!(get_secret(&graph, "node-b", "s"), denied("node-b"));
    assert!(graph.index.is_clean());
    // Deleting removes it.
    graph.apply("pods", &pod("p", "node-a", spec.clone()));
    assert_eq!(
        ask(&graph, "node-a", &attrs("get", "", "configmaps", "ns", "c")),
        Decision::Allow
    );
    graph.delete(
        "pods",
        &json!({"metadata": {"name": "p", "namespace": "ns"}}),
    );
    assert_eq!(
        ask(&graph, "node-a", &attrs("get", "", "configmaps", "ns", "c")),
        denied("node-a")
    );
    assert!(graph.index.is_clean());
    assert!(graph.is_empty());
}

#[test]
fn two_pods_share_a_reference() {
    let mut graph = NodeGraph::new();
    let spec = json!({"imagePullSecrets": [{"name": "pull"}]});
    graph.apply("pods", &pod("p1", "node-a", spec.clone()));
    graph.apply("pods", &pod("p2", "node-a", spec.clone()));
    graph.delete("pods", &pod("p1", "node-a", json!({})));
    assert_eq!(get_secret(&graph, "node-a", "pull"), Decision::Allow);
    graph.delete("pods", &pod("p2", "node-a", json!({})));
    assert_eq!(get_secret(&graph, "node-a", "pull"), denied("node-a"));
    assert!(graph.index.is_clean());
}

#[test]
fn mirror_pods_grant_nothing_but_themselves() {
    let mut graph = NodeGraph::new();
    let mut mirror = pod(
        "m",
        "node-a",
        json!({"volumes": [{"name": "v", "secret": {"secretName": "s"}}]}),
    );
    mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "x"});
    graph.apply("pods", &mirror);
    assert_eq!(get_secret(&graph, "node-a", "s"), denied("node-a"));
    assert_eq!(
        ask(&graph, "node-a", &attrs("get", "", "pods", "ns", "m")),
        Decision::Allow
    );
}

#[test]
fn pvc_to_pv_chains() {
    let mut graph = NodeGraph::new();
    graph.apply(
        "pods",
        &pod(
            "p",
            "node-a",
            json!({"volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "claim"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
            ]}),
        ),
    );
    let pv = json!({"metadata": {"name": "pv1"}, "spec": {
        "claimRef": {"namespace": "ns", "name": "claim"},
        "csi": {"driver": "d", "volumeHandle": "h",
                "nodePublishSecretRef": {"name": "csi-secret", "namespace": "ns"},
                "controllerPublishSecretRef": {"name": "controller-secret", "namespace": "ns"}}
    }});
    graph.apply("persistentvolumes", &pv);
    let get_pvc = |g: &NodeGraph, node: &str, name: &str| {
        ask(
            g,
            node,
            &attrs("get", "", "persistentvolumeclaims", "ns", name),
        )
    };
    let get_pv =
        |g: &NodeGraph, node: &str| ask(g, node, &attrs("get", "", "persistentvolumes", "", "pv1"));
    assert_eq!(get_pvc(&graph, "node-a", "claim"), Decision::Allow);
    assert_eq!(get_pvc(&graph, "node-a", "p-scratch"), Decision::Allow);
    assert_eq!(get_pvc(&graph, "node-b", "claim"), denied("node-b"));
    assert_eq!(get_pv(&graph, "node-a"), Decision::Allow);
    assert_eq!(get_pv(&graph, "node-b"), denied("node-b"));
    assert_eq!(get_secret(&graph, "node-a", "csi-secret"), Decision::Allow);
    assert_eq!(
        get_secret(&graph, "node-a", "controller-secret"),
        denied("node-a")
    );
    assert_eq!(get_secret(&graph, "node-b", "csi-secret"), denied("node-b"));
    // PVC status updates, not other verbs.
    let mut status = attrs("patch", "", "persistentvolumeclaims", "ns", "claim");
    status.subresource = "status";
    assert_eq!(ask(&graph, "node-a", &status), Decision::Allow);
    status.verb = "delete";
    assert_eq!(
        ask(&graph, "node-a", &status),
        Decision::NoOpinion("can only get/update/patch this type".into())
    );
    assert_eq!(
        ask(
            &graph,
            "node-a",
            &attrs("list", "", "persistentvolumes", "", "")
        ),
        Decision::NoOpinion("can only get individual resources of this type".into())
    );
    // Unbinding the PV (no claimRef) or deleting it cuts the chain.
    graph.apply(
        "persistentvolumes",
        &json!({"metadata": {"name": "pv1"}, "spec": {"csi": {"driver": "d"}}}),
    );
    assert_eq!(get_pv(&graph, "node-a"), denied("node-a"));
    assert_eq!(get_secret(&graph, "node-a", "csi-secret"), denied("node-a"));
    graph.apply("persistentvolumes", &pv);
    graph.delete("persistentvolumes", &pv);
    assert_eq!(get_secret(&graph, "node-a", "csi-secret"), denied("node-a"));
    // The PV's secret stays reachable only while a pod uses the claim.
    graph.apply("persistentvolumes", &pv);
    graph.delete("pods", &pod("p", "node-a", json!({})));
    assert_eq!(get_secret(&graph, "node-a", "csi-secret"), denied("node-a"));
    graph.delete("persistentvolumes", &pv);
    assert!(graph.index.is_clean());
}

#[test]
fn service_account_tokens_and_resource_claims() {
    let mut graph = NodeGraph::new();
    let mut p = pod(
        "p",
        "node-a",
        json!({"serviceAccountName": "robot",
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}, {"name": "x", "resourceClaimName": "shared"}]}),
    );
    graph.apply("pods", &p);
    let mut token = attrs("create", "", "serviceaccounts", "ns", "robot");
    token.subresource = "token";
    assert_eq!(ask(&graph, "node-a", &token), Decision::Allow);
    assert_eq!(ask(&graph, "node-b", &token), denied("node-b"));
    token.subresource = "";
    assert_eq!(
        ask(&graph, "node-a", &token),
        Decision::NoOpinion("can only create token subresource of serviceaccount".into())
    );
    token.verb = "get";
    assert_eq!(
        ask(&graph, "node-a", &token),
        Decision::NoOpinion("can only create tokens for individual service accounts".into())
    );

    let get_claim = |g: &NodeGraph, name: &str| {
        ask(
            g,
            "node-a",
            &attrs("get", "resource.k8s.io", "resourceclaims", "ns", name),
        )
    };
    assert_eq!(get_claim(&graph, "shared"), Decision::Allow);
    assert_eq!(get_claim(&graph, "p-gpu-abc"), denied("node-a"));
    // The generated claim becomes reachable once the status names it.
    p["status"] =
        json!({"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-abc"}]});
    graph.apply("pods", &p);
    assert_eq!(get_claim(&graph, "p-gpu-abc"), Decision::Allow);
}

#[test]
fn pods_nodes_and_field_selectors() {
    let mut graph = NodeGraph::new();
    graph.apply("pods", &pod("p", "node-a", json!({})));
    assert_eq!(
        ask(&graph, "node-a", &attrs("get", "", "pods", "ns", "p")),
        Decision::Allow
    );
    assert_eq!(
        ask(&graph, "node-b", &attrs("get", "", "pods", "ns", "p")),
        denied("node-b")
    );
    let mut list = attrs("list", "", "pods", "", "");
    assert_eq!(
        ask(&graph, "node-a", &list),
        Decision::NoOpinion("can only list/watch pods with spec.nodeName field selector".into())
    );
    list.field_selector = "spec.nodeName=node-a";
    assert_eq!(ask(&graph, "node-a", &list), Decision::Allow);
    list.field_selector = "metadata.namespace!=x,spec.nodeName==node-a";
    assert_eq!(ask(&graph, "node-a", &list), Decision::Allow);
    list.field_selector = "spec.nodeName!=node-a";
    assert!(!ask(&graph, "node-a", &list).is_allowed());
    list.field_selector = "spec.nodeName=node-b";
    assert!(!ask(&graph, "node-a", &list).is_allowed());
    for (sub, verb) in [
        ("", "create"),
        ("", "delete"),
        ("status", "patch"),
        ("eviction", "create"),
    ] {
        let mut a = attrs(verb, "", "pods", "ns", "anything");
        a.subresource = sub;
        assert_eq!(ask(&graph, "node-a", &a), Decision::Allow, "{sub} {verb}");
    }
    assert_eq!(
        ask(&graph, "node-a", &attrs("update", "", "pods", "ns", "p")),
        Decision::NoOpinion(String::new())
    );

    assert_eq!(
        ask(&graph, "node-a", &attrs("get", "", "nodes", "", "node-a")),
        Decision::Allow
    );
    assert_eq!(
        ask(&graph, "node-a", &attrs("get", "", "nodes", "", "node-b")),
        Decision::NoOpinion("node 'node-a' cannot read 'node-b', only its own Node object".into())
    );
    assert_eq!(
        ask(&graph, "node-a", &attrs("list", "", "nodes", "", "")),
        Decision::NoOpinion("node 'node-a' cannot read all nodes, only its own Node object".into())
    );
    assert_eq!(
        ask(&graph, "node-a", &attrs("patch", "", "nodes", "", "node-b")),
        Decision::Allow
    );
    assert_eq!(
        ask(
            &graph,
            "node-a",
            &attrs("delete", "", "nodes", "", "node-a")
        ),
        Decision::NoOpinion(String::new())
    );
}

#[test]
fn leases_csinodes_attachments_and_slices() {
    let mut graph = NodeGraph::new();
    let lease = |verb, ns, name| attrs(verb, "coordination.k8s.io", "leases", ns, name);
    assert_eq!(
        ask(&graph, "n", &lease("update", "kube-node-lease", "n")),
        Decision::Allow
    );
    assert_eq!(
        ask(&graph, "n", &lease("create", "kube-node-lease", "")),
        Decision::Allow
    );
    assert_eq!(
        ask(&graph, "n", &lease("get", "kube-node-lease", "m")),
        Decision::NoOpinion(
            "can only access node lease with the same name as the requesting node".into()
        )
    );
    assert_eq!(
        ask(&graph, "n", &lease("get", "default", "n")),
        Decision::NoOpinion(
            r#"can only access leases in the "kube-node-lease" system namespace"#.into()
        )
    );
    assert_eq!(
        ask(&graph, "n", &lease("list", "kube-node-lease", "")),
        Decision::NoOpinion("can only get, create, update, patch, or delete a node lease".into())
    );
    assert_eq!(
        ask(
            &graph,
            "n",
            &attrs("delete", "storage.k8s.io", "csinodes", "", "n")
        ),
        Decision::Allow
    );
    assert_eq!(
        ask(
            &graph,
            "n",
            &attrs("get", "storage.k8s.io", "csinodes", "", "m")
        ),
        Decision::NoOpinion(
            "can only access CSINode with the same name as the requesting node".into()
        )
    );

    graph.apply(
        "volumeattachments",
        &json!({"metadata": {"name": "va"}, "spec": {"nodeName": "n", "attacher": "d"}}),
    );
    let va = attrs("get", "storage.k8s.io", "volumeattachments", "", "va");
    assert_eq!(ask(&graph, "n", &va), Decision::Allow);
    assert_eq!(ask(&graph, "m", &va), denied("m"));
    graph.delete("volumeattachments", &json!({"metadata": {"name": "va"}}));
    assert_eq!(ask(&graph, "n", &va), denied("n"));

    graph.apply(
        "resourceslices",
        &json!({"metadata": {"name": "s"}, "spec": {"nodeName": "n", "driver": "d"}}),
    );
    assert_eq!(
        ask(
            &graph,
            "n",
            &attrs("patch", "resource.k8s.io", "resourceslices", "", "s")
        ),
        Decision::Allow
    );
    assert_eq!(
        ask(
            &graph,
            "m",
            &attrs("delete", "resource.k8s.io", "resourceslices", "", "s")
        ),
        denied("m")
    );
    assert_eq!(
        ask(
            &graph,
            "m",
            &attrs("create", "resource.k8s.io", "resourceslices", "", "")
        ),
        Decision::Allow
    );
    let mut list = attrs("list", "resource.k8s.io", "resourceslices", "", "");
    assert_eq!(
        ask(&graph, "n", &list),
        Decision::NoOpinion(
            "can only list/watch/deletecollection resourceslices with nodeName field selector"
                .into()
        )
    );
    list.field_selector = "spec.nodeName=n";
    assert_eq!(ask(&graph, "n", &list), Decision::Allow);
    graph.apply(
        "resourceslices",
        &json!({"metadata": {"name": "s"}, "spec": {"driver": "d"}}),
    );
    assert_eq!(
        ask(
            &graph,
            "n",
            &attrs("get", "resource.k8s.io", "resourceslices", "", "s")
        ),
        denied("n")
    );
}

#[test]
fn static_rules_for_everything_else() {
    let graph = NodeGraph::new();
    assert_eq!(
        ask(&graph, "n", &attrs("list", "", "services", "", "")),
        Decision::Allow
    );
    assert_eq!(
        ask(&graph, "n", &attrs("create", "", "events", "ns", "")),
        Decision::Allow
    );
    assert_eq!(
        ask(&graph, "n", &attrs("get", "", "endpoints", "ns", "e")),
        Decision::Allow
    );
    assert_eq!(
        ask(
            &graph,
            "n",
            &attrs(
                "create",
                "certificates.k8s.io",
                "certificatesigningrequests",
                "",
                ""
            )
        ),
        Decision::Allow
    );
    assert_eq!(
        ask(&graph, "n", &attrs("list", "", "namespaces", "", "")),
        Decision::NoOpinion(String::new())
    );
    assert_eq!(
        ask(&graph, "n", &attrs("delete", "", "services", "ns", "s")),
        Decision::NoOpinion(String::new())
    );
    let non_resource = RequestAttributes {
        verb: "get",
        path: "/healthz",
        ..RequestAttributes::default()
    };
    assert_eq!(
        ask(&graph, "n", &non_resource),
        Decision::NoOpinion(String::new())
    );
}

#[test]
fn only_nodes_are_judged() {
    let graph = NodeGraph::new();
    let a = attrs("list", "", "services", "", "");
    assert_eq!(
        graph.authorize("jane", &node_groups(), &a),
        Decision::NoOpinion(String::new())
    );
    assert_eq!(
        graph.authorize("system:node:n", &[], &a),
        Decision::NoOpinion(String::new())
    );
    assert_eq!(
        graph.authorize("system:node:", &node_groups(), &a),
        Decision::NoOpinion(r#"unknown node for user "system:node:""#.into())
    );
}

#[test]
fn hostile_objects_never_panic() {
    let mut graph = NodeGraph::new();
    for object in [
        json!(null),
        json!("pod"),
        json!({"metadata": 3, "spec": {"nodeName": 5}}),
        json!({"metadata": {"name": "x"}, "spec": {"nodeName": "n", "volumes": "v", "containers": [null, 1, {"env": 3}],
               "resourceClaims": [{"resourceClaimTemplateName": 1}], "serviceAccountName": []}}),
        json!({"metadata": {"name": "pv"}, "spec": {"claimRef": "x", "csi": 3}}),
        json!({"metadata": {"name": "pv"}, "spec": {"claimRef": {"name": 1}, "rbd": {"secretRef": "s"}}}),
    ] {
        for resource in [
            "pods",
            "persistentvolumes",
            "volumeattachments",
            "resourceslices",
            "persistentvolumeclaims",
            "other",
        ] {
            graph.apply(resource, &object);
            graph.delete(resource, &object);
        }
    }
    assert!(graph.index.is_clean());
    assert!(graph.is_empty());
}
