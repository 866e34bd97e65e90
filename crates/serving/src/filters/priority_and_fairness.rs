//! API Priority and Fairness as a filter: each request is classified (by the server's
//! [`Classify`] — for the API server, its FlowSchemas) into a priority level and a flow;
//! requests of an exempt level run at once, the others wait for a seat of their level's
//! [`QueueSet`] (fair queuing, see [`crate::fairqueuing`]) or get `429 Too Many Requests`
//! with `Retry-After`, worded and formatted as kube-apiserver's filter answers (plain
//! text). Every classified response carries the `X-Kubernetes-PF-FlowSchema-UID` and
//! `X-Kubernetes-PF-PriorityLevel-UID` headers.
//!
//! Long-running requests other than watches (exec, attach, port-forward, proxy, log) are
//! not classified, as in Kubernetes. A watch holds its seat only until its response
//! starts (its initialization), not for as long as it streams; every other request holds
//! it until its response is ready.

use super::{Filter, Next};
use crate::body::Body;
use crate::fairqueuing::QueueSet;
use crate::request_info::RequestInfo;
use crate::user::User;
use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tower::Service;

pub const FLOW_SCHEMA_UID_HEADER: &str = "X-Kubernetes-PF-FlowSchema-UID";
pub const PRIORITY_LEVEL_UID_HEADER: &str = "X-Kubernetes-PF-PriorityLevel-UID";
/// kube-apiserver's answer to a request it will not serve now.
pub const TOO_MANY_REQUESTS: &str = "Too many requests, please try again later.";

/// Where a request goes: its flow schema and priority level, and its flow.
#[derive(Clone)]
pub struct Classification {
    pub flow_schema: Arc<str>,
    pub flow_schema_uid: HeaderValue,
    pub priority_level: Arc<str>,
    pub priority_level_uid: HeaderValue,
    /// The flow (schema and distinguisher), hashed for shuffle sharding.
    pub flow_hash: u64,
    /// The level's seats and queues; `None` for an exempt level.
    pub queues: Option<Arc<QueueSet>>,
}

/// How a server classifies its requests; `None` serves the request unclassified (no
/// configuration yet).
pub trait Classify: Send + Sync + 'static {
    fn classify(&self, info: &RequestInfo, user: &User) -> Option<Classification>;
}

#[derive(Clone)]
pub struct PriorityAndFairness {
    classifier: Arc<dyn Classify>,
    wait_limit: Duration,
}

impl PriorityAndFairness {
    /// `wait_limit`: the longest a request waits in a queue (Kubernetes: a quarter of the
    /// request timeout, 15 s by default).
    pub fn new(classifier: Arc<dyn Classify>, wait_limit: Duration) -> PriorityAndFairness {
        PriorityAndFairness {
            classifier,
            wait_limit,
        }
    }
}

fn set_headers<B>(response: &mut Response<B>, classification: &Classification) {
    let headers = response.headers_mut();
    headers.insert(
        FLOW_SCHEMA_UID_HEADER,
        classification.flow_schema_uid.clone(),
    );
    headers.insert(
        PRIORITY_LEVEL_UID_HEADER,
        classification.priority_level_uid.clone(),
    );
}

/// The 429 kube-apiserver writes (`http.Error`: plain text, a trailing newline).
pub fn too_many_requests<B: From<Bytes>>(retry_after_seconds: u64) -> Response<B> {
    let mut response = Response::new(B::from(Bytes::from(format!("{TOO_MANY_REQUESTS}\n"))));
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after_seconds));
    response
}

impl<B: From<Bytes> + Send + 'static> Filter<B> for PriorityAndFairness {
    async fn filter<S>(&self, request: Request<Body>, next: Next<S>) -> Response<B>
    where
        S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Send + 'static,
        S::Future: Send,
    {
        let classification = {
            let extensions = request.extensions();
            let Some(info) = extensions.get::<RequestInfo>() else {
                return next.run(request).await;
            };
            let watch = info
                .resource()
                .is_some_and(|r| r.verb == crate::Verb::Watch);
            if info.is_long_running() && !watch {
                return next.run(request).await;
            }
            let anonymous;
            let user = match extensions.get::<Arc<User>>() {
                Some(user) => user.as_ref(),
                None => {
                    anonymous = User::anonymous();
                    &anonymous
                }
            };
            self.classifier.classify(info, user)
        };
        let Some(classification) = classification else {
            return next.run(request).await;
        };
        let seat = match &classification.queues {
            None => None,
            Some(queues) => match queues
                .acquire(classification.flow_hash, self.wait_limit)
                .await
            {
                Ok(seat) => Some(seat),
                Err(rejection) => {
                    tracing::debug!(
                        flow_schema = %classification.flow_schema,
                        priority_level = %classification.priority_level,
                        reason = rejection.reason(),
                        "request rejected by priority and fairness"
                    );
                    let mut response = too_many_requests(1);
                    set_headers(&mut response, &classification);
                    return response;
                }
            },
        };
        let mut response = next.run(request).await;
        drop(seat);
        set_headers(&mut response, &classification);
        response
    }
}
