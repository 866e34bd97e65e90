//! Who may do what, asked the way users ask: `kubectl auth can-i` (with `--as` and
//! `--list`), `kubectl auth whoami`, SubjectAccessReviews, impersonation, and per-user
//! kubeconfigs with their own client certificates.

use crate::cluster::Cluster;
use serde_json::Value;
use std::process::Output;

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `kubectl auth can-i` as the admin: its answer and whether it exited 0.
fn can_i(cluster: &Cluster, args: &[&str]) -> (String, bool) {
    let mut all = vec!["auth", "can-i"];
    all.extend_from_slice(args);
    let output = cluster.kubectl(&all);
    (
        String::from_utf8_lossy(&output.stdout).trim().to_string(),
        output.status.success(),
    )
}

#[test]
fn can_i_answers_for_users_groups_and_impersonation() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "namespace", "team"]);
    cluster.kubectl_ok(&[
        "create",
        "rolebinding",
        "vera-view",
        "--clusterrole=view",
        "--user=vera",
        "-n",
        "team",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "auditors-view",
        "--clusterrole=view",
        "--group=auditors",
    ]);

    assert_eq!(can_i(&cluster, &["create", "pods"]), ("yes".into(), true));
    // The admin asks on vera's behalf (impersonation).
    assert_eq!(
        can_i(&cluster, &["list", "pods", "-n", "team", "--as", "vera"]),
        ("yes".into(), true)
    );
    assert_eq!(
        can_i(&cluster, &["create", "pods", "-n", "team", "--as", "vera"]),
        ("no".into(), false)
    );
    assert_eq!(
        can_i(&cluster, &["list", "pods", "-n", "default", "--as", "vera"]),
        ("no".into(), false)
    );
    assert_eq!(
        can_i(
            &cluster,
            &[
                "list",
                "deployments.apps",
                "-A",
                "--as",
                "sam",
                "--as-group",
                "auditors"
            ]
        ),
        ("yes".into(), true)
    );
    assert_eq!(
        can_i(&cluster, &["get", "secrets", "-n", "team", "--as", "vera"]),
        ("no".into(), false),
        "view does not read secrets"
    );

    // vera with her own certificate.
    let vera = cluster.user_kubeconfig("vera", &["developers"]);
    let output = cluster.kubectl_as(&vera, &["auth", "can-i", "watch", "pods", "-n", "team"]);
    assert!(output.status.success(), "{}", text(&output));
    let output = cluster.kubectl_as(&vera, &["auth", "whoami", "-o", "json"]);
    let review: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(review["status"]["userInfo"]["username"], "vera");
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        serde_json::json!(["developers", "system:authenticated"])
    );
    let output = cluster.kubectl_as(&vera, &["get", "pods", "-n", "team"]);
    assert!(output.status.success(), "{}", text(&output));
    let output = cluster.kubectl_as(&vera, &["create", "configmap", "c", "-n", "team"]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains(
            r#"configmaps is forbidden: User "vera" cannot create resource "configmaps" in API group "" in the namespace "team""#
        ),
        "{}",
        text(&output)
    );

    // vera may not act as someone else.
    let output = cluster.kubectl_as(&vera, &["get", "pods", "-n", "team", "--as", "boss"]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains(
            r#"users "boss" is forbidden: User "vera" cannot impersonate resource "users" in API group "" at the cluster scope"#
        ),
        "{}",
        text(&output)
    );
    // Unless granted impersonation of that user only.
    cluster.kubectl_ok(&[
        "create",
        "clusterrole",
        "act-as-sam",
        "--verb=impersonate",
        "--resource=users",
        "--resource-name=sam",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "vera-acts-as-sam",
        "--clusterrole=act-as-sam",
        "--user=vera",
    ]);
    let output = cluster.kubectl_as(&vera, &["auth", "whoami", "--as", "sam", "-o", "json"]);
    assert!(output.status.success(), "{}", text(&output));
    let review: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(review["status"]["userInfo"]["username"], "sam");
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        serde_json::json!(["system:authenticated"])
    );
    let output = cluster.kubectl_as(
        &vera,
        &["get", "pods", "--as", "sam", "--as-group", "system:masters"],
    );
    assert!(!output.status.success(), "groups need their own grant");
    assert!(
        text(&output).contains(r#"groups "system:masters" is forbidden"#),
        "{}",
        text(&output)
    );

    // What vera may do in team: kubectl auth can-i --list (SelfSubjectRulesReview).
    let output = cluster.kubectl_as(&vera, &["auth", "can-i", "--list", "-n", "team"]);
    let list = text(&output);
    assert!(output.status.success(), "{list}");
    let pods = list
        .lines()
        .find(|l| l.starts_with("pods "))
        .unwrap_or_else(|| panic!("no pods line: {list}"));
    assert!(pods.contains("[get list watch]"), "{pods}");
    assert!(
        list.contains("selfsubjectaccessreviews.authorization.k8s.io"),
        "{list}"
    );
}

