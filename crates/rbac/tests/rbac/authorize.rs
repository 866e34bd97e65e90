//! Authorization decisions on the test scenario: one table of requests and their expected
//! outcome, then the reasons given and the effect of watch updates.

use super::*;
use kyb_rbac::{Attributes, Decision};

/// One request: who, what, and whether RBAC allows it.
struct Case {
    what: &'static str,
    user: &'static str,
    groups: &'static [&'static str],
    verb: &'static str,
    api_group: &'static str,
    resource: &'static str,
    subresource: &'static str,
    namespace: &'static str,
    name: &'static str,
    /// A non-resource request when not empty.
    path: &'static str,
    allowed: bool,
}

const AUTHENTICATED: &[&str] = &["system:authenticated"];

const fn request(
    what: &'static str,
    user: &'static str,
    verb: &'static str,
    api_group: &'static str,
    resource: &'static str,
    namespace: &'static str,
    allowed: bool,
) -> Case {
    Case {
        what,
        user,
        groups: AUTHENTICATED,
        verb,
        api_group,
        resource,
        subresource: "",
        namespace,
        name: "",
        path: "",
        allowed,
    }
}

const fn path(
    what: &'static str,
    user: &'static str,
    groups: &'static [&'static str],
    verb: &'static str,
    path: &'static str,
    allowed: bool,
) -> Case {
    Case {
        what,
        user,
        groups,
        verb,
        api_group: "",
        resource: "",
        subresource: "",
        namespace: "",
        name: "",
        path,
        allowed,
    }
}

impl Case {
    const fn sub(mut self, subresource: &'static str) -> Self {
        self.subresource = subresource;
        self
    }
    const fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }
    const fn groups(mut self, groups: &'static [&'static str]) -> Self {
        self.groups = groups;
        self
    }
}

const BUILDER: &str = "system:serviceaccount:team-a:builder";
const OTHER_BUILDER: &str = "system:serviceaccount:team-b:builder";
const DISRUPTION: &str = "system:serviceaccount:kube-system:disruption-controller";
const GC: &str = "system:serviceaccount:kube-system:generic-garbage-collector";
const MASTERS: &[&str] = &["system:masters", "system:authenticated"];
const MONITORING: &[&str] = &["system:monitoring", "system:authenticated"];
const ANONYMOUS: &[&str] = &["system:unauthenticated"];
const SERVICE_ACCOUNTS: &[&str] = &[
    "system:serviceaccounts",
    "system:serviceaccounts:team-a",
    "system:authenticated",
];

