//! The default policy: every object well formed and marked, the required roles present,
//! each controller bound to its service account, and a few well-known grants.

use super::*;
use kyb_rbac::{Attributes, bootstrap};
use std::collections::BTreeSet;

fn names(objects: &[Value]) -> BTreeSet<String> {
    objects
        .iter()
        .map(|o| {
            let namespace = o["metadata"]["namespace"].as_str().unwrap_or_default();
            let name = o["metadata"]["name"].as_str().unwrap();
            if namespace.is_empty() {
                name.to_string()
            } else {
                format!("{namespace}/{name}")
            }
        })
        .collect()
}

fn all() -> Vec<Value> {
    let mut objects = bootstrap::cluster_roles();
    objects.extend(bootstrap::cluster_role_bindings());
    objects.extend(bootstrap::roles());
    objects.extend(bootstrap::role_bindings());
    objects
}

#[test]
fn every_object_is_marked_and_loads() {
    let objects = all();
    let mut policy = Policy::new();
    for object in &objects {
        assert_eq!(object["apiVersion"], "rbac.authorization.k8s.io/v1");
        assert_eq!(
            object["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults",
            "{object}"
        );
        assert_eq!(
            object["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
            "true",
            "{object}"
        );
        policy.apply(object).unwrap();
        for rule in PolicyRule::list_from_object(object) {
            assert!(!rule.verbs.is_empty(), "{object}");
            assert_eq!(rule.clone().sorted(), rule, "rules are sorted: {object}");
        }
    }
    let counts = policy.counts();
    assert_eq!(counts.cluster_roles, bootstrap::cluster_roles().len());
    assert_eq!(
        counts.cluster_role_bindings,
        bootstrap::cluster_role_bindings().len()
    );
    assert_eq!(counts.roles, 7);
    assert_eq!(counts.role_bindings, 7);
    // No duplicates.
    assert_eq!(
        names(&bootstrap::cluster_roles()).len(),
        bootstrap::cluster_roles().len()
    );
    assert_eq!(
        names(&bootstrap::cluster_role_bindings()).len(),
        bootstrap::cluster_role_bindings().len()
    );
}

#[test]
fn the_required_roles_are_present() {
    let roles = names(&bootstrap::cluster_roles());
    let mut required: Vec<String> = [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:aggregate-to-admin",
        "system:aggregate-to-edit",
        "system:aggregate-to-view",
        "system:basic-user",
        "system:discovery",
        "system:public-info-viewer",
        "system:monitoring",
        "system:kube-scheduler",
        "system:volume-scheduler",
        "system:kube-controller-manager",
        "system:node",
        "system:node-proxier",
        "system:kube-dns",
        "system:auth-delegator",
        "system:heapster",
        "system:service-account-issuer-discovery",
        "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
        "system:certificates.k8s.io:kube-apiserver-client-approver",
        "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
        "system:certificates.k8s.io:kubelet-serving-approver",
        "system:certificates.k8s.io:legacy-unknown-approver",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for controller in [
        "deployment-controller",
        "replicaset-controller",
        "statefulset-controller",
        "daemon-set-controller",
        "job-controller",
        "cronjob-controller",
        "generic-garbage-collector",
        "namespace-controller",
        "endpointslice-controller",
        "endpoint-controller",
        "node-controller",
        "service-account-controller",
        "clusterrole-aggregation-controller",
        "ttl-after-finished-controller",
        "horizontal-pod-autoscaler",
        "disruption-controller",
        "pv-protection-controller",
        "pvc-protection-controller",
        "persistent-volume-binder",
        "replication-controller",
        "resourcequota-controller",
        "root-ca-cert-publisher",
    ] {
        required.push(format!("system:controller:{controller}"));
    }
    for name in &required {
        assert!(roles.contains(name), "missing cluster role {name}");
    }
    let namespaced = names(&bootstrap::roles());
    for name in [
        "kube-system/system:controller:token-cleaner",
        "kube-system/system:controller:bootstrap-signer",
        "kube-public/system:controller:bootstrap-signer",
    ] {
        assert!(namespaced.contains(name), "missing role {name}");
    }
}

#[test]
fn every_controller_role_is_bound_to_its_service_account() {
    let bindings = bootstrap::cluster_role_bindings();
    for role in bootstrap::cluster_roles() {
        let name = role["metadata"]["name"].as_str().unwrap();
        let Some(controller) = name.strip_prefix("system:controller:") else {
            continue;
        };
        let binding = bindings
            .iter()
            .find(|b| b["metadata"]["name"] == name)
            .unwrap();
        assert_eq!(
            binding["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name})
        );
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": controller, "namespace": "kube-system"}])
        );
    }
}

#[test]
fn well_known_grants() {
    let policy = scenario();
    let masters = groups(&["system:masters"]);
    let binding = bootstrap::cluster_role_bindings()
        .into_iter()
        .find(|b| b["metadata"]["name"] == "cluster-admin")
        .unwrap();
    assert_eq!(binding["subjects"], json!([group("system:masters")]));
    assert!(
        policy
            .authorize(&Attributes::resource("x", &masters, "*", "*", "*", ""))
            .is_allowed()
    );

    let controller = |name: &str| format!("system:serviceaccount:kube-system:{name}");
    let deployments = controller("deployment-controller");
    let check = |user: &str, verb: &str, group: &str, resource: &str, sub: &str, ns: &str| {
        policy
            .authorize(&Attributes {
                subresource: sub,
                ..Attributes::resource(user, &[], verb, group, resource, ns)
            })
            .is_allowed()
    };
    assert!(check(
        &deployments,
        "update",
        "apps",
        "deployments",
        "status",
        "x"
    ));
    assert!(check(
        &deployments,
        "create",
        "apps",
        "replicasets",
        "",
        "x"
    ));
    assert!(!check(
        &deployments,
        "create",
        "apps",
        "deployments",
        "",
        "x"
    ));
    assert!(check(
        &controller("clusterrole-aggregation-controller"),
        "escalate",
        "rbac.authorization.k8s.io",
        "clusterroles",
        "",
        ""
    ));
    assert!(check(
        &controller("token-cleaner"),
        "delete",
        "",
        "secrets",
        "",
        "kube-system"
    ));
    assert!(!check(
        &controller("token-cleaner"),
        "delete",
        "",
        "secrets",
        "",
        "default"
    ));
    assert!(check(
        &controller("bootstrap-signer"),
        "list",
        "",
        "configmaps",
        "",
        "kube-public"
    ));
    assert!(check(
        "system:kube-controller-manager",
        "watch",
        "apps",
        "deployments",
        "",
        ""
    ));
    assert!(check(
        "system:kube-proxy",
        "watch",
        "discovery.k8s.io",
        "endpointslices",
        "",
        ""
    ));
    assert!(check(
        &controller("kube-dns"),
        "watch",
        "",
        "services",
        "",
        ""
    ));
    // system:node is kept, but bound to nobody.
    assert!(!check("system:node:n1", "get", "", "nodes", "", ""));
}
