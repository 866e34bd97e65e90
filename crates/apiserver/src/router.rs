//! The innermost service of the stack: a request that passed every filter goes to the
//! non-resource routes (health, version, discovery, OpenAPI), to a connect handler that
//! streams (registered per subresource, such as `pods/exec`), or to the REST engine, which
//! gets the body whole (collected here, within the body limit).

use crate::engine::Engine;
use crate::filters::{AuditAnnotations, AuditedBody};
use crate::response::{self, Response};
use crate::routes::Routes;
use http::Request;
use kyb_api::Status;
use kyb_serving::filters::ResponseFuture;
use kyb_serving::{Body, RequestInfo, ResourceRequest, Target, User};
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::Service;

/// A handler of a subresource that is not read and written as an object: it gets the
/// request as it arrived (its body a stream, its connection upgradable with
/// `hyper::upgrade::on`) after authentication, authorization and admission's
/// connect-time checks are the caller's concern.
pub trait Connect: Send + Sync + 'static {
    fn connect(
        &self,
        engine: Arc<Engine>,
        user: Arc<User>,
        target: ResourceRequest,
        request: Request<Body>,
    ) -> Pin<Box<dyn Future<Output = Response> + Send>>;
}

/// The connect handlers, by group, resource and subresource (`("", "pods", "exec")`).
#[derive(Clone, Default)]
pub struct Connectors {
    handlers: HashMap<(String, String, String), Arc<dyn Connect>>,
}

impl Connectors {
    pub fn register(
        &mut self,
        group: &str,
        resource: &str,
        subresource: &str,
        handler: Arc<dyn Connect>,
    ) {
        self.handlers.insert(
            (
                group.to_string(),
                resource.to_string(),
                subresource.to_string(),
            ),
            handler,
        );
    }

    fn find(&self, request: &ResourceRequest) -> Option<&Arc<dyn Connect>> {
        let subresource = request.subresource.as_ref()?;
        if self.handlers.is_empty() {
            return None;
        }
        self.handlers.get(&(
            request.group.clone(),
            request.resource.clone(),
            subresource.clone(),
        ))
    }
}

#[derive(Clone)]
pub struct Router {
    engine: Arc<Engine>,
    routes: Arc<Routes>,
    connectors: Arc<Connectors>,
}

impl Router {
    pub fn new(engine: Arc<Engine>, routes: Arc<Routes>, connectors: Arc<Connectors>) -> Router {
        Router {
            engine,
            routes,
            connectors,
        }
    }
}

impl Service<Request<Body>> for Router {
    type Response = Response;
    type Error = Infallible;
    type Future = ResponseFuture<response::Body>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let engine = self.engine.clone();
        let routes = self.routes.clone();
        let connectors = self.connectors.clone();
        Box::pin(async move { Ok(route(engine, &routes, &connectors, request).await) })
    }
}

async fn route(
    engine: Arc<Engine>,
    routes: &Routes,
    connectors: &Connectors,
    request: Request<Body>,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let Some(info) = parts.extensions.remove::<RequestInfo>() else {
        return response::error(&Status::internal(
            "the request reached the router without request info",
        ));
    };
    let resource = match info.target {
        Target::NonResource => {
            return routes
                .serve(&parts.method, parts.uri.path(), &info.query, &parts.headers)
                .await;
        }
        Target::Resource(resource) => resource,
    };
    let Some(user) = parts.extensions.get::<Arc<User>>().cloned() else {
        return response::error(&Status::internal(
            "the request reached the router without a user",
        ));
    };
    if let Some(handler) = connectors.find(&resource) {
        let request = Request::from_parts(parts, body);
        return handler.connect(engine, user, resource, request).await;
    }
    let body = match kyb_serving::body::collect(body).await {
        Ok(body) => body,
        Err(status) => return response::error(&status),
    };
    let audited = AuditedBody {
        bytes: body.clone(),
        content_type: parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    };
    let (mut response, annotations) =
        crate::rest::serve(&engine, user, resource, info.query, parts.headers, body).await;
    let extensions = response.extensions_mut();
    extensions.insert(audited);
    if !annotations.is_empty() {
        extensions.insert(AuditAnnotations(annotations));
    }
    response
}