/// The table, one request per line.
#[rustfmt::skip]
fn cases() -> Vec<Case> {
    vec![
        // view: read, never write, never secrets.
        request("view gets pods", "vera", "get", "", "pods", "team-a", true),
        request("view lists pods", "vera", "list", "", "pods", "team-a", true),
        request("view watches deployments", "vera", "watch", "apps", "deployments", "team-a", true),
        request("view may not create pods", "vera", "create", "", "pods", "team-a", false),
        request("view may not delete deployments", "vera", "delete", "apps", "deployments", "team-a", false),
        request("view may not read secrets", "vera", "get", "", "secrets", "team-a", false),
        request("view reads pod logs", "vera", "get", "", "pods", "team-a", true).sub("log"),
        request("view may not exec", "vera", "create", "", "pods", "team-a", false).sub("exec"),
        // edit: write in its namespace only.
        request("edit creates pods", "eddie", "create", "", "pods", "team-a", true),
        request("edit execs into pods", "eddie", "create", "", "pods", "team-a", true).sub("exec"),
        request("edit reads secrets", "eddie", "get", "", "secrets", "team-a", true),
        request("edit scales deployments", "eddie", "update", "apps", "deployments", "team-a", true).sub("scale"),
        request("edit may not touch another namespace", "eddie", "create", "", "pods", "team-b", false),
        request("edit may not read another namespace", "eddie", "get", "", "pods", "team-b", false),
        request("a role binding grants nothing cluster-wide", "eddie", "list", "", "pods", "", false),
        request("edit may not write roles", "eddie", "create", "rbac.authorization.k8s.io", "roles", "team-a", false),
        request("edit may not update pod status", "eddie", "update", "", "pods", "team-a", false).sub("status"),
        // admin: edit plus roles and bindings.
        request("admin writes role bindings", "adam", "create", "rbac.authorization.k8s.io", "rolebindings", "team-a", true),
        request("admin may not write cluster roles", "adam", "create", "rbac.authorization.k8s.io", "clusterroles", "", false),
        // cluster-admin through system:masters.
        request("cluster-admin deletes nodes", "root", "delete", "", "nodes", "", true).groups(MASTERS),
        request("cluster-admin uses any verb", "root", "frobnicate", "example.com", "widgets", "x", true).groups(MASTERS),
        path("cluster-admin gets any path", "root", MASTERS, "get", "/logs/anything", true),
        // Service accounts.
        request("a service account in its namespace", BUILDER, "create", "apps", "deployments", "team-a", true).groups(SERVICE_ACCOUNTS),
        request("the same name in another namespace", OTHER_BUILDER, "create", "apps", "deployments", "team-a", false).groups(SERVICE_ACCOUNTS),
        request("a service account's role is namespaced", BUILDER, "create", "apps", "deployments", "team-b", false).groups(SERVICE_ACCOUNTS),
        path("service accounts read OIDC discovery", BUILDER, SERVICE_ACCOUNTS, "get", "/openid/v1/jwks", true),
        request("a controller's cluster role binding", GC, "delete", "apps", "replicasets", "team-z", true),
        request("*/scale matches any resource's scale", DISRUPTION, "get", "apps", "deployments", "team-z", true).sub("scale"),
        request("*/scale does not match the resource", DISRUPTION, "update", "apps", "deployments", "team-z", false).sub("scale"),
        // Non-resource URLs: exact entries and trailing-* prefixes.
        path("discovery under /apis/*", "vera", AUTHENTICATED, "get", "/apis/apps/v1", true),
        path("discovery of /api", "vera", AUTHENTICATED, "get", "/api", true),
        path("no post to discovery", "vera", AUTHENTICATED, "post", "/api", false),
        path("exact /healthz does not grant /healthz/etcd", "vera", AUTHENTICATED, "get", "/healthz/etcd", false),
        path("monitoring gets /healthz/etcd", "prom", MONITORING, "get", "/healthz/etcd", true),
        path("monitoring gets /metrics", "prom", MONITORING, "get", "/metrics", true),
        path("users do not get /metrics", "vera", AUTHENTICATED, "get", "/metrics", false),
        path("anonymous gets /version", "system:anonymous", ANONYMOUS, "get", "/version", true),
        path("anonymous gets /readyz", "system:anonymous", ANONYMOUS, "get", "/readyz", true),
        path("anonymous gets no discovery", "system:anonymous", ANONYMOUS, "get", "/apis", false),
        // Resource names.
        request("the named config map", "nina", "get", "", "configmaps", "team-a", true).named("app-config"),
        request("another config map", "nina", "get", "", "configmaps", "team-a", false).named("db-config"),
        request("a list has no name", "nina", "list", "", "configmaps", "team-a", false),
        request("the name in another namespace", "nina", "get", "", "configmaps", "team-b", false).named("app-config"),
        // Everyone authenticated may review themselves.
        request("self subject access review", "vera", "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", true),
        request("no subject access review", "vera", "create", "authorization.k8s.io", "subjectaccessreviews", "", false),
        // The scheduler's default roles.
        request("the scheduler binds pods", "system:kube-scheduler", "create", "", "pods", "x", true).sub("binding"),
        request("the scheduler updates volumes", "system:kube-scheduler", "update", "", "persistentvolumes", "", true),
        request("the scheduler renews its lease", "system:kube-scheduler", "update", "coordination.k8s.io", "leases", "kube-system", true).named("kube-scheduler"),
        request("but not another lease", "system:kube-scheduler", "update", "coordination.k8s.io", "leases", "kube-system", false).named("kube-controller-manager"),
        // Nobody.
        request("unknown user", "mallory", "get", "", "pods", "team-a", false),
    ]
}