#[test]
fn subject_access_reviews_over_http() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&[
        "create",
        "rolebinding",
        "ed-edit",
        "--clusterrole=edit",
        "--user=ed",
        "-n",
        "default",
    ]);
    let review = |body: &str| -> (u16, Value) {
        let (code, text) = cluster.http(
            "POST",
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            "application/json",
            body.as_bytes(),
        );
        (code, serde_json::from_str(&text).unwrap())
    };
    let (code, answer) = review(
        r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"ed","resourceAttributes":{"namespace":"default","verb":"create","resource":"deployments","group":"apps"}}}"#,
    );
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["status"]["allowed"], true, "{answer}");
    assert_eq!(
        answer["status"]["reason"],
        r#"RBAC: allowed by RoleBinding "ed-edit/default" of ClusterRole "edit" to User "ed""#
    );
    let (_, answer) = review(
        r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"ed","resourceAttributes":{"namespace":"kube-system","verb":"get","resource":"pods"}}}"#,
    );
    assert_eq!(answer["status"]["allowed"], false, "{answer}");
    // Non-resource URLs: every authenticated user may read /version.
    let (_, answer) = review(
        r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"ed","groups":["system:authenticated"],"nonResourceAttributes":{"path":"/version","verb":"get"}}}"#,
    );
    assert_eq!(answer["status"]["allowed"], true, "{answer}");
    // Malformed reviews are 422.
    let (code, answer) = review(
        r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}"#,
    );
    assert_eq!(code, 422, "{answer}");
    assert_eq!(answer["details"]["causes"][0]["field"], "spec.user");
    // Reviews are never stored: there is nothing to list.
    let (code, _) = cluster.http(
        "GET",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        "",
        b"",
    );
    assert_eq!(code, 405);
    // A LocalSubjectAccessReview must ask about its own namespace.
    let (code, text) = cluster.http(
        "POST",
        "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
        "application/json",
        br#"{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"default"},"spec":{"user":"ed","resourceAttributes":{"namespace":"other","verb":"get","resource":"pods"}}}"#,
    );
    assert_eq!(code, 422, "{text}");
}

#[test]
fn protected_namespaces_cannot_be_deleted() {
    let cluster = Cluster::start();
    for namespace in ["default", "kube-system", "kube-public"] {
        let output = cluster.kubectl(&["delete", "namespace", namespace]);
        assert!(!output.status.success());
        assert!(
            text(&output).contains(&format!(
                r#"namespaces "{namespace}" is forbidden: this namespace may not be deleted"#
            )),
            "{}",
            text(&output)
        );
    }
    cluster.kubectl_ok(&["get", "namespace", "default"]);
}

