//! SelfSubjectRulesReview: the rules a user holds in a namespace.

use super::*;
use kyb_rbac::{NonResourceRule, ResourceRule};

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_viewer_sees_cluster_and_namespace_rules() {
    let policy = scenario();
    let review = policy.rules_for("vera", &groups(&["system:authenticated"]), "team-a");
    assert!(!review.incomplete);
    assert_eq!(review.evaluation_error, None);
    // From system:basic-user (a cluster role binding), listed before the namespace's.
    assert_eq!(
        review.resource_rules[0],
        ResourceRule {
            verbs: strings(&["create"]),
            api_groups: strings(&["authorization.k8s.io"]),
            resources: strings(&["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
            resource_names: vec![],
        }
    );
    // From view, through the role binding.
    assert!(
        review
            .resource_rules
            .iter()
            .any(|r| r.verbs == strings(&["get", "list", "watch"])
                && r.resources.contains(&"pods".to_string()))
    );
    // From system:discovery and system:public-info-viewer.
    assert!(
        review.non_resource_rules.contains(&NonResourceRule {
            verbs: strings(&["get"]),
            non_resource_urls: strings(&["/livez", "/readyz", "/healthz", "/version", "/version/"])
                .into_iter()
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
        })
    );
    assert_eq!(review.non_resource_rules.len(), 2);
    // The JSON shapes of the review's status.
    assert_eq!(
        review.resource_rules[0].to_json(),
        json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]})
    );
    assert_eq!(
        review.non_resource_rules[0].to_json()["verbs"],
        json!(["get"])
    );
}

#[test]
fn other_namespaces_only_show_cluster_rules() {
    let policy = scenario();
    let authenticated = groups(&["system:authenticated"]);
    let here = policy.rules_for("vera", &authenticated, "team-a");
    let there = policy.rules_for("vera", &authenticated, "team-b");
    let cluster = policy.rules_for("vera", &authenticated, "");
    assert!(here.resource_rules.len() > there.resource_rules.len());
    assert_eq!(there, cluster);
    assert!(
        !there
            .resource_rules
            .iter()
            .any(|r| r.resources.contains(&"pods".to_string()))
    );
}

#[test]
fn resource_names_are_reported() {
    let policy = scenario();
    let review = policy.rules_for("nina", &[], "team-a");
    assert_eq!(
        review.resource_rules,
        vec![ResourceRule {
            verbs: strings(&["get"]),
            api_groups: strings(&[""]),
            resources: strings(&["configmaps"]),
            resource_names: strings(&["app-config"]),
        }]
    );
    assert!(review.non_resource_rules.is_empty());
}

#[test]
fn cluster_admin_has_both_kinds_of_rule() {
    let policy = scenario();
    let review = policy.rules_for("root", &groups(&["system:masters"]), "x");
    assert_eq!(
        review.resource_rules,
        vec![ResourceRule {
            verbs: strings(&["*"]),
            api_groups: strings(&["*"]),
            resources: strings(&["*"]),
            resource_names: vec![],
        }]
    );
    assert_eq!(
        review.non_resource_rules,
        vec![NonResourceRule {
            verbs: strings(&["*"]),
            non_resource_urls: strings(&["*"])
        }]
    );
}

#[test]
fn missing_roles_make_the_review_incomplete() {
    let mut policy = scenario();
    policy
        .apply(&role_binding(
            "team-a",
            "broken",
            "Role",
            "phantom",
            json!([user("nina")]),
        ))
        .unwrap();
    let review = policy.rules_for("nina", &[], "team-a");
    assert!(review.incomplete);
    assert_eq!(
        review.evaluation_error.as_deref(),
        Some(r#"role.rbac.authorization.k8s.io "phantom" not found"#)
    );
    assert_eq!(review.resource_rules.len(), 1);
}
