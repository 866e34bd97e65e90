//! The connect subresources served over plain HTTP, as kube-apiserver's: `pods/log` (the
//! kubelet's container log, streamed as it is written) and the three proxies —
//! `pods/proxy`, `services/proxy` and `nodes/proxy` — which forward any method, body and
//! upgrade to a pod, a ready endpoint of a service, or a kubelet. Each connector finds
//! where its backend is (`pod`, `service`, `node`), then `forward` does the rest.

mod backend;
mod forward;
mod log;
mod node;
mod path;
mod pod;
mod rewrite;
mod service;
mod stream;

use crate::engine::Engine;
use crate::response::{self, Response};
use crate::router::{Connect, Connectors};
use http::Request;
use kyb_api::Status;
use kyb_serving::{Body, ResourceRequest, User};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Registers `pods/log`, `pods/proxy`, `services/proxy` and `nodes/proxy`.
pub fn register(connectors: &mut Connectors) {
    connectors.register("", "pods", "log", Arc::new(Handler(log::serve)));
    connectors.register("", "pods", "proxy", Arc::new(Handler(pod::serve)));
    connectors.register("", "services", "proxy", Arc::new(Handler(service::serve)));
    connectors.register("", "nodes", "proxy", Arc::new(Handler(node::serve)));
}

/// A connector's answer: the response, or the Status refusing the request.
type Answer = Pin<Box<dyn Future<Output = Result<Response, Status>> + Send>>;

type Serve = fn(Arc<Engine>, ResourceRequest, Request<Body>) -> Answer;

/// A connector from its serving function; a refusal becomes its `Status`.
struct Handler(Serve);

impl Connect for Handler {
    fn connect(
        &self,
        engine: Arc<Engine>,
        _user: Arc<User>,
        target: ResourceRequest,
        request: Request<Body>,
    ) -> Pin<Box<dyn Future<Output = Response> + Send>> {
        let serve = (self.0)(engine, target, request);
        Box::pin(async move {
            match serve.await {
                Ok(response) => response,
                Err(status) => response::error(&status),
            }
        })
    }
}
