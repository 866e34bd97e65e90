//! Authorization: may this user do this? An [`Authorize`] implementation decides on the
//! request's user and [`RequestInfo`]; a refusal is answered here (403) and never reaches
//! the handler. Either way the decision goes back on the response as an
//! [`AuthorizationDecision`], for the audit record.

use super::{Filter, Next};
use crate::body::Body;
use crate::request_info::RequestInfo;
use crate::user::User;
use bytes::Bytes;
use http::{Request, Response};
use kyb_api::Status;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use tower::Service;

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
pub struct Authorization<Z> {
    authorizer: Arc<Z>,
}

impl<Z> Authorization<Z> {
    pub fn new(authorizer: Arc<Z>) -> Self {
        Authorization { authorizer }
    }
}

impl<Z> Clone for Authorization<Z> {
    fn clone(&self) -> Self {
        Authorization {
            authorizer: self.authorizer.clone(),
        }
    }
}

impl<Z, B> Filter<B> for Authorization<Z>
where
    Z: Authorize,
    B: From<Bytes> + Send + 'static,
{
    async fn filter<S>(&self, request: Request<Body>, next: Next<S>) -> Response<B>
    where
        S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Send + 'static,
        S::Future: Send,
    {
        let extensions = request.extensions();
        let (Some(user), Some(info)) = (
            extensions.get::<Arc<User>>().cloned(),
            extensions.get::<RequestInfo>(),
        ) else {
            return crate::reply::status(&Status::internal(
                "the request reached authorization without a user or request info",
            ));
        };
        match self.authorizer.authorize(&user, info).await {
            Ok(reason) => {
                let mut response = next.run(request).await;
                response.extensions_mut().insert(AuthorizationDecision {
                    allowed: true,
                    reason,
                });
                response
            }
            Err(status) => {
                tracing::debug!(user = %user.name, path = %request.uri().path(), "forbidden");
                let mut response = crate::reply::status::<B>(&status);
                response.extensions_mut().insert(AuthorizationDecision {
                    allowed: false,
                    reason: status.message.clone(),
                });
                response
            }
        }
    }
}
