//! ClusterRole aggregation: a ClusterRole with an `aggregationRule` has, as its rules, the
//! rules of the ClusterRoles its selectors pick (`admin`, `edit` and `view` grow with what
//! is labelled `rbac.authorization.k8s.io/aggregate-to-…`), recomputed whenever a
//! ClusterRole changes. The rules are `kyb-rbac`'s; this writes them back.

use crate::engine::Engine;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// Follows ClusterRoles for as long as the server runs.
pub async fn run(engine: Arc<Engine>) {
    let mut changes = engine.cache.changes();
    aggregate(&engine).await;
    loop {
        match changes.recv().await {
            Ok(change)
                if change.def.group == kyb_rbac::RBAC_GROUP
                    && change.def.plural == "clusterroles" =>
            {
                // Gather a burst of changes into one pass.
                while let Ok(_more) = changes.try_recv() {}
                aggregate(&engine).await;
            }
            Ok(_) => {}
            Err(RecvError::Lagged(_)) => aggregate(&engine).await,
            Err(RecvError::Closed) => return,
        }
    }
}

/// One pass: every aggregated ClusterRole whose rules are not what its selectors gather
/// is updated.
async fn aggregate(engine: &Arc<Engine>) {
    let registry = engine.registry.snapshot();
    let Some(def) = registry.find_stored(kyb_rbac::RBAC_GROUP, "clusterroles") else {
        return;
    };
    let roles = engine
        .cache
        .objects(kyb_rbac::RBAC_GROUP, "clusterroles", None);
    for role in &roles {
        let Some(Ok(rules)) = kyb_rbac::aggregation::aggregate_cluster_role(role, &roles) else {
            continue;
        };
        if kyb_rbac::PolicyRule::list_from_object(role) == rules {
            continue;
        }
        let mut updated = role.clone();
        updated["rules"] = kyb_rbac::PolicyRule::list_to_json(&rules);
        if let Err(status) = crate::rest::ensure(engine, def, updated, true).await {
            tracing::warn!(
                role = kyb_apimachinery::meta::name(role).unwrap_or_default(),
                error = %status.message,
                "cannot update an aggregated ClusterRole"
            );
        }
    }
}
