//! The scraper: every [`RESOLUTION`] (metrics-server's `--metric-resolution`), each Ready
//! node's kubelet `/metrics/resource` is read at the same time through the kubelet client,
//! parsed and recorded; nodes that are not Ready or did not answer are dropped from the
//! store, as metrics-server replaces its whole batch each round.

use super::parse;
use super::store::MetricsStore;
use crate::engine::Engine;
use crate::kubelet::KubeletClient;
use async_trait::async_trait;
use http_body_util::BodyExt as _;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// How often every node is scraped (metrics-server's default resolution).
pub const RESOLUTION: Duration = Duration::from_secs(15);
/// How long one kubelet may take to answer (metrics-server's `--kubelet-request-timeout`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read from a kubelet.
const MAX_BODY: usize = 64 << 20;

/// Where a node's resource metrics come from: its kubelet, through the API server's
/// kubelet client (a fake in tests).
#[async_trait]
pub trait ResourceMetricsSource: Send + Sync {
    /// The text of `node`'s `/metrics/resource`.
    async fn resource_metrics(&self, engine: &Engine, node: &str) -> Result<String, String>;
}

#[async_trait]
impl ResourceMetricsSource for KubeletClient {
    async fn resource_metrics(&self, engine: &Engine, node: &str) -> Result<String, String> {
        let location = self
            .location(engine, node)
            .await
            .map_err(|status| status.message)?;
        let request = http::Request::get("/metrics/resource")
            .header(http::header::ACCEPT, "text/plain")
            .body(kyb_serving::Body::empty())
            .map_err(|e| e.to_string())?;
        let response = self
            .send(&location, request)
            .await
            .map_err(|status| status.message)?;
        let status = response.status();
        let body = http_body_util::Limited::new(response.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| {
                format!(
                    "reading the answer of {}: {e}",
                    location.url("/metrics/resource")
                )
            })?
            .to_bytes();
        if status != http::StatusCode::OK {
            return Err(format!(
                "request failed, status: {:?}: {}",
                status.as_u16(),
                String::from_utf8_lossy(&body).trim()
            ));
        }
        String::from_utf8(body.to_vec()).map_err(|_| "the answer is not UTF-8".to_string())
    }
}

/// Scrapes every [`RESOLUTION`] for as long as the server runs.
pub async fn run(
    engine: Arc<Engine>,
    store: Arc<MetricsStore>,
    source: Arc<dyn ResourceMetricsSource>,
) {
    let mut tick = tokio::time::interval(RESOLUTION);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        scrape_all(&engine, &store, &source).await;
    }
}

/// One round over every Ready node, all at once.
pub async fn scrape_all(
    engine: &Arc<Engine>,
    store: &MetricsStore,
    source: &Arc<dyn ResourceMetricsSource>,
) {
    let mut scrapes = tokio::task::JoinSet::new();
    for node in engine.cache.objects_shared("", "nodes", None) {
        let Some(name) = kyb_apimachinery::meta::name(&node).filter(|_| is_ready(&node)) else {
            continue;
        };
        let (engine, source, name) = (engine.clone(), source.clone(), name.to_string());
        scrapes.spawn(async move {
            let answer =
                tokio::time::timeout(REQUEST_TIMEOUT, source.resource_metrics(&engine, &name))
                    .await
                    .unwrap_or_else(|_| Err(format!("no answer within {REQUEST_TIMEOUT:?}")));
            (name, answer)
        });
    }
    let mut live = HashSet::new();
    while let Some(joined) = scrapes.join_next().await {
        let Ok((node, answer)) = joined else {
            continue;
        };
        match answer.and_then(|text| parse::parse(&text, now_nanos())) {
            Ok(scrape) => {
                store.record(&node, scrape);
                live.insert(node);
            }
            Err(error) => {
                tracing::warn!(node = %node, error = %error, "scraping the node's resource metrics");
            }
        }
    }
    store.retain_nodes(&live);
}

/// Whether a Node's `Ready` condition is `True`.
pub fn is_ready(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// Now, in nanoseconds since the epoch.
pub fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_ready_nodes_are_scraped() {
        assert!(is_ready(&json!({"status": {"conditions": [
            {"type": "MemoryPressure", "status": "False"},
            {"type": "Ready", "status": "True"},
        ]}})));
        assert!(!is_ready(
            &json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})
        ));
        assert!(!is_ready(&json!({"metadata": {"name": "n"}})));
    }
}
