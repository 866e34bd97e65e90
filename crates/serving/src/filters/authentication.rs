//! Authentication: who is asking. An [`Authenticate`] implementation names the user of a
//! request (from the connection's verified client certificate, a bearer token, …); the
//! layer puts it in the request's extensions as an `Arc<User>`. A request it refuses goes
//! to the failure service instead ([`Unauthorized`] answers the `401`; the API server
//! audits it first, as Kubernetes' failed-authentication handler does), with the refusal in
//! its extensions as an [`AuthenticationFailure`].

use super::{Filter, Next};
use crate::body::Body;
use crate::user::User;
use bytes::Bytes;
use http::{Request, Response};
use kyb_api::Status;
use std::convert::Infallible;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Service, ServiceExt};

/// Names the user behind a request.
pub trait Authenticate: Send + Sync + 'static {
    /// The user, or the `Status` (401) refusing the request. The request's
    /// [`Connection`](crate::Connection) is in `parts.extensions`.
    fn authenticate(
        &self,
        parts: &http::request::Parts,
    ) -> impl Future<Output = Result<User, Status>> + Send;
}

/// Why authentication refused a request (in the extensions of the request the failure
/// service gets).
#[derive(Clone, Debug)]
pub struct AuthenticationFailure(pub Status);

/// Authenticates every request; refused ones go to the failure service `F`.
pub struct Authentication<A, F> {
    authenticator: Arc<A>,
    failed: F,
}

impl<A, F: Clone> Clone for Authentication<A, F> {
    fn clone(&self) -> Self {
        Authentication {
            authenticator: self.authenticator.clone(),
            failed: self.failed.clone(),
        }
    }
}

impl<A, B> Authentication<A, Unauthorized<B>> {
    /// Refused requests are answered with their `Status`.
    pub fn new(authenticator: Arc<A>) -> Self {
        Authentication {
            authenticator,
            failed: Unauthorized::default(),
        }
    }
}

impl<A, F> Authentication<A, F> {
    /// Refused requests go to `failed` (which answers them).
    pub fn with_failure_service(authenticator: Arc<A>, failed: F) -> Self {
        Authentication {
            authenticator,
            failed,
        }
    }
}

impl<A, F, B> Filter<B> for Authentication<A, F>
where
    A: Authenticate,
    F: Service<Request<Body>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    F::Future: Send,
{
    async fn filter<S>(&self, request: Request<Body>, next: Next<S>) -> Response<B>
    where
        S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Send + 'static,
        S::Future: Send,
    {
        let (mut parts, body) = request.into_parts();
        match self.authenticator.authenticate(&parts).await {
            Ok(user) => {
                parts.extensions.insert(Arc::new(user));
                next.run(Request::from_parts(parts, body)).await
            }
            Err(status) => {
                parts.extensions.insert(AuthenticationFailure(status));
                let failed = self.failed.clone();
                match failed.oneshot(Request::from_parts(parts, body)).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                }
            }
        }
    }
}

/// Answers a refused request with its [`AuthenticationFailure`]'s `Status` (in a response
/// body of type `B`).
pub struct Unauthorized<B>(PhantomData<fn() -> B>);

impl<B> Default for Unauthorized<B> {
    fn default() -> Self {
        Unauthorized(PhantomData)
    }
}

impl<B> Clone for Unauthorized<B> {
    fn clone(&self) -> Self {
        Unauthorized::default()
    }
}

impl<B: From<Bytes> + Send + 'static> Service<Request<Body>> for Unauthorized<B> {
    type Response = Response<B>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Response<B>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let status = request
            .extensions()
            .get::<AuthenticationFailure>()
            .map(|failure| failure.0.clone())
            .unwrap_or_else(|| Status::unauthorized("Unauthorized"));
        std::future::ready(Ok(crate::reply::status(&status)))
    }
}
