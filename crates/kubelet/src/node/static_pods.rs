//! Static pods: pods read from `--pod-manifest-path` (one Pod per YAML or JSON file,
//! hidden files skipped), made the kubelet's way — named `<name>-<node>`, in `default`
//! unless they say otherwise, with a UID that hashes the file, the node and the path, the
//! `kubernetes.io/config.{source,hash,seen}` annotations, the defaults the API server would
//! apply to the fields the agent reads, bound to the node, tolerating every `NoExecute`
//! taint — and their mirror pods, the API's read-only copies of them (annotation
//! `kubernetes.io/config.mirror`, owned by the Node), created, recreated when stale and
//! deleted when their static pod is gone.

use k8s_openapi::api::core::v1::{Node, Pod, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `kubernetes.io/config.source`: where the kubelet got a pod (`file` for static pods).
pub const CONFIG_SOURCE: &str = "kubernetes.io/config.source";
/// `kubernetes.io/config.hash`: the static pod's hash (its UID).
pub const CONFIG_HASH: &str = "kubernetes.io/config.hash";
/// `kubernetes.io/config.seen`: when the kubelet first saw it.
pub const CONFIG_SEEN: &str = "kubernetes.io/config.seen";
/// `kubernetes.io/config.mirror`: on a mirror pod, its static pod's hash.
pub const CONFIG_MIRROR: &str = "kubernetes.io/config.mirror";

/// How often the manifest directory is read (the kubelet's `fileCheckFrequency`).
pub const CHECK_FREQUENCY: Duration = Duration::from_secs(20);

/// Whether `pod` is a static pod (from a file).
pub fn is_static(pod: &Pod) -> bool {
    annotation(pod, CONFIG_SOURCE).is_some_and(|s| s != "api")
}

/// Whether `pod` is a mirror pod.
pub fn is_mirror(pod: &Pod) -> bool {
    annotation(pod, CONFIG_MIRROR).is_some()
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// The static pod a manifest file gives on `node_name`, seen at `seen` (RFC 3339).
pub fn pod_from_file(
    path: &Path,
    content: &[u8],
    node_name: &str,
    seen: &str,
) -> Result<Pod, String> {
    let text =
        std::str::from_utf8(content).map_err(|e| format!("{}: not UTF-8: {e}", path.display()))?;
    let value: serde_json::Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| format!("{}: {e}", path.display()))?
    } else {
        serde_saphyr::from_str(text).map_err(|e| format!("{}: {e}", path.display()))?
    };
    let kind = value
        .get("kind")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let api_version = value
        .get("apiVersion")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    if kind != "Pod" || api_version != "v1" {
        return Err(format!(
            "{}: expected a v1 Pod, got {api_version:?} {kind:?}",
            path.display()
        ));
    }
    let mut pod: Pod = serde_json::from_value(value)
        .map_err(|e| format!("{}: invalid pod: {e}", path.display()))?;
    let name = pod.metadata.name.clone().unwrap_or_default();
    if name.is_empty() {
        return Err(format!(
            "{}: invalid pod: metadata.name: Required value: name or generateName is required",
            path.display()
        ));
    }
    if pod.spec.as_ref().is_none_or(|s| s.containers.is_empty()) {
        return Err(format!(
            "{}: invalid pod: spec.containers: Required value",
            path.display()
        ));
    }
    let uid = match pod.metadata.uid.clone().filter(|u| !u.is_empty()) {
        Some(uid) => uid,
        None => {
            let mut hasher = Sha256::new();
            hasher.update(content);
            hasher.update(format!("host:{node_name}").as_bytes());
            hasher.update(format!("file:{}", path.display()).as_bytes());
            hasher.finalize()[..16]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        }
    };
    pod.metadata.uid = Some(uid.clone());
    pod.metadata.name = Some(format!("{name}-{}", node_name.to_lowercase()));
    if pod
        .metadata
        .namespace
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        pod.metadata.namespace = Some("default".to_string());
    }
    let annotations = pod.metadata.annotations.get_or_insert_with(BTreeMap::new);
    annotations.insert(CONFIG_HASH.to_string(), uid);
    annotations.insert(CONFIG_SOURCE.to_string(), "file".to_string());
    annotations.insert(CONFIG_SEEN.to_string(), seen.to_string());
    apply_defaults(&mut pod, node_name);
    pod.status = Some(k8s_openapi::api::core::v1::PodStatus {
        phase: Some("Pending".to_string()),
        ..Default::default()
    });
    Ok(pod)
}

