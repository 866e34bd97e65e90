//! Impersonation as a layer: a request with `Impersonate-*` headers acts, from here on, as
//! the impersonated user (the `Arc<User>` in its extensions is replaced) when the
//! authenticated user may impersonate each part (`auth::impersonate`); otherwise it is
//! refused here. The impersonated user goes back on the response for the audit record.

use crate::auth::{Authorizer, User, impersonate};
use crate::response::{self, Response};
use http::Request;
use kyb_api::Status;
use kyb_serving::Body;
use kyb_serving::filters::ResponseFuture;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// Who the request acted as (in the response's extensions, when it impersonated).
#[derive(Clone, Debug)]
pub struct Impersonated(pub Arc<User>);

#[derive(Clone)]
pub struct ImpersonationLayer {
    authorizer: Arc<Authorizer>,
}

impl ImpersonationLayer {
    pub fn new(authorizer: Arc<Authorizer>) -> ImpersonationLayer {
        ImpersonationLayer { authorizer }
    }
}

impl<S> Layer<S> for ImpersonationLayer {
    type Service = Impersonation<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Impersonation {
            inner,
            authorizer: self.authorizer.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Impersonation<S> {
    inner: S,
    authorizer: Arc<Authorizer>,
}

impl<S> Service<Request<Body>> for Impersonation<S>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response;
    type Error = Infallible;
    type Future = ResponseFuture<response::Body>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<Body>) -> Self::Future {
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let Some(user) = request.extensions().get::<Arc<User>>().cloned() else {
            let status = Status::internal("the request reached impersonation without a user");
            return Box::pin(std::future::ready(Ok(response::error(&status))));
        };
        let impersonated = match impersonate(&self.authorizer, &user, request.headers()) {
            Ok(None) => return Box::pin(inner.call(request)),
            Ok(Some(impersonated)) => Arc::new(impersonated),
            Err(status) => return Box::pin(std::future::ready(Ok(response::error(&status)))),
        };
        request.extensions_mut().insert(impersonated.clone());
        Box::pin(async move {
            let mut response = inner.call(request).await?;
            response.extensions_mut().insert(Impersonated(impersonated));
            Ok(response)
        })
    }
}
