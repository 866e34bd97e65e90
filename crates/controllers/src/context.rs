//! What every controller is given: the API client, the process's shared informers, the
//! metrics registry, event recorders, the clock and the manager's options.

use crate::clock::Clock;
use crate::options::Options;
use kyb_runtime::controller::{Controller, Reconciler};
use kyb_runtime::events::Recorder;
use kyb_runtime::informer::SharedInformers;
use kyb_runtime::metrics::Registry;
use std::sync::Arc;

pub struct Context {
    /// The manager's own client (informers use it).
    pub client: kube::Client,
    /// Each controller's client: [`Context::client_for`].
    pub clients: crate::credentials::Clients,
    pub informers: Arc<SharedInformers>,
    pub registry: Arc<Registry>,
    pub clock: Arc<dyn Clock>,
    pub options: Options,
    /// The HPA controller's metrics source (`None`: the resource metrics API).
    pub metrics: Option<Arc<dyn crate::podautoscaler::metrics::MetricsSource>>,
}

impl Context {
    /// The client of the controller `name` (e.g. `deployment-controller`): its own
    /// service account's identity, with only its role's permissions.
    ///
    /// Retried with backoff (200 ms doubling to 5 s) until it works: right after the server
    /// starts, the account's first token request can fail, and a controller without its
    /// identity cannot act at all.
    pub async fn client_for(&self, name: &str) -> anyhow::Result<kube::Client> {
        let mut delay = std::time::Duration::from_millis(200);
        loop {
            match self.clients.for_controller(name).await {
                Ok(client) => return Ok(client),
                Err(error) => {
                    tracing::warn!(account = name, error = %format!("{error:#}"), "no client for the controller yet; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(std::time::Duration::from_secs(5));
                }
            }
        }
    }

    /// An event recorder writing as `component` (e.g. `replicaset-controller`).
    pub fn recorder(&self, component: &str) -> Recorder {
        Recorder::new(self.client.clone(), component)
    }

    /// A controller named `name` for `reconciler`, its queue and metrics registered.
    pub fn controller<R: Reconciler>(&self, name: &str, reconciler: Arc<R>) -> Controller<R> {
        Controller::new(name, reconciler, &self.registry)
    }

    /// Now, by the context's clock.
    pub fn now(&self) -> jiff::Timestamp {
        self.clock.now()
    }
}
