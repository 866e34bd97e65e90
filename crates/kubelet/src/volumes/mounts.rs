//! A container's `volumeMounts` as CRI mounts (kubelet's `makeMounts`): the volume's host
//! path (plus `subPath`, created if missing without ever leaving the volume), read-only
//! when the mount or the volume is, and the mount propagation.

use super::MountedVolumes;
use k8s_cri::v1::{Mount, MountPropagation};
use k8s_openapi::api::core::v1::{Container, Pod, VolumeMount};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// The CRI mounts of `container`'s `volumeMounts`; errors have kubelet's messages.
/// `privileged`: whether the container is privileged (Bidirectional propagation needs it).
pub fn container_mounts(
    pod: &Pod,
    container: &Container,
    volumes: &MountedVolumes,
    privileged: bool,
) -> Result<Vec<Mount>, String> {
    let mut mounts = vec![];
    for mount in container.volume_mounts.iter().flatten() {
        let Some(volume) = volumes.volumes.get(&mount.name) else {
            return Err(format!(
                "cannot find volume {:?} to mount into container {:?}",
                mount.name, container.name
            ));
        };
        let sub_path = match mount.sub_path_expr.as_deref() {
            Some(expr) if !expr.is_empty() => expand(expr, pod, container),
            _ => mount.sub_path.clone().unwrap_or_default(),
        };
        let host_path = if sub_path.is_empty() {
            volume.host_path.clone()
        } else {
            sub_path_host_path(&volume.host_path, &sub_path, mount, container)?
        };
        let container_path = if mount.mount_path.starts_with('/') {
            mount.mount_path.clone()
        } else {
            format!("/{}", mount.mount_path)
        };
        let read_only = mount.read_only.unwrap_or(false) || volume.read_only;
        let recursive_read_only = match mount.recursive_read_only.as_deref() {
            None | Some("Disabled") | Some("IfPossible") => false,
            Some("Enabled") => {
                return Err(format!(
                    "failed to resolve recursive read-only mode: volumeMount {:?} requested recursive read-only mode, but it is not supported by the runtime",
                    mount.name
                ));
            }
            Some(other) => {
                return Err(format!(
                    "failed to resolve recursive read-only mode: unknown recursive read-only mode {other:?}"
                ));
            }
        };
        mounts.push(Mount {
            container_path,
            host_path: host_path.to_string_lossy().into_owned(),
            readonly: read_only,
            propagation: propagation(mount.mount_propagation.as_deref(), privileged)? as i32,
            recursive_read_only,
            ..Default::default()
        });
    }
    Ok(mounts)
}

/// `mountPropagation` as CRI's (kubelet's `translateMountPropagation`).
fn propagation(mode: Option<&str>, privileged: bool) -> Result<MountPropagation, String> {
    match mode {
        None | Some("None") => Ok(MountPropagation::PropagationPrivate),
        Some("HostToContainer") => Ok(MountPropagation::PropagationHostToContainer),
        Some("Bidirectional") if privileged => Ok(MountPropagation::PropagationBidirectional),
        Some("Bidirectional") => {
            Err("Bidirectional mount propagation is available only to privileged containers".into())
        }
        Some(other) => Err(format!("invalid MountPropagation mode: {other:?}")),
    }
}

/// `$(VAR)` in a `subPathExpr` replaced by the container's `env` values, literal or from
/// the pod's fields (`fieldRef`, the usual `$(POD_NAME)`), as kubelet expands it;
/// references to other variables are kept as written.
fn expand(expr: &str, pod: &Pod, container: &Container) -> String {
    let mut out = expr.to_string();
    for var in container.env.iter().flatten() {
        let value = match (
            &var.value,
            var.value_from.as_ref().and_then(|v| v.field_ref.as_ref()),
        ) {
            (Some(value), _) => Some(value.clone()),
            (None, Some(field)) => super::downward_api::field_value(pod, field).ok(),
            (None, None) => None,
        };
        if let Some(value) = value {
            out = out.replace(&format!("$({})", var.name), &value);
        }
    }
    out
}

