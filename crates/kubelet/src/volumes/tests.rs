//! The volume manager end to end on temporary directories, with the API replaced by maps.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::sources::{IssuedToken, SourceError};
use async_trait::async_trait;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolume, PersistentVolumeClaim, Secret, Service,
};
use std::collections::HashMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The API as maps.
#[derive(Default)]
struct MapSources {
    config_maps: Mutex<HashMap<String, ConfigMap>>,
    secrets: Mutex<HashMap<String, Secret>>,
    claims: Mutex<HashMap<String, PersistentVolumeClaim>>,
    volumes: Mutex<HashMap<String, PersistentVolume>>,
    tokens_issued: AtomicUsize,
    /// When set, tokens expire this many seconds from now whatever was asked (a token
    /// issued long ago).
    tokens_expire_in: Mutex<Option<i64>>,
}

impl MapSources {
    fn put_config_map(&self, name: &str, data: &[(&str, &str)]) {
        let cm = ConfigMap {
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        };
        self.config_maps.lock().unwrap().insert(name.into(), cm);
    }
    fn put_secret(&self, name: &str, data: &[(&str, &str)]) {
        let secret = Secret {
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                    .collect(),
            ),
            ..Default::default()
        };
        self.secrets.lock().unwrap().insert(name.into(), secret);
    }
}

fn get<T: Clone>(
    map: &Mutex<HashMap<String, T>>,
    kind: &str,
    name: &str,
) -> Result<Arc<T>, SourceError> {
    map.lock()
        .unwrap()
        .get(name)
        .cloned()
        .map(Arc::new)
        .ok_or_else(|| SourceError::NotFound(format!("{kind} {name:?} not found")))
}

#[async_trait]
impl Sources for MapSources {
    async fn config_map(&self, _: &str, name: &str) -> Result<Arc<ConfigMap>, SourceError> {
        get(&self.config_maps, "configmap", name)
    }
    async fn secret(&self, _: &str, name: &str) -> Result<Arc<Secret>, SourceError> {
        get(&self.secrets, "secret", name)
    }
    async fn services(&self, _: &str) -> Result<Vec<Arc<Service>>, SourceError> {
        Ok(vec![])
    }
    async fn service_account_token(
        &self,
        pod: &Pod,
        service_account: &str,
        audience: &str,
        expiration_seconds: i64,
    ) -> Result<IssuedToken, SourceError> {
        let n = self.tokens_issued.fetch_add(1, Ordering::SeqCst);
        let expires_in = self
            .tokens_expire_in
            .lock()
            .unwrap()
            .unwrap_or(expiration_seconds);
        let expiration = jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::from_secs(expires_in))
            .unwrap();
        Ok(IssuedToken {
            token: format!(
                "token-{n}-{}-{service_account}-{audience}-{expiration_seconds}",
                pod.metadata.name.as_deref().unwrap_or_default()
            ),
            expiration,
        })
    }
    async fn persistent_volume_claim(
        &self,
        _: &str,
        name: &str,
    ) -> Result<Arc<PersistentVolumeClaim>, SourceError> {
        get(&self.claims, "persistentvolumeclaims", name)
    }
    async fn persistent_volume(&self, name: &str) -> Result<Arc<PersistentVolume>, SourceError> {
        get(&self.volumes, "persistentvolumes", name)
    }
}

/// A volume manager on a temporary directory; dropping it tears down every pod directory
/// (so a failing test leaves no mount behind).
struct Fixture {
    manager: VolumeManager,
    sources: Arc<MapSources>,
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let sources = Arc::new(MapSources::default());
        let manager = VolumeManager::new(dir.path().join("pods"), sources.clone());
        Fixture {
            manager,
            sources,
            dir,
        }
    }
    fn volume_dir(&self, uid: &str, plugin: &str, name: &str) -> PathBuf {
        self.manager
            .pod_dir(uid)
            .join("volumes")
            .join(plugin)
            .join(name)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        for uid in self.manager.orphaned(&HashSet::new()) {
            if let Err(e) = cleanup::remove_pod_dir(&self.dir.path().join("pods"), &uid) {
                eprintln!("cleanup of {uid}: {e:#}");
            }
        }
    }
}

fn pod(uid: &str, volumes: serde_json::Value) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "namespace": "ns", "uid": uid, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c"}], "volumes": volumes, "serviceAccountName": "sa"}
    }))
    .unwrap()
}

