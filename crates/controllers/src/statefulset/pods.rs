//! A StatefulSet's pods and claims by ordinal: names (`<set>-<ordinal>`,
//! `<claim>-<set>-<ordinal>`), identity labels, hostname and subdomain, and the claims'
//! volumes, as Kubernetes' stateful pod control builds them; and [`Member`], what a sync
//! keeps of each pod of the set (pods are read one at a time and reduced at once).

use crate::history::POD_REVISION_LABEL;
use crate::ownership::controller_reference;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kyb_component_helpers::pod_readiness::Lifecycle;

pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// The ordinal of `pod_name` if it is a pod of the set `set_name`.
pub fn ordinal_of(set_name: &str, pod_name: &str) -> Option<i32> {
    let rest = pod_name.strip_prefix(set_name)?.strip_prefix('-')?;
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if rest.len() > 1 && rest.starts_with('0') {
        return None;
    }
    rest.parse().ok()
}

/// What a sync keeps of one pod of the set.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub name: String,
    pub uid: String,
    pub ordinal: i32,
    pub lifecycle: Lifecycle,
    /// The revision it was made from (its `controller-revision-hash` label).
    pub revision: Option<String>,
}

impl Member {
    /// `pod` reduced, if it is named as a pod of the set `set_name`.
    pub fn of(set_name: &str, pod: &Pod) -> Option<Member> {
        let name = pod.metadata.name.clone().unwrap_or_default();
        Some(Member {
            ordinal: ordinal_of(set_name, &name)?,
            name,
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            lifecycle: Lifecycle::of(pod),
            revision: pod
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(POD_REVISION_LABEL))
                .cloned(),
        })
    }
}

pub fn pod_name(set_name: &str, ordinal: i32) -> String {
    format!("{set_name}-{ordinal}")
}

pub fn claim_name(template: &str, set_name: &str, ordinal: i32) -> String {
    format!("{template}-{set_name}-{ordinal}")
}

/// The pod for `ordinal` made from `template` at revision `revision`.
pub fn new_pod(set: &StatefulSet, template: &PodTemplateSpec, revision: &str, ordinal: i32) -> Pod {
    let set_name = set.metadata.name.clone().unwrap_or_default();
    let name = pod_name(&set_name, ordinal);
    let template_meta = template.metadata.clone().unwrap_or_default();
    let mut labels = template_meta.labels.unwrap_or_default();
    labels.insert(POD_NAME_LABEL.into(), name.clone());
    labels.insert(POD_INDEX_LABEL.into(), ordinal.to_string());
    labels.insert(POD_REVISION_LABEL.into(), revision.to_string());
    let mut spec = template.spec.clone().unwrap_or_default();
    spec.hostname = Some(name.clone());
    let service = set
        .spec
        .as_ref()
        .and_then(|s| s.service_name.clone())
        .filter(|s| !s.is_empty());
    if service.is_some() {
        spec.subdomain = service;
    }
    for claim in set
        .spec
        .iter()
        .flat_map(|s| s.volume_claim_templates.iter().flatten())
    {
        let volume_name = claim.metadata.name.clone().unwrap_or_default();
        let volume = Volume {
            name: volume_name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim_name(&volume_name, &set_name, ordinal),
                read_only: None,
            }),
            ..Default::default()
        };
        let volumes = spec.volumes.get_or_insert_with(Vec::new);
        volumes.retain(|v| v.name != volume_name);
        volumes.push(volume);
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: set.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: template_meta.annotations,
            owner_references: Some(vec![controller_reference(set)]),
            finalizers: template_meta.finalizers,
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// The claims the pod `ordinal` needs (not yet checked against what exists), with
/// `owner` (the set, for `whenDeleted: Delete`) among their references.
pub fn new_claims(
    set: &StatefulSet,
    ordinal: i32,
    owner: Option<OwnerReference>,
) -> Vec<PersistentVolumeClaim> {
    let set_name = set.metadata.name.clone().unwrap_or_default();
    let selector_labels = set
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.clone())
        .unwrap_or_default();
    set.spec
        .iter()
        .flat_map(|s| s.volume_claim_templates.iter().flatten())
        .map(|template| {
            let mut claim = template.clone();
            let template_name = template.metadata.name.clone().unwrap_or_default();
            let mut labels = claim.metadata.labels.take().unwrap_or_default();
            labels.extend(selector_labels.clone());
            claim.metadata = ObjectMeta {
                name: Some(claim_name(&template_name, &set_name, ordinal)),
                namespace: set.metadata.namespace.clone(),
                labels: Some(labels),
                annotations: template.metadata.annotations.clone(),
                owner_references: owner.clone().map(|o| vec![o]),
                ..Default::default()
            };
            claim.status = None;
            claim
        })
        .collect()
}

