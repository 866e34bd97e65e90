//! Query parameters: percent-decoding, and the options lists and writes take.

use kyb_api::Status;
use std::collections::HashMap;

/// Decoded query parameters: every value of each name, in order; [`Query::get`] gives the
/// first, as Go's `Values.Get` does.
#[derive(Clone, Debug, Default)]
pub struct Query(HashMap<String, Vec<String>>);

impl Query {
    pub fn parse(query: Option<&str>) -> Self {
        let mut map: HashMap<String, Vec<String>> = HashMap::new();
        for pair in query.unwrap_or_default().split('&') {
            if pair.is_empty() {
                continue; // kube-rs sends `?&limit=500`
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            map.entry(decode(key)).or_default().push(decode(value));
        }
        Self(map)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.first()).map(String::as_str)
    }

    /// Every value given for `key` (a list parameter such as `dryRun`).
    pub fn all(&self, key: &str) -> &[String] {
        self.0.get(key).map_or(&[], Vec::as_slice)
    }

    /// A non-empty value.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    /// A boolean parameter as Kubernetes' query decoder reads it: absent, `false` (any
    /// case) and `0` are false; anything else, the empty value included, is true.
    pub fn flag(&self, key: &str) -> bool {
        self.get(key)
            .is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
    }

    /// An integer parameter; a value that is not one is a 400 with Go's `strconv.ParseInt`
    /// message, as Kubernetes' query decoder gives it.
    pub fn number(&self, key: &str) -> Result<Option<i64>, Status> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => parse_int(v).map(Some).map_err(Status::bad_request),
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

/// Go's `strconv.ParseInt(v, 10, 64)`, with its error text.
fn parse_int(v: &str) -> Result<i64, String> {
    let digits = v.strip_prefix(['+', '-']).unwrap_or(v);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.ParseInt: parsing {v:?}: invalid syntax"));
    }
    v.parse()
        .map_err(|_| format!("strconv.ParseInt: parsing {v:?}: value out of range"))
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

/// Percent-decoding of one path segment as Go's `url.PathUnescape` does it: `+` stays a
/// plus, and a malformed escape (`%zz`, a trailing `%4`) makes the whole path invalid.
pub fn unescape_path(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_string());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let high = hex(*bytes.get(i + 1)?)?;
            let low = hex(*bytes.get(i + 2)?)?;
            out.push(high * 16 + low);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
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
        assert_eq!(
            Query::parse(Some("timeoutSeconds=abc"))
                .number("timeoutSeconds")
                .map_err(|s| (s.code, s.message)),
            Err((
                400,
                "strconv.ParseInt: parsing \"abc\": invalid syntax".to_string()
            ))
        );
        assert!(
            Query::parse(Some("limit=99999999999999999999"))
                .number("limit")
                .is_err_and(|s| s.message.ends_with("value out of range"))
        );
        assert_eq!(Query::parse(Some("limit=-5")).number("limit"), Ok(Some(-5)));
        let q = Query::parse(Some("a=TRUE&b=&c=0&d=False&e=yes"));
        assert_eq!(
            ["a", "b", "c", "d", "e", "f"].map(|k| q.flag(k)),
            [true, true, false, false, true, false]
        );
    }

    #[test]
    fn unescapes_path_segments_as_go() {
        assert_eq!(
            unescape_path("system%3Aaggregate-to-admin").as_deref(),
            Some("system:aggregate-to-admin")
        );
        assert_eq!(unescape_path("a+b%2b").as_deref(), Some("a+b+"));
        for malformed in ["%zz", "a%4", "%", "%%41"] {
            assert_eq!(unescape_path(malformed), None, "{malformed}");
        }
    }
}