fn timestamped_dirs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("..") && n != atomic_writer::DATA_DIR)
        .collect();
    names.sort();
    names
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[tokio::test]
async fn config_map_volumes_are_written_and_updated_in_place() {
    let f = Fixture::new();
    f.sources.put_config_map("cfg", &[("a", "1"), ("b", "2")]);
    let p = pod(
        "u1",
        serde_json::json!([
            {"name": "all", "configMap": {"name": "cfg"}},
            {"name": "some", "configMap": {"name": "cfg", "defaultMode": 0o600,
                "items": [{"key": "a", "path": "dir/a.txt"}, {"key": "b", "path": "b", "mode": 0o400}]}},
        ]),
    );
    let mounted = f.manager.setup(&p).await.unwrap();
    let all = f.volume_dir("u1", CONFIG_MAP, "all");
    assert_eq!(
        mounted.volumes["all"],
        MountedVolume {
            host_path: all.clone(),
            read_only: true,
            propagation_allowed: false
        }
    );
    assert_eq!(std::fs::read_to_string(all.join("a")).unwrap(), "1");
    assert_eq!(
        std::fs::read_link(all.join("a")).unwrap(),
        Path::new("..data/a")
    );
    assert_eq!(mode(&all.join("a")), 0o644);
    let some = f.volume_dir("u1", CONFIG_MAP, "some");
    assert_eq!(
        std::fs::read_to_string(some.join("dir/a.txt")).unwrap(),
        "1"
    );
    assert_eq!(mode(&some.join("dir/a.txt")), 0o600);
    assert_eq!(mode(&some.join("b")), 0o400);

    // Unchanged: not rewritten.
    let first = timestamped_dirs(&all);
    f.manager.setup(&p).await.unwrap();
    assert_eq!(timestamped_dirs(&all), first);

    // Changed: swapped, the old directory gone, a removed key gone.
    f.sources.put_config_map("cfg", &[("a", "one")]);
    let err = f.manager.setup(&p).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "MountVolume.SetUp failed for volume \"some\" : configmap references non-existent config key: b"
    );
    let second = timestamped_dirs(&all);
    assert_eq!(second.len(), 1);
    assert_ne!(second, first);
    assert_eq!(std::fs::read_to_string(all.join("a")).unwrap(), "one");
    assert!(std::fs::symlink_metadata(all.join("b")).is_err());
}

#[tokio::test]
async fn missing_config_maps_fail_unless_optional() {
    let f = Fixture::new();
    let p = pod(
        "u2",
        serde_json::json!([{"name": "cfg", "configMap": {"name": "x"}}]),
    );
    let err = f.manager.setup(&p).await.unwrap_err();
    assert_eq!(err.volume, "cfg");
    assert_eq!(
        err.to_string(),
        "MountVolume.SetUp failed for volume \"cfg\" : configmap \"x\" not found"
    );

    let p = pod(
        "u2",
        serde_json::json!([
            {"name": "cfg", "configMap": {"name": "x", "optional": true}},
            {"name": "sec", "secret": {"secretName": "y", "optional": true}},
        ]),
    );
    let mounted = f.manager.setup(&p).await.unwrap();
    let dir = &mounted.volumes["cfg"].host_path;
    assert!(std::fs::read_link(dir.join(atomic_writer::DATA_DIR)).is_ok());
    let visible: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with(".."))
        .collect();
    assert!(visible.is_empty(), "{visible:?}");

    // Created later: the next sync fills the volume.
    f.sources.put_config_map("x", &[("k", "v")]);
    f.manager.setup(&p).await.unwrap();
    assert_eq!(std::fs::read_to_string(dir.join("k")).unwrap(), "v");

    let p = pod(
        "u2",
        serde_json::json!([{"name": "sec", "secret": {"secretName": "y"}}]),
    );
    assert_eq!(
        f.manager.setup(&p).await.unwrap_err().to_string(),
        "MountVolume.SetUp failed for volume \"sec\" : secret \"y\" not found"
    );
}

