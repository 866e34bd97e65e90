//! Error texts as Kubernetes assembles them: an aggregate of several errors
//! (`utilerrors.NewAggregate`) and the `Forbidden` message admission plugins return
//! (`pods "nginx" is forbidden: ...`).

/// Joins messages as an aggregate error prints: duplicates dropped, a single message as
/// is, several as `[m1, m2]`.
pub fn aggregate(messages: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::with_capacity(messages.len());
    for m in messages {
        if !seen.contains(&m.as_str()) {
            seen.push(m);
        }
    }
    match seen.as_slice() {
        [] => String::new(),
        [one] => (*one).to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The message of the `403 Forbidden` status an admission plugin's refusal becomes:
/// `<resource>[.<group>] "<name>" is forbidden: <message>` (without the name part when the
/// object has none yet).
pub fn forbidden_message(group: &str, resource: &str, name: &str, message: &str) -> String {
    let qualified = if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    };
    if name.is_empty() {
        format!("{qualified} is forbidden: {message}")
    } else {
        format!(
            "{qualified} {} is forbidden: {message}",
            kyb_apimachinery::gofmt::quote(name)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates_like_go() {
        assert_eq!(aggregate(&[]), "");
        assert_eq!(aggregate(&["a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "b".into(), "a".into()]), "[a, b]");
    }

    #[test]
    fn forbidden_texts() {
        assert_eq!(
            forbidden_message("", "pods", "x", "[e1, e2]"),
            "pods \"x\" is forbidden: [e1, e2]"
        );
        assert_eq!(
            forbidden_message("apps", "deployments", "", "m"),
            "deployments.apps is forbidden: m"
        );
    }
}
