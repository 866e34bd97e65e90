//! The general default ClusterRoles and their ClusterRoleBindings (Kubernetes'
//! `bootstrappolicy/policy.go`, 1.33 feature-gate defaults).

use super::*;

const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

/// The rules of `system:node`: what a kubelet needs before the Node authorizer and the
/// NodeRestriction admission plugin narrow it to its own node.
fn node_rules() -> Vec<PolicyRule> {
    vec![
        rule(&["create"])
            .groups(&[AUTHENTICATION])
            .resources(&["tokenreviews"]),
        rule(&["create"])
            .groups(&[AUTHORIZATION])
            .resources(&["subjectaccessreviews", "localsubjectaccessreviews"]),
        rule(READ).groups(&[LEGACY]).resources(&["services"]),
        rule(&["create", "get", "list", "watch"])
            .groups(&[LEGACY])
            .resources(&["nodes"]),
        rule(&["update", "patch"])
            .groups(&[LEGACY])
            .resources(&["nodes/status"]),
        rule(&["update", "patch"])
            .groups(&[LEGACY])
            .resources(&["nodes"]),
        rule(&["create", "update", "patch"])
            .groups(&[LEGACY])
            .resources(&["events"]),
        rule(READ).groups(&[LEGACY]).resources(&["pods"]),
        rule(&["create", "delete"])
            .groups(&[LEGACY])
            .resources(&["pods"]),
        rule(&["update", "patch"])
            .groups(&[LEGACY])
            .resources(&["pods/status"]),
        rule(&["create"])
            .groups(&[LEGACY])
            .resources(&["pods/eviction"]),
        rule(&["get", "list", "watch"])
            .groups(&[LEGACY])
            .resources(&["secrets", "configmaps"]),
        rule(&["get"])
            .groups(&[LEGACY])
            .resources(&["persistentvolumeclaims", "persistentvolumes"]),
        rule(&["get"]).groups(&[LEGACY]).resources(&["endpoints"]),
        rule(&["create", "get", "list", "watch"])
            .groups(&[CERTIFICATES])
            .resources(&["certificatesigningrequests"]),
        rule(&["get", "create", "update", "patch", "delete"])
            .groups(&[COORDINATION])
            .resources(&["leases"]),
        rule(&["get"])
            .groups(&[STORAGE])
            .resources(&["volumeattachments"]),
        rule(&["create"])
            .groups(&[LEGACY])
            .resources(&["serviceaccounts/token"]),
        rule(&["get", "update", "patch"])
            .groups(&[LEGACY])
            .resources(&["persistentvolumeclaims/status"]),
        rule(&["get", "watch", "list"])
            .groups(&[STORAGE])
            .resources(&["csidrivers"]),
        rule(&["get", "create", "update", "patch", "delete"])
            .groups(&[STORAGE])
            .resources(&["csinodes"]),
        rule(&["get", "list", "watch"])
            .groups(&["node.k8s.io"])
            .resources(&["runtimeclasses"]),
    ]
}

fn aggregate_to_edit_rules() -> Vec<PolicyRule> {
    vec![
        // Read access to resources that can be used to escalate.
        rule(READ).groups(&[LEGACY]).resources(&[
            "pods/attach",
            "pods/proxy",
            "pods/exec",
            "pods/portforward",
            "secrets",
            "services/proxy",
        ]),
        rule(&["impersonate"])
            .groups(&[LEGACY])
            .resources(&["serviceaccounts"]),
        rule(WRITE).groups(&[LEGACY]).resources(&[
            "pods",
            "pods/attach",
            "pods/proxy",
            "pods/exec",
            "pods/portforward",
        ]),
        rule(&["create"])
            .groups(&[LEGACY])
            .resources(&["pods/eviction"]),
        rule(WRITE).groups(&[LEGACY]).resources(&[
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/proxy",
            "persistentvolumeclaims",
            "configmaps",
            "secrets",
            "events",
        ]),
        rule(&["create"])
            .groups(&[LEGACY])
            .resources(&["serviceaccounts/token"]),
        rule(WRITE).groups(&[APPS]).resources(&[
            "statefulsets",
            "statefulsets/scale",
            "daemonsets",
            "deployments",
            "deployments/scale",
            "deployments/rollback",
            "replicasets",
            "replicasets/scale",
        ]),
        rule(WRITE)
            .groups(&[AUTOSCALING])
            .resources(&["horizontalpodautoscalers"]),
        rule(WRITE)
            .groups(&[BATCH])
            .resources(&["jobs", "cronjobs"]),
        rule(WRITE).groups(&[EXTENSIONS]).resources(&[
            "daemonsets",
            "deployments",
            "deployments/scale",
            "deployments/rollback",
            "ingresses",
            "replicasets",
            "replicasets/scale",
            "replicationcontrollers/scale",
            "networkpolicies",
        ]),
        rule(WRITE)
            .groups(&[POLICY])
            .resources(&["poddisruptionbudgets"]),
        rule(WRITE)
            .groups(&[NETWORKING])
            .resources(&["networkpolicies", "ingresses"]),
        rule(READ_WRITE)
            .groups(&[COORDINATION])
            .resources(&["leases"]),
    ]
}

