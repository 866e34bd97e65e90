//! JSON pointers (RFC 6901) as the Kubernetes API server's JSON patch reads them: split at
//! `/` with the first segment ignored, `~1` and `~0` unescaped, array indices parsed as
//! signed integers (negative ones count from the end).

use serde_json::{Map, Value};

/// A parsed pointer: the members leading to a container, and the last one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pointer {
    text: String,
    parents: Vec<String>,
    last: String,
}

/// The container a pointer's last token addresses, with that token.
pub(super) enum Location<'a> {
    Member(&'a mut Map<String, Value>, &'a str),
    Element(&'a mut Vec<Value>, &'a str),
}

impl Pointer {
    /// Parses `text`; `None` for a pointer without a `/` (such as `""`, the whole
    /// document, which Kubernetes does not patch).
    pub(super) fn parse(text: &str) -> Option<Pointer> {
        let mut tokens: Vec<String> = text.split('/').skip(1).map(unescape).collect();
        let last = tokens.pop()?;
        Some(Pointer {
            text: text.to_string(),
            parents: tokens,
            last,
        })
    }

    /// The pointer as written.
    pub(super) fn text(&self) -> &str {
        &self.text
    }

    /// How many levels below the root the pointer addresses.
    pub(super) fn depth(&self) -> usize {
        self.parents.len() + 1
    }

    /// Finds the object or array holding the addressed location; `None` if a parent is
    /// missing or is not a container.
    pub(super) fn locate<'a>(&'a self, document: &'a mut Value) -> Option<Location<'a>> {
        let mut current = document;
        for token in &self.parents {
            current = match current {
                Value::Object(map) => map.get_mut(token)?,
                Value::Array(items) => {
                    let index = existing_index(token, items.len()).ok()?;
                    items.get_mut(index)?
                }
                _ => return None,
            };
        }
        match current {
            Value::Object(map) => Some(Location::Member(map, &self.last)),
            Value::Array(items) => Some(Location::Element(items, &self.last)),
            _ => None,
        }
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn parse_index(token: &str) -> Result<i64, String> {
    token
        .parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing \"{token}\": invalid syntax"))
}

/// The index of an existing element of a list of `len` items.
pub(super) fn existing_index(token: &str, len: usize) -> Result<usize, String> {
    let index = parse_index(token)?;
    resolve(index, len)
        .ok_or_else(|| format!("Unable to access invalid index: {index}: invalid index referenced"))
}

/// Where to insert into a list of `len` items (`len` itself appends).
pub(super) fn insertion_index(token: &str, len: usize) -> Result<usize, String> {
    let index = parse_index(token)?;
    resolve(index, len.saturating_add(1))
        .ok_or_else(|| format!("Unable to access invalid index: {index}: invalid index referenced"))
}

/// `index` within `0..len`, negative indices counting from the end.
fn resolve(index: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let index = if index < 0 {
        index.checked_add(len)?
    } else {
        index
    };
    if (0..len).contains(&index) {
        usize::try_from(index).ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_unescapes() {
        let p = Pointer::parse("/a~1b/~01/c~0").unwrap_or_else(|| unreachable!());
        assert_eq!(p.parents, vec!["a/b".to_string(), "~1".to_string()]);
        assert_eq!(p.last, "c~");
        assert_eq!(p.depth(), 3);
        assert_eq!(Pointer::parse(""), None);
        assert_eq!(Pointer::parse("abc"), None);
        let root_member = Pointer::parse("/").unwrap_or_else(|| unreachable!());
        assert_eq!(
            (root_member.parents.len(), root_member.last.as_str()),
            (0, "")
        );
        // Kubernetes ignores whatever precedes the first '/'.
        let odd = Pointer::parse("x/b").unwrap_or_else(|| unreachable!());
        assert_eq!(odd.last, "b");
    }

    #[test]
    fn indices() {
        assert_eq!(existing_index("0", 2), Ok(0));
        assert_eq!(existing_index("-1", 2), Ok(1));
        assert!(existing_index("2", 2).is_err());
        assert!(existing_index("-3", 2).is_err());
        assert!(existing_index("a", 2).is_err());
        assert_eq!(insertion_index("2", 2), Ok(2));
        assert_eq!(insertion_index("-1", 2), Ok(2));
        assert!(insertion_index("3", 2).is_err());
        assert!(existing_index("99999999999999999999", 2).is_err());
    }
}
