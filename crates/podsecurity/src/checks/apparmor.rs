//! AppArmor (baseline): the `appArmorProfile` fields of the pod and its containers, and the
//! deprecated `container.apparmor.security.beta.kubernetes.io/*` annotations, must not
//! disable or override the runtime's default profile.

use std::collections::BTreeSet;

use kyb_apimachinery::gofmt;

use crate::checks::CheckFailure;
use crate::pod::{PodView, object, string};
use crate::text::{containers_phrase, join_quote, pluralize};

/// The prefix of the deprecated per-container AppArmor annotations.
const ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

/// Profile types the fields may name.
fn allowed_type(t: &str) -> bool {
    matches!(t, "RuntimeDefault" | "Localhost")
}

/// Values the annotations may take: empty, the runtime default, or a local profile.
fn allowed_annotation(v: &str) -> bool {
    v.is_empty() || v == "runtime/default" || v.starts_with("localhost/")
}

/// `appArmorProfile` v1.0 (fields and annotations; Kubernetes applies both at every
/// policy version).
pub(crate) fn app_armor_profile_1_0(pod: &PodView<'_>) -> Option<CheckFailure> {
    let mut setters = Vec::new();
    let mut bad_values = BTreeSet::new();

    if let Some(profile) = object(pod.security_context(), "appArmorProfile") {
        let t = string(Some(profile), "type");
        if !allowed_type(t) {
            setters.push("pod".to_string());
            bad_values.insert(t.to_string());
        }
    }
    let mut bad_containers = Vec::new();
    for container in pod.containers() {
        if let Some(profile) = object(container.security_context(), "appArmorProfile") {
            let t = string(Some(profile), "type");
            if !allowed_type(t) {
                bad_containers.push(container.name());
                bad_values.insert(t.to_string());
            }
        }
    }
    if !bad_containers.is_empty() {
        setters.push(containers_phrase(&bad_containers));
    }

    let mut values: Vec<String> = bad_values.into_iter().collect();
    let mut annotations: Vec<String> = pod
        .annotations()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with(ANNOTATION_PREFIX))
        .filter_map(|(k, v)| {
            let v = v.as_str()?;
            (!allowed_annotation(v)).then(|| format!("{k}={}", gofmt::quote(v)))
        })
        .collect();
    if !annotations.is_empty() {
        annotations.sort();
        setters.push(pluralize("annotation", "annotations", annotations.len()).to_string());
        values.append(&mut annotations);
    }

    if setters.is_empty() {
        return None;
    }
    Some(CheckFailure::new(
        pluralize(
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
            values.len(),
        ),
        format!(
            "{} must not set AppArmor profile type to {}",
            setters.join(" and "),
            join_quote(&values)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn run(meta: Value, spec: Value) -> Option<(String, String)> {
        app_armor_profile_1_0(&PodView::new(Some(&meta), &spec)).map(|c| (c.reason, c.detail))
    }

    #[test]
    fn allowed() {
        let cases = [
            (
                json!({"annotations": {
                    "container.apparmor.security.beta.kubernetes.io/a": "runtime/default",
                    "container.apparmor.security.beta.kubernetes.io/b": "localhost/prof",
                    "container.apparmor.security.beta.kubernetes.io/c": "",
                    "env": "unconfined",
                }}),
                json!({}),
            ),
            (
                json!({}),
                json!({
                    "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
                    "containers": [{"name": "a", "securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}}}],
                }),
            ),
        ];
        for (meta, spec) in cases {
            assert_eq!(run(meta, spec), None);
        }
    }

    #[test]
    fn forbidden_fields() {
        assert_eq!(
            run(
                json!({}),
                json!({"securityContext": {"appArmorProfile": {"type": "Unconfined"}}})
            ),
            Some((
                "forbidden AppArmor profile".into(),
                r#"pod must not set AppArmor profile type to "Unconfined""#.into()
            ))
        );
        assert_eq!(
            run(
                json!({}),
                json!({
                    "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
                    "initContainers": [{"name": "bar", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}],
                    "containers": [{"name": "foo"}],
                })
            ),
            Some((
                "forbidden AppArmor profile".into(),
                r#"container "bar" must not set AppArmor profile type to "Unconfined""#.into()
            ))
        );
    }

    #[test]
    fn forbidden_annotations_sorted_and_quoted() {
        let meta = json!({"annotations": {
            "container.apparmor.security.beta.kubernetes.io/": "bogus",
            "container.apparmor.security.beta.kubernetes.io/a": "",
            "container.apparmor.security.beta.kubernetes.io/b": "runtime/default",
            "container.apparmor.security.beta.kubernetes.io/c": "localhost/",
            "container.apparmor.security.beta.kubernetes.io/d": "localhost/foo",
            "container.apparmor.security.beta.kubernetes.io/e": "unconfined",
            "container.apparmor.security.beta.kubernetes.io/f": "unknown",
        }});
        assert_eq!(
            run(meta, json!({})),
            Some((
                "forbidden AppArmor profiles".into(),
                concat!(
                    r#"annotations must not set AppArmor profile type to "#,
                    r#""container.apparmor.security.beta.kubernetes.io/="bogus"", "#,
                    r#""container.apparmor.security.beta.kubernetes.io/e="unconfined"", "#,
                    r#""container.apparmor.security.beta.kubernetes.io/f="unknown"""#
                )
                .into()
            ))
        );
    }

    #[test]
    fn fields_and_annotation_together() {
        let meta = json!({"annotations": {"container.apparmor.security.beta.kubernetes.io/a": "unconfined"}});
        let spec = json!({
            "securityContext": {"appArmorProfile": {"type": "Unconfined"}},
            "containers": [{"name": "a", "securityContext": {"appArmorProfile": {}}}],
        });
        assert_eq!(
            run(meta, spec),
            Some((
                "forbidden AppArmor profiles".into(),
                r#"pod and container "a" and annotation must not set AppArmor profile type to "", "Unconfined", "container.apparmor.security.beta.kubernetes.io/a="unconfined"""#.into()
            ))
        );
    }
}