/// The defaults the API server would apply, for the fields the agent reads, plus the
/// node binding and the `NoExecute` toleration of static pods.
fn apply_defaults(pod: &mut Pod, node_name: &str) {
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    spec.node_name = Some(node_name.to_string());
    spec.restart_policy
        .get_or_insert_with(|| "Always".to_string());
    spec.dns_policy
        .get_or_insert_with(|| "ClusterFirst".to_string());
    spec.termination_grace_period_seconds.get_or_insert(30);
    spec.scheduler_name
        .get_or_insert_with(|| "default-scheduler".to_string());
    spec.security_context.get_or_insert_with(Default::default);
    spec.enable_service_links.get_or_insert(true);
    spec.priority.get_or_insert(0);
    let containers = spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten());
    for container in containers {
        container.image_pull_policy.get_or_insert_with(|| {
            let image = container.image.as_deref().unwrap_or_default();
            let last = image.rsplit('/').next().unwrap_or_default();
            let untagged = !last.contains(':') && !image.contains('@');
            if untagged || image.ends_with(":latest") {
                "Always".to_string()
            } else {
                "IfNotPresent".to_string()
            }
        });
        container
            .termination_message_path
            .get_or_insert_with(|| "/dev/termination-log".to_string());
        container
            .termination_message_policy
            .get_or_insert_with(|| "File".to_string());
        for port in container.ports.iter_mut().flatten() {
            port.protocol.get_or_insert_with(|| "TCP".to_string());
        }
    }
    let toleration = Toleration {
        operator: Some("Exists".to_string()),
        effect: Some("NoExecute".to_string()),
        ..Default::default()
    };
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    if !tolerations.contains(&toleration) {
        tolerations.push(toleration);
    }
}

/// The manifest directory as last read: each file's content and the pod made from it
/// (kept while the file is unchanged, so `config.seen` stays the first sighting).
#[derive(Debug)]
pub struct ManifestSource {
    dir: PathBuf,
    node_name: String,
    files: BTreeMap<PathBuf, (Vec<u8>, Pod)>,
}

impl ManifestSource {
    pub fn new(dir: PathBuf, node_name: &str) -> ManifestSource {
        ManifestSource {
            dir,
            node_name: node_name.to_string(),
            files: BTreeMap::new(),
        }
    }

    /// Reads the directory: the static pods now, in file name order. Files that do not
    /// hold a valid pod are logged and skipped; a missing directory gives no pods.
    pub fn read(&mut self) -> Vec<Pod> {
        let mut paths: Vec<PathBuf> = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries
                .flatten()
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()))
                .map(|e| e.path())
                .collect(),
            Err(e) => {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(path = %self.dir.display(), error = %e, "reading the static pod directory");
                }
                Vec::new()
            }
        };
        paths.sort();
        let mut files = BTreeMap::new();
        for path in paths {
            let Ok(content) = std::fs::read(&path) else {
                continue;
            };
            if let Some((old, pod)) = self.files.remove(&path)
                && old == content
            {
                files.insert(path, (old, pod));
                continue;
            }
            let seen = jiff::Timestamp::now().to_string();
            match pod_from_file(&path, &content, &self.node_name, &seen) {
                Ok(pod) => {
                    files.insert(path, (content, pod));
                }
                Err(e) => tracing::warn!(error = %e, "could not process a static pod manifest"),
            }
        }
        self.files = files;
        self.files.values().map(|(_, pod)| pod.clone()).collect()
    }

    /// Reads the directory now and every [`CHECK_FREQUENCY`], sending the pods when they
    /// change, until `cancel`.
    pub async fn run(
        mut self,
        pods: tokio::sync::watch::Sender<Vec<Pod>>,
        cancel: impl Future<Output = ()>,
    ) {
        tokio::pin!(cancel);
        let mut tick = tokio::time::interval(CHECK_FREQUENCY);
        loop {
            tokio::select! {
                _ = &mut cancel => return,
                _ = tick.tick() => {
                    let now = self.read();
                    pods.send_if_modified(|old| {
                        let changed = *old != now;
                        if changed {
                            *old = now;
                        }
                        changed
                    });
                }
            }
        }
    }
}

/// The mirror pod of `static_pod` on `node`: a copy with the `config.mirror`
/// annotation and the Node as its controller owner, without the static pod's UID.
pub fn mirror_pod(static_pod: &Pod, node: &Node) -> Pod {
    let mut mirror = static_pod.clone();
    let hash = annotation(static_pod, CONFIG_HASH)
        .unwrap_or_default()
        .to_string();
    mirror
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(CONFIG_MIRROR.to_string(), hash);
    mirror.metadata.uid = None;
    mirror.metadata.resource_version = None;
    mirror.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".to_string(),
        kind: "Node".to_string(),
        name: node.metadata.name.clone().unwrap_or_default(),
        uid: node.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        ..Default::default()
    }]);
    mirror.status = None;
    mirror
}

