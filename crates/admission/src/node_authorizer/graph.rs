//! The index behind the Node authorizer: which node may reach which object, kept current
//! from watch events of pods, PersistentVolumes, VolumeAttachments and ResourceSlices.
//!
//! Kubernetes keeps a graph with edges pointing toward nodes (secret/configmap/service
//! account/PVC/ResourceClaim → pod → node, PV → PVC, secret → PV, VolumeAttachment → node,
//! ResourceSlice → node) and searches it. Here the same reachability is indexed by object:
//! for each referenced object, how many pods on each node refer to it; each pod keeps only
//! the names it refers to (not its spec), so an event costs the size of one object and a
//! question a few hash lookups.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::pod_refs;
use crate::service_account::is_mirror_pod;
use kyb_apimachinery::json;

/// The kinds of namespaced objects pods refer to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum RefKind {
    Secret = 0,
    ConfigMap = 1,
    ServiceAccount = 2,
    Pvc = 3,
    ResourceClaim = 4,
}

const REF_KINDS: usize = 5;

/// Namespace → name → value.
type Namespaced<T> = HashMap<String, HashMap<String, T>>;

/// How many pods on each node refer to an object.
type NodeCounts = HashMap<Arc<str>, u32>;

#[derive(Debug, PartialEq, Eq)]
struct PodEntry {
    node: Arc<str>,
    /// Sorted and deduplicated.
    refs: Vec<(RefKind, Box<str>)>,
}

#[derive(Debug, PartialEq, Eq)]
struct PvEntry {
    claim_namespace: String,
    claim_name: String,
    /// Secrets the kubelet uses for this volume: (namespace, name).
    secrets: Vec<(String, String)>,
}

/// Reachability from nodes to objects (see the module documentation).
#[derive(Debug, Default)]
pub(super) struct Index {
    /// Node names shared by all entries, with how many entries use each.
    nodes: HashMap<Arc<str>, usize>,
    pods: Namespaced<PodEntry>,
    referenced: [Namespaced<NodeCounts>; REF_KINDS],
    pvs: HashMap<String, PvEntry>,
    /// Secrets used by PVs → the PVs using them.
    pv_secrets: Namespaced<HashSet<String>>,
    volume_attachments: HashMap<String, Arc<str>>,
    resource_slices: HashMap<String, Arc<str>>,
}

impl Index {
    fn intern(&mut self, node: &str) -> Arc<str> {
        if let Some((name, count)) = self.nodes.get_key_value(node) {
            let name = Arc::clone(name);
            let count = *count;
            self.nodes.insert(Arc::clone(&name), count + 1);
            return name;
        }
        let name: Arc<str> = Arc::from(node);
        self.nodes.insert(Arc::clone(&name), 1);
        name
    }

    fn release(&mut self, node: &str) {
        if let Some(count) = self.nodes.get_mut(node) {
            *count -= 1;
            if *count == 0 {
                self.nodes.remove(node);
            }
        }
    }

    /// Records a pod (added or updated). A pod without `spec.nodeName` grants nothing.
    pub(super) fn apply_pod(&mut self, pod: &Value) {
        let namespace = json::str_at(pod, &["metadata", "namespace"]);
        let name = json::str_at(pod, &["metadata", "name"]);
        let node = json::str_at(pod, &["spec", "nodeName"]);
        if node.is_empty() {
            self.delete_pod(namespace, name);
            return;
        }
        let refs = pod_references(pod);
        if let Some(existing) = self.pods.get(namespace).and_then(|m| m.get(name))
            && &*existing.node == node
            && existing.refs == refs
        {
            return;
        }
        self.delete_pod(namespace, name);
        let node = self.intern(node);
        for (kind, referenced) in &refs {
            *self.referenced[*kind as usize]
                .entry(namespace.to_string())
                .or_default()
                .entry(referenced.to_string())
                .or_default()
                .entry(Arc::clone(&node))
                .or_default() += 1;
        }
        self.pods
            .entry(namespace.to_string())
            .or_default()
            .insert(name.to_string(), PodEntry { node, refs });
    }

    pub(super) fn holds_pod(&self, namespace: &str, name: &str) -> bool {
        self.pods
            .get(namespace)
            .is_some_and(|pods| pods.contains_key(name))
    }

