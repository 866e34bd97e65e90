//! Which pod updates the admission plugin evaluates: only those that could change the
//! pod's security-relevant content, which for an existing pod means its containers (most of
//! a pod's spec is immutable after creation).

use serde_json::Value;

use crate::pod::{Container, PodView};

const SECCOMP_CONTAINER_ANNOTATION_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// Kubernetes' `isSignificantPodUpdate`: true when the update changes the number of
/// containers or init containers, a container's or init container's image (compared by
/// position), adds an ephemeral container or changes one's image (compared by name), or
/// changes a container's `container.seccomp.security.alpha.kubernetes.io/<name>`
/// annotation. Other updates (labels, status, resources, ...) are not evaluated.
pub fn is_significant_pod_update(pod: &Value, old_pod: &Value) -> bool {
    let new = view(pod);
    let old = view(old_pod);
    for key in ["containers", "initContainers"] {
        let a = containers(&new, key);
        let b = containers(&old, key);
        if a.len() != b.len() {
            return true;
        }
        if a.iter()
            .zip(&b)
            .any(|(c, o)| significant_container_update(*c, *o, &new, &old))
        {
            return true;
        }
    }
    let old_ephemeral = containers(&old, "ephemeralContainers");
    for c in containers(&new, "ephemeralContainers") {
        match old_ephemeral.iter().find(|o| o.name() == c.name()) {
            None => return true,
            Some(o) if significant_container_update(c, *o, &new, &old) => return true,
            Some(_) => {}
        }
    }
    false
}

fn view(pod: &Value) -> PodView<'_> {
    PodView::new(
        pod.get("metadata"),
        pod.get("spec").unwrap_or(crate::pod::null()),
    )
}

fn containers<'a>(pod: &PodView<'a>, key: &str) -> Vec<Container<'a>> {
    pod.containers_of(key).collect()
}

fn significant_container_update(
    c: Container<'_>,
    old: Container<'_>,
    pod: &PodView<'_>,
    old_pod: &PodView<'_>,
) -> bool {
    if c.image() != old.image() {
        return true;
    }
    let key = format!("{SECCOMP_CONTAINER_ANNOTATION_PREFIX}{}", c.name());
    pod.annotation(&key).unwrap_or("") != old_pod.annotation(&key).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    #[test]
    fn insignificant_updates() {
        let old = pod(json!({"containers": [{"name": "a", "image": "x", "resources": {}}]}));
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"a": "b"});
        new["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "1"}});
        new["spec"]["activeDeadlineSeconds"] = json!(5);
        assert!(!is_significant_pod_update(&new, &old));
        assert!(!is_significant_pod_update(&old, &old));
    }

    #[test]
    fn image_changes_and_counts() {
        let old = pod(
            json!({"containers": [{"name": "a", "image": "x"}], "initContainers": [{"name": "i", "image": "y"}]}),
        );
        let mut new = old.clone();
        new["spec"]["containers"][0]["image"] = json!("x2");
        assert!(is_significant_pod_update(&new, &old));
        let mut new = old.clone();
        new["spec"]["initContainers"][0]["image"] = json!("y2");
        assert!(is_significant_pod_update(&new, &old));
        let mut new = old.clone();
        new["spec"]["containers"] =
            json!([{"name": "a", "image": "x"}, {"name": "b", "image": "z"}]);
        assert!(is_significant_pod_update(&new, &old));
    }

    #[test]
    fn ephemeral_containers_by_name() {
        let old = pod(
            json!({"containers": [{"name": "a", "image": "x"}], "ephemeralContainers": [{"name": "d1", "image": "busybox"}]}),
        );
        let mut new = old.clone();
        new["spec"]["ephemeralContainers"] =
            json!([{"name": "d2", "image": "busybox"}, {"name": "d1", "image": "busybox"}]);
        assert!(is_significant_pod_update(&new, &old));
        let mut new = old.clone();
        new["spec"]["ephemeralContainers"][0]["image"] = json!("alpine");
        assert!(is_significant_pod_update(&new, &old));
        // Reordering or removing ephemeral containers alone is not evaluated.
        let mut new = old.clone();
        new["spec"]["ephemeralContainers"] = json!([]);
        assert!(!is_significant_pod_update(&new, &old));
    }

    #[test]
    fn seccomp_container_annotation() {
        let old = pod(json!({"containers": [{"name": "a", "image": "x"}]}));
        let mut new = old.clone();
        new["metadata"]["annotations"] =
            json!({"container.seccomp.security.alpha.kubernetes.io/a": "unconfined"});
        assert!(is_significant_pod_update(&new, &old));
        let mut new = old.clone();
        new["metadata"]["annotations"] =
            json!({"container.seccomp.security.alpha.kubernetes.io/b": "unconfined"});
        assert!(!is_significant_pod_update(&new, &old));
    }

    #[test]
    fn hostile_input() {
        assert!(!is_significant_pod_update(&json!(null), &json!([1, 2])));
        assert!(is_significant_pod_update(
            &json!({"spec": {"containers": [1]}}),
            &json!({"spec": {}})
        ));
    }
}
