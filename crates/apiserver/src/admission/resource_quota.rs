//! ResourceQuota: a write that would take a namespace over one of its quotas is refused;
//! otherwise the quotas' `status.used` is raised (compare-and-swap on each quota) before the
//! object is stored, so concurrent writes can never overshoot a quota together. The
//! decision is `kyb-quota`'s; usage going down again (deletes, finished pods) is the
//! controller manager's `resourcequota-controller`'s work, as in Kubernetes.
//!
//! Writes to one namespace are checked in batches, as Kubernetes' quota evaluator does:
//! each request joins its namespace's queue, and one worker at a time takes everything
//! waiting, decides each request in order against the usage the ones before it added, and
//! writes each affected quota once for the whole batch. Concurrent writers then share one
//! quota update instead of contending for it.

use super::{Attributes, Context, Operation, Plugin};
use crate::engine::Engine;
use async_trait::async_trait;
use kyb_api::Resource;
use kyb_api::Status;
use kyb_api::registry::Subresource;
use kyb_apimachinery::meta;
use kyb_serving::Verb;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// Rounds of re-reading quotas when another writer moved them first.
const ATTEMPTS: usize = 64;

/// One write waiting for its quota decision.
struct Pending {
    /// The resource being written: its group and plural name what quota counts.
    def: Arc<Resource>,
    operation: Operation,
    name: String,
    object: Option<Value>,
    old: Option<Value>,
    decided: oneshot::Sender<Result<(), Status>>,
}

/// The writes waiting in each namespace; a namespace is present while a worker runs.
#[derive(Default)]
pub struct ResourceQuota {
    queues: Arc<Mutex<HashMap<String, Vec<Pending>>>>,
}

#[async_trait]
impl Plugin for ResourceQuota {
    fn name(&self) -> &'static str {
        "ResourceQuota"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        !attributes.namespace.is_empty()
            && attributes.resource.namespaced
            && kyb_quota::quota_handles(
                attributes.operation,
                &attributes.resource.group,
                &attributes.resource.plural,
                attributes.subresource,
            )
    }

    async fn validate(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), Status> {
        let engine = context.engine;
        let (group, resource): (&str, &str) =
            (&attributes.resource.group, &attributes.resource.plural);
        let quotas = engine
            .cache
            .objects("", "resourcequotas", Some(attributes.namespace));
        if quotas.is_empty() || !kyb_quota::may_affect(&quotas, group, resource) {
            return Ok(());
        }
        let name = object.and_then(meta::name).unwrap_or(attributes.name);
        if attributes.dry_run {
            // Decided against the current usage, charging nothing.
            return kyb_quota::check(
                &quotas,
                group,
                resource,
                attributes.operation,
                object,
                attributes.old_object,
            )
            .map(|_| ())
            .map_err(|error| refusal(&error, group, resource, name));
        }
        let (decided, decision) = oneshot::channel();
        let pending = Pending {
            def: attributes.resource.clone(),
            operation: attributes.operation,
            name: name.to_string(),
            object: object.cloned(),
            old: attributes.old_object.cloned(),
            decided,
        };
        let start_worker = {
            let Ok(mut queues) = self.queues.lock() else {
                return Err(Status::internal("the quota queue is unavailable"));
            };
            match queues.get_mut(attributes.namespace) {
                Some(queue) => {
                    queue.push(pending);
                    false
                }
                None => {
                    queues.insert(attributes.namespace.to_string(), vec![pending]);
                    true
                }
            }
        };
        if start_worker {
            let engine = engine.clone();
            tokio::spawn(work(
                engine,
                self.queues.clone(),
                attributes.namespace.to_string(),
            ));
        }
        decision
            .await
            .unwrap_or_else(|_| Err(Status::internal("the quota check was abandoned")))
    }
}

fn refusal(error: &kyb_quota::QuotaError, group: &str, resource: &str, name: &str) -> Status {
    let message = error.status_message(group, resource, name);
    match error.code() {
        403 => Status::forbidden(message).with_details(group, resource, name),
        _ => Status::internal(message),
    }
}

/// Decides the batches of one namespace until its queue is empty.
async fn work(
    engine: Arc<Engine>,
    queues: Arc<Mutex<HashMap<String, Vec<Pending>>>>,
    namespace: String,
) {
    loop {
        let batch = {
            let Ok(mut queues) = queues.lock() else {
                return;
            };
            match queues.get_mut(&namespace) {
                Some(queue) if !queue.is_empty() => std::mem::take(queue),
                _ => {
                    queues.remove(&namespace);
                    return;
                }
            }
        };
        let decisions = decide(&engine, &namespace, &batch).await;
        for (pending, decision) in batch.into_iter().zip(decisions) {
            let _ = pending.decided.send(decision);
        }
    }
}

/// Decides a batch in order, each write against the usage the earlier ones added, and
/// records the new usage with one compare-and-swap per affected quota; on a conflict the
/// whole batch is decided again from the quotas as they now are.
async fn decide(
    engine: &Arc<Engine>,
    namespace: &str,
    batch: &[Pending],
) -> Vec<Result<(), Status>> {
    let failed = |status: Status| batch.iter().map(|_| Err(status.clone())).collect();
    let snapshot = engine.registry.snapshot();
    let Some(def) = snapshot.find_stored("", "resourcequotas") else {
        return failed(Status::internal("resourcequotas is not registered"));
    };
    let call = match crate::rest::internal_call(
        engine,
        def,
        Verb::Update,
        Some(namespace),
        Some(Subresource::Status),
    ) {
        Ok(call) => call,
        Err(status) => return failed(status),
    };
    let mut quotas = engine.cache.objects("", "resourcequotas", Some(namespace));
    for _ in 0..ATTEMPTS {
        let original: HashMap<String, String> = quotas
            .iter()
            .filter_map(|q| {
                Some((
                    meta::name(q)?.to_string(),
                    meta::resource_version(q)?.to_string(),
                ))
            })
            .collect();
        let mut working = quotas.clone();
        let mut changed = BTreeSet::new();
        let mut decisions = Vec::with_capacity(batch.len());
        for pending in batch {
            match kyb_quota::check(
                &working,
                &pending.def.group,
                &pending.def.plural,
                pending.operation,
                pending.object.as_ref(),
                pending.old.as_ref(),
            ) {
                Ok(updates) => {
                    for update in updates {
                        if let Some(quota) = working
                            .iter_mut()
                            .find(|q| meta::name(q) == Some(&update.name))
                        {
                            update.apply_to(quota);
                            changed.insert(update.name.clone());
                        }
                    }
                    decisions.push(Ok(()));
                }
                Err(error) => decisions.push(Err(refusal(
                    &error,
                    &pending.def.group,
                    &pending.def.plural,
                    &pending.name,
                ))),
            }
        }
        let mut conflicted = false;
        for name in &changed {
            let Some(quota) = working.iter().find(|q| meta::name(q) == Some(name)) else {
                continue;
            };
            let status = quota
                .get("status")
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default()));
            let precondition = original.get(name).map(String::as_str);
            match crate::rest::update_status(&call, name, precondition, status).await {
                Ok(_) => {}
                Err(status) if status.code == 409 => {
                    conflicted = true;
                    break;
                }
                Err(status) => return failed(status),
            }
        }
        if !conflicted {
            return decisions;
        }
        // Another writer got there first: read the quotas as they are now and decide again.
        engine.fresh().await;
        quotas = engine.cache.objects("", "resourcequotas", Some(namespace));
    }
    failed(Status::internal(format!(
        "too many concurrent updates to the resource quotas of namespace {namespace}"
    )))
}
