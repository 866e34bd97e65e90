//! What the disruption controller keeps of a budget's pods while it reads its namespace
//! one pod at a time: a [`Member`] per selected pod, and — for `expectedPods` from the
//! controllers' scale — the pods' distinct controller references in the order the pods
//! come, up to the first pod without one (where working the count out stops).

use super::budget::Member;
use crate::ownership::controller_of;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use std::collections::HashSet;

/// A step of working out the expected count: a controller to ask for its replicas (first
/// seen on `pod`), or a pod without a controller.
#[derive(Clone, Debug, PartialEq)]
pub enum Owner {
    Controller {
        pod: String,
        reference: OwnerReference,
    },
    Missing {
        pod: String,
    },
}

/// The selected pods, reduced.
#[derive(Debug, Default)]
pub struct Selected {
    pub members: Vec<Member>,
    /// Each controller once, then at most one [`Owner::Missing`], last.
    pub owners: Vec<Owner>,
    seen: HashSet<String>,
}

impl Selected {
    /// Takes in one selected pod.
    pub fn add(&mut self, pod: &Pod) {
        let member = Member::of(pod);
        let stopped = matches!(self.owners.last(), Some(Owner::Missing { .. }));
        if !stopped {
            match controller_of(&pod.metadata) {
                Some(reference) => {
                    if self.seen.insert(reference.uid.clone()) {
                        self.owners.push(Owner::Controller {
                            pod: member.name.clone(),
                            reference: reference.clone(),
                        });
                    }
                }
                None => self.owners.push(Owner::Missing {
                    pod: member.name.clone(),
                }),
            }
        }
        self.members.push(member);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn pod(name: &str, owner: Option<&str>) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "ownerReferences": owner.map(|uid| vec![json!({
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("rs-{uid}"),
                "uid": uid, "controller": true})])},
        }))
        .unwrap()
    }

    #[test]
    fn owners_come_once_each_and_stop_at_a_pod_without_one() {
        let mut selected = Selected::default();
        for (name, owner) in [
            ("a", Some("1")),
            ("b", Some("2")),
            ("c", Some("1")),
            ("d", None),
            ("e", Some("3")),
            ("f", None),
        ] {
            selected.add(&pod(name, owner));
        }
        assert_eq!(selected.members.len(), 6);
        let steps: Vec<(String, Option<String>)> = selected
            .owners
            .iter()
            .map(|o| match o {
                Owner::Controller { pod, reference } => (pod.clone(), Some(reference.uid.clone())),
                Owner::Missing { pod } => (pod.clone(), None),
            })
            .collect();
        assert_eq!(
            steps,
            [
                ("a".to_string(), Some("1".to_string())),
                ("b".to_string(), Some("2".to_string())),
                ("d".to_string(), None),
            ]
        );
    }
}
