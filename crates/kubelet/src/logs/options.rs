//! The query options of `/containerLogs` (the `v1.PodLogOptions` kubelet decodes from the
//! query), validated as Kubernetes validates them.

use jiff::Timestamp;

/// What to read of a container's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// Keep reading as lines are written, until the container exits.
    pub follow: bool,
    /// The previous instance of the container.
    pub previous: bool,
    /// Only the last lines (all when `None`).
    pub tail_lines: Option<u64>,
    /// Only lines written at or after this time.
    pub since: Option<Timestamp>,
    /// Each line prefixed with its RFC3339Nano timestamp.
    pub timestamps: bool,
    /// At most this many bytes.
    pub limit_bytes: Option<u64>,
}

/// Why the options were refused: kubelet answers a query it cannot decode with 400 and an
/// invalid one with 422.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionsError {
    Decode(String),
    Invalid(String),
}

fn boolean(query: &kyb_serving::Query, key: &str) -> Result<bool, OptionsError> {
    match query.get(key) {
        None => Ok(false),
        Some(v) => match v {
            "" | "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
            "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
            other => Err(OptionsError::Decode(format!(
                "strconv.ParseBool: parsing {other:?}: invalid syntax"
            ))),
        },
    }
}

fn integer(query: &kyb_serving::Query, key: &str) -> Result<Option<i64>, OptionsError> {
    match query.value(key) {
        None => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| {
            OptionsError::Decode(format!("strconv.ParseInt: parsing {v:?}: invalid syntax"))
        }),
    }
}

impl LogOptions {
    /// Reads the options from a `/containerLogs` query at time `now` (`sinceSeconds` is
    /// relative to it); the legacy `tail` parameter is `tailLines` (`-1`: all).
    pub fn from_query(query: &kyb_serving::Query, now: Timestamp) -> Result<Self, OptionsError> {
        let mut tail_lines = integer(query, "tailLines")?;
        if let Some(tail) = query.value("tail") {
            tail_lines = match tail {
                "-1" => None,
                other => Some(other.parse().map_err(|_| {
                    OptionsError::Decode(format!(
                        "strconv.ParseInt: parsing {other:?}: invalid syntax"
                    ))
                })?),
            };
        }
        let since_seconds = integer(query, "sinceSeconds")?;
        let since_time = match query.value("sinceTime") {
            None => None,
            Some(text) => Some(
                text.parse::<Timestamp>()
                    .map_err(|e| OptionsError::Decode(format!("parsing time {text:?}: {e}")))?,
            ),
        };
        let limit_bytes = integer(query, "limitBytes")?;
        if let Some(tail) = tail_lines
            && tail < 0
        {
            return Err(OptionsError::Invalid(
                "tailLines: Invalid value: must be greater than or equal to 0".into(),
            ));
        }
        if let Some(limit) = limit_bytes
            && limit < 1
        {
            return Err(OptionsError::Invalid(
                "limitBytes: Invalid value: must be greater than 0".into(),
            ));
        }
        if since_seconds.is_some() && since_time.is_some() {
            return Err(OptionsError::Invalid(
                "at most one of `sinceTime` or `sinceSeconds` may be specified".into(),
            ));
        }
        let since = match since_seconds {
            Some(seconds) if seconds < 1 => {
                return Err(OptionsError::Invalid(
                    "sinceSeconds: Invalid value: must be greater than 0".into(),
                ));
            }
            Some(seconds) => Some(
                now.checked_sub(jiff::SignedDuration::from_secs(seconds))
                    .unwrap_or(Timestamp::MIN),
            ),
            None => since_time,
        };
        Ok(LogOptions {
            follow: boolean(query, "follow")?,
            previous: boolean(query, "previous")?,
            tail_lines: tail_lines.map(|t| t as u64),
            since,
            timestamps: boolean(query, "timestamps")?,
            limit_bytes: limit_bytes.map(|l| l as u64),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(query: &str) -> Result<LogOptions, OptionsError> {
        let now: Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
        LogOptions::from_query(&kyb_serving::Query::parse(Some(query)), now)
    }

    #[test]
    fn reads_every_option() {
        let options = parse(
            "follow=true&previous=1&tailLines=3&sinceSeconds=60&timestamps=true&limitBytes=10",
        )
        .unwrap();
        assert_eq!(
            options,
            LogOptions {
                follow: true,
                previous: true,
                tail_lines: Some(3),
                since: Some("2026-01-01T00:00:00Z".parse().unwrap()),
                timestamps: true,
                limit_bytes: Some(10),
            }
        );
        assert_eq!(parse("").unwrap(), LogOptions::default());
        assert_eq!(parse("tail=-1&tailLines=5").unwrap().tail_lines, None);
        assert_eq!(parse("tail=2").unwrap().tail_lines, Some(2));
        assert_eq!(
            parse("sinceTime=2026-01-01T00:00:30Z").unwrap().since,
            Some("2026-01-01T00:00:30Z".parse().unwrap())
        );
    }

    #[test]
    fn refuses_bad_options() {
        assert!(matches!(parse("tailLines=x"), Err(OptionsError::Decode(_))));
        assert!(matches!(
            parse("follow=maybe"),
            Err(OptionsError::Decode(_))
        ));
        assert!(matches!(
            parse("sinceTime=yesterday"),
            Err(OptionsError::Decode(_))
        ));
        assert!(matches!(
            parse("tailLines=-2"),
            Err(OptionsError::Invalid(_))
        ));
        assert!(matches!(
            parse("limitBytes=0"),
            Err(OptionsError::Invalid(_))
        ));
        assert!(matches!(
            parse("sinceSeconds=0"),
            Err(OptionsError::Invalid(_))
        ));
        assert!(matches!(
            parse("sinceSeconds=5&sinceTime=2026-01-01T00:00:30Z"),
            Err(OptionsError::Invalid(_))
        ));
    }
}
