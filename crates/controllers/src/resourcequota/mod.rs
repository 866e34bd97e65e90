//! The resource quota controller (kube-controller-manager's `resourcequota-controller`):
//! keeps every ResourceQuota's `status.hard` equal to its `spec.hard` and its
//! `status.used` equal to what the namespace's objects use, by the same evaluators quota
//! admission charges with (`kyb-quota`: pods and compute resources with the quota's
//! scopes, terminal pods counting only as objects; services with node ports and load
//! balancers; claims with storage, also per storage class; object counts).
//!
//! A quota is recalculated when it is added or its `spec.hard` changes, when an object it
//! counts is deleted or stops using what it used (a pod turning terminal or passing its
//! deletion grace period, see [`replenish`]) — not on creations, which admission charges
//! before they are stored (except while a quota's status is not complete yet: admission
//! charges nothing to such a quota, so creations then recount it) — and for every quota
//! each `--resource-quota-sync-period`. Objects are counted a chunk at a time as they are
//! read ([`usage`]), never held all at once.
//! The status is written with a compare-and-swap update of `/status` (the resource
//! version read); a conflict requeues the quota.

mod replenish;
mod sources;
mod usage;

use crate::context::Context;
use anyhow::Context as _;
use k8s_openapi::api::core::v1::ResourceQuota;
use kube::api::{Api, PostParams};
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::informer::ObjectKey;
use sources::Sources;
use std::sync::Arc;
use usage::Usage;

pub const NAME: &str = "resourcequota-controller";

pub struct QuotaReconciler {
    sources: Arc<Sources>,
    client: kube::Client,
    ctx: Arc<Context>,
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let client = ctx.client_for(NAME).await?;
    let sources = Sources::new(ctx.informers.clone(), client.clone(), ctx.clock.clone());
    let reconciler = Arc::new(QuotaReconciler {
        sources: sources.clone(),
        client,
        ctx: ctx.clone(),
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    sources.start(queue.clone());
    sources.quotas.wait_synced().await;
    // The full resync: every quota, every period.
    let period = ctx.options.resource_quota_sync_period;
    let quotas = sources.quotas.clone();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(period.max(std::time::Duration::from_secs(1)));
        ticks.tick().await;
        loop {
            ticks.tick().await;
            for key in quotas.keys() {
                queue.add(key);
            }
        }
    });
    controller.run(ctx.options.workers).await;
    Ok(())
}

impl Reconciler for QuotaReconciler {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(quota) = self.sources.quotas.get_key(key) else {
            return Ok(Action::Done);
        };
        let json = serde_json::to_value(quota.as_ref()).context("encoding the quota")?;
        // The namespace's objects are counted a chunk at a time as they are read.
        let mut usage = Usage::new(&json, self.ctx.now());
        for gr in kyb_quota::affected_resources(&json) {
            self.sources
                .visit(&key.namespace, &gr, |objects| usage.add(&gr, objects))
                .await?;
        }
        let used = usage.used();
        let status = kyb_quota::status(&json, &used);
        if !kyb_quota::status_changed(&json, &status) {
            return Ok(Action::Done);
        }
        let mut updated = quota.as_ref().clone();
        updated.status = Some(serde_json::from_value(status).context("decoding the new status")?);
        let api: Api<ResourceQuota> = Api::namespaced(self.client.clone(), &key.namespace);
        // The resource version read makes this a compare-and-swap: a quota admission
        // changed meanwhile conflicts, and the quota is recalculated again.
        match api
            .replace_status(&key.name, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => Ok(Action::Done),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(Action::Done),
            Err(e) => Err(e).with_context(|| format!("updating the status of quota {key}")),
        }
    }
}
