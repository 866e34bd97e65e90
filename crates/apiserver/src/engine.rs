//! The engine: the narrow handles the REST engine, admission and the server's keepers work
//! through — the resource registry (what is served, each kind's strategy), the watch
//! cache (reads, watches, freshness), the store (compare-and-swap writes), the admission
//! chain, the authorizer and authenticator (for reviews, token requests and escalation
//! checks), service address allocation, and the server's own identity. It is shared as an
//! `Arc`, so work that outlives a request (quota admission's batches) keeps it. Nothing here knows of connections, TLS, the filter stack, discovery or audit:
//! those belong to the serving side (`server`, `filters`, `routes`).

use crate::admission;
use crate::auth::{Authenticator, Authorizer, User};
use crate::cache::WatchCache;
use kyb_api::Status;
use kyb_api::registry::Registry;
use kyb_storage::Store;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

/// How long a consistent read waits for the cache before reading storage directly.
const FRESHNESS_WAIT: Duration = Duration::from_secs(3);

/// What every resource request is served with.
pub struct Engine {
    /// The resources served, each with its strategy; the cache, discovery and OpenAPI
    /// follow it.
    pub registry: Arc<Registry>,
    /// Reads and watches; consistent reads wait for it to catch up ([`Engine::fresh`]).
    pub cache: Arc<WatchCache>,
    /// Writes (compare-and-swap) and the reads the cache cannot answer (a paginated list's
    /// later pages, at the first page's revision).
    pub store: Arc<dyn Store>,
    pub admission: admission::Chain,
    /// Access reviews, escalation checks, the CEL `authorizer` library.
    pub authorizer: Arc<Authorizer>,
    /// Token reviews and TokenRequests.
    pub authenticator: Arc<Authenticator>,
    pub services: ServiceRanges,
    /// The identity of the server's own writes (`system:apiserver`).
    pub identity: Arc<User>,
    /// The process's component checks (`Config::health`), which ComponentStatus reports.
    pub health: kyb_component::Health,
    /// The client connectors reach kubelets with (`pods/log`, `nodes/proxy`, `pods/exec`, …).
    pub kubelet: crate::kubelet::KubeletClient,
    /// The metrics API's latest node and container usage, kept by its scraper.
    pub metrics: Arc<crate::metrics_api::MetricsStore>,
}

/// Where Services' ClusterIPs and NodePorts come from; allocation is serialized.
pub struct ServiceRanges {
    pub service_cidr: (Ipv4Addr, u8),
    pub node_ports: (u16, u16),
    pub(crate) allocation: Mutex<()>,
}

impl ServiceRanges {
    pub fn new(service_cidr: (Ipv4Addr, u8), node_ports: (u16, u16)) -> ServiceRanges {
        ServiceRanges {
            service_cidr,
            node_ports,
            allocation: Mutex::new(()),
        }
    }
}

impl Engine {
    /// Waits until the cache reflects every acknowledged write; `false` if it did not catch
    /// up in time (the caller then reads storage).
    pub async fn fresh(&self) -> bool {
        self.cache.wait_fresh(FRESHNESS_WAIT).await.is_some()
    }
}

/// The Status for a storage failure.
pub fn storage_error(error: kyb_storage::Error) -> Status {
    match error {
        kyb_storage::Error::ValueTooLarge { .. } => {
            Status::too_large("etcdserver: request is too large")
        }
        kyb_storage::Error::Compacted {
            requested,
            compacted,
        } => Status::expired(format!(
            "too old resource version: {requested} ({compacted})"
        )),
        kyb_storage::Error::FutureRevision { requested, current } => Status::timeout(format!(
            "Too large resource version: {requested}, current: {current}"
        )),
        kyb_storage::Error::Closed => Status::service_unavailable("the server is shutting down"),
        other => Status::internal(other.to_string()),
    }
}
