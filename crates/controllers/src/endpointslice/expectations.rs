//! What the controller wrote that its informer has not seen yet, per Service: slices it
//! created or updated (present, with a resourceVersion other than the one it replaced)
//! and slices it deleted (gone). Until the cache has caught up, reconciling the Service
//! would act on a stale view (e.g. create its slices twice), so the reconcile waits.
//! Expectations older than [`TIMEOUT`] are dropped, as Kubernetes' are.

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kyb_runtime::informer::{Informer, ObjectKey};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug)]
enum Expect {
    /// Present, with a resourceVersion other than this one (the replaced version).
    Present(Option<String>),
    Gone,
}

/// A slice's name, what is expected of it, and since when.
type Pending = Vec<(String, Expect, Instant)>;

#[derive(Default)]
pub struct Expectations {
    pending: Mutex<HashMap<ObjectKey, Pending>>,
}

impl Expectations {
    fn add(&self, service: &ObjectKey, name: &str, expect: Expect) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let list = pending.entry(service.clone()).or_default();
        list.retain(|(n, _, _)| n != name);
        list.push((name.to_string(), expect, Instant::now()));
    }

    /// The slice `name` was created, or updated from `replaced` (a resourceVersion).
    pub fn expect_present(&self, service: &ObjectKey, name: &str, replaced: Option<String>) {
        self.add(service, name, Expect::Present(replaced));
    }

    /// The slice `name` was deleted.
    pub fn expect_gone(&self, service: &ObjectKey, name: &str) {
        self.add(service, name, Expect::Gone);
    }

    /// Whether the informer has seen every write for the Service (forgetting those it has).
    pub fn satisfied(&self, service: &ObjectKey, slices: &Informer<EndpointSlice>) -> bool {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let Some(list) = pending.get_mut(service) else {
            return true;
        };
        list.retain(|(name, expect, at)| {
            if at.elapsed() > TIMEOUT {
                return false;
            }
            let current = slices.get(&service.namespace, name);
            let seen = match expect {
                Expect::Present(replaced) => current.is_some_and(|s| {
                    replaced.is_none() || s.metadata.resource_version != *replaced
                }),
                Expect::Gone => current.is_none(),
            };
            !seen
        });
        let done = list.is_empty();
        if done {
            pending.remove(service);
        }
        done
    }
}