#[test]
fn decision_table() {
    let policy = scenario();
    let mut failures = Vec::new();
    for case in cases() {
        let groups = groups(case.groups);
        let attributes = Attributes {
            user: case.user,
            groups: &groups,
            verb: case.verb,
            namespace: case.namespace,
            api_group: case.api_group,
            resource: case.resource,
            subresource: case.subresource,
            name: case.name,
            path: case.path,
            resource_request: case.path.is_empty(),
        };
        let decision = policy.authorize(&attributes);
        if decision.is_allowed() != case.allowed {
            failures.push(format!(
                "{}: expected allowed={}, got {decision:?}",
                case.what, case.allowed
            ));
        }
        if !case.allowed {
            assert!(
                matches!(decision, Decision::NoOpinion(_)),
                "{}: RBAC never denies",
                case.what
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn allow_reasons_name_the_binding() {
    let policy = scenario();
    let masters = groups(MASTERS);
    let d = policy.authorize(&Attributes::resource(
        "root", &masters, "delete", "", "nodes", "",
    ));
    assert_eq!(
        d,
        Decision::Allow(
            r#"RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters""#.into()
        )
    );
    let authenticated = groups(AUTHENTICATED);
    let d = policy.authorize(&Attributes::resource(
        "vera",
        &authenticated,
        "get",
        "",
        "pods",
        "team-a",
    ));
    assert_eq!(
        d.reason(),
        r#"RBAC: allowed by RoleBinding "viewers/team-a" of ClusterRole "view" to User "vera""#
    );
    let sa = groups(SERVICE_ACCOUNTS);
    let d = policy.authorize(&Attributes::resource(
        BUILDER,
        &sa,
        "create",
        "apps",
        "deployments",
        "team-a",
    ));
    assert_eq!(
        d.reason(),
        r#"RBAC: allowed by RoleBinding "ci/team-a" of Role "deployer" to ServiceAccount "builder/team-a""#
    );
    let d = policy.authorize(&Attributes::resource(GC, &[], "get", "", "pods", "x"));
    assert_eq!(
        d.reason(),
        r#"RBAC: allowed by ClusterRoleBinding "system:controller:generic-garbage-collector" of ClusterRole "system:controller:generic-garbage-collector" to ServiceAccount "generic-garbage-collector/kube-system""#
    );
}

#[test]
fn no_opinion_and_the_forbidden_message() {
    let policy = scenario();
    let authenticated = groups(AUTHENTICATED);
    let attributes = Attributes::resource("vera", &authenticated, "delete", "", "pods", "team-a")
        .with_name("web");
    let decision = policy.authorize(&attributes);
    assert_eq!(decision, Decision::NoOpinion(String::new()));
    assert_eq!(
        attributes.forbidden_message(decision.reason()),
        r#"pods "web" is forbidden: User "vera" cannot delete resource "pods" in API group "" in the namespace "team-a""#
    );
}

#[test]
fn missing_roles_are_reported() {
    let mut policy = scenario();
    policy
        .apply(&role_binding(
            "team-a",
            "broken",
            "ClusterRole",
            "ghost",
            json!([user("vera")]),
        ))
        .unwrap();
    policy
        .apply(&role_binding(
            "team-a",
            "broken2",
            "Role",
            "phantom",
            json!([user("vera")]),
        ))
        .unwrap();
    let authenticated = groups(AUTHENTICATED);
    let attributes = Attributes::resource("vera", &authenticated, "delete", "", "pods", "team-a");
    assert_eq!(
        policy.authorize(&attributes),
        Decision::NoOpinion(
            r#"RBAC: [clusterrole.rbac.authorization.k8s.io "ghost" not found, role.rbac.authorization.k8s.io "phantom" not found]"#.into()
        )
    );
    // What other bindings grant is still granted.
    let attributes = Attributes::resource("vera", &authenticated, "get", "", "pods", "team-a");
    assert!(policy.authorize(&attributes).is_allowed());
}

#[test]
fn watch_updates_take_effect() {
    let mut policy = scenario();
    let authenticated = groups(AUTHENTICATED);
    let get_pods = Attributes::resource("zoe", &authenticated, "get", "", "pods", "team-a");
    assert!(!policy.authorize(&get_pods).is_allowed());

    let binding = role_binding("team-a", "zoe", "ClusterRole", "view", json!([user("zoe")]));
    policy.apply(&binding).unwrap();
    assert!(policy.authorize(&get_pods).is_allowed());

    // Replacing the subjects takes the old ones out of the index.
    policy
        .apply(&role_binding(
            "team-a",
            "zoe",
            "ClusterRole",
            "view",
            json!([user("zed")]),
        ))
        .unwrap();
    assert!(!policy.authorize(&get_pods).is_allowed());
    let zed = Attributes {
        user: "zed",
        ..get_pods
    };
    assert!(policy.authorize(&zed).is_allowed());

    // Tightening the role narrows every binding of it.
    policy
        .apply(&cluster_role(
            "view",
            json!([{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}]),
        ))
        .unwrap();
    assert!(!policy.authorize(&zed).is_allowed());
    assert!(
        policy
            .authorize(&Attributes {
                verb: "list",
                ..zed
            })
            .is_allowed()
    );

    // A broken replacement removes the old binding instead of keeping stale grants.
    let mut broken = role_binding("team-a", "zoe", "ClusterRole", "view", json!([user("zed")]));
    broken["roleRef"] = json!(null);
    assert!(policy.apply(&broken).is_err());
    assert!(
        !policy
            .authorize(&Attributes {
                verb: "list",
                ..zed
            })
            .is_allowed()
    );

    // Deleting.
    policy.apply(&binding).unwrap();
    assert!(
        policy
            .authorize(&Attributes {
                verb: "list",
                ..get_pods
            })
            .is_allowed()
    );
    assert!(policy.delete(&binding));
    assert!(!policy.delete(&binding));
    assert!(
        !policy
            .authorize(&Attributes {
                verb: "list",
                ..get_pods
            })
            .is_allowed()
    );
}

#[test]
fn bad_objects_are_skipped() {
    let mut policy = Policy::new();
    for bad in [
        json!(null),
        json!("text"),
        json!({"kind": "Pod", "metadata": {"name": "x"}}),
        json!({"kind": "Role", "metadata": {"name": "x"}}),
        json!({"kind": "ClusterRole", "metadata": {}}),
        json!({"kind": "ClusterRoleBinding", "metadata": {"name": "x"}, "roleRef": {"kind": 3}}),
        json!({"kind": "RoleBinding", "metadata": {"name": "x", "namespace": "n"}, "roleRef": {"kind": "Role"}}),
    ] {
        assert!(policy.apply(&bad).is_err(), "{bad}");
        assert!(!policy.delete(&bad));
    }
    // Badly typed fields read as empty.
    policy
        .apply(&json!({"kind": "ClusterRole", "metadata": {"name": "odd"},
            "rules": [{"verbs": "get", "apiGroups": [""], "resources": ["pods"]}, 7, null]}))
        .unwrap();
    policy
        .apply(
            &json!({"kind": "ClusterRoleBinding", "metadata": {"name": "odd"},
            "roleRef": {"kind": "ClusterRole", "name": "odd"},
            "subjects": [{"kind": "User", "name": "u"}, {"kind": "User", "name": 5}, "x"]}),
        )
        .unwrap();
    let attributes = Attributes::resource("u", &[], "get", "", "pods", "");
    assert_eq!(
        policy.authorize(&attributes),
        Decision::NoOpinion(String::new())
    );
    assert_eq!(policy.counts().cluster_role_bindings, 1);
}

#[test]
fn service_accounts_without_namespace_in_cluster_bindings_never_match() {
    let mut policy = Policy::new();
    policy
        .apply(&cluster_role(
            "all",
            json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
        ))
        .unwrap();
    policy
        .apply(&cluster_role_binding(
            "b",
            "all",
            json!([{"kind": "ServiceAccount", "name": "default"}]),
        ))
        .unwrap();
    let attributes = Attributes::resource(
        "system:serviceaccount:default:default",
        &[],
        "get",
        "",
        "pods",
        "default",
    );
    assert!(!policy.authorize(&attributes).is_allowed());
    assert_eq!(policy.bindings_examined(attributes.user, &[], "default"), 0);
}
