//! The small text helpers every check message is built from, worded as Kubernetes words
//! them: singular or plural nouns, and lists of quoted names.

/// `singular` when `count` is one, `plural` otherwise.
pub(crate) fn pluralize(
    singular: &'static str,
    plural: &'static str,
    count: usize,
) -> &'static str {
    if count == 1 { singular } else { plural }
}

/// The items each in double quotes, separated by `, `: `"a", "b"`. The items are not
/// escaped (Kubernetes joins them as they are); empty for no items.
pub(crate) fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut out = String::with_capacity(items.iter().map(|s| s.as_ref().len() + 4).sum());
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('"');
        out.push_str(item.as_ref());
        out.push('"');
    }
    out
}

/// `container "a"` or `containers "a", "b"`.
pub(crate) fn containers_phrase<S: AsRef<str>>(names: &[S]) -> String {
    format!(
        "{} {}",
        pluralize("container", "containers", names.len()),
        join_quote(names)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_and_pluralizes() {
        assert_eq!(join_quote::<&str>(&[]), "");
        assert_eq!(join_quote(&["a"]), r#""a""#);
        assert_eq!(join_quote(&["a", "b\"c"]), r#""a", "b"c""#);
        assert_eq!(pluralize("volume", "volumes", 0), "volumes");
        assert_eq!(pluralize("volume", "volumes", 1), "volume");
        assert_eq!(pluralize("volume", "volumes", 2), "volumes");
        assert_eq!(containers_phrase(&["x"]), r#"container "x""#);
        assert_eq!(containers_phrase(&["x", "y"]), r#"containers "x", "y""#);
    }
}