/// Whether `mirror` is the current mirror of `static_pod` (the kubelet's `IsMirrorPodOf`).
pub fn is_mirror_of(mirror: &Pod, static_pod: &Pod) -> bool {
    mirror.metadata.name == static_pod.metadata.name
        && mirror.metadata.namespace == static_pod.metadata.namespace
        && annotation(mirror, CONFIG_MIRROR).is_some()
        && annotation(mirror, CONFIG_MIRROR) == annotation(static_pod, CONFIG_HASH)
}

async fn delete_mirror(api: &Api<Pod>, mirror: &Pod) -> anyhow::Result<()> {
    let name = mirror.metadata.name.clone().unwrap_or_default();
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(kube::api::Preconditions {
            uid: mirror.metadata.uid.clone(),
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete(&name, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(e) => Err(anyhow::Error::new(e).context(format!("deleting mirror pod {name:?}"))),
    }
}

/// The mirror pods bound to `node_name`, listed as a node may list pods (selected by
/// `spec.nodeName`; the Node authorizer refuses a node a plain `get` of a pod that is not
/// yet bound to it).
pub async fn mirror_pods(client: &kube::Client, node_name: &str) -> anyhow::Result<Vec<Pod>> {
    let api: Api<Pod> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default().fields(&format!("spec.nodeName={node_name}")))
        .await
        .map_err(|e| anyhow::Error::new(e).context("listing the node's pods"))?;
    Ok(list.items.into_iter().filter(is_mirror).collect())
}

/// Makes `static_pod`'s mirror pod current, given the pod of its name the agent sees
/// (`current`, from its pod informer): deletes one that is stale (another hash) or being
/// deleted (a user's graceful delete: the kubelet ends it at once, as nothing runs under
/// a mirror pod), and creates it when missing, stale or deleted.
pub async fn sync_mirror_pod(
    client: &kube::Client,
    static_pod: &Pod,
    current: Option<&Pod>,
    node: &Node,
) -> anyhow::Result<()> {
    let namespace = static_pod.metadata.namespace.clone().unwrap_or_default();
    let name = static_pod.metadata.name.clone().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    if let Some(mirror) = current {
        if mirror.metadata.deletion_timestamp.is_none() && is_mirror_of(mirror, static_pod) {
            return Ok(());
        }
        tracing::info!(pod = %format!("{namespace}/{name}"), "deleting an outdated mirror pod");
        delete_mirror(&api, mirror).await?;
    }
    match api
        .create(&PostParams::default(), &mirror_pod(static_pod, node))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => {
            let node_name = node.metadata.name.clone().unwrap_or_default();
            let existing = mirror_pods(client, &node_name).await?;
            if existing.iter().any(|m| is_mirror_of(m, static_pod)) {
                Ok(())
            } else {
                anyhow::bail!(
                    "mirror pod {namespace}/{name} exists and is not this static pod's: {}",
                    s.message
                )
            }
        }
        Err(e) => {
            Err(anyhow::Error::new(e).context(format!("creating mirror pod {namespace}/{name}")))
        }
    }
}

