//! The generic serving stack shared by Kybernetes' HTTPS servers (the API server now, the
//! kubelet's port 10250 next), in the spirit of Kubernetes' `k8s.io/apiserver` filters:
//!
//! - [`tls::serve`]: TLS connections, the client certificate's identity as a
//!   [`Connection`] in each request's extensions, HTTP/1.1, HTTP/2 and upgrades;
//! - [`filters`]: tower layers — request info, authentication, in-flight limit,
//!   authorization, body limit — each generic over the server's own resolver,
//!   authenticator and authorizer;
//! - the request facts they share: [`RequestInfo`] (with [`Query`]), [`User`];
//! - request [`body`]: streamed, collected on demand within the limit.
//!
//! A stack built from these layers is a plain `tower::Service`, so tests drive it in
//! process with `ServiceExt::oneshot`, without a port.

pub mod body;
pub mod fairqueuing;
pub mod filters;
pub mod query;
pub mod reply;
pub mod request_info;
pub mod tls;
pub mod user;

pub use body::Body;
pub use query::Query;
pub use request_info::{RequestInfo, ResourceRequest, Target, Verb};
pub use tls::Connection;
pub use user::User;