#[test]
fn nobody_grants_what_they_do_not_hold() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "namespace", "team"]);
    cluster.kubectl_ok(&[
        "create",
        "rolebinding",
        "ada-admin",
        "--clusterrole=admin",
        "--user=ada",
        "-n",
        "team",
    ]);
    let ada = cluster.user_kubeconfig("ada", &[]);
    let as_ada = |args: &[&str]| cluster.kubectl_as(&ada, args);
    // Granting what ada holds: fine.
    let output = as_ada(&[
        "create",
        "rolebinding",
        "bob-edit",
        "--clusterrole=edit",
        "--user=bob",
        "-n",
        "team",
    ]);
    assert!(output.status.success(), "{}", text(&output));
    let output = as_ada(&[
        "create",
        "role",
        "pod-reader",
        "--verb=get,list",
        "--resource=pods",
        "-n",
        "team",
    ]);
    assert!(output.status.success(), "{}", text(&output));
    // Granting more: refused, for bindings and for roles.
    let output = as_ada(&[
        "create",
        "rolebinding",
        "bob-root",
        "--clusterrole=cluster-admin",
        "--user=bob",
        "-n",
        "team",
    ]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains(
            r#"rolebindings.rbac.authorization.k8s.io "bob-root" is forbidden: user "ada""#
        ) && text(&output).contains("is attempting to grant RBAC permissions not currently held"),
        "{}",
        text(&output)
    );
    let output = as_ada(&[
        "create",
        "role",
        "node-toucher",
        "--verb=*",
        "--resource=*.*",
        "-n",
        "team",
    ]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains("is attempting to grant RBAC permissions not currently held"),
        "{}",
        text(&output)
    );
    // Another namespace is out of reach altogether.
    let output = as_ada(&[
        "create",
        "rolebinding",
        "bob-edit",
        "--clusterrole=edit",
        "--user=bob",
        "-n",
        "default",
    ]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains("cannot create resource \"rolebindings\""),
        "{}",
        text(&output)
    );
    // With `bind` on cluster-admin (granted by the admin), ada may bind it.
    cluster.kubectl_ok(&[
        "create",
        "clusterrole",
        "bind-cluster-admin",
        "--verb=bind",
        "--resource=clusterroles",
        "--resource-name=cluster-admin",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "rolebinding",
        "ada-binds",
        "--clusterrole=bind-cluster-admin",
        "--user=ada",
        "-n",
        "team",
    ]);
    let deadline = std::time::Instant::now() + crate::cluster::DEADLINE;
    loop {
        let output = as_ada(&[
            "create",
            "rolebinding",
            "bob-root",
            "--clusterrole=cluster-admin",
            "--user=bob",
            "-n",
            "team",
        ]);
        if output.status.success() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{}", text(&output));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The aggregated roles grow with what is labelled into them.
    cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"widgets-view","labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}},"rules":[{"apiGroups":["example.com"],"resources":["widgets"],"verbs":["get","list","watch"]}]}"#,
    );
    let deadline = std::time::Instant::now() + crate::cluster::DEADLINE;
    loop {
        let rules = cluster.kubectl_ok(&[
            "get",
            "clusterrole",
            "view",
            "-o",
            "jsonpath={.rules[*].resources}",
        ]);
        if rules.contains("widgets") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "view never aggregated widgets: {rules}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn components_have_their_own_identities() {
    let cluster = Cluster::start();
    let components = cluster.dir.path().join("components");
    let kubeconfig = |name: &str| components.join(format!("{name}.kubeconfig"));
    let whoami = |name: &str| {
        let output = cluster.kubectl_as(&kubeconfig(name), &["auth", "whoami", "-o", "json"]);
        let review: Value =
            serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("{}", text(&output)));
        review["status"]["userInfo"].clone()
    };
    assert_eq!(whoami("scheduler")["username"], "system:kube-scheduler");
    assert_eq!(
        whoami("controller-manager")["username"],
        "system:kube-controller-manager"
    );
    let kubelet = whoami("kubelet");
    let node = kubelet["username"]
        .as_str()
        .unwrap()
        .strip_prefix("system:node:")
        .unwrap()
        .to_string();
    assert!(
        kubelet["groups"].to_string().contains("system:nodes"),
        "{kubelet}"
    );
    let can = |name: &str, args: &[&str]| {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        cluster.kubectl_as(&kubeconfig(name), &all).status.success()
    };
    // Each may do its job and no more.
    assert!(can(
        "scheduler",
        &["create", "pods", "--subresource=binding", "-n", "default"]
    ));
    assert!(!can("scheduler", &["get", "secrets", "-n", "default"]));
    assert!(can(
        "controller-manager",
        &["get", "secrets", "-n", "default"]
    ));
    assert!(!can(
        "controller-manager",
        &["create", "clusterrolebindings"]
    ));
    let node_object =
        format!(r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{node}"}}}}"#);
    let path = cluster.write_file("node.json", &node_object);
    let output = cluster.kubectl_as(
        &kubeconfig("kubelet"),
        &["create", "-f", path.to_str().unwrap()],
    );
    assert!(output.status.success(), "{}", text(&output));
    assert!(!can("kubelet", &["list", "secrets", "-A"]));
}
