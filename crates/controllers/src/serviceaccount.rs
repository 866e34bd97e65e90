//! The service-account controller: every active namespace has a ServiceAccount named
//! `default` (pods that name no account run as it, and admission refuses pods whose
//! account does not exist). As Kubernetes' `serviceaccount-controller` does, it only
//! creates: a deleted `default` account comes back; an existing one is left as it is.
//! Namespaces being deleted get nothing.

use anyhow::Context as _;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::PostParams;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::informer::{Change, Informer, ObjectKey};
use std::sync::Arc;

use crate::context::Context;

pub const NAME: &str = "serviceaccount-controller";
/// The service account (and `system:controller:` role) the controller acts as.
const IDENTITY: &str = "service-account-controller";
/// The account every namespace gets.
pub const DEFAULT_ACCOUNT: &str = "default";

struct ServiceAccounts {
    namespaces: Arc<Informer<Namespace>>,
    accounts: Arc<Informer<ServiceAccount>>,
    client: kube::Client,
}

/// Whether a namespace takes new objects (not being deleted).
pub fn is_active(namespace: &Namespace) -> bool {
    namespace.metadata.deletion_timestamp.is_none()
        && namespace.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Terminating")
}

impl Reconciler for ServiceAccounts {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        // Keys are namespaces (cluster-scoped: the name is the namespace).
        let Some(namespace) = self.namespaces.get("", &key.name) else {
            return Ok(Action::Done);
        };
        if !is_active(&namespace) || self.accounts.get(&key.name, DEFAULT_ACCOUNT).is_some() {
            return Ok(Action::Done);
        }
        let account = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(DEFAULT_ACCOUNT.to_string()),
                namespace: Some(key.name.clone()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        };
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), &key.name);
        match api.create(&PostParams::default(), &account).await {
            Ok(_) => {}
            // Already there (our cache is behind), or the namespace is going away.
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(kube::Error::Api(s)) if s.code == 403 && s.reason == "Forbidden" => {
                tracing::debug!(namespace = %key.name, error = %s.message, "not created");
            }
            Err(error) => {
                return Err(error).with_context(|| {
                    format!("creating the default service account in {}", key.name)
                });
            }
        }
        Ok(Action::Done)
    }
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let namespaces = ctx.informers.get::<Namespace>();
    let accounts = ctx.informers.get::<ServiceAccount>();
    let client = ctx.client_for(IDENTITY).await?;
    let reconciler = Arc::new(ServiceAccounts {
        namespaces: namespaces.clone(),
        accounts: accounts.clone(),
        client,
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    {
        let queue = queue.clone();
        namespaces.on_change(move |change| {
            if !matches!(change, Change::Deleted(_)) {
                queue.add(ObjectKey::of(change.object().as_ref()));
            }
        });
    }
    accounts.on_change(move |change| {
        if let Change::Deleted(account) = change
            && account.metadata.name.as_deref() == Some(DEFAULT_ACCOUNT)
        {
            let namespace = account.metadata.namespace.clone().unwrap_or_default();
            queue.add(ObjectKey::new("", namespace));
        }
    });
    namespaces.wait_synced().await;
    accounts.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}