    pub(super) fn delete_pod(&mut self, namespace: &str, name: &str) {
        let Some(entry) = remove_namespaced(&mut self.pods, namespace, name) else {
            return;
        };
        for (kind, referenced) in &entry.refs {
            let map = &mut self.referenced[*kind as usize];
            let Some(counts) = map
                .get_mut(namespace)
                .and_then(|m| m.get_mut(&**referenced))
            else {
                continue;
            };
            if let Some(count) = counts.get_mut(&*entry.node) {
                *count -= 1;
                if *count == 0 {
                    counts.remove(&*entry.node);
                }
            }
            if counts.is_empty() {
                remove_namespaced(map, namespace, referenced);
            }
        }
        self.release(&entry.node);
    }

    /// Records a PersistentVolume: bound (with a `claimRef`) it links its claim to the
    /// secrets the kubelet uses for it.
    pub(super) fn apply_pv(&mut self, pv: &Value) {
        let name = json::str_at(pv, &["metadata", "name"]);
        self.delete_pv(name);
        let Some(claim) = json::map_at(pv, &["spec", "claimRef"]) else {
            return;
        };
        let field = |key: &str| {
            claim
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let entry = PvEntry {
            claim_namespace: field("namespace"),
            claim_name: field("name"),
            secrets: pv_secrets(pv),
        };
        for (namespace, secret) in &entry.secrets {
            self.pv_secrets
                .entry(namespace.clone())
                .or_default()
                .entry(secret.clone())
                .or_default()
                .insert(name.to_string());
        }
        self.pvs.insert(name.to_string(), entry);
    }

    pub(super) fn delete_pv(&mut self, name: &str) {
        let Some(entry) = self.pvs.remove(name) else {
            return;
        };
        for (namespace, secret) in &entry.secrets {
            if let Some(users) = self
                .pv_secrets
                .get_mut(namespace)
                .and_then(|m| m.get_mut(secret))
            {
                users.remove(name);
                if users.is_empty() {
                    remove_namespaced(&mut self.pv_secrets, namespace, secret);
                }
            }
        }
    }

    /// Records an object pinned to a node by `spec.nodeName` (VolumeAttachment,
    /// ResourceSlice); without one it grants nothing.
    pub(super) fn apply_pinned(&mut self, slices: bool, object: &Value) {
        let name = json::str_at(object, &["metadata", "name"]);
        let node = json::str_at(object, &["spec", "nodeName"]);
        self.delete_pinned(slices, name);
        if node.is_empty() {
            return;
        }
        let node = self.intern(node);
        let map = if slices {
            &mut self.resource_slices
        } else {
            &mut self.volume_attachments
        };
        map.insert(name.to_string(), node);
    }

    pub(super) fn delete_pinned(&mut self, slices: bool, name: &str) {
        let map = if slices {
            &mut self.resource_slices
        } else {
            &mut self.volume_attachments
        };
        if let Some(node) = map.remove(name) {
            self.release(&node);
        }
    }

    /// Whether a pod on `node` refers to the object.
    fn referenced_from(&self, kind: RefKind, namespace: &str, name: &str, node: &str) -> bool {
        self.referenced[kind as usize]
            .get(namespace)
            .and_then(|m| m.get(name))
            .is_some_and(|counts| counts.contains_key(node))
    }

    /// Whether `node` reaches the pod.
    pub(super) fn pod_on(&self, namespace: &str, name: &str, node: &str) -> bool {
        self.pods
            .get(namespace)
            .and_then(|m| m.get(name))
            .is_some_and(|p| &*p.node == node)
    }

    /// Whether `node` reaches a namespaced object pods refer to; secrets also through the PVs
    /// whose claims pods on the node use.
    pub(super) fn reaches(&self, kind: RefKind, namespace: &str, name: &str, node: &str) -> bool {
        if self.referenced_from(kind, namespace, name, node) {
            return true;
        }
        kind == RefKind::Secret
            && self
                .pv_secrets
                .get(namespace)
                .and_then(|m| m.get(name))
                .is_some_and(|pvs| pvs.iter().any(|pv| self.pv_reachable(pv, node)))
    }

    /// Whether `node` reaches a PV: a pod on it uses the PV's claim.
    pub(super) fn pv_reachable(&self, pv: &str, node: &str) -> bool {
        self.pvs.get(pv).is_some_and(|entry| {
            self.referenced_from(
                RefKind::Pvc,
                &entry.claim_namespace,
                &entry.claim_name,
                node,
            )
        })
    }

    pub(super) fn pinned_to(&self, slices: bool, name: &str, node: &str) -> bool {
        let map = if slices {
            &self.resource_slices
        } else {
            &self.volume_attachments
        };
        map.get(name).is_some_and(|n| &**n == node)
    }

    /// How many objects the index holds (pods, PVs, pinned objects), for tests and metrics.
    pub(super) fn len(&self) -> usize {
        self.pods.values().map(HashMap::len).sum::<usize>()
            + self.pvs.len()
            + self.volume_attachments.len()
            + self.resource_slices.len()
    }

    /// Whether nothing at all is referenced or interned (all bookkeeping released).
    #[cfg(test)]
    pub(super) fn is_clean(&self) -> bool {
        self.nodes.is_empty()
            && self.pods.is_empty()
            && self.referenced.iter().all(HashMap::is_empty)
            && self.pvs.is_empty()
            && self.pv_secrets.is_empty()
    }
}

fn remove_namespaced<T>(map: &mut Namespaced<T>, namespace: &str, name: &str) -> Option<T> {
    let inner = map.get_mut(namespace)?;
    let removed = inner.remove(name);
    if inner.is_empty() {
        map.remove(namespace);
    }
    removed
}

/// What a bound pod gives its node access to (nothing beyond itself for mirror pods).
fn pod_references(pod: &Value) -> Vec<(RefKind, Box<str>)> {
    let mut refs: Vec<(RefKind, Box<str>)> = Vec::new();
    if is_mirror_pod(pod) {
        return refs;
    }
    let spec = json::at(pod, &["spec"]).unwrap_or(&Value::Null);
    let mut push = |kind: RefKind, name: &str| {
        if !name.is_empty() {
            refs.push((kind, Box::from(name)));
        }
    };
    push(
        RefKind::ServiceAccount,
        json::str_at(spec, &["serviceAccountName"]),
    );
    pod_refs::visit_secret_names(spec, &mut |name| {
        push(RefKind::Secret, name);
        true
    });
    pod_refs::visit_configmap_names(spec, &mut |name| {
        push(RefKind::ConfigMap, name);
        true
    });
    let pod_name = json::str_at(pod, &["metadata", "name"]);
    for volume in json::items(spec, &["volumes"]) {
        if let Some(claim) = pod_refs::volume_claim_name(pod_name, volume) {
            push(RefKind::Pvc, &claim);
        }
    }
    for claim in pod_refs::resource_claim_names(pod) {
        push(RefKind::ResourceClaim, claim);
    }
    refs.sort();
    refs.dedup();
    refs
}

/// The secrets the kubelet uses for a PV (Kubernetes' `VisitPVSecretNames`, kubelet-visible
/// ones only), with their namespaces: the reference's namespace, else the claim's.
fn pv_secrets(pv: &Value) -> Vec<(String, String)> {
    let spec = json::at(pv, &["spec"]).unwrap_or(&Value::Null);
    let claim_namespace = json::str_at(spec, &["claimRef", "namespace"]);
    let mut out = Vec::new();
    let mut push =
        |namespace: &str, name: &str| out.push((namespace.to_string(), name.to_string()));
    let reference = |source: &Value, key: &str| -> Option<(String, String)> {
        let r = json::map_at(source, &[key])?;
        let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Some((field("namespace"), field("name")))
    };
    if json::map_at(spec, &["azureFile"]).is_some() {
        let source = &spec["azureFile"];
        let name = json::str_at(source, &["secretName"]);
        let namespace = json::opt_str(source, &["secretNamespace"])
            .filter(|n| !n.is_empty())
            .unwrap_or(claim_namespace);
        if !name.is_empty() {
            push(namespace, name);
        }
    } else if let Some(key) = ["cephfs", "flexVolume", "rbd", "scaleIO", "iscsi"]
        .into_iter()
        .find(|key| json::map_at(spec, &[key]).is_some())
    {
        // These default the secret's namespace to the claim's.
        if let Some((namespace, name)) = reference(&spec[key], "secretRef") {
            let namespace = if namespace.is_empty() {
                claim_namespace
            } else {
                namespace.as_str()
            };
            push(namespace, &name);
        }
    } else if let Some(key) = ["cinder", "storageos"]
        .into_iter()
        .find(|key| json::map_at(spec, &[key]).is_some())
    {
        if let Some((namespace, name)) = reference(&spec[key], "secretRef") {
            push(&namespace, &name);
        }
    } else if json::map_at(spec, &["csi"]).is_some() {
        for key in [
            "nodePublishSecretRef",
            "nodeStageSecretRef",
            "nodeExpandSecretRef",
        ] {
            if let Some((namespace, name)) = reference(&spec["csi"], key) {
                push(&namespace, &name);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A pod cut down to [`super::super::POD_FIELDS`].
    fn cut_down(pod: &Value) -> Value {
        let mut view = serde_json::Map::new();
        for (field, keys) in super::super::POD_FIELDS {
            let Some(value) = pod.get(*field) else {
                continue;
            };
            let kept = match (keys, value.as_object()) {
                (Some(keys), Some(map)) => Value::Object(
                    map.iter()
                        .filter(|(k, _)| keys.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                ),
                _ => value.clone(),
            };
            view.insert((*field).to_string(), kept);
        }
        Value::Object(view)
    }

    #[test]
    fn the_pod_fields_are_all_the_graph_reads() {
        let spec = json!({
            "nodeName": "n", "serviceAccountName": "sa",
            "imagePullSecrets": [{"name": "pull"}],
            "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "init-s"}}]}],
            "containers": [{"name": "c", "image": "x",
                "env": [{"name": "a", "valueFrom": {"secretKeyRef": {"name": "env-s", "key": "k"}}},
                        {"name": "b", "valueFrom": {"configMapKeyRef": {"name": "env-c", "key": "k"}}}],
                "envFrom": [{"configMapRef": {"name": "from-c"}}]}],
            "ephemeralContainers": [{"name": "e", "envFrom": [{"secretRef": {"name": "eph-s"}}]}],
            "volumes": [
                {"name": "s", "secret": {"secretName": "vol-s"}},
                {"name": "c", "configMap": {"name": "vol-c"}},
                {"name": "p", "projected": {"sources": [{"secret": {"name": "proj-s"}}, {"configMap": {"name": "proj-c"}}]}},
                {"name": "claim", "persistentVolumeClaim": {"claimName": "pvc"}},
                {"name": "eph", "ephemeral": {}},
                {"name": "csi", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-s"}}}],
            "resourceClaims": [{"name": "direct", "resourceClaimName": "rc"},
                               {"name": "templated", "resourceClaimTemplateName": "t"}],
        });
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"a": "b"},
                "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
            "spec": spec,
            "status": {"phase": "Running", "podIP": "10.0.0.1",
                "resourceClaimStatuses": [{"name": "templated", "resourceClaimName": "generated"}]}});
        let mut mirror = pod.clone();
        mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "x"});
        for pod in [pod, mirror] {
            let refs = pod_references(&pod);
            assert!(!refs.is_empty() || is_mirror_pod(&pod));
            assert_eq!(pod_references(&cut_down(&pod)), refs, "{pod}");
            let (mut whole, mut view) = (Index::default(), Index::default());
            whole.apply_pod(&pod);
            view.apply_pod(&cut_down(&pod));
            assert_eq!(whole.pods, view.pods);
            assert_eq!(whole.referenced, view.referenced);
        }
    }

    #[test]
    fn pod_references_are_sorted_and_deduplicated() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {
            "nodeName": "n", "serviceAccountName": "sa",
            "imagePullSecrets": [{"name": "s"}, {"name": "s"}, {"name": ""}],
            "volumes": [{"name": "v", "ephemeral": {}}, {"name": "w", "configMap": {"name": "c"}}]
        }});
        let refs = pod_references(&pod);
        assert_eq!(
            refs,
            vec![
                (RefKind::Secret, "s".into()),
                (RefKind::ConfigMap, "c".into()),
                (RefKind::ServiceAccount, "sa".into()),
                (RefKind::Pvc, "p-v".into()),
            ]
        );
    }

    #[test]
    fn pv_secret_namespaces() {
        let pv = |source: Value| {
            let mut spec = source;
            spec["claimRef"] = json!({"namespace": "claims", "name": "c"});
            json!({"spec": spec})
        };
        assert_eq!(
            pv_secrets(&pv(
                json!({"csi": {"driver": "d", "nodePublishSecretRef": {"name": "a", "namespace": "x"},
                "controllerPublishSecretRef": {"name": "hidden", "namespace": "x"},
                "nodeStageSecretRef": {"name": "b", "namespace": "y"}}})
            )),
            vec![
                ("x".to_string(), "a".to_string()),
                ("y".to_string(), "b".to_string())
            ]
        );
        assert_eq!(
            pv_secrets(&pv(json!({"rbd": {"secretRef": {"name": "r"}}}))),
            vec![("claims".to_string(), "r".to_string())]
        );
        assert_eq!(
            pv_secrets(&pv(json!({"azureFile": {"secretName": "az"}}))),
            vec![("claims".to_string(), "az".to_string())]
        );
        assert_eq!(
            pv_secrets(&pv(
                json!({"cinder": {"secretRef": {"name": "ci", "namespace": "z"}}})
            )),
            vec![("z".to_string(), "ci".to_string())]
        );
        assert!(pv_secrets(&pv(json!({"hostPath": {"path": "/"}}))).is_empty());
    }
}
