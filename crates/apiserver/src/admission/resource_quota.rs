//! ResourceQuota: a write that would take a namespace over one of its quotas is refused;
//! otherwise the quotas' `status.used` is raised (compare-and-swap on each quota) before the
//! object is stored, so concurrent writes can never overshoot a quota together. The
//! decision is `kyb-quota`'s; usage going down again (deletes, finished pods) is the status
//! keeper's work (`crate::keepers::quota`).

use super::{Attributes, Context, Operation, Plugin};
use crate::request::Verb;
use async_trait::async_trait;
use kyb_api::registry::Subresource;
use kyb_api::{Status, meta};
use serde_json::Value;

/// Rounds of re-reading quotas when another write moved them first.
const ATTEMPTS: usize = 64;

pub struct ResourceQuota;

fn operation(operation: Operation) -> kyb_quota::Operation {
    match operation {
        Operation::Create => kyb_quota::Operation::Create,
        Operation::Update => kyb_quota::Operation::Update,
        Operation::Delete => kyb_quota::Operation::Delete,
        Operation::Connect => kyb_quota::Operation::Connect,
    }
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
                operation(attributes.operation),
                attributes.resource.group,
                attributes.resource.plural,
                attributes.subresource,
            )
    }

    async fn validate(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), Status> {
        let server = context.server;
        let (group, resource) = (attributes.resource.group, attributes.resource.plural);
        let mut quotas = server
            .cache
            .objects("", "resourcequotas", Some(attributes.namespace));
        if quotas.is_empty() || !kyb_quota::may_affect(&quotas, group, resource) {
            return Ok(());
        }
        let Some(def) = kyb_api::registry::find_stored("", "resourcequotas") else {
            return Ok(());
        };
        // Until this write is stored (or refused), the status keeper leaves the namespace
        // alone: its recount would not include what this write was charged.
        if !attributes.dry_run {
            context
                .call
                .hold(Box::new(server.quota_inflight.charge(attributes.namespace)));
        }
        let call = crate::rest::internal_call(
            server,
            def,
            Verb::Update,
            Some(attributes.namespace),
            Some(Subresource::Status),
        )?;
        for _ in 0..ATTEMPTS {
            let updates = kyb_quota::check(
                &quotas,
                group,
                resource,
                operation(attributes.operation),
                object,
                attributes.old_object,
            )
            .map_err(|error| {
                let message = error.status_message(group, resource, attributes.name);
                match error.code() {
                    403 => {
                        Status::forbidden(message).with_details(group, resource, attributes.name)
                    }
                    _ => Status::internal(message),
                }
            })?;
            if attributes.dry_run {
                return Ok(());
            }
            let mut conflicted = false;
            for update in &updates {
                let Some(quota) = quotas.iter().find(|q| meta::name(q) == Some(&update.name))
                else {
                    continue;
                };
                let mut status = quota
                    .get("status")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Default::default()));
                status["used"] = update.used_json();
                match crate::rest::update_status(
                    &call,
                    &update.name,
                    Some(&update.resource_version),
                    status,
                )
                .await
                {
                    Ok(_) => {}
                    Err(status) if status.code == 409 => {
                        conflicted = true;
                        break;
                    }
                    Err(status) => return Err(status),
                }
            }
            if !conflicted {
                return Ok(());
            }
            // Another write got there first: read the quotas as they are now and decide again.
            server.fresh().await;
            quotas = server
                .cache
                .objects("", "resourcequotas", Some(attributes.namespace));
        }
        Err(Status::internal(format!(
            "too many concurrent updates to the resource quotas of namespace {}",
            attributes.namespace
        )))
    }
}
