//! The namespace controller (kube-controller-manager's `namespace-controller`): empties a
//! namespace that is being deleted and then lets it go.
//!
//! For a namespace with a deletionTimestamp whose `spec.finalizers` still hold
//! `kubernetes`, every namespaced resource in it is deleted ([`content`]); the
//! `NamespaceDeletion*`, `NamespaceContentRemaining` and `NamespaceFinalizersRemaining`
//! conditions are kept current ([`conditions`]); while content remains (graceful pod
//! deletion, objects held by finalizers) the namespace is looked at again after half the
//! longest remaining grace period plus a second, as Kubernetes does; once nothing
//! remains, `kubernetes` is removed through the `finalize` subresource and the API server
//! deletes the namespace.

pub mod conditions;
pub mod content;

use crate::context::Context;
use anyhow::Context as _;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, PostParams};
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::informer::{Change, Informer, ObjectKey};
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "namespace-controller";
/// The finalizer this controller owns.
const FINALIZER: &str = "kubernetes";

struct NamespaceController {
    namespaces: Arc<Informer<Namespace>>,
    client: kube::Client,
    ctx: Arc<Context>,
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let namespaces = ctx.informers.get::<Namespace>();
    let client = ctx.client_for(NAME).await?;
    let reconciler = Arc::new(NamespaceController {
        namespaces: namespaces.clone(),
        client,
        ctx: ctx.clone(),
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    namespaces.on_change(move |change| {
        let namespace = match change {
            Change::Added(ns) => ns,
            Change::Updated { new, .. } => new,
            Change::Deleted(_) => return,
        };
        if namespace.metadata.deletion_timestamp.is_some() {
            queue.add(ObjectKey::of(namespace.as_ref()));
        }
    });
    namespaces.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

impl Reconciler for NamespaceController {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        if self
            .namespaces
            .get("", &key.name)
            .is_none_or(|ns| ns.metadata.deletion_timestamp.is_none())
        {
            return Ok(Action::Done);
        }
        let api: Api<Namespace> = Api::all(self.client.clone());
        // The live object: the cache may be behind a finalize already done.
        let Some(namespace) = api
            .get_opt(&key.name)
            .await
            .with_context(|| format!("reading namespace {}", key.name))?
        else {
            return Ok(Action::Done);
        };
        let finalizers = namespace
            .spec
            .as_ref()
            .and_then(|s| s.finalizers.clone())
            .unwrap_or_default();
        if namespace.metadata.deletion_timestamp.is_none()
            || !finalizers.iter().any(|f| f == FINALIZER)
        {
            return Ok(Action::Done);
        }
        let (outcome, estimate) = content::delete_all(&self.client, &key.name).await;
        self.update_conditions(&api, namespace, &outcome).await?;
        if outcome.discovery_failure.is_some() || !outcome.content_failures.is_empty() {
            anyhow::bail!(
                "namespace {}: {}",
                key.name,
                outcome
                    .discovery_failure
                    .clone()
                    .unwrap_or_else(|| outcome.content_failures.join(", "))
            );
        }
        if !outcome.remaining.is_empty() {
            let wait = u64::try_from(estimate / 2 + 1).unwrap_or(1);
            tracing::debug!(namespace = %key.name, remaining = ?outcome.remaining, "namespace content remains");
            return Ok(Action::RequeueAfter(Duration::from_secs(wait)));
        }
        self.finalize(&api, &key.name).await?;
        Ok(Action::Done)
    }
}

impl NamespaceController {
    async fn update_conditions(
        &self,
        api: &Api<Namespace>,
        mut namespace: Namespace,
        outcome: &conditions::Outcome,
    ) -> anyhow::Result<()> {
        let status = namespace.status.get_or_insert_with(Default::default);
        let current = status.conditions.clone().unwrap_or_default();
        let Some(merged) = conditions::merge(&current, outcome.conditions(), Time(self.ctx.now()))
        else {
            return Ok(());
        };
        status.conditions = Some(merged);
        let name = namespace.metadata.name.clone().unwrap_or_default();
        match api
            .replace_status(&name, &PostParams::default(), &namespace)
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(error).with_context(|| format!("updating namespace {name} status")),
        }
    }

    /// Removes `kubernetes` from spec.finalizers through the `finalize` subresource.
    async fn finalize(&self, api: &Api<Namespace>, name: &str) -> anyhow::Result<()> {
        let Some(mut namespace) = api
            .get_opt(name)
            .await
            .with_context(|| format!("reading namespace {name}"))?
        else {
            return Ok(());
        };
        if let Some(spec) = namespace.spec.as_mut() {
            let finalizers = spec.finalizers.take().unwrap_or_default();
            spec.finalizers = Some(finalizers.into_iter().filter(|f| f != FINALIZER).collect());
        }
        match api
            .replace_subresource("finalize", name, &PostParams::default(), &namespace)
            .await
        {
            Ok(_) => {
                tracing::debug!(namespace = name, "namespace finalized");
                Ok(())
            }
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(error).with_context(|| format!("finalizing namespace {name}")),
        }
    }
}
