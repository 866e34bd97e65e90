//! The filter layers: tower [`Layer`](tower::Layer)s a server stacks around its handler,
//! each doing one thing to a request on its way in and recording what it decided in the
//! request's (or the response's) extensions for the layers after it.
//!
//! The API server's stack, outermost first, is Kubernetes' handler chain:
//! request info → authentication → audit → impersonation → in-flight limit → authorization
//! → body limit → router. The request facts travel as extensions: [`RequestInfo`] (set by
//! [`RequestInfoLayer`]), the [`Connection`](crate::Connection) (set by the TLS serving
//! loop), the `Arc<User>` (set by [`AuthenticationLayer`], replaced by impersonation);
//! decisions a later audit record needs travel back on the response
//! ([`AuthorizationDecision`]). The kubelet reuses request info, authentication,
//! authorization and the in-flight limit with its own resolver and authenticator.
//!
//! [`RequestInfo`]: crate::RequestInfo

mod authentication;
mod authorization;
mod body_limit;
mod inflight;
mod request_info;

pub use authentication::{Authenticate, AuthenticationFailure, AuthenticationLayer, Unauthorized};
pub use authorization::{AuthorizationDecision, AuthorizationLayer, Authorize};
pub use body_limit::BodyLimitLayer;
pub use inflight::InFlightLayer;
pub use request_info::RequestInfoLayer;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;

/// The future of every filter's service.
pub type ResponseFuture<B> =
    Pin<Box<dyn Future<Output = Result<http::Response<B>, Infallible>> + Send>>;

/// The inner service, ready for this call, leaving a fresh clone in its place (tower's
/// pattern for services called from a spawned future).
pub(crate) fn take<S: Clone>(service: &mut S) -> S {
    let fresh = service.clone();
    std::mem::replace(service, fresh)
}
