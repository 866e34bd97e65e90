//! PodDisruptionBudgets as preemption reads them: which victims' eviction would take a
//! budget below zero (`status.disruptionsAllowed`, counting down victim by victim).

use crate::framework::PodInfo;
use kyb_apimachinery::labels::Selector;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// One budget that can match pods.
#[derive(Debug)]
struct Budget {
    selector: Selector,
    disruptions_allowed: i64,
    /// Pods whose eviction the API server has already counted (`status.disruptedPods`).
    disrupted: HashSet<String>,
}

/// The cluster's budgets, by namespace.
#[derive(Debug, Default)]
pub struct Budgets {
    budgets: Vec<Budget>,
    by_namespace: HashMap<String, Vec<usize>>,
}

impl Budgets {
    /// From `policy/v1` PodDisruptionBudget objects. Budgets whose selector is missing,
    /// empty or invalid match no pod and are left out.
    pub fn from_objects(objects: &[Arc<Value>]) -> Budgets {
        let mut budgets = Budgets::default();
        for object in objects {
            let Some(selector) = object["spec"]["selector"]
                .as_object()
                .and_then(|_| Selector::from_label_selector(&object["spec"]["selector"]).ok())
                .filter(|s| !s.is_empty())
            else {
                continue;
            };
            let namespace = object["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let disrupted = object["status"]["disruptedPods"]
                .as_object()
                .map(|pods| pods.keys().cloned().collect())
                .unwrap_or_default();
            budgets
                .by_namespace
                .entry(namespace)
                .or_default()
                .push(budgets.budgets.len());
            budgets.budgets.push(Budget {
                selector,
                disruptions_allowed: object["status"]["disruptionsAllowed"].as_i64().unwrap_or(0),
                disrupted,
            });
        }
        budgets
    }

    pub fn is_empty(&self) -> bool {
        self.budgets.is_empty()
    }

    /// Splits `pods` (in order) into those whose eviction, after the ones before them,
    /// would violate a budget, and the others. Order is kept within each group.
    pub fn split_violating(
        &self,
        pods: Vec<Arc<PodInfo>>,
    ) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
        if self.is_empty() {
            return (Vec::new(), pods);
        }
        let mut allowed: Vec<i64> = self.budgets.iter().map(|b| b.disruptions_allowed).collect();
        let mut violating = Vec::new();
        let mut others = Vec::new();
        for pod in pods {
            let mut violates = false;
            let labelled = pod
                .pod
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| !l.is_empty());
            let in_namespace = self.by_namespace.get(&pod.namespace);
            if labelled && let Some(indices) = in_namespace {
                for &i in indices {
                    let budget = &self.budgets[i];
                    if !budget.selector.matches_pairs(|key| pod.label(key))
                        || budget.disrupted.contains(&pod.name)
                    {
                        continue;
                    }
                    allowed[i] -= 1;
                    if allowed[i] < 0 {
                        violates = true;
                    }
                }
            }
            if violates {
                violating.push(pod);
            } else {
                others.push(pod);
            }
        }
        (violating, others)
    }
}
