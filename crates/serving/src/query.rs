//! Query parameters: percent-decoding, and the options lists and writes take.

use kyb_api::Status;
use std::collections::HashMap;

/// Decoded query parameters (the last value of a repeated name wins, as Go's Get does
/// for the first; Kubernetes clients do not repeat them).
#[derive(Clone, Debug, Default)]
pub struct Query(HashMap<String, String>);

impl Query {
    pub fn parse(query: Option<&str>) -> Self {
        let mut map = HashMap::new();
        for pair in query.unwrap_or_default().split('&') {
            if pair.is_empty() {
                continue; // kube-rs sends `?&limit=500`
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            map.entry(decode(key)).or_insert_with(|| decode(value));
        }
        Self(map)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// A non-empty value.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }

    pub fn number(&self, key: &str) -> Result<Option<i64>, Status> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| Status::bad_request(format!("invalid value for {key}: {v:?}"))),
        }
    }

    /// `dryRun=All` (the only value Kubernetes accepts).
    pub fn dry_run(&self) -> Result<bool, Status> {
        match self.value("dryRun") {
            None => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(Status::bad_request(format!(
                "Invalid dry run value {other:?}: supported values are \"All\""
            ))),
        }
    }
}

/// Percent-decoding, with `+` as a space (form encoding). Invalid escapes stay as they are.
pub fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match (
                bytes.get(i + 1).and_then(|c| hex(*c)),
                bytes.get(i + 2).and_then(|c| hex(*c)),
            ) {
                (Some(high), Some(low)) => {
                    out.push(high * 16 + low);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_what_clients_send() {
        let q = Query::parse(Some(
            "&limit=500&labelSelector=app%3Dweb%2Ctier+in+%28a%29&watch=true&empty=",
        ));
        assert_eq!(q.get("limit"), Some("500"));
        assert_eq!(q.get("labelSelector"), Some("app=web,tier in (a)"));
        assert!(q.flag("watch"));
        assert_eq!(q.value("empty"), None);
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz%4"), "%zz%4");
        assert!(Query::parse(Some("limit=x")).number("limit").is_err());
    }
}
