//! Audit levels (how much of a request is recorded) and stages (the points of a request's
//! life at which an event is written), with their `audit.k8s.io/v1` spellings.

use std::fmt;

/// How much of a request an event records, in increasing order: `None` < `Metadata` <
/// `Request` < `RequestResponse`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Level {
    /// No event at all.
    #[default]
    None,
    /// Request metadata (user, verb, resource, timestamps, response status), no bodies.
    Metadata,
    /// Metadata and the request object.
    Request,
    /// Metadata, the request object and the response object.
    RequestResponse,
}

impl Level {
    /// Every level, in the order Kubernetes lists them in messages.
    pub const ALL: [Level; 4] = [
        Level::None,
        Level::Metadata,
        Level::Request,
        Level::RequestResponse,
    ];

    /// The `audit.k8s.io/v1` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }

    /// The level spelled `s` (case-sensitive, as Kubernetes compares them).
    pub fn parse(s: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|level| level.as_str() == s)
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A point in a request's life at which an event is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// As soon as the request is received, before it is handled further.
    RequestReceived,
    /// Once the response headers are sent, before the body; long-running requests only
    /// (watch, exec, attach, port-forward, proxy).
    ResponseStarted,
    /// Once the response is complete.
    ResponseComplete,
    /// When the handler panicked.
    Panic,
}

impl Stage {
    /// Every stage, in the order Kubernetes lists them in messages.
    pub const ALL: [Stage; 4] = [
        Stage::RequestReceived,
        Stage::ResponseStarted,
        Stage::ResponseComplete,
        Stage::Panic,
    ];

    /// The `audit.k8s.io/v1` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }

    /// The stage spelled `s` (case-sensitive).
    pub fn parse(s: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|stage| stage.as_str() == s)
    }

    fn bit(self) -> u8 {
        match self {
            Stage::RequestReceived => 1,
            Stage::ResponseStarted => 2,
            Stage::ResponseComplete => 4,
            Stage::Panic => 8,
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of stages (the stages a rule omits), small enough to copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct StageSet(u8);

impl StageSet {
    /// No stage.
    pub const EMPTY: StageSet = StageSet(0);

    /// Whether `stage` is in the set.
    pub fn contains(self, stage: Stage) -> bool {
        self.0 & stage.bit() != 0
    }

    /// Adds `stage`.
    pub fn insert(&mut self, stage: Stage) {
        self.0 |= stage.bit();
    }

    /// The stages in either set.
    pub fn union(self, other: StageSet) -> StageSet {
        StageSet(self.0 | other.0)
    }

    /// Whether the set holds no stage.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The stages in the set, in [`Stage::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Stage> {
        Stage::ALL.into_iter().filter(move |s| self.contains(*s))
    }
}

impl FromIterator<Stage> for StageSet {
    fn from_iter<I: IntoIterator<Item = Stage>>(iter: I) -> Self {
        let mut set = StageSet::EMPTY;
        for stage in iter {
            set.insert(stage);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ordered_and_spelled() {
        assert!(Level::None < Level::Metadata);
        assert!(Level::Metadata < Level::Request);
        assert!(Level::Request < Level::RequestResponse);
        for level in Level::ALL {
            assert_eq!(Level::parse(level.as_str()), Some(level));
        }
        assert_eq!(Level::parse("metadata"), None);
    }

    #[test]
    fn stage_sets() {
        let set: StageSet = [Stage::RequestReceived, Stage::Panic].into_iter().collect();
        assert!(set.contains(Stage::RequestReceived));
        assert!(!set.contains(Stage::ResponseComplete));
        let both = set.union([Stage::ResponseComplete].into_iter().collect());
        assert_eq!(
            both.iter().collect::<Vec<_>>(),
            vec![
                Stage::RequestReceived,
                Stage::ResponseComplete,
                Stage::Panic
            ]
        );
        assert!(StageSet::EMPTY.is_empty());
        assert_eq!(
            Stage::parse("ResponseStarted"),
            Some(Stage::ResponseStarted)
        );
    }
}
