//! PrioritySort (QueueSort): the order of the active queue — the pod with the higher
//! `spec.priority` first (a pod without one counts 0), and among equal priorities the one
//! queued earlier. No arguments.

use crate::framework::{Handle, Plugin, QueueSortPlugin, QueuedPod};
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "PrioritySort";

/// The plugin (stateless).
pub struct PrioritySort;

pub fn factory(_args: &Value, _handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(PrioritySort))
}

impl Plugin for PrioritySort {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        Some(self)
    }
}

impl QueueSortPlugin for PrioritySort {
    fn less(&self, a: &QueuedPod, b: &QueuedPod) -> bool {
        let (pa, pb) = (a.info.priority, b.info.priority);
        pa > pb || (pa == pb && a.timestamp < b.timestamp)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::framework::testing;
    use serde_json::json;
    use std::time::{Duration, Instant};

    fn queued(name: &str, priority: Option<i32>, at: Instant) -> QueuedPod {
        let mut spec = json!({"containers": []});
        if let Some(p) = priority {
            spec["priority"] = p.into();
        }
        QueuedPod {
            info: testing::pod(json!({"metadata": {"name": name}, "spec": spec})),
            timestamp: at,
            attempts: 0,
            initial_attempt: at,
        }
    }

    #[test]
    fn higher_priority_first_then_earlier() {
        let sort = factory(&Value::Null, &testing::handle()).unwrap();
        let sort = sort.as_queue_sort().unwrap();
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(10);
        let high_late = queued("high", Some(100), t1);
        let low_early = queued("low", Some(10), t0);
        assert!(sort.less(&high_late, &low_early));
        assert!(!sort.less(&low_early, &high_late));

        let early = queued("a", Some(5), t0);
        let late = queued("b", Some(5), t1);
        assert!(sort.less(&early, &late));
        assert!(!sort.less(&late, &early));
        // Neither goes before itself.
        assert!(!sort.less(&early, &early));

        // No priority counts as 0: below a positive one, above a negative one.
        let none = queued("none", None, t0);
        let negative = queued("neg", Some(-1), t0);
        assert!(sort.less(&low_early, &none));
        assert!(sort.less(&none, &negative));
    }
}
