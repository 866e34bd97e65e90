//! Authorization: may this user do this? An [`Authorize`] implementation decides on the
//! request's user and [`RequestInfo`]; a refusal is answered here (403) and never reaches
//! the handler. Either way the decision goes back on the response as an
//! [`AuthorizationDecision`], for the audit record.

use super::{ResponseFuture, take};
use crate::body::Body;
use crate::request_info::RequestInfo;
use crate::user::User;
use bytes::Bytes;
use http::{Request, Response};
use kyb_api::Status;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// Decides whether a user may make a request.
pub trait Authorize: Send + Sync + 'static {
    /// Allowed (with the authorizer's reason), or the `Status` (403) refusing it.
    fn authorize(
        &self,
        user: &User,
        request: &RequestInfo,
    ) -> impl Future<Output = Result<String, Status>> + Send;
}

/// What authorization decided, in the response's extensions.
#[derive(Clone, Debug)]
pub struct AuthorizationDecision {
    pub allowed: bool,
    pub reason: String,
}

/// Authorizes every request against `Z`.
pub struct AuthorizationLayer<Z> {
    authorizer: Arc<Z>,
}

impl<Z> AuthorizationLayer<Z> {
    pub fn new(authorizer: Arc<Z>) -> Self {
        AuthorizationLayer { authorizer }
    }
}

impl<Z> Clone for AuthorizationLayer<Z> {
    fn clone(&self) -> Self {
        AuthorizationLayer {
            authorizer: self.authorizer.clone(),
        }
    }
}

impl<Z, S> Layer<S> for AuthorizationLayer<Z> {
    type Service = AuthorizationService<Z, S>;

    fn layer(&self, inner: S) -> Self::Service {
        AuthorizationService {
            inner,
            authorizer: self.authorizer.clone(),
        }
    }
}

pub struct AuthorizationService<Z, S> {
    inner: S,
    authorizer: Arc<Z>,
}

impl<Z, S: Clone> Clone for AuthorizationService<Z, S> {
    fn clone(&self) -> Self {
        AuthorizationService {
            inner: self.inner.clone(),
            authorizer: self.authorizer.clone(),
        }
    }
}

impl<Z, S, B> Service<Request<Body>> for AuthorizationService<Z, S>
where
    Z: Authorize,
    S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
    B: From<Bytes> + Send + 'static,
{
    type Response = Response<B>;
    type Error = Infallible;
    type Future = ResponseFuture<B>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let mut inner = take(&mut self.inner);
        let authorizer = self.authorizer.clone();
        Box::pin(async move {
            let extensions = request.extensions();
            let (Some(user), Some(info)) = (
                extensions.get::<Arc<User>>().cloned(),
                extensions.get::<RequestInfo>(),
            ) else {
                return Ok(crate::reply::status(&Status::internal(
                    "the request reached authorization without a user or request info",
                )));
            };
            match authorizer.authorize(&user, info).await {
                Ok(reason) => {
                    let mut response = inner.call(request).await?;
                    response.extensions_mut().insert(AuthorizationDecision {
                        allowed: true,
                        reason,
                    });
                    Ok(response)
                }
                Err(status) => {
                    tracing::debug!(user = %user.name, path = %request.uri().path(), "forbidden");
                    let mut response = crate::reply::status::<B>(&status);
                    response.extensions_mut().insert(AuthorizationDecision {
                        allowed: false,
                        reason: status.message.clone(),
                    });
                    Ok(response)
                }
            }
        })
    }
}
