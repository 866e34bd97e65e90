//! Many bindings: the subject index keeps each request to the bindings that name its user
//! or groups. Asserted through the number of bindings examined, with a generous time bound
//! as a sanity check only.

use super::*;
use kyb_rbac::Attributes;
use std::time::{Duration, Instant};

const NAMESPACES: usize = 100;
const BINDINGS: usize = 10_000;
const REQUESTS: usize = 100_000;

fn big_policy() -> Policy {
    let mut policy = Policy::new();
    policy
        .apply(&cluster_role(
            "reader",
            json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]),
        ))
        .unwrap();
    policy
        .apply(&cluster_role(
            "node-reader",
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]}]),
        ))
        .unwrap();
    for i in 0..BINDINGS {
        let namespace = format!("ns-{}", i % NAMESPACES);
        policy
            .apply(&role_binding(
                &namespace,
                &format!("rb-{i}"),
                "ClusterRole",
                "reader",
                json!([user(&format!("user-{i}"))]),
            ))
            .unwrap();
        policy
            .apply(&cluster_role_binding(
                &format!("crb-{i}"),
                "node-reader",
                json!([user(&format!("node-user-{i}"))]),
            ))
            .unwrap();
    }
    // A few bindings for a group everyone is in.
    for i in 0..3 {
        policy
            .apply(&cluster_role_binding(
                &format!("everyone-{i}"),
                "node-reader",
                json!([group("system:authenticated")]),
            ))
            .unwrap();
    }
    policy
}

#[test]
fn requests_only_examine_their_own_bindings() {
    let policy = big_policy();
    let counts = policy.counts();
    assert_eq!(counts.role_bindings, BINDINGS);
    assert_eq!(counts.cluster_role_bindings, BINDINGS + 3);
    let authenticated = groups(&["system:authenticated"]);
    // user-42's role binding in ns-42, plus the three group bindings.
    assert_eq!(
        policy.bindings_examined("user-42", &authenticated, "ns-42"),
        4
    );
    assert_eq!(
        policy.bindings_examined("user-42", &authenticated, "ns-43"),
        3
    );
    assert_eq!(policy.bindings_examined("user-42", &[], "ns-42"), 1);
    assert_eq!(policy.bindings_examined("nobody", &[], "ns-42"), 0);
    assert_eq!(policy.bindings_examined("node-user-7", &[], ""), 1);
}

#[test]
fn many_requests_are_answered_correctly_and_quickly() {
    let policy = big_policy();
    let authenticated = groups(&["system:authenticated"]);
    let users: Vec<String> = (0..BINDINGS).map(|i| format!("user-{i}")).collect();
    let namespaces: Vec<String> = (0..NAMESPACES).map(|i| format!("ns-{i}")).collect();
    let start = Instant::now();
    let mut allowed = 0;
    for n in 0..REQUESTS {
        let i = (n * 7919) % BINDINGS;
        // Every other request is in the wrong namespace.
        let namespace = if n % 2 == 0 {
            i % NAMESPACES
        } else {
            (i + 1) % NAMESPACES
        };
        let attributes = Attributes::resource(
            &users[i],
            &authenticated,
            "get",
            "",
            "pods",
            &namespaces[namespace],
        );
        let decision = policy.authorize(&attributes);
        assert_eq!(decision.is_allowed(), n % 2 == 0, "request {n}");
        allowed += usize::from(decision.is_allowed());
    }
    assert_eq!(allowed, REQUESTS / 2);
    let elapsed = start.elapsed();
    assert!(
        elapsed < Duration::from_secs(60),
        "{REQUESTS} requests took {elapsed:?}"
    );
}

#[test]
fn removing_bindings_empties_the_index() {
    let mut policy = big_policy();
    for i in 0..BINDINGS {
        assert!(policy.remove_role_binding(&format!("ns-{}", i % NAMESPACES), &format!("rb-{i}")));
    }
    assert_eq!(policy.counts().role_bindings, 0);
    assert_eq!(policy.bindings_examined("user-42", &[], "ns-42"), 0);
}
