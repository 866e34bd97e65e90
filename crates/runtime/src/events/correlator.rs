//! What client-go's event correlator does before an event is written, so a controller that
//! acts on thousands of objects does not write thousands of Events about one owner:
//!
//! - **Aggregation.** Events about one object with the same type and reason but different
//!   messages are "similar". From the tenth distinct message within ten minutes on, they
//!   are written as one Event, `(combined from similar events): <latest message>`, whose
//!   count goes up.
//! - **Spam filtering.** Each object gets a token bucket: 25 events at once, then one more
//!   every five minutes. Events beyond that are dropped.
//! - **Folding.** Repeats of an identical event (or of the aggregate) update one Event's
//!   count and last timestamp instead of creating another.
//!
//! The correlator is pure (time is passed in); the writer in the parent module uses its
//! verdicts.

use super::EventType;
use k8s_openapi::api::core::v1::ObjectReference;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// Distinct messages of similar events after which they are aggregated.
const AGGREGATE_AFTER: usize = 10;
/// How long similar events are remembered for aggregation.
const AGGREGATE_WINDOW: Duration = Duration::from_secs(600);
/// Events an object may have at once before spam filtering drops them.
const SPAM_BURST: f64 = 25.0;
/// One more event allowed per this long.
const SPAM_REFILL: Duration = Duration::from_secs(300);
/// Objects (or similar-event groups) remembered; past this, the oldest half is forgotten.
const REMEMBERED: usize = 4096;
/// The prefix of an aggregated event's message.
pub const COMBINED: &str = "(combined from similar events): ";

/// The object an event is about, as the spam filter and aggregator tell objects apart.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ObjectId {
    kind: String,
    namespace: String,
    name: String,
    uid: String,
    api_version: String,
}

impl ObjectId {
    fn of(regarding: &ObjectReference) -> ObjectId {
        let field = |f: &Option<String>| f.clone().unwrap_or_default();
        ObjectId {
            kind: field(&regarding.kind),
            namespace: field(&regarding.namespace),
            name: field(&regarding.name),
            uid: field(&regarding.uid),
            api_version: field(&regarding.api_version),
        }
    }
}

/// What identifies one written Event: repeats with the same key update it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FoldKey {
    object: ObjectId,
    type_: EventType,
    reason: String,
    /// The message, or `None` for the aggregate of similar events.
    message: Option<String>,
}

/// An event to write, after correlation.
#[derive(Debug, PartialEq)]
pub struct Verdict {
    pub key: FoldKey,
    pub message: String,
}

struct Similar {
    messages: HashSet<String>,
    last: Instant,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// One component's correlator state.
#[derive(Default)]
pub struct Correlator {
    similar: HashMap<(ObjectId, EventType, String), Similar>,
    buckets: HashMap<ObjectId, Bucket>,
}

impl Correlator {
    /// The event to write for `regarding`'s event, or `None` when spam filtering drops it.
    pub fn correlate(
        &mut self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        message: &str,
        now: Instant,
    ) -> Option<Verdict> {
        let object = ObjectId::of(regarding);
        let aggregated = self.aggregate(&object, type_, reason, message, now);
        if !self.allow(&object, now) {
            return None;
        }
        Some(if aggregated {
            Verdict {
                key: FoldKey {
                    object,
                    type_,
                    reason: reason.to_string(),
                    message: None,
                },
                message: format!("{COMBINED}{message}"),
            }
        } else {
            Verdict {
                key: FoldKey {
                    object,
                    type_,
                    reason: reason.to_string(),
                    message: Some(message.to_string()),
                },
                message: message.to_string(),
            }
        })
    }

    /// Records the message among its similar events; whether it is to be aggregated.
    fn aggregate(
        &mut self,
        object: &ObjectId,
        type_: EventType,
        reason: &str,
        message: &str,
        now: Instant,
    ) -> bool {
        forget_oldest(&mut self.similar, |s| s.last);
        let similar = self
            .similar
            .entry((object.clone(), type_, reason.to_string()))
            .or_insert_with(|| Similar {
                messages: HashSet::new(),
                last: now,
            });
        if now.duration_since(similar.last) > AGGREGATE_WINDOW {
            similar.messages.clear();
        }
        similar.last = now;
        if similar.messages.len() < AGGREGATE_AFTER {
            similar.messages.insert(message.to_string());
        }
        similar.messages.len() >= AGGREGATE_AFTER
    }

