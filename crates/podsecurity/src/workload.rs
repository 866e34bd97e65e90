//! The resources the plugin looks at and where their pod spec lives: pods themselves, and
//! the workload resources that embed a pod template.

use serde_json::Value;

use crate::pod::null;

/// What a resource means to the plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceClass {
    /// `namespaces` (core): label validation and checks of existing pods.
    Namespace,
    /// `pods` (core): enforce, audit and warn.
    Pod,
    /// A workload resource with a pod template: audit and warn only.
    Workload,
    /// Anything else: not looked at.
    Other,
}

/// Workload resources with a pod template, by group and resource (plural).
const WORKLOADS: &[(&str, &str)] = &[
    ("", "replicationcontrollers"),
    ("", "podtemplates"),
    ("apps", "replicasets"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
];

/// Classifies a resource by API group and resource (plural), whatever its version.
pub fn classify(group: &str, resource: &str) -> ResourceClass {
    match (group, resource) {
        ("", "namespaces") => ResourceClass::Namespace,
        ("", "pods") => ResourceClass::Pod,
        _ if WORKLOADS.contains(&(group, resource)) => ResourceClass::Workload,
        _ => ResourceClass::Other,
    }
}

/// The pod metadata and spec a workload object embeds, as Kubernetes extracts them:
/// `template` of a PodTemplate, `spec.template` of a ReplicationController, ReplicaSet,
/// Deployment, StatefulSet, DaemonSet or Job, `spec.jobTemplate.spec.template` of a CronJob.
///
/// `None` when there is nothing to evaluate: the resource is not a workload resource, or a
/// ReplicationController has no template (its template is optional). Any other missing
/// template reads as an empty one (no metadata, empty spec), as Go's zero value does.
pub fn pod_template<'a>(
    group: &str,
    resource: &str,
    object: &'a Value,
) -> Option<(Option<&'a Value>, &'a Value)> {
    let template = match (group, resource) {
        ("", "podtemplates") => object.get("template"),
        ("", "replicationcontrollers") => {
            let template = object.get("spec")?.get("template")?;
            if template.is_null() {
                return None;
            }
            Some(template)
        }
        ("apps", "replicasets" | "deployments" | "statefulsets" | "daemonsets")
        | ("batch", "jobs") => object.get("spec").and_then(|s| s.get("template")),
        ("batch", "cronjobs") => object
            .get("spec")
            .and_then(|s| s.get("jobTemplate"))
            .and_then(|t| t.get("spec"))
            .and_then(|s| s.get("template")),
        _ => return None,
    };
    let template = template.unwrap_or(null());
    Some((
        template.get("metadata"),
        template.get("spec").unwrap_or(null()),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn classification() {
        assert_eq!(classify("", "pods"), ResourceClass::Pod);
        assert_eq!(classify("", "namespaces"), ResourceClass::Namespace);
        assert_eq!(classify("apps", "deployments"), ResourceClass::Workload);
        assert_eq!(classify("batch", "cronjobs"), ResourceClass::Workload);
        assert_eq!(classify("", "podtemplates"), ResourceClass::Workload);
        assert_eq!(classify("extensions", "deployments"), ResourceClass::Other);
        assert_eq!(classify("", "services"), ResourceClass::Other);
        assert_eq!(classify("apps", "pods"), ResourceClass::Other);
    }

    #[test]
    fn templates() {
        let spec = json!({"containers": [{"name": "a"}]});
        let meta = json!({"labels": {"app": "x"}});
        let deployment = json!({"spec": {"template": {"metadata": meta, "spec": spec}}});
        let (m, s) = pod_template("apps", "deployments", &deployment).unwrap();
        assert_eq!(m, Some(&meta));
        assert_eq!(s, &spec);

        let cronjob = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": spec}}}}});
        let (m, s) = pod_template("batch", "cronjobs", &cronjob).unwrap();
        assert_eq!(m, None);
        assert_eq!(s, &spec);

        let pt = json!({"template": {"spec": spec}});
        assert_eq!(pod_template("", "podtemplates", &pt).unwrap().1, &spec);

        // A ReplicationController's template is optional; others read as empty.
        assert!(pod_template("", "replicationcontrollers", &json!({"spec": {}})).is_none());
        assert!(
            pod_template(
                "",
                "replicationcontrollers",
                &json!({"spec": {"template": null}})
            )
            .is_none()
        );
        let empty = json!({});
        let (m, s) = pod_template("apps", "statefulsets", &empty).unwrap();
        assert!(m.is_none() && s.is_null());
        assert!(pod_template("", "services", &json!({})).is_none());
        let garbage = json!("garbage");
        let (_, s) = pod_template("batch", "jobs", &garbage).unwrap();
        assert!(s.is_null());
    }
}