fn aggregate_to_view_rules() -> Vec<PolicyRule> {
    vec![
        rule(READ).groups(&[LEGACY]).resources(&[
            "pods",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "configmaps",
        ]),
        rule(READ).groups(&[LEGACY]).resources(&[
            "limitranges",
            "resourcequotas",
            "bindings",
            "events",
            "pods/status",
            "resourcequotas/status",
            "namespaces/status",
            "replicationcontrollers/status",
            "pods/log",
        ]),
        // Reading namespaces at namespace scope reads only that namespace: a way to see
        // which namespaces one has access to.
        rule(READ).groups(&[LEGACY]).resources(&["namespaces"]),
        rule(READ)
            .groups(&[DISCOVERY])
            .resources(&["endpointslices"]),
        rule(READ).groups(&[APPS]).resources(&[
            "controllerrevisions",
            "statefulsets",
            "statefulsets/status",
            "statefulsets/scale",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/status",
            "deployments/scale",
            "replicasets",
            "replicasets/status",
            "replicasets/scale",
        ]),
        rule(READ).groups(&[AUTOSCALING]).resources(&[
            "horizontalpodautoscalers",
            "horizontalpodautoscalers/status",
        ]),
        rule(READ).groups(&[BATCH]).resources(&[
            "jobs",
            "cronjobs",
            "cronjobs/status",
            "jobs/status",
        ]),
        rule(READ).groups(&[EXTENSIONS]).resources(&[
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "ingresses",
            "ingresses/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "replicationcontrollers/scale",
            "networkpolicies",
        ]),
        rule(READ)
            .groups(&[POLICY])
            .resources(&["poddisruptionbudgets", "poddisruptionbudgets/status"]),
        rule(READ).groups(&[NETWORKING]).resources(&[
            "networkpolicies",
            "ingresses",
            "ingresses/status",
        ]),
    ]
}

fn kube_scheduler_rules() -> Vec<PolicyRule> {
    vec![
        events_rule(),
        // Leader election.
        rule(&["create"])
            .groups(&[COORDINATION])
            .resources(&["leases"]),
        rule(&["get", "update"])
            .groups(&[COORDINATION])
            .resources(&["leases"])
            .names(&["kube-scheduler"]),
        // Fundamental resources.
        rule(READ).groups(&[LEGACY]).resources(&["nodes"]),
        rule(&["get", "list", "watch", "delete"])
            .groups(&[LEGACY])
            .resources(&["pods"]),
        rule(&["create"])
            .groups(&[LEGACY])
            .resources(&["pods/binding", "bindings"]),
        rule(&["patch", "update"])
            .groups(&[LEGACY])
            .resources(&["pods/status"]),
        // What selects pods.
        rule(READ)
            .groups(&[LEGACY])
            .resources(&["services", "replicationcontrollers"]),
        rule(READ)
            .groups(&[APPS, EXTENSIONS])
            .resources(&["replicasets"]),
        rule(READ).groups(&[APPS]).resources(&["statefulsets"]),
        // What pods use or what applies to them.
        rule(READ)
            .groups(&[POLICY])
            .resources(&["poddisruptionbudgets"]),
        rule(READ)
            .groups(&[LEGACY])
            .resources(&["persistentvolumeclaims", "persistentvolumes"]),
        rule(&["create"])
            .groups(&[AUTHENTICATION])
            .resources(&["tokenreviews"]),
        rule(&["create"])
            .groups(&[AUTHORIZATION])
            .resources(&["subjectaccessreviews"]),
        rule(READ).groups(&[STORAGE]).resources(&["csinodes"]),
        rule(READ).groups(&[LEGACY]).resources(&["namespaces"]),
        rule(READ).groups(&[STORAGE]).resources(&["csidrivers"]),
        rule(READ)
            .groups(&[STORAGE])
            .resources(&["csistoragecapacities"]),
        // Gangs and elastic quotas (coscheduling, capacity scheduling).
        rule(READ)
            .groups(&["scheduling.x-k8s.io"])
            .resources(&["podgroups", "elasticquotas"]),
    ]
}

