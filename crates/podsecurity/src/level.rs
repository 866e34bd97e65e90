//! Policy levels and versions: `privileged` / `baseline` / `restricted`, `latest` / `v1.X`,
//! parsed and printed exactly as the Pod Security admission labels spell them.

use std::fmt;

/// A Pod Security Standards level, from the most to the least permissive.
///
/// The derived order is strictness: `Privileged < Baseline < Restricted`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Level {
    #[default]
    Privileged,
    Baseline,
    Restricted,
}

/// The detail of the field error for a label value that names no level.
pub const INVALID_LEVEL_DETAIL: &str = "must be one of privileged, baseline, restricted";

/// The detail of the field error for a label value that is not a policy version.
pub const INVALID_VERSION_DETAIL: &str = "must be \"latest\" or \"v1.x\"";

impl Level {
    /// The level as the labels spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }

    /// Parses a level label value. Only the exact lower-case names are levels.
    pub fn parse(value: &str) -> Option<Level> {
        match value {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy version: `latest`, or `v1.<minor>`.
///
/// `latest` is newer than every numbered version, even future ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Version {
    #[default]
    Latest,
    /// `v1.<minor>`. Kubernetes accepts any minor that fits a Go `int` (up to `i64::MAX`).
    V(u64),
}

impl Version {
    /// Parses a version label value: `latest`, or `v1.` followed by a decimal minor without
    /// leading zeros (`v1.0`, `v1.29`; not `v1.01`, `1.29` or `v2.0`).
    pub fn parse(value: &str) -> Option<Version> {
        if value == "latest" {
            return Some(Version::Latest);
        }
        let digits = value.strip_prefix("v1.")?;
        if digits.is_empty()
            || !digits.bytes().all(|b| b.is_ascii_digit())
            || (digits.len() > 1 && digits.starts_with('0'))
        {
            return None;
        }
        // Go's strconv.Atoi: a minor beyond a 64-bit int is an error.
        let minor: i64 = digits.parse().ok()?;
        u64::try_from(minor).ok().map(Version::V)
    }

    /// True when `self` is strictly older than `other` (`latest` is never older).
    pub fn older_than(self, other: Version) -> bool {
        match (self, other) {
            (Version::Latest, _) => false,
            (Version::V(_), Version::Latest) => true,
            (Version::V(a), Version::V(b)) => a < b,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::Latest => f.write_str("latest"),
            Version::V(minor) => write!(f, "v1.{minor}"),
        }
    }
}

/// A level at a version: what one mode (enforce, audit, warn) of a namespace applies.
/// Printed as Kubernetes prints it: `restricted:latest`, `baseline:v1.29`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct LevelVersion {
    pub level: Level,
    pub version: Version,
}

impl LevelVersion {
    pub const fn new(level: Level, version: Version) -> Self {
        LevelVersion { level, version }
    }

    /// `privileged:latest`, the default of every mode.
    pub const PRIVILEGED_LATEST: LevelVersion =
        LevelVersion::new(Level::Privileged, Version::Latest);

    /// Kubernetes' `Equivalent`: both privileged (at any versions), or equal.
    pub fn equivalent(&self, other: &LevelVersion) -> bool {
        (self.level == Level::Privileged && other.level == Level::Privileged) || self == other
    }
}

impl fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level, self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_only_exact_names() {
        assert_eq!(Level::parse("restricted"), Some(Level::Restricted));
        assert_eq!(Level::parse("baseline"), Some(Level::Baseline));
        assert_eq!(Level::parse("privileged"), Some(Level::Privileged));
        assert_eq!(Level::parse("Restricted"), None);
        assert_eq!(Level::parse(""), None);
        assert_eq!(Level::parse(" baseline"), None);
        assert!(Level::Privileged < Level::Baseline && Level::Baseline < Level::Restricted);
    }

    #[test]
    fn versions_parse_like_kubernetes() {
        assert_eq!(Version::parse("latest"), Some(Version::Latest));
        assert_eq!(Version::parse("v1.0"), Some(Version::V(0)));
        assert_eq!(Version::parse("v1.9"), Some(Version::V(9)));
        assert_eq!(Version::parse("v1.29"), Some(Version::V(29)));
        assert_eq!(
            Version::parse("v1.9223372036854775807"),
            Some(Version::V(9_223_372_036_854_775_807))
        );
        for bad in [
            "",
            "Latest",
            "v1",
            "v1.",
            "v1.01",
            "v1.00",
            "1.29",
            "v2.0",
            "v1.2a",
            "v1.-1",
            "v1.+1",
            "v1.9223372036854775808",
            " v1.2",
            "v1.2\n",
        ] {
            assert_eq!(Version::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn display_matches_kubernetes() {
        let lv = LevelVersion::new(Level::Restricted, Version::Latest);
        assert_eq!(lv.to_string(), "restricted:latest");
        let lv = LevelVersion::new(Level::Baseline, Version::V(29));
        assert_eq!(lv.to_string(), "baseline:v1.29");
        assert_eq!(LevelVersion::default().to_string(), "privileged:latest");
    }

    #[test]
    fn ordering_of_versions() {
        assert!(Version::V(3).older_than(Version::V(4)));
        assert!(!Version::V(4).older_than(Version::V(4)));
        assert!(Version::V(u64::MAX).older_than(Version::Latest));
        assert!(!Version::Latest.older_than(Version::V(1)));
        assert!(!Version::Latest.older_than(Version::Latest));
    }

    #[test]
    fn equivalence() {
        let p1 = LevelVersion::new(Level::Privileged, Version::V(1));
        let p2 = LevelVersion::PRIVILEGED_LATEST;
        let b1 = LevelVersion::new(Level::Baseline, Version::V(1));
        let b2 = LevelVersion::new(Level::Baseline, Version::Latest);
        assert!(p1.equivalent(&p2));
        assert!(b1.equivalent(&b1));
        assert!(!b1.equivalent(&b2));
        assert!(!b1.equivalent(&p1));
    }
}