#[tokio::test]
async fn secret_volumes_live_in_memory_and_teardown_unmounts_them() {
    let f = Fixture::new();
    f.sources.put_secret("s", &[("password", "hunter2")]);
    let p = pod(
        "u3",
        serde_json::json!([
            {"name": "s", "secret": {"secretName": "s", "defaultMode": 0o400}},
            {"name": "missing-key", "secret": {"secretName": "s", "items": [{"key": "user", "path": "u"}]}},
        ]),
    );
    let err = f.manager.setup(&p).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "MountVolume.SetUp failed for volume \"missing-key\" : references non-existent secret key: user"
    );
    let dir = f.volume_dir("u3", SECRET, "s");
    assert_eq!(
        std::fs::read_to_string(dir.join("password")).unwrap(),
        "hunter2"
    );
    assert_eq!(mode(&dir.join("password")), 0o400);
    let root = kyb_node_sys::privileges::is_root();
    assert_eq!(kyb_node_sys::mount::is_mount_point(&dir).unwrap(), root);
    assert_eq!(
        kyb_node_sys::mount::is_tmpfs(&dir).unwrap(),
        root || kyb_node_sys::mount::is_tmpfs(f.dir.path()).unwrap()
    );

    f.manager.teardown("u3").await.unwrap();
    assert!(!f.manager.pod_dir("u3").exists());
    assert!(
        kyb_node_sys::mount::mount_points_under(f.dir.path())
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn downward_api_volumes_follow_the_pod() {
    let f = Fixture::new();
    f.manager.set_node_allocatable(Allocatable::from([(
        "cpu".to_string(),
        k8s_openapi::apimachinery::pkg::api::resource::Quantity("4".into()),
    )]));
    let volumes = serde_json::json!([{"name": "info", "downwardAPI": {"items": [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}, "mode": 0o400},
        {"path": "cpu", "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu"}},
    ]}}]);
    let mut p = pod("u4", volumes.clone());
    f.manager.setup(&p).await.unwrap();
    let dir = f.volume_dir("u4", DOWNWARD_API, "info");
    assert_eq!(
        std::fs::read_to_string(dir.join("labels")).unwrap(),
        "app=\"web\""
    );
    assert_eq!(std::fs::read_to_string(dir.join("name")).unwrap(), "web");
    assert_eq!(mode(&dir.join("name")), 0o400);
    assert_eq!(std::fs::read_to_string(dir.join("cpu")).unwrap(), "4");

    p.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("tier".into(), "front".into());
    f.manager.setup(&p).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("labels")).unwrap(),
        "app=\"web\"\ntier=\"front\""
    );

    let bad = pod(
        "u4",
        serde_json::json!([{"name": "info", "downwardAPI": {"items": [
            {"path": "x", "fieldRef": {"fieldPath": "spec.hostname"}},
            {"path": "y", "resourceFieldRef": {"containerName": "nope", "resource": "limits.cpu"}},
        ]}}]),
    );
    assert_eq!(
        f.manager.setup(&bad).await.unwrap_err().to_string(),
        "MountVolume.SetUp failed for volume \"info\" : [unsupported fieldPath: spec.hostname, container nope not found]"
    );
}

#[tokio::test]
async fn projected_volumes_combine_sources_and_cache_tokens() {
    let f = Fixture::new();
    f.sources.put_config_map("cfg", &[("ca.crt", "CA")]);
    f.sources.put_secret("s", &[("key", "K")]);
    let p = pod(
        "u5",
        serde_json::json!([{"name": "proj", "projected": {"sources": [
            {"serviceAccountToken": {"path": "token", "audience": "vault"}},
            {"configMap": {"name": "cfg"}},
            {"secret": {"name": "s", "items": [{"key": "key", "path": "sub/key"}]}},
            {"downwardAPI": {"items": [{"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
            {"configMap": {"name": "absent", "optional": true}},
        ]}}]),
    );
    f.manager.setup(&p).await.unwrap();
    let dir = f.volume_dir("u5", PROJECTED, "proj");
    assert_eq!(
        std::fs::read_to_string(dir.join("token")).unwrap(),
        "token-0-web-sa-vault-3600"
    );
    assert_eq!(mode(&dir.join("token")), 0o644);
    assert_eq!(std::fs::read_to_string(dir.join("ca.crt")).unwrap(), "CA");
    assert_eq!(std::fs::read_to_string(dir.join("sub/key")).unwrap(), "K");
    assert_eq!(std::fs::read_to_string(dir.join("ns")).unwrap(), "ns");

    // The token is fresh: not requested again, nothing rewritten.
    let before = timestamped_dirs(&dir);
    f.manager.setup(&p).await.unwrap();
    assert_eq!(f.sources.tokens_issued.load(Ordering::SeqCst), 1);
    assert_eq!(timestamped_dirs(&dir), before);

    // A token past 80% of its lifetime is renewed and swapped in place.
    *f.sources.tokens_expire_in.lock().unwrap() = Some(600);
    let renewing = pod(
        "u5",
        serde_json::json!([{"name": "proj", "projected": {"sources": [
            {"serviceAccountToken": {"path": "token", "audience": "vault", "expirationSeconds": 7200}},
        ]}}]),
    );
    f.manager.setup(&renewing).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("token")).unwrap(),
        "token-1-web-sa-vault-7200"
    );
    // Issued with 600 s left of 7200: renewed on the next sync, and the next.
    let before = timestamped_dirs(&dir);
    f.manager.setup(&renewing).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("token")).unwrap(),
        "token-2-web-sa-vault-7200"
    );
    assert_ne!(timestamped_dirs(&dir), before);
    assert_eq!(timestamped_dirs(&dir).len(), 1);

    let broken = pod(
        "u5",
        serde_json::json!([{"name": "proj", "projected": {"sources": [
            {"configMap": {"name": "absent"}}, {"secret": {"name": "absent"}},
        ]}}]),
    );
    assert_eq!(
        f.manager.setup(&broken).await.unwrap_err().message,
        "[configmap \"absent\" not found, secret \"absent\" not found]"
    );
}

