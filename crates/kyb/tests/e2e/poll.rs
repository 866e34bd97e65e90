//! Waiting on a condition with a deadline instead of sleeping and hoping: a probe is polled
//! every 200 ms until it gives a value, and the test fails naming what it waited for once
//! the deadline passes. Also the events about an object, which tests often wait on.

use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};
use std::time::{Duration, Instant};

/// How long the tests that take this default wait.
pub const WAIT: Duration = Duration::from_secs(60);

const EVERY: Duration = Duration::from_millis(200);

/// Polls `probe` until it gives a value, failing after `limit`.
pub async fn within<T, F, Fut>(what: &str, limit: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(EVERY).await;
    }
}

/// [`within`] [`WAIT`].
pub async fn wait_for<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    within(what, WAIT, probe).await
}

/// [`wait_for`] for a probe that blocks (kubectl runs): the calling thread sleeps between
/// tries.
pub fn blocking_wait_for<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(EVERY);
    }
}

/// (reason, message) of the events about `name` in `default`, oldest first.
pub async fn events_of(client: &kube::Client, name: &str) -> Vec<(String, String)> {
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}
