//! The roles of the built-in controllers of kube-controller-manager (Kubernetes'
//! `bootstrappolicy/controller_policy.go`, 1.33 feature-gate defaults): each controller runs
//! as the service account `kube-system/<name>`, bound to the ClusterRole
//! `system:controller:<name>`.
//!
//! Controllers behind gates that are off by default in 1.33 (resource claims, device taint
//! eviction, volume attributes class protection, storage version garbage collection and
//! migration) are left out; so are their gated rules. The set of controllers is the one a
//! 1.33 cluster lists; the rules of each are those of the 1.30/1.31 sources, which later
//! releases extend in places (more `watch` verbs for informers, fewer in-tree volume
//! plugin permissions).

use super::*;

/// One controller's role: its service account name and its rules.
pub(super) struct ControllerRole {
    pub name: &'static str,
    pub rules: Vec<PolicyRule>,
}

impl ControllerRole {
    fn new(name: &'static str, rules: Vec<PolicyRule>) -> Self {
        Self { name, rules }
    }

    fn role_name(&self) -> String {
        format!("{CONTROLLER_ROLE_PREFIX}{}", self.name)
    }

    pub fn role(&self) -> Value {
        cluster_role(&self.role_name(), self.rules.clone())
    }

    pub fn binding(&self) -> Value {
        cluster_role_binding(
            &self.role_name(),
            vec![service_account("kube-system", self.name)],
        )
    }
}