/// Deletes the mirror pods on `node_name` whose static pod is not among `static_pods`;
/// returns their `namespace/name`s.
pub async fn delete_orphaned_mirror_pods(
    client: &kube::Client,
    node_name: &str,
    static_pods: &[Pod],
) -> anyhow::Result<Vec<String>> {
    let mut deleted = Vec::new();
    for pod in mirror_pods(client, node_name).await? {
        let alive = static_pods.iter().any(|s| {
            s.metadata.name == pod.metadata.name && s.metadata.namespace == pod.metadata.namespace
        });
        if alive || pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        delete_mirror(&Api::namespaced(client.clone(), &namespace), &pod).await?;
        deleted.push(format!(
            "{namespace}/{}",
            pod.metadata.name.clone().unwrap_or_default()
        ));
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const YAML: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels:\n    app: web\nspec:\n  containers:\n  - name: httpd\n    image: busybox:1.36\n    ports:\n    - containerPort: 80\n  - name: side\n    image: registry.local:5000/tools\n";

    #[test]
    fn a_manifest_becomes_the_kubelet_s_static_pod() {
        let pod = pod_from_file(
            Path::new("/etc/kyb/manifests/web.yaml"),
            YAML.as_bytes(),
            "Node1",
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("web-node1"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("default"));
        let uid = pod.metadata.uid.clone().unwrap();
        assert_eq!(uid.len(), 32);
        let a = pod.metadata.annotations.as_ref().unwrap();
        assert_eq!(a[CONFIG_HASH], uid);
        assert_eq!(a[CONFIG_SOURCE], "file");
        assert_eq!(a[CONFIG_SEEN], "2026-01-01T00:00:00Z");
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.node_name.as_deref(), Some("Node1"));
        assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
        assert_eq!(spec.termination_grace_period_seconds, Some(30));
        assert_eq!(
            spec.containers[0].image_pull_policy.as_deref(),
            Some("IfNotPresent")
        );
        assert_eq!(
            spec.containers[1].image_pull_policy.as_deref(),
            Some("Always")
        );
        assert_eq!(
            spec.containers[0].ports.as_ref().unwrap()[0]
                .protocol
                .as_deref(),
            Some("TCP")
        );
        let toleration = &spec.tolerations.as_ref().unwrap()[0];
        assert_eq!(toleration.operator.as_deref(), Some("Exists"));
        assert_eq!(toleration.effect.as_deref(), Some("NoExecute"));
        assert!(is_static(&pod));
        assert_eq!(pod.status.unwrap().phase.as_deref(), Some("Pending"));
    }

    #[test]
    fn the_uid_depends_on_content_node_and_path() {
        let uid = |content: &str, node: &str, path: &str| {
            pod_from_file(Path::new(path), content.as_bytes(), node, "t")
                .unwrap()
                .metadata
                .uid
                .unwrap()
        };
        let base = uid(YAML, "n", "/a.yaml");
        assert_eq!(base, uid(YAML, "n", "/a.yaml"));
        assert_ne!(base, uid(YAML, "m", "/a.yaml"));
        assert_ne!(base, uid(YAML, "n", "/b.yaml"));
        assert_ne!(base, uid(&YAML.replace("1.36", "1.37"), "n", "/a.yaml"));
    }

    #[test]
    fn json_manifests_and_bad_files() {
        let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j","namespace":"kube-system","uid":"fixed"},"spec":{"containers":[{"name":"c","image":"i"}],"tolerations":[{"operator":"Exists","effect":"NoExecute"}]}}"#;
        let pod = pod_from_file(Path::new("/j.json"), json.as_bytes(), "n", "t").unwrap();
        assert_eq!(pod.metadata.namespace.as_deref(), Some("kube-system"));
        assert_eq!(pod.metadata.uid.as_deref(), Some("fixed"));
        assert_eq!(pod.spec.unwrap().tolerations.unwrap().len(), 1);
        let err = pod_from_file(
            Path::new("/d.yaml"),
            b"apiVersion: apps/v1\nkind: Deployment\n",
            "n",
            "t",
        )
        .unwrap_err();
        assert!(err.contains("expected a v1 Pod"), "{err}");
        let err = pod_from_file(
            Path::new("/e.yaml"),
            b"apiVersion: v1\nkind: Pod\nspec:\n  containers: []\n",
            "n",
            "t",
        )
        .unwrap_err();
        assert!(err.contains("name or generateName is required"), "{err}");
        assert!(pod_from_file(Path::new("/f.yaml"), b": : :", "n", "t").is_err());
    }

    #[test]
    fn the_directory_is_read_and_unchanged_files_keep_their_first_sighting() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("web.yaml"), YAML).unwrap();
        std::fs::write(dir.path().join(".hidden.yaml"), YAML).unwrap();
        std::fs::write(dir.path().join("bad.yaml"), "nonsense").unwrap();
        let mut source = ManifestSource::new(dir.path().to_path_buf(), "n");
        let first = source.read();
        assert_eq!(first.len(), 1);
        let second = source.read();
        assert_eq!(first, second);
        std::fs::write(dir.path().join("web.yaml"), YAML.replace("1.36", "1.37")).unwrap();
        let third = source.read();
        assert_ne!(first[0].metadata.uid, third[0].metadata.uid);
        std::fs::remove_file(dir.path().join("web.yaml")).unwrap();
        assert!(source.read().is_empty());
        assert!(
            ManifestSource::new(dir.path().join("absent"), "n")
                .read()
                .is_empty()
        );
    }

    #[test]
    fn the_mirror_pod_is_owned_by_the_node_and_carries_the_hash() {
        let pod = pod_from_file(Path::new("/w.yaml"), YAML.as_bytes(), "n", "t").unwrap();
        let mut node = Node::default();
        node.metadata.name = Some("n".into());
        node.metadata.uid = Some("node-uid".into());
        let mirror = mirror_pod(&pod, &node);
        assert!(mirror.metadata.uid.is_none());
        assert_eq!(
            mirror.metadata.annotations.as_ref().unwrap()[CONFIG_MIRROR],
            pod.metadata.uid.clone().unwrap()
        );
        let owner = &mirror.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
            ("Node", "node-uid", Some(true))
        );
        assert!(owner.block_owner_deletion.is_none());
        assert!(is_mirror(&mirror) && is_mirror_of(&mirror, &pod));
        let changed = pod_from_file(
            Path::new("/w.yaml"),
            YAML.replace("1.36", "2").as_bytes(),
            "n",
            "t",
        )
        .unwrap();
        assert!(!is_mirror_of(&mirror, &changed));
    }
}
