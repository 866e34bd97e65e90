//! The default Roles and RoleBindings of `kube-system` and `kube-public` (Kubernetes'
//! `bootstrappolicy/namespace_policy.go`): leader election locks, the authentication
//! configuration readers, and the bootstrap token signer and cleaner.

use super::*;

const KUBE_SYSTEM: &str = "kube-system";
const KUBE_PUBLIC: &str = "kube-public";

pub(super) fn roles() -> Vec<Value> {
    vec![
        role(
            KUBE_SYSTEM,
            "extension-apiserver-authentication-reader",
            vec![
                rule(&["get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["configmaps"])
                    .names(&["extension-apiserver-authentication"]),
            ],
        ),
        role(
            KUBE_SYSTEM,
            "system:controller:bootstrap-signer",
            vec![rule(READ).groups(&[LEGACY]).resources(&["secrets"])],
        ),
        role(
            KUBE_SYSTEM,
            "system:controller:cloud-provider",
            vec![
                rule(&["create", "get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["configmaps"]),
            ],
        ),
        role(
            KUBE_SYSTEM,
            "system:controller:token-cleaner",
            vec![
                rule(&["get", "list", "watch", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["secrets"]),
                events_rule(),
            ],
        ),
        role(
            KUBE_SYSTEM,
            "system::leader-locking-kube-controller-manager",
            vec![
                rule(&["watch"])
                    .groups(&[LEGACY])
                    .resources(&["configmaps"]),
                rule(&["get", "update"])
                    .groups(&[LEGACY])
                    .resources(&["configmaps"])
                    .names(&["kube-controller-manager"]),
                rule(&["get", "watch", "list", "create", "update"])
                    .groups(&[COORDINATION])
                    .resources(&["leases"]),
            ],
        ),
        role(
            KUBE_SYSTEM,
            "system::leader-locking-kube-scheduler",
            vec![
                rule(&["watch"])
                    .groups(&[LEGACY])
                    .resources(&["configmaps"]),
                rule(&["get", "update"])
                    .groups(&[LEGACY])
                    .resources(&["configmaps"])
                    .names(&["kube-scheduler"]),
            ],
        ),
        role(
            KUBE_PUBLIC,
            "system:controller:bootstrap-signer",
            vec![
                rule(READ).groups(&[LEGACY]).resources(&["configmaps"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["configmaps"])
                    .names(&["cluster-info"]),
                events_rule(),
            ],
        ),
    ]
}

pub(super) fn role_bindings() -> Vec<Value> {
    vec![
        role_binding(
            KUBE_SYSTEM,
            "system::extension-apiserver-authentication-reader",
            "extension-apiserver-authentication-reader",
            vec![
                user("system:kube-controller-manager"),
                user("system:kube-scheduler"),
            ],
        ),
        role_binding(
            KUBE_SYSTEM,
            "system::leader-locking-kube-controller-manager",
            "system::leader-locking-kube-controller-manager",
            vec![
                user("system:kube-controller-manager"),
                service_account(KUBE_SYSTEM, "kube-controller-manager"),
                service_account(KUBE_SYSTEM, "leader-election-controller"),
            ],
        ),
        role_binding(
            KUBE_SYSTEM,
            "system::leader-locking-kube-scheduler",
            "system::leader-locking-kube-scheduler",
            vec![
                user("system:kube-scheduler"),
                service_account(KUBE_SYSTEM, "kube-scheduler"),
            ],
        ),
        role_binding(
            KUBE_SYSTEM,
            "system:controller:bootstrap-signer",
            "system:controller:bootstrap-signer",
            vec![service_account(KUBE_SYSTEM, "bootstrap-signer")],
        ),
        role_binding(
            KUBE_SYSTEM,
            "system:controller:cloud-provider",
            "system:controller:cloud-provider",
            vec![service_account(KUBE_SYSTEM, "cloud-provider")],
        ),
        role_binding(
            KUBE_SYSTEM,
            "system:controller:token-cleaner",
            "system:controller:token-cleaner",
            vec![service_account(KUBE_SYSTEM, "token-cleaner")],
        ),
        role_binding(
            KUBE_PUBLIC,
            "system:controller:bootstrap-signer",
            "system:controller:bootstrap-signer",
            vec![service_account(KUBE_SYSTEM, "bootstrap-signer")],
        ),
    ]
}
