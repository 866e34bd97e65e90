//! Wiring a scheduler together and running it as a client of the API server: the
//! profiles' frameworks, the queue, the cache, the informers, leader election, the loop.

use crate::cache::Cache;
use crate::client::KubeClient;
use crate::config::SchedulerConfig;
use crate::framework::{Framework, Handle, Registry, WaitingPods};
use crate::informers::{self, Informers};
use crate::leader::Election;
use crate::queue::SchedulingQueue;
use crate::scheduler::Scheduler;
use kyb_runtime::informer::SharedInformers;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// Why the scheduler could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Profile(String),
}

/// Runs a scheduler until `shutdown` resolves. `identity` names this instance (in the
/// lease and on events).
pub async fn run(
    client: kube::Client,
    config: SchedulerConfig,
    registry: Registry,
    identity: &str,
    shutdown: impl Future<Output = ()>,
) -> Result<(), RunError> {
    tokio::select! {
        result = schedule(client, config, registry, identity) => result,
        () = shutdown => Ok(()),
    }
}

async fn schedule(
    client: kube::Client,
    config: SchedulerConfig,
    registry: Registry,
    identity: &str,
) -> Result<(), RunError> {
    let shared = SharedInformers::new(client.clone());
    let informers = Arc::new(Informers::new(&shared));
    let api = Arc::new(KubeClient::new(client.clone(), identity));
    let handle = Arc::new(Handle {
        client: api.clone(),
        lister: informers.clone(),
        waiting_pods: Arc::new(WaitingPods::default()),
    });
    let mut profiles = HashMap::new();
    for profile in &config.profiles {
        let framework =
            Framework::new(profile, &registry, handle.clone()).map_err(RunError::Profile)?;
        profiles.insert(profile.scheduler_name.clone(), Arc::new(framework));
    }
    let queue = Arc::new(SchedulingQueue::new(
        profiles.clone(),
        config.pod_initial_backoff,
        config.pod_max_backoff,
    ));
    let cache = Arc::new(Mutex::new(Cache::new()));
    let mut synced = informers::start(&shared, informers, cache.clone(), queue.clone());
    let (leading, leading_rx) = watch::channel(!config.leader_elect);
    let mut election_task = tokio::task::JoinSet::new();
    if config.leader_elect {
        let election = Election {
            namespace: config.lease_namespace.clone(),
            name: config.lease_name.clone(),
            identity: identity.to_string(),
            lease_duration: config.lease_duration,
            renew_deadline: config.renew_deadline,
            retry_period: config.retry_period,
        };
        // Aborted when the run ends or is dropped.
        election_task.spawn(election.run(client, leading));
    } else {
        // Kept alive for the loop's receiver.
        std::mem::forget(leading);
    }
    synced.wait().await;
    tracing::info!(
        profiles = profiles.len(),
        "scheduler caches synced; scheduling"
    );
    let scheduler = Arc::new(Scheduler::new(
        profiles,
        queue,
        cache,
        api,
        config.percentage_of_nodes_to_score,
    ));
    scheduler.run(leading_rx).await;
    Ok(())
}