#[tokio::test]
async fn fs_group_owns_volumes_and_tokens_are_group_readable_as_root() {
    if !kyb_node_sys::privileges::is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let f = Fixture::new();
    f.sources.put_config_map("cfg", &[("a", "1")]);
    let mut p = pod(
        "u6",
        serde_json::json!([
            {"name": "proj", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 600}}]}},
            {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 0o600}},
            {"name": "scratch", "emptyDir": {}},
        ]),
    );
    p.spec.as_mut().unwrap().security_context =
        Some(serde_json::from_value(serde_json::json!({"fsGroup": 4321})).unwrap());
    f.manager.setup(&p).await.unwrap();
    let token = f.volume_dir("u6", PROJECTED, "proj").join("token");
    assert_eq!(mode(&token), 0o640);
    assert_eq!(std::fs::metadata(&token).unwrap().gid(), 4321);
    assert_eq!(
        std::fs::read_to_string(&token).unwrap(),
        "token-0-web-sa--600"
    );
    let cfg = f.volume_dir("u6", CONFIG_MAP, "cfg");
    assert_eq!(mode(&cfg.join("a")), 0o640);
    assert_eq!(
        std::fs::symlink_metadata(cfg.join("a")).unwrap().gid(),
        4321
    );
    assert_eq!(std::fs::metadata(&cfg).unwrap().gid(), 4321);
    let scratch = f.volume_dir("u6", EMPTY_DIR, "scratch");
    assert_eq!(mode(&scratch), 0o2777);
    assert_eq!(std::fs::metadata(&scratch).unwrap().gid(), 4321);
}

