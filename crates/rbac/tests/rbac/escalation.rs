//! Escalation prevention: granting what one holds, refusing more with Kubernetes' message,
//! and the `escalate` and `bind` verbs.

use super::*;
use kyb_rbac::escalation::{breakdown_rule, escalation_message};
use kyb_rbac::{RoleChange, RoleRef, covers};

fn rules(value: Value) -> Vec<PolicyRule> {
    value
        .as_array()
        .unwrap()
        .iter()
        .filter_map(PolicyRule::from_json)
        .collect()
}

fn role_change<'a>(namespace: &'a str, rules: &'a [PolicyRule]) -> RoleChange<'a> {
    RoleChange {
        cluster_role: namespace.is_empty(),
        namespace,
        request_name: "",
        rules,
        aggregation_rule: false,
    }
}

#[test]
fn covers_what_is_held() {
    let owner = rules(json!([
        {"verbs": ["get", "list"], "apiGroups": ["", "apps"], "resources": ["pods", "deployments"]},
        {"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}
    ]));
    assert_eq!(
        covers(
            &owner,
            &rules(
                json!([{"verbs": ["list"], "apiGroups": ["apps"], "resources": ["deployments"]}])
            )
        ),
        Ok(())
    );
    assert_eq!(
        covers(
            &owner,
            &rules(json!([{"verbs": ["get"], "nonResourceURLs": ["/apis/apps"]}]))
        ),
        Ok(())
    );
    let requested = rules(
        json!([{"verbs": ["get", "delete"], "apiGroups": [""], "resources": ["pods", "secrets"]}]),
    );
    let missing = covers(&owner, &requested).unwrap_err();
    assert_eq!(
        missing,
        vec![
            PolicyRule::new(&["delete"])
                .groups(&[""])
                .resources(&["pods"]),
            PolicyRule::new(&["get"])
                .groups(&[""])
                .resources(&["secrets"]),
            PolicyRule::new(&["delete"])
                .groups(&[""])
                .resources(&["secrets"]),
        ]
    );
    // A non-resource rule never covers resources, nor the reverse.
    assert!(
        covers(
            &owner,
            &rules(json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]))
        )
        .is_err()
    );
    // Wildcards in the request need wildcards in the owner's rules.
    assert!(
        covers(
            &owner,
            &rules(json!([{"verbs": ["get"], "apiGroups": ["*"], "resources": ["pods"]}]))
        )
        .is_err()
    );
    assert_eq!(breakdown_rule(&requested[0]).len(), 4);
}

#[test]
fn granting_what_you_hold_is_allowed() {
    let policy = scenario();
    let eddie = groups(&["system:authenticated"]);
    let requested = rules(json!([
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"]},
        {"verbs": ["create"], "apiGroups": ["apps"], "resources": ["deployments"]}
    ]));
    assert_eq!(
        policy.may_write_role("eddie", &eddie, &role_change("team-a", &requested)),
        Ok(())
    );
    // Binding a role whose rules one holds: edit includes view.
    assert_eq!(
        policy.may_bind("eddie", &eddie, "team-a", &RoleRef::cluster_role("view")),
        Ok(())
    );
}

#[test]
fn granting_more_is_refused_with_kubernetes_message() {
    let policy = scenario();
    let eddie = groups(&["system:authenticated"]);
    let requested = rules(json!([
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["nodes", "pods"]},
        {"verbs": ["create"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"]}
    ]));
    let refusal = policy
        .may_write_role("eddie", &eddie, &role_change("team-a", &requested))
        .unwrap_err();
    assert_eq!(
        refusal.message,
        "user \"eddie\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"get\" \"list\"]}\n\
         {APIGroups:[\"rbac.authorization.k8s.io\"], Resources:[\"roles\"], Verbs:[\"create\"]}"
    );
    assert_eq!(
        refusal.status_message("roles", "sneaky"),
        format!(
            "roles.rbac.authorization.k8s.io \"sneaky\" is forbidden: {}",
            refusal.message
        )
    );
    // Rights in one namespace do not carry over to another.
    let pods = rules(json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]));
    let refusal = policy
        .may_write_role("eddie", &eddie, &role_change("team-b", &pods))
        .unwrap_err();
    assert!(
        refusal
            .message
            .ends_with("\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\"]}")
    );
    // Nor to cluster roles, which are checked against cluster-wide rights.
    assert!(
        policy
            .may_write_role("eddie", &eddie, &role_change("", &pods))
            .is_err()
    );
}