    /// Takes a token from the object's bucket, if it has one.
    fn allow(&mut self, object: &ObjectId, now: Instant) -> bool {
        forget_oldest(&mut self.buckets, |b| b.at);
        let bucket = self.buckets.entry(object.clone()).or_insert(Bucket {
            tokens: SPAM_BURST,
            at: now,
        });
        let refilled = now.duration_since(bucket.at).as_secs_f64() / SPAM_REFILL.as_secs_f64();
        bucket.tokens = (bucket.tokens + refilled).min(SPAM_BURST);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Keeps a map within [`REMEMBERED`] entries by dropping the older half when it is full.
fn forget_oldest<K: Clone + Eq + std::hash::Hash, V>(
    map: &mut HashMap<K, V>,
    when: impl Fn(&V) -> Instant,
) {
    if map.len() < REMEMBERED {
        return;
    }
    let mut times: Vec<Instant> = map.values().map(&when).collect();
    times.sort_unstable();
    let cut = times[times.len() / 2];
    map.retain(|_, v| when(v) > cut);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn object(name: &str) -> ObjectReference {
        ObjectReference {
            kind: Some("ReplicaSet".into()),
            namespace: Some("default".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            api_version: Some("apps/v1".into()),
            ..ObjectReference::default()
        }
    }

    #[test]
    fn similar_events_are_combined_from_the_tenth_on() {
        let mut c = Correlator::default();
        let now = Instant::now();
        let rs = object("web");
        let verdicts: Vec<Verdict> = (0..12)
            .map(|i| {
                c.correlate(
                    &rs,
                    EventType::Normal,
                    "SuccessfulCreate",
                    &format!("Created pod: web-{i}"),
                    now,
                )
                .unwrap()
            })
            .collect();
        for (i, v) in verdicts.iter().take(9).enumerate() {
            assert_eq!(v.message, format!("Created pod: web-{i}"));
            assert!(v.key.message.is_some());
        }
        for (i, v) in verdicts.iter().enumerate().skip(9) {
            assert_eq!(v.message, format!("{COMBINED}Created pod: web-{i}"));
            assert_eq!(v.key, verdicts[9].key, "one aggregate Event");
        }
        // Another reason or another object is not similar.
        let other = c.correlate(
            &rs,
            EventType::Normal,
            "SuccessfulDelete",
            "Deleted pod: web-0",
            now,
        );
        assert_eq!(other.unwrap().message, "Deleted pod: web-0");
        let other = c.correlate(
            &object("db"),
            EventType::Normal,
            "SuccessfulCreate",
            "Created pod: db-0",
            now,
        );
        assert_eq!(other.unwrap().message, "Created pod: db-0");
    }

    #[test]
    fn similar_events_ten_minutes_apart_start_over() {
        let mut c = Correlator::default();
        let start = Instant::now();
        let rs = object("web");
        for i in 0..10 {
            c.correlate(&rs, EventType::Normal, "R", &format!("m{i}"), start);
        }
        let later = start + Duration::from_secs(3600);
        let v = c
            .correlate(&rs, EventType::Normal, "R", "m10", later)
            .unwrap();
        assert_eq!(v.message, "m10");
    }

    #[test]
    fn an_object_gets_25_events_then_one_per_five_minutes() {
        let mut c = Correlator::default();
        let start = Instant::now();
        let rs = object("web");
        let allowed = (0..100)
            .filter(|i| {
                c.correlate(&rs, EventType::Normal, "R", &format!("m{i}"), start)
                    .is_some()
            })
            .count();
        assert_eq!(allowed, 25);
        assert!(
            c.correlate(&object("db"), EventType::Normal, "R", "m", start)
                .is_some(),
            "per object"
        );
        let soon = start + Duration::from_secs(60);
        assert!(
            c.correlate(&rs, EventType::Normal, "R", "x", soon)
                .is_none()
        );
        let later = start + Duration::from_secs(301);
        assert!(
            c.correlate(&rs, EventType::Normal, "R", "y", later)
                .is_some()
        );
        assert!(
            c.correlate(&rs, EventType::Normal, "R", "z", later)
                .is_none()
        );
    }

    #[test]
    fn identical_repeats_share_a_key() {
        let mut c = Correlator::default();
        let now = Instant::now();
        let rs = object("web");
        let a = c
            .correlate(&rs, EventType::Warning, "FailedCreate", "quota", now)
            .unwrap();
        let b = c
            .correlate(&rs, EventType::Warning, "FailedCreate", "quota", now)
            .unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn memory_stays_bounded() {
        let mut c = Correlator::default();
        let start = Instant::now();
        for i in 0..(3 * REMEMBERED as u64) {
            let at = start + Duration::from_millis(i);
            c.correlate(&object(&format!("o{i}")), EventType::Normal, "R", "m", at);
        }
        assert!(c.buckets.len() <= REMEMBERED && c.similar.len() <= REMEMBERED);
    }
}
