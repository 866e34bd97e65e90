//! Client-side machinery the components (scheduler, controller manager) share:
//!
//! - [`informer`]: shared informers — one list+watch per kind, storage and selection
//!   (namespace, label and field selectors), for any kind (typed or dynamic), a store with
//!   secondary indexes, change handlers ([`informer::SharedInformers`],
//!   [`informer::Informer`]).
//! - [`queue`]: rate-limited, deduplicating work queues ([`queue::WorkQueue`]).
//! - [`controller`]: the reconcile loop over a queue ([`controller::Reconciler`],
//!   [`controller::Controller`]).
//! - [`client`]: the API client with a client-side rate limit, a cap on requests in
//!   flight, and retries.
//! - [`leader`]: leader election through a Lease.
//! - [`events`]: Events as `kubectl describe` shows them ([`events::Recorder`]).
//! - [`metrics`] and [`serve`]: Prometheus metrics on `/metrics`.
//! - [`slim`]: objects read without `managedFields`.
//! - [`compact`]: pods kept trimmed and compressed in informers
//!   ([`compact::Compacted`]).

pub mod client;
pub mod compact;
pub mod controller;
pub mod events;
pub mod informer;
pub mod leader;
pub mod metrics;
pub mod queue;
pub mod serve;
pub mod slim;