#[tokio::test]
async fn memory_empty_dirs_are_sized_tmpfs_unmounted_on_teardown_as_root() {
    if !kyb_node_sys::privileges::is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let f = Fixture::new();
    let p = pod(
        "u7",
        serde_json::json!([
            {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "4Mi"}},
            {"name": "disk", "emptyDir": {}},
        ]),
    );
    let mounted = f.manager.setup(&p).await.unwrap();
    let mem = f.volume_dir("u7", EMPTY_DIR, "mem");
    assert_eq!(mounted.volumes["mem"].host_path, mem);
    assert!(kyb_node_sys::mount::is_mount_point(&mem).unwrap());
    assert!(kyb_node_sys::mount::is_tmpfs(&mem).unwrap());
    assert_eq!(mode(&mem), 0o777);
    // Set up again: not mounted twice.
    f.manager.setup(&p).await.unwrap();
    let mounts = kyb_node_sys::mount::mount_points_under(&mem).unwrap();
    assert_eq!(mounts, vec![mem.clone()]);
    // Writing past the size fails.
    assert!(std::fs::write(mem.join("big"), vec![0u8; 5 << 20]).is_err());

    std::fs::write(
        f.volume_dir("u7", EMPTY_DIR, "disk").join("f"),
        vec![1u8; 1 << 20],
    )
    .unwrap();
    let usage = f.manager.empty_dir_usage("u7");
    assert_eq!(usage.len(), 2);
    assert_eq!(usage[0].0, "disk");
    assert!(usage[0].1 >= 1 << 20, "{usage:?}");

    f.manager.teardown("u7").await.unwrap();
    assert!(!mem.exists());
    assert!(
        kyb_node_sys::mount::mount_points_under(f.dir.path())
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn teardown_never_deletes_host_paths() {
    let f = Fixture::new();
    let host = tempfile::tempdir().unwrap();
    std::fs::write(host.path().join("precious"), "keep").unwrap();
    let host_dir = host.path().to_str().unwrap();
    let p = pod(
        "u8",
        serde_json::json!([
            {"name": "host", "hostPath": {"path": host_dir, "type": "Directory"}},
            {"name": "scratch", "emptyDir": {}},
        ]),
    );
    let mounted = f.manager.setup(&p).await.unwrap();
    assert_eq!(mounted.volumes["host"].host_path, host.path());
    assert!(mounted.volumes["host"].propagation_allowed);
    // A container made a symlink to the host directory in its emptyDir.
    let scratch = f.volume_dir("u8", EMPTY_DIR, "scratch");
    std::os::unix::fs::symlink(host.path(), scratch.join("escape")).unwrap();
    std::os::unix::fs::symlink(host.path().join("precious"), scratch.join("file")).unwrap();

    assert_eq!(f.manager.orphaned(&HashSet::new()), vec!["u8".to_string()]);
    assert!(
        f.manager
            .orphaned(&HashSet::from(["u8".to_string()]))
            .is_empty()
    );
    f.manager.teardown("u8").await.unwrap();
    assert!(!f.manager.pod_dir("u8").exists());
    assert_eq!(
        std::fs::read_to_string(host.path().join("precious")).unwrap(),
        "keep"
    );
    // Tearing down again is a no-op.
    f.manager.teardown("u8").await.unwrap();

    let bad = pod(
        "u8",
        serde_json::json!([{"name": "host", "hostPath": {"path": host.path().join("precious"), "type": "Directory"}}]),
    );
    assert_eq!(
        f.manager.setup(&bad).await.unwrap_err().message,
        format!(
            "hostPath type check failed: {}/precious is not a directory",
            host_dir
        )
    );
    let unknown = pod(
        "u8",
        serde_json::json!([{"name": "x", "gitRepo": {"repository": "r"}}]),
    );
    assert_eq!(
        f.manager.setup(&unknown).await.unwrap_err().message,
        "no volume plugin matched"
    );
}

#[tokio::test]
async fn claims_bound_to_host_paths_are_handed_over() {
    let f = Fixture::new();
    let host = tempfile::tempdir().unwrap();
    let claim = |phase: &str, volume: &str| -> PersistentVolumeClaim {
        serde_json::from_value(serde_json::json!({
            "spec": {"volumeName": volume}, "status": {"phase": phase}
        }))
        .unwrap()
    };
    let pv = |spec: serde_json::Value| -> PersistentVolume {
        serde_json::from_value(serde_json::json!({"spec": spec})).unwrap()
    };
    f.sources
        .claims
        .lock()
        .unwrap()
        .insert("data".into(), claim("Bound", "pv-host"));
    f.sources
        .claims
        .lock()
        .unwrap()
        .insert("pending".into(), claim("Pending", ""));
    f.sources
        .claims
        .lock()
        .unwrap()
        .insert("nfs".into(), claim("Bound", "pv-nfs"));
    f.sources
        .claims
        .lock()
        .unwrap()
        .insert("local".into(), claim("Bound", "pv-local"));
    f.sources.volumes.lock().unwrap().insert(
        "pv-host".into(),
        pv(serde_json::json!({"hostPath": {"path": host.path()}})),
    );
    f.sources.volumes.lock().unwrap().insert(
        "pv-local".into(),
        pv(serde_json::json!({"local": {"path": host.path()}})),
    );
    f.sources.volumes.lock().unwrap().insert(
        "pv-nfs".into(),
        pv(serde_json::json!({"nfs": {"server": "s", "path": "/"}})),
    );

    let p = pod(
        "u9",
        serde_json::json!([
            {"name": "data", "persistentVolumeClaim": {"claimName": "data", "readOnly": true}},
            {"name": "local", "persistentVolumeClaim": {"claimName": "local"}},
        ]),
    );
    let mounted = f.manager.setup(&p).await.unwrap();
    assert_eq!(
        mounted.volumes["data"],
        MountedVolume {
            host_path: host.path().to_path_buf(),
            read_only: true,
            propagation_allowed: true
        }
    );
    assert!(!mounted.volumes["local"].read_only);

    let manager = &f.manager;
    let err = |claim: &str| {
        let p = pod(
            "u9",
            serde_json::json!([{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]),
        );
        async move { manager.setup(&p).await.unwrap_err().message }
    };
    assert_eq!(
        err("pending").await,
        "error processing PVC ns/pending: PVC is not bound"
    );
    assert_eq!(
        err("absent").await,
        "error processing PVC ns/absent: persistentvolumeclaims \"absent\" not found"
    );
    assert!(
        err("nfs")
            .await
            .contains("PersistentVolume \"pv-nfs\" is neither a hostPath nor a local volume")
    );
}
