//! The Kubernetes API server.
//!
//! Serves the built-in resources of the Kubernetes 1.33 API over HTTP from the storage layer
//! (and any resource added to its registry at run time): a generic REST engine (`rest`)
//! driven by the resource registry (`kyb_api::registry`, each entry with its strategy from
//! `strategies`),
//! over TLS, with authentication and authorization (`auth`),
//! reads and watches from an in-memory watch cache (`cache`), discovery, OpenAPI, Table
//! output, and the default objects every cluster has (`bootstrap`). Start it with
//! [`ApiServer::start`] and [`ApiServer::serve`].

pub mod admission;
pub mod audit;
pub mod auth;
mod bootstrap;
pub mod cache;
mod certificates;
mod convert;
mod discovery;
mod duplicates;
pub mod engine;
pub mod filters;
pub mod flowcontrol;
pub mod keepers;
pub mod kinds;
pub mod kubelet;
pub mod metrics_api;
mod names;
mod negotiation;
mod openapi;
mod protobuf;
pub mod proxy;
pub mod response;
mod rest;
mod router;
mod routes;
mod server;
pub mod strategies;
pub mod streaming;
mod util;
mod validation;

pub use kyb_serving::tls::Limits as ConnectionLimits;
pub use names::serving_names;
pub use router::{Connect, Connectors};
pub use routes::KUBERNETES_VERSION;
pub use server::{ApiServer, Config, Security, Stack, StartError};