pub(super) fn controller_roles() -> Vec<ControllerRole> {
    vec![
        ControllerRole::new(
            "attachdetach-controller",
            vec![
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes", "persistentvolumeclaims"]),
                rule(&["get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["nodes/status"]),
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                events_rule(),
                rule(&["get", "create", "delete", "list", "watch"])
                    .groups(&[STORAGE])
                    .resources(&["volumeattachments"]),
                rule(&["get", "watch", "list"])
                    .groups(&[STORAGE])
                    .resources(&["csidrivers"]),
                rule(&["get", "watch", "list"])
                    .groups(&[STORAGE])
                    .resources(&["csinodes"]),
            ],
        ),
        ControllerRole::new(
            "clusterrole-aggregation-controller",
            // Full power over cluster roles, so that it may write any aggregate.
            vec![
                rule(&["escalate", "get", "list", "watch", "update", "patch"])
                    .groups(&["rbac.authorization.k8s.io"])
                    .resources(&["clusterroles"]),
            ],
        ),
        ControllerRole::new(
            "cronjob-controller",
            vec![
                rule(&["get", "list", "watch", "update"])
                    .groups(&[BATCH])
                    .resources(&["cronjobs"]),
                rule(&[
                    "get", "list", "watch", "create", "update", "delete", "patch",
                ])
                .groups(&[BATCH])
                .resources(&["jobs"]),
                rule(&["update"])
                    .groups(&[BATCH])
                    .resources(&["cronjobs/status"]),
                rule(&["update"])
                    .groups(&[BATCH])
                    .resources(&["cronjobs/finalizers"]),
                rule(&["list", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "daemon-set-controller",
            vec![
                rule(READ)
                    .groups(&[EXTENSIONS, APPS])
                    .resources(&["daemonsets"]),
                rule(&["update"])
                    .groups(&[EXTENSIONS, APPS])
                    .resources(&["daemonsets/status"]),
                rule(&["update"])
                    .groups(&[EXTENSIONS, APPS])
                    .resources(&["daemonsets/finalizers"]),
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                rule(&["list", "watch", "create", "delete", "patch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["pods/binding"]),
                rule(&[
                    "get", "list", "watch", "create", "delete", "update", "patch",
                ])
                .groups(&[APPS])
                .resources(&["controllerrevisions"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "deployment-controller",
            vec![
                rule(&["get", "list", "watch", "update"])
                    .groups(&[EXTENSIONS, APPS])
                    .resources(&["deployments"]),
                rule(&["update"])
                    .groups(&[EXTENSIONS, APPS])
                    .resources(&["deployments/status"]),
                rule(&["update"])
                    .groups(&[EXTENSIONS, APPS])
                    .resources(&["deployments/finalizers"]),
                rule(&[
                    "get", "list", "watch", "create", "update", "patch", "delete",
                ])
                .groups(&[APPS, EXTENSIONS])
                .resources(&["replicasets"]),
                rule(&["get", "list", "watch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "disruption-controller",
            vec![
                rule(READ)
                    .groups(&[EXTENSIONS, APPS])
                    .resources(&["deployments"]),
                rule(READ)
                    .groups(&[APPS, EXTENSIONS])
                    .resources(&["replicasets"]),
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["replicationcontrollers"]),
                rule(READ)
                    .groups(&[POLICY])
                    .resources(&["poddisruptionbudgets"]),
                rule(READ).groups(&[APPS]).resources(&["statefulsets"]),
                rule(&["update"])
                    .groups(&[POLICY])
                    .resources(&["poddisruptionbudgets/status"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["pods/status"]),
                rule(&["get"]).groups(&["*"]).resources(&["*/scale"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "endpoint-controller",
            vec![
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["services", "pods"]),
                rule(&["get", "list", "create", "update", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["endpoints"]),
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["endpoints/restricted"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "endpointslice-controller",
            vec![
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["services", "pods", "nodes"]),
                // Setting the service's finalizers lets it own the slices with
                // blockOwnerDeletion.
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["services/finalizers"]),
                rule(&["get", "list", "create", "update", "delete"])
                    .groups(&[DISCOVERY])
                    .resources(&["endpointslices"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "endpointslicemirroring-controller",
            vec![
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["services", "endpoints"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["services/finalizers"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["endpoints/finalizers"]),
                rule(&["get", "list", "create", "update", "delete"])
                    .groups(&[DISCOVERY])
                    .resources(&["endpointslices"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "expand-controller",
            vec![
                rule(&["get", "list", "watch", "update", "patch"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes"]),
                rule(&["update", "patch"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims/status"]),
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                rule(READ).groups(&[STORAGE]).resources(&["storageclasses"]),
                rule(&["get"])
                    .groups(&[LEGACY])
                    .resources(&["services", "endpoints"]),
                rule(&["get"]).groups(&[LEGACY]).resources(&["secrets"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "ephemeral-volume-controller",
            vec![
                rule(READ).groups(&[LEGACY]).resources(&["pods"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["pods/finalizers"]),
                rule(&["get", "list", "watch", "create"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "generic-garbage-collector",
            // List, watch, read, update and delete anything that has owners.
            vec![
                rule(&["get", "list", "watch", "patch", "update", "delete"])
                    .groups(&["*"])
                    .resources(&["*"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "horizontal-pod-autoscaler",
            vec![
                rule(READ)
                    .groups(&[AUTOSCALING])
                    .resources(&["horizontalpodautoscalers"]),
                rule(&["update"])
                    .groups(&[AUTOSCALING])
                    .resources(&["horizontalpodautoscalers/status"]),
                rule(&["get", "update"])
                    .groups(&["*"])
                    .resources(&["*/scale"]),
                rule(&["list"]).groups(&[LEGACY]).resources(&["pods"]),
                // Resource, custom and external metrics.
                rule(&["list"])
                    .groups(&["metrics.k8s.io"])
                    .resources(&["pods"]),
                rule(&["get", "list"])
                    .groups(&["custom.metrics.k8s.io"])
                    .resources(&["*"]),
                rule(&["get", "list"])
                    .groups(&["external.metrics.k8s.io"])
                    .resources(&["*"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "job-controller",
            vec![
                rule(&["get", "list", "watch", "update", "patch"])
                    .groups(&[BATCH])
                    .resources(&["jobs"]),
                rule(&["update"])
                    .groups(&[BATCH])
                    .resources(&["jobs/status"]),
                rule(&["update"])
                    .groups(&[BATCH])
                    .resources(&["jobs/finalizers"]),
                rule(&["list", "watch", "create", "delete", "patch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "namespace-controller",
            vec![
                rule(&["get", "list", "watch", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["namespaces"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["namespaces/finalize", "namespaces/status"]),
                rule(&["get", "list", "delete", "deletecollection"])
                    .groups(&["*"])
                    .resources(&["*"]),
            ],
        ),
        ControllerRole::new(
            "node-controller",
            vec![
                rule(&["get", "list", "update", "delete", "patch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["nodes/status"]),
                // Marking and deleting the pods of lost nodes.
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["pods/status"]),
                rule(&["list", "get", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "persistent-volume-binder",
            vec![
                rule(&["get", "list", "watch", "update", "create", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes/status"]),
                rule(&["get", "list", "watch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims/status"]),
                rule(&["list", "watch", "get", "create", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                rule(READ).groups(&[STORAGE]).resources(&["storageclasses"]),
                rule(&["get", "create", "update", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["endpoints"]),
                rule(&["get", "create", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["services"]),
                rule(&["get"]).groups(&[LEGACY]).resources(&["secrets"]),
                rule(&["get", "list"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                // The recycler watches its pod's events.
                rule(&["watch"]).groups(&[LEGACY]).resources(&["events"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "pod-garbage-collector",
            vec![
                rule(&["list", "watch", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                rule(&["get", "list"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                rule(&["patch"])
                    .groups(&[LEGACY])
                    .resources(&["pods/status"]),
            ],
        ),
        ControllerRole::new(
            "replicaset-controller",
            vec![
                rule(&["get", "list", "watch", "update"])
                    .groups(&[APPS, EXTENSIONS])
                    .resources(&["replicasets"]),
                rule(&["update"])
                    .groups(&[APPS, EXTENSIONS])
                    .resources(&["replicasets/status"]),
                rule(&["update"])
                    .groups(&[APPS, EXTENSIONS])
                    .resources(&["replicasets/finalizers"]),
                rule(&["list", "watch", "patch", "create", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "replication-controller",
            vec![
                rule(&["get", "list", "watch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["replicationcontrollers"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["replicationcontrollers/status"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["replicationcontrollers/finalizers"]),
                rule(&["list", "watch", "patch", "create", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "resourcequota-controller",
            vec![
                // Quota may count anything.
                rule(&["list", "watch"]).groups(&["*"]).resources(&["*"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["resourcequotas/status"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "route-controller",
            vec![
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                rule(&["patch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes/status"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "selinux-warning-controller",
            vec![
                events_rule(),
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes"]),
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                rule(READ).groups(&[LEGACY]).resources(&["pods"]),
                rule(READ).groups(&[STORAGE]).resources(&["csidrivers"]),
            ],
        ),
        ControllerRole::new(
            "service-account-controller",
            vec![
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["serviceaccounts"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "service-cidrs-controller",
            vec![
                rule(&["get", "list", "watch", "patch", "update"])
                    .groups(&[NETWORKING])
                    .resources(&["servicecidrs"]),
                rule(&["patch", "update"])
                    .groups(&[NETWORKING])
                    .resources(&["servicecidrs/finalizers"]),
                rule(&["patch", "update"])
                    .groups(&[NETWORKING])
                    .resources(&["servicecidrs/status"]),
                rule(READ).groups(&[NETWORKING]).resources(&["ipaddresses"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "service-controller",
            vec![
                rule(READ).groups(&[LEGACY]).resources(&["services"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["services/status"]),
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "statefulset-controller",
            vec![
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                rule(READ).groups(&[APPS]).resources(&["statefulsets"]),
                rule(&["update"])
                    .groups(&[APPS])
                    .resources(&["statefulsets/status"]),
                rule(&["update"])
                    .groups(&[APPS])
                    .resources(&["statefulsets/finalizers"]),
                rule(&["get", "create", "delete", "update", "patch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                rule(&[
                    "get", "create", "delete", "update", "patch", "list", "watch",
                ])
                .groups(&[APPS])
                .resources(&["controllerrevisions"]),
                rule(&["get", "create"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                events_rule(),
                // StatefulSetAutoDeletePVC, GA in 1.32.
                rule(&["update", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
            ],
        ),
        ControllerRole::new(
            "ttl-controller",
            vec![
                rule(&["update", "patch", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "certificate-controller",
            vec![
                rule(&["get", "list", "watch", "delete"])
                    .groups(&[CERTIFICATES])
                    .resources(&["certificatesigningrequests"]),
                rule(&["update"]).groups(&[CERTIFICATES]).resources(&[
                    "certificatesigningrequests/status",
                    "certificatesigningrequests/approval",
                ]),
                // Kybernetes also approves nodes' own serving certificates.
                rule(&["approve"])
                    .groups(&[CERTIFICATES])
                    .resources(&["signers"])
                    .names(&[
                        "kubernetes.io/kube-apiserver-client-kubelet",
                        "kubernetes.io/kubelet-serving",
                    ]),
                rule(&["sign"])
                    .groups(&[CERTIFICATES])
                    .resources(&["signers"])
                    .names(&[
                        "kubernetes.io/legacy-unknown",
                        "kubernetes.io/kube-apiserver-client",
                        "kubernetes.io/kube-apiserver-client-kubelet",
                        "kubernetes.io/kubelet-serving",
                    ]),
                rule(&["create"])
                    .groups(&[AUTHORIZATION])
                    .resources(&["subjectaccessreviews"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "pvc-protection-controller",
            vec![
                rule(&["get", "list", "watch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                rule(&["list", "watch", "get"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "pv-protection-controller",
            vec![
                rule(&["get", "list", "watch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "ttl-after-finished-controller",
            vec![
                rule(&["get", "list", "watch", "delete"])
                    .groups(&[BATCH])
                    .resources(&["jobs"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "root-ca-cert-publisher",
            vec![
                rule(&["create", "update"])
                    .groups(&[LEGACY])
                    .resources(&["configmaps"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "validatingadmissionpolicy-status-controller",
            vec![
                rule(READ)
                    .groups(&[ADMISSION_REGISTRATION])
                    .resources(&["validatingadmissionpolicies"]),
                rule(&["get", "patch", "update"])
                    .groups(&[ADMISSION_REGISTRATION])
                    .resources(&["validatingadmissionpolicies/status"]),
                events_rule(),
            ],
        ),
        ControllerRole::new(
            "legacy-service-account-token-cleaner",
            vec![
                rule(&["get"])
                    .groups(&[LEGACY])
                    .resources(&["configmaps"])
                    .names(&["kube-apiserver-legacy-service-account-token-tracking"]),
                rule(&["patch", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["secrets"]),
            ],
        ),
    ]
}