/// The host path of `sub_path` in the volume at `volume_path`: refused when absolute or
/// with `..`; created (with the volume's mode) if missing, one directory at a time, and
/// refused if it resolves (through symlinks) outside the volume.
fn sub_path_host_path(
    volume_path: &Path,
    sub_path: &str,
    mount: &VolumeMount,
    container: &Container,
) -> Result<PathBuf, String> {
    if sub_path.starts_with('/') {
        return Err(format!(
            "error SubPath `{sub_path}` must not be an absolute path"
        ));
    }
    if Path::new(sub_path)
        .components()
        .any(|c| c == Component::ParentDir)
    {
        return Err(format!(
            "unable to provision SubPath `{sub_path}`: must not contain '..'"
        ));
    }
    let prepare_failed = || {
        format!(
            "failed to prepare subPath for volumeMount {:?} of container {:?}",
            mount.name, container.name
        )
    };
    let root = volume_path.canonicalize().map_err(|e| {
        tracing::warn!(volume = %volume_path.display(), error = %e, "the volume's path cannot be resolved");
        prepare_failed()
    })?;
    let inside = |p: &Path| p.canonicalize().is_ok_and(|real| real.starts_with(&root));
    let mode = std::fs::metadata(&root)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o755);
    let mut current = root.clone();
    for component in Path::new(sub_path).components() {
        let Component::Normal(name) = component else {
            continue;
        };
        current.push(name);
        match std::fs::symlink_metadata(&current) {
            Ok(_) => {
                if !inside(&current) {
                    tracing::warn!(path = %current.display(), volume = %root.display(), "subPath leaves its volume");
                    return Err(prepare_failed());
                }
                // Continue from where the path really is.
                current = current.canonicalize().map_err(|_| prepare_failed())?;
            }
            Err(_) => {
                std::fs::DirBuilder::new()
                    .mode(mode)
                    .create(&current)
                    .and_then(|()| {
                        std::fs::set_permissions(&current, std::fs::Permissions::from_mode(mode))
                    })
                    .map_err(|e| {
                        tracing::warn!(path = %current.display(), error = %e, "creating a subPath");
                        format!(
                            "failed to create subPath directory for volumeMount {:?} of container {:?}",
                            mount.name, container.name
                        )
                    })?;
            }
        }
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::super::MountedVolume;
    use super::*;
    use std::collections::BTreeMap;

    fn container(mounts: serde_json::Value) -> Container {
        serde_json::from_value(serde_json::json!({"name": "app", "volumeMounts": mounts,
            "env": [{"name": "POD", "value": "web-0"}]}))
        .unwrap()
    }

    fn volumes(path: &Path, read_only: bool) -> MountedVolumes {
        MountedVolumes {
            volumes: BTreeMap::from([(
                "data".to_string(),
                MountedVolume {
                    host_path: path.to_path_buf(),
                    read_only,
                    propagation_allowed: true,
                },
            )]),
        }
    }

    #[test]
    fn mounts_with_read_only_and_propagation() {
        let dir = tempfile::tempdir().unwrap();
        let c = container(serde_json::json!([
            {"name": "data", "mountPath": "/data"},
            {"name": "data", "mountPath": "/ro", "readOnly": true, "mountPropagation": "HostToContainer"},
        ]));
        let mounts =
            container_mounts(&Pod::default(), &c, &volumes(dir.path(), false), false).unwrap();
        assert_eq!(mounts.len(), 2);
        assert_eq!(mounts[0].host_path, dir.path().to_str().unwrap());
        assert_eq!(mounts[0].container_path, "/data");
        assert!(!mounts[0].readonly);
        assert!(mounts[1].readonly);
        assert_eq!(
            mounts[1].propagation,
            MountPropagation::PropagationHostToContainer as i32
        );

        // A read-only volume makes every mount of it read-only.
        let mounts =
            container_mounts(&Pod::default(), &c, &volumes(dir.path(), true), false).unwrap();
        assert!(mounts[0].readonly);
    }

    #[test]
    fn missing_volumes_and_bidirectional_without_privilege_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let missing = container(serde_json::json!([{"name": "other", "mountPath": "/x"}]));
        assert_eq!(
            container_mounts(
                &Pod::default(),
                &missing,
                &volumes(dir.path(), false),
                false
            )
            .unwrap_err(),
            "cannot find volume \"other\" to mount into container \"app\""
        );
        let bidi = container(serde_json::json!([
            {"name": "data", "mountPath": "/x", "mountPropagation": "Bidirectional"}
        ]));
        assert_eq!(
            container_mounts(&Pod::default(), &bidi, &volumes(dir.path(), false), false)
                .unwrap_err(),
            "Bidirectional mount propagation is available only to privileged containers"
        );
        let mounts =
            container_mounts(&Pod::default(), &bidi, &volumes(dir.path(), false), true).unwrap();
        assert_eq!(
            mounts[0].propagation,
            MountPropagation::PropagationBidirectional as i32
        );
    }

    #[test]
    fn sub_paths_are_created_inside_the_volume() {
        let dir = tempfile::tempdir().unwrap();
        let vol = dir.path().join("vol");
        std::fs::create_dir(&vol).unwrap();
        std::fs::set_permissions(&vol, std::fs::Permissions::from_mode(0o777)).unwrap();
        let mut c = container(serde_json::json!([
            {"name": "data", "mountPath": "/a", "subPath": "x/y"},
            {"name": "data", "mountPath": "/b", "subPathExpr": "logs/$(POD)"},
            {"name": "data", "mountPath": "/c", "subPathExpr": "by-name/$(NAME)"},
        ]));
        c.env.as_mut().unwrap().push(
            serde_json::from_value(serde_json::json!({"name": "NAME",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}))
            .unwrap(),
        );
        let pod: Pod =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "web-1"}})).unwrap();
        let mounts = container_mounts(&pod, &c, &volumes(&vol, false), false).unwrap();
        let root = vol.canonicalize().unwrap();
        assert_eq!(Path::new(&mounts[0].host_path), root.join("x/y"));
        assert!(root.join("x/y").is_dir());
        let mode = std::fs::metadata(root.join("x/y"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o777);
        assert_eq!(Path::new(&mounts[1].host_path), root.join("logs/web-0"));
        assert_eq!(Path::new(&mounts[2].host_path), root.join("by-name/web-1"));
    }

    #[test]
    fn sub_paths_that_escape_the_volume_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let vol = dir.path().join("vol");
        let outside = dir.path().join("outside");
        std::fs::create_dir(&vol).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, vol.join("out")).unwrap();
        std::os::unix::fs::symlink("/etc", vol.join("etc")).unwrap();
        std::fs::create_dir(vol.join("in")).unwrap();
        std::os::unix::fs::symlink("in", vol.join("alias")).unwrap();
        std::os::unix::fs::symlink("../outside", vol.join("up")).unwrap();
        let mount = |sub: &str| {
            container(serde_json::json!([{"name": "data", "mountPath": "/m", "subPath": sub}]))
        };
        let err = |sub: &str| {
            container_mounts(&Pod::default(), &mount(sub), &volumes(&vol, false), false)
                .unwrap_err()
        };

        assert_eq!(
            err("/etc"),
            "error SubPath `/etc` must not be an absolute path"
        );
        assert_eq!(
            err("a/../../x"),
            "unable to provision SubPath `a/../../x`: must not contain '..'"
        );
        let refused = "failed to prepare subPath for volumeMount \"data\" of container \"app\"";
        assert_eq!(err("out"), refused);
        assert_eq!(err("out/new"), refused);
        assert_eq!(err("etc"), refused);
        assert_eq!(err("up/x"), refused);
        assert!(
            !outside.join("new").exists(),
            "nothing created outside the volume"
        );
        // A symlink that stays inside is followed.
        let ok = container_mounts(
            &Pod::default(),
            &mount("alias/z"),
            &volumes(&vol, false),
            false,
        )
        .unwrap();
        assert_eq!(
            Path::new(&ok[0].host_path),
            vol.canonicalize().unwrap().join("in/z")
        );
    }
}