#[test]
fn binding_a_bigger_role_is_refused() {
    let policy = scenario();
    let eddie = groups(&["system:authenticated"]);
    let refusal = policy
        .may_bind("eddie", &eddie, "team-a", &RoleRef::cluster_role("admin"))
        .unwrap_err();
    let verbs =
        r#"Verbs:["create" "delete" "deletecollection" "get" "list" "patch" "update" "watch"]"#;
    assert_eq!(
        refusal.message,
        format!(
            "user \"eddie\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
             {{APIGroups:[\"authorization.k8s.io\"], Resources:[\"localsubjectaccessreviews\"], Verbs:[\"create\"]}}\n\
             {{APIGroups:[\"rbac.authorization.k8s.io\"], Resources:[\"rolebindings\"], {verbs}}}\n\
             {{APIGroups:[\"rbac.authorization.k8s.io\"], Resources:[\"roles\"], {verbs}}}"
        )
    );
    // A missing role is refused with the lookup error.
    let refusal = policy
        .may_bind("eddie", &eddie, "team-a", &RoleRef::cluster_role("ghost"))
        .unwrap_err();
    assert_eq!(
        refusal.message,
        r#"clusterrole.rbac.authorization.k8s.io "ghost" not found"#
    );
    // An admin of the namespace may bind admin there, not cluster-admin.
    assert_eq!(
        policy.may_bind("adam", &eddie, "team-a", &RoleRef::cluster_role("admin")),
        Ok(())
    );
    assert!(
        policy
            .may_bind(
                "adam",
                &eddie,
                "team-a",
                &RoleRef::cluster_role("cluster-admin")
            )
            .is_err()
    );
}

#[test]
fn the_bind_verb_allows_binding_without_holding() {
    let mut policy = scenario();
    policy
        .apply(&role(
            "team-a",
            "binder",
            json!([{"verbs": ["bind"], "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["clusterroles"], "resourceNames": ["admin"]}]),
        ))
        .unwrap();
    policy
        .apply(&role_binding(
            "team-a",
            "binders",
            "Role",
            "binder",
            json!([user("bea")]),
        ))
        .unwrap();
    let bea = groups(&["system:authenticated"]);
    assert_eq!(
        policy.may_bind("bea", &bea, "team-a", &RoleRef::cluster_role("admin")),
        Ok(())
    );
    // Only that role, and only in that namespace.
    assert!(
        policy
            .may_bind(
                "bea",
                &bea,
                "team-a",
                &RoleRef::cluster_role("cluster-admin")
            )
            .is_err()
    );
    assert!(
        policy
            .may_bind("bea", &bea, "team-b", &RoleRef::cluster_role("admin"))
            .is_err()
    );
    assert!(
        policy
            .may_bind("bea", &bea, "", &RoleRef::cluster_role("admin"))
            .is_err()
    );
    // The JSON entry point runs the same check.
    let binding = role_binding(
        "team-a",
        "new-admins",
        "ClusterRole",
        "admin",
        json!([user("x")]),
    );
    assert_eq!(policy.check_write("bea", &bea, &binding, None), Ok(()));
    let binding = role_binding(
        "team-b",
        "new-admins",
        "ClusterRole",
        "admin",
        json!([user("x")]),
    );
    let refusal = policy.check_write("bea", &bea, &binding, None).unwrap_err();
    assert!(
        refusal
            .message
            .contains("is attempting to grant RBAC permissions not currently held")
    );
}

#[test]
fn the_escalate_verb_allows_writing_any_role() {
    let mut policy = scenario();
    policy
        .apply(&cluster_role(
            "role-escalator",
            json!([{"verbs": ["escalate", "create"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"]}]),
        ))
        .unwrap();
    policy
        .apply(&role_binding(
            "team-a",
            "escalators",
            "ClusterRole",
            "role-escalator",
            json!([user("esme")]),
        ))
        .unwrap();
    let esme = groups(&["system:authenticated"]);
    let everything = rules(json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]));
    assert_eq!(
        policy.may_write_role("esme", &esme, &role_change("team-a", &everything)),
        Ok(())
    );
    assert!(
        policy
            .may_write_role("esme", &esme, &role_change("team-b", &everything))
            .is_err()
    );
    // escalate on roles is not escalate on cluster roles.
    assert!(
        policy
            .may_write_role("esme", &esme, &role_change("", &everything))
            .is_err()
    );
    let new_role = role(
        "team-a",
        "everything",
        json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
    );
    assert_eq!(policy.check_write("esme", &esme, &new_role, None), Ok(()));
}

#[test]
fn system_masters_may_always_escalate() {
    let policy = Policy::new();
    let masters = groups(&["system:masters"]);
    let everything = rules(json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]));
    assert_eq!(
        policy.may_write_role("root", &masters, &role_change("", &everything)),
        Ok(())
    );
    assert_eq!(
        policy.may_bind("root", &masters, "", &RoleRef::cluster_role("anything")),
        Ok(())
    );
}

#[test]
fn aggregation_rules_need_full_authority() {
    let mut policy = Policy::new();
    policy
        .apply(&cluster_role(
            "role-writer",
            json!([{"verbs": ["create", "update"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"]}]),
        ))
        .unwrap();
    policy
        .apply(&cluster_role_binding(
            "role-writers",
            "role-writer",
            json!([user("rita")]),
        ))
        .unwrap();
    let rita = groups(&["system:authenticated"]);
    let aggregated = json!({"kind": "ClusterRole", "metadata": {"name": "agg"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}});
    let refusal = policy
        .check_write("rita", &rita, &aggregated, None)
        .unwrap_err();
    assert_eq!(
        refusal.message,
        "must have cluster-admin privileges to use the aggregationRule"
    );
    let plain = json!({"kind": "ClusterRole", "metadata": {"name": "plain"}, "rules": []});
    assert_eq!(policy.check_write("rita", &rita, &plain, None), Ok(()));
}

#[test]
fn garbage_collector_updates_pass() {
    let policy = scenario();
    let vera = groups(&["system:authenticated"]);
    let old = role(
        "team-a",
        "big",
        json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
    );
    let mut new = old.clone();
    new["metadata"]["finalizers"] = json!(["example.com/cleanup"]);
    assert_eq!(policy.check_write("vera", &vera, &new, Some(&old)), Ok(()));
    new["rules"][0]["verbs"] = json!(["get", "*"]);
    assert!(policy.check_write("vera", &vera, &new, Some(&old)).is_err());
}

#[test]
fn resolution_errors_are_appended() {
    let message = escalation_message(
        "u",
        &[],
        &[PolicyRule::new(&["get"]).urls(&["/x"])],
        &[r#"clusterrole.rbac.authorization.k8s.io "ghost" not found"#.to_string()],
    );
    assert_eq!(
        message,
        "user \"u\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n\
         {NonResourceURLs:[\"/x\"], Verbs:[\"get\"]}; resolution errors: [clusterrole.rbac.authorization.k8s.io \"ghost\" not found]"
    );
}
