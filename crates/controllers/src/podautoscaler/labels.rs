//! Label selectors in their string form, as a target's `/scale` gives them in
//! `status.selector` (`app=web,tier in (a,b),!canary`): parsed, then matched against pods.

use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed selector: every requirement must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector(Vec<Requirement>);

/// Splits on commas outside parentheses.
fn terms(text: &str) -> Result<Vec<&str>, String> {
    let mut out = vec![];
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unexpected ')' in {text:?}"));
                }
            }
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unclosed '(' in {text:?}"));
    }
    out.push(&text[start..]);
    Ok(out)
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(value: &str) -> bool {
    value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn checked_key(key: &str) -> Result<String, String> {
    let key = key.trim();
    if valid_key(key) {
        Ok(key.to_string())
    } else {
        Err(format!("invalid label key {key:?}"))
    }
}

fn checked_value(value: &str) -> Result<String, String> {
    let value = value.trim();
    if valid_value(value) {
        Ok(value.to_string())
    } else {
        Err(format!("invalid label value: {value:?}"))
    }
}

fn value_set(text: &str) -> Result<Vec<String>, String> {
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| format!("expected a parenthesized set of values, found {text:?}"))?;
    inner
        .split(',')
        .filter(|v| !v.trim().is_empty())
        .map(checked_value)
        .collect()
}

impl Selector {
    /// Parses `text`; the empty string selects everything.
    pub fn parse(text: &str) -> Result<Selector, String> {
        let mut requirements = vec![];
        if text.trim().is_empty() {
            return Ok(Selector(requirements));
        }
        for term in terms(text)? {
            let term = term.trim();
            if term.is_empty() {
                return Err(format!("found an empty requirement in {text:?}"));
            }
            let requirement = if let Some((key, value)) = term.split_once("!=") {
                Requirement::NotEquals(checked_key(key)?, checked_value(value)?)
            } else if let Some((key, value)) = term.split_once("==") {
                Requirement::Equals(checked_key(key)?, checked_value(value)?)
            } else if let Some((key, value)) = term.split_once('=') {
                Requirement::Equals(checked_key(key)?, checked_value(value)?)
            } else if let Some((key, values)) = term.split_once(" notin ") {
                Requirement::NotIn(checked_key(key)?, value_set(values)?)
            } else if let Some((key, values)) = term.split_once(" in ") {
                Requirement::In(checked_key(key)?, value_set(values)?)
            } else if let Some(key) = term.strip_prefix('!') {
                Requirement::DoesNotExist(checked_key(key)?)
            } else {
                Requirement::Exists(checked_key(term)?)
            };
            requirements.push(requirement);
        }
        Ok(Selector(requirements))
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let get = |key: &str| labels.and_then(|l| l.get(key));
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v),
            Requirement::NotEquals(k, v) => get(k) != Some(v),
            Requirement::In(k, vs) => get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::DoesNotExist(k) => get(k).is_none(),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_and_matches() {
        let s = Selector::parse("app=web,tier in (a, b),!canary,env!=prod").unwrap();
        assert!(s.matches(Some(&labels(&[("app", "web"), ("tier", "a")]))));
        assert!(!s.matches(Some(&labels(&[("app", "web"), ("tier", "c")]))));
        assert!(!s.matches(Some(&labels(&[
            ("app", "web"),
            ("tier", "a"),
            ("canary", "1")
        ]))));
        assert!(!s.matches(Some(&labels(&[
            ("app", "web"),
            ("tier", "b"),
            ("env", "prod")
        ]))));
        let s = Selector::parse("app,k notin (x)").unwrap();
        assert!(s.matches(Some(&labels(&[("app", "")]))));
        assert!(!s.matches(None));
        assert!(Selector::parse("").unwrap().matches(None));
        assert!(Selector::parse("a=(b").is_err());
        assert!(Selector::parse("a=b,,c=d").is_err());
        assert!(Selector::parse("a=b c").is_err());
    }
}