/// The set's reference on claims it owns (`whenDeleted: Delete`): not a controller
/// reference, as Kubernetes does.
pub fn claim_owner(set: &StatefulSet) -> OwnerReference {
    OwnerReference {
        controller: None,
        ..controller_reference(set)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn ordinals() {
        assert_eq!(ordinal_of("web", "web-0"), Some(0));
        assert_eq!(ordinal_of("web", "web-12"), Some(12));
        assert_eq!(ordinal_of("web", "web-x"), None);
        assert_eq!(ordinal_of("web", "web-01"), None);
        assert_eq!(ordinal_of("web", "webs-1"), None);
        assert_eq!(ordinal_of("web", "web-"), None);
    }

    #[test]
    fn members_are_the_pods_named_for_the_set() {
        let pod = |name: &str| -> Pod {
            serde_json::from_value(json!({
                "metadata": {"name": name, "uid": "p1",
                             "labels": {POD_REVISION_LABEL: "web-abc"}},
                "status": {"phase": "Failed"},
            }))
            .unwrap()
        };
        let member = Member::of("web", &pod("web-3")).unwrap();
        assert_eq!(member.ordinal, 3);
        assert_eq!((member.name.as_str(), member.uid.as_str()), ("web-3", "p1"));
        assert_eq!(member.revision.as_deref(), Some("web-abc"));
        assert!(member.lifecycle.is_failed());
        assert!(Member::of("web", &pod("other-3")).is_none());
    }

    #[test]
    fn pods_have_identity_and_claims() {
        let set: StatefulSet = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "u1"},
            "spec": {
                "serviceName": "nginx",
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                             "spec": {"containers": [{"name": "c", "image": "i"}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "www"},
                    "spec": {"accessModes": ["ReadWriteOnce"],
                             "resources": {"requests": {"storage": "1Gi"}}}}],
            },
        }))
        .unwrap();
        let template = set.spec.as_ref().unwrap().template.clone();
        let pod = new_pod(&set, &template, "web-abc", 2);
        assert_eq!(pod.metadata.name.as_deref(), Some("web-2"));
        let labels = pod.metadata.labels.unwrap();
        assert_eq!(labels[POD_NAME_LABEL], "web-2");
        assert_eq!(labels[POD_INDEX_LABEL], "2");
        assert_eq!(labels[POD_REVISION_LABEL], "web-abc");
        let spec = pod.spec.unwrap();
        assert_eq!(spec.hostname.as_deref(), Some("web-2"));
        assert_eq!(spec.subdomain.as_deref(), Some("nginx"));
        let volume = &spec.volumes.unwrap()[0];
        assert_eq!(
            volume.persistent_volume_claim.as_ref().unwrap().claim_name,
            "www-web-2"
        );
        let claims = new_claims(&set, 2, Some(claim_owner(&set)));
        assert_eq!(claims[0].metadata.name.as_deref(), Some("www-web-2"));
        assert_eq!(claims[0].metadata.labels.as_ref().unwrap()["app"], "web");
        assert_eq!(
            claims[0].metadata.owner_references.as_ref().unwrap()[0].uid,
            "u1"
        );
    }
}
