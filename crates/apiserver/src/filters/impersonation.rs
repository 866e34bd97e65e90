//! Impersonation as a layer: a request with `Impersonate-*` headers acts, from here on, as
//! the impersonated user (the `Arc<User>` in its extensions is replaced) when the
//! authenticated user may impersonate each part (`auth::impersonate`); otherwise it is
//! refused here. The impersonated user goes back on the response for the audit record.

use crate::auth::{Authorizer, User, impersonate};
use crate::response::{self, Response};
use http::Request;
use kyb_api::Status;
use kyb_serving::Body;
use kyb_serving::filters::{Filter, Next};
use std::convert::Infallible;
use std::sync::Arc;
use tower::Service;

/// Who the request acted as (in the response's extensions, when it impersonated).
#[derive(Clone, Debug)]
pub struct Impersonated(pub Arc<User>);

#[derive(Clone)]
pub struct Impersonation {
    authorizer: Arc<Authorizer>,
}

impl Impersonation {
    pub fn new(authorizer: Arc<Authorizer>) -> Impersonation {
        Impersonation { authorizer }
    }
}

impl Filter<response::Body> for Impersonation {
    async fn filter<S>(&self, mut request: Request<Body>, next: Next<S>) -> Response
    where
        S: Service<Request<Body>, Response = Response, Error = Infallible> + Send + 'static,
        S::Future: Send,
    {
        let Some(user) = request.extensions().get::<Arc<User>>().cloned() else {
            let status = Status::internal("the request reached impersonation without a user");
            return response::error(&status);
        };
        let impersonated = match impersonate(&self.authorizer, &user, request.headers()) {
            Ok(None) => return next.run(request).await,
            Ok(Some(impersonated)) => Arc::new(impersonated),
            Err(status) => return response::error(&status),
        };
        request.extensions_mut().insert(impersonated.clone());
        let mut response = next.run(request).await;
        response.extensions_mut().insert(Impersonated(impersonated));
        response
    }
}