fn signer_approver(name: &str, signer: &str) -> Value {
    cluster_role(
        name,
        vec![
            rule(&["approve"])
                .groups(&[CERTIFICATES])
                .resources(&["signers"])
                .names(&[signer]),
        ],
    )
}

pub(super) fn cluster_roles() -> Vec<Value> {
    vec![
        cluster_role(
            "cluster-admin",
            vec![
                rule(&["*"]).groups(&["*"]).resources(&["*"]),
                rule(&["*"]).urls(&["*"]),
            ],
        ),
        cluster_role(
            "system:discovery",
            vec![rule(&["get"]).urls(&[
                "/livez",
                "/readyz",
                "/healthz",
                "/version",
                "/version/",
                "/openapi",
                "/openapi/*",
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
            ])],
        ),
        cluster_role(
            "system:monitoring",
            vec![rule(&["get"]).urls(&[
                "/metrics",
                "/metrics/slis",
                "/livez",
                "/readyz",
                "/healthz",
                "/livez/*",
                "/readyz/*",
                "/healthz/*",
            ])],
        ),
        cluster_role(
            "system:basic-user",
            vec![
                rule(&["create"])
                    .groups(&[AUTHORIZATION])
                    .resources(&["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
                rule(&["create"])
                    .groups(&[AUTHENTICATION])
                    .resources(&["selfsubjectreviews"]),
            ],
        ),
        cluster_role(
            "system:public-info-viewer",
            vec![rule(&["get"]).urls(&["/livez", "/readyz", "/healthz", "/version", "/version/"])],
        ),
        aggregated_cluster_role("admin", &[], AGGREGATE_TO_ADMIN),
        aggregated_cluster_role("edit", &[(AGGREGATE_TO_ADMIN, "true")], AGGREGATE_TO_EDIT),
        aggregated_cluster_role("view", &[(AGGREGATE_TO_EDIT, "true")], AGGREGATE_TO_VIEW),
        cluster_role_with_labels(
            "system:aggregate-to-admin",
            &[(AGGREGATE_TO_ADMIN, "true")],
            vec![
                rule(&["create"])
                    .groups(&[AUTHORIZATION])
                    .resources(&["localsubjectaccessreviews"]),
                rule(READ_WRITE)
                    .groups(&["rbac.authorization.k8s.io"])
                    .resources(&["roles", "rolebindings"]),
            ],
        ),
        cluster_role_with_labels(
            "system:aggregate-to-edit",
            &[(AGGREGATE_TO_EDIT, "true")],
            aggregate_to_edit_rules(),
        ),
        cluster_role_with_labels(
            "system:aggregate-to-view",
            &[(AGGREGATE_TO_VIEW, "true")],
            aggregate_to_view_rules(),
        ),
        cluster_role(
            "system:heapster",
            vec![
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["events", "pods", "nodes", "namespaces"]),
                rule(READ).groups(&[EXTENSIONS]).resources(&["deployments"]),
            ],
        ),
        cluster_role("system:node", node_rules()),
        cluster_role(
            "system:node-problem-detector",
            vec![
                rule(&["get"]).groups(&[LEGACY]).resources(&["nodes"]),
                rule(&["patch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes/status"]),
                events_rule(),
            ],
        ),
        cluster_role(
            "system:kubelet-api-admin",
            vec![
                rule(&["get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                rule(&["proxy"]).groups(&[LEGACY]).resources(&["nodes"]),
                rule(&["*"]).groups(&[LEGACY]).resources(&[
                    "nodes/proxy",
                    "nodes/metrics",
                    "nodes/stats",
                    "nodes/log",
                ]),
            ],
        ),
        cluster_role(
            "system:node-bootstrapper",
            vec![
                rule(&["create", "get", "list", "watch"])
                    .groups(&[CERTIFICATES])
                    .resources(&["certificatesigningrequests"]),
            ],
        ),
        cluster_role(
            "system:auth-delegator",
            vec![
                rule(&["create"])
                    .groups(&[AUTHENTICATION])
                    .resources(&["tokenreviews"]),
                rule(&["create"])
                    .groups(&[AUTHORIZATION])
                    .resources(&["subjectaccessreviews"]),
            ],
        ),
        cluster_role(
            "system:kube-aggregator",
            vec![
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["services", "endpoints"]),
            ],
        ),
        cluster_role(
            "system:kube-controller-manager",
            vec![
                events_rule(),
                // Leader election.
                rule(&["create"])
                    .groups(&[COORDINATION])
                    .resources(&["leases"]),
                rule(&["get", "update"])
                    .groups(&[COORDINATION])
                    .resources(&["leases"])
                    .names(&["kube-controller-manager"]),
                // What it needs to create the controllers' own identities.
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["secrets", "serviceaccounts"]),
                rule(&["delete"]).groups(&[LEGACY]).resources(&["secrets"]),
                rule(&["get"]).groups(&[LEGACY]).resources(&[
                    "namespaces",
                    "secrets",
                    "serviceaccounts",
                    "configmaps",
                ]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["secrets", "serviceaccounts"]),
                rule(&["create"])
                    .groups(&[AUTHENTICATION])
                    .resources(&["tokenreviews"]),
                rule(&["create"])
                    .groups(&[AUTHORIZATION])
                    .resources(&["subjectaccessreviews"]),
                // Every shared informer.
                rule(&["list", "watch"]).groups(&["*"]).resources(&["*"]),
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["serviceaccounts/token"]),
            ],
        ),
        cluster_role(
            "system:kube-dns",
            vec![
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["endpoints", "services"]),
            ],
        ),
        cluster_role(
            "system:persistent-volume-provisioner",
            vec![
                rule(&["get", "list", "watch", "create", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes"]),
                rule(&["get", "list", "watch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                rule(READ).groups(&[STORAGE]).resources(&["storageclasses"]),
                rule(&["watch"]).groups(&[LEGACY]).resources(&["events"]),
                events_rule(),
            ],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            vec![
                rule(&["create"])
                    .groups(&[CERTIFICATES])
                    .resources(&["certificatesigningrequests/nodeclient"]),
            ],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            vec![
                rule(&["create"])
                    .groups(&[CERTIFICATES])
                    .resources(&["certificatesigningrequests/selfnodeclient"]),
            ],
        ),
        cluster_role(
            "system:volume-scheduler",
            vec![
                rule(READ_UPDATE)
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes"]),
                rule(READ).groups(&[STORAGE]).resources(&["storageclasses"]),
                rule(READ_UPDATE)
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
            ],
        ),
        signer_approver(
            "system:certificates.k8s.io:legacy-unknown-approver",
            "kubernetes.io/legacy-unknown",
        ),
        signer_approver(
            "system:certificates.k8s.io:kubelet-serving-approver",
            "kubernetes.io/kubelet-serving",
        ),
        signer_approver(
            "system:certificates.k8s.io:kube-apiserver-client-approver",
            "kubernetes.io/kube-apiserver-client",
        ),
        signer_approver(
            "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
            "kubernetes.io/kube-apiserver-client-kubelet",
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            vec![rule(&["get"]).urls(&[
                "/.well-known/openid-configuration",
                "/.well-known/openid-configuration/",
                "/openid/v1/jwks",
                "/openid/v1/jwks/",
            ])],
        ),
        cluster_role(
            "system:node-proxier",
            vec![
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["services", "endpoints"]),
                rule(&["get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                events_rule(),
                // MultiCIDRServiceAllocator is enabled by default (GA) in 1.33.
                rule(&["list", "watch"])
                    .groups(&[NETWORKING])
                    .resources(&["servicecidrs"]),
                rule(&["list", "watch"])
                    .groups(&[DISCOVERY])
                    .resources(&["endpointslices"]),
            ],
        ),
        cluster_role("system:kube-scheduler", kube_scheduler_rules()),
    ]
}

pub(super) fn cluster_role_bindings() -> Vec<Value> {
    vec![
        cluster_role_binding("cluster-admin", vec![group("system:masters")]),
        cluster_role_binding("system:monitoring", vec![group("system:monitoring")]),
        cluster_role_binding("system:discovery", vec![group("system:authenticated")]),
        cluster_role_binding("system:basic-user", vec![group("system:authenticated")]),
        cluster_role_binding(
            "system:public-info-viewer",
            vec![
                group("system:authenticated"),
                group("system:unauthenticated"),
            ],
        ),
        cluster_role_binding("system:node-proxier", vec![user("system:kube-proxy")]),
        cluster_role_binding(
            "system:kube-controller-manager",
            vec![user("system:kube-controller-manager")],
        ),
        cluster_role_binding(
            "system:kube-dns",
            vec![service_account("kube-system", "kube-dns")],
        ),
        cluster_role_binding("system:kube-scheduler", vec![user("system:kube-scheduler")]),
        cluster_role_binding(
            "system:volume-scheduler",
            vec![user("system:kube-scheduler")],
        ),
        // Kept without subjects since the Node authorizer replaced it (1.7), so that
        // reconciliation removes any subjects left from older clusters.
        cluster_role_binding("system:node", vec![]),
        cluster_role_binding(
            "system:service-account-issuer-discovery",
            vec![group("system:serviceaccounts")],
        ),
    ]
}
