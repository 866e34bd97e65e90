//! containerd answers CRI, finds imported images, and runs a pod sandbox (the pause
//! image) with a busybox container through CRI.

use crate::{import_project_images, start_containerd};
use k8s_cri::v1::{
    ContainerConfig, ContainerMetadata, ContainerState, ContainerStatusRequest,
    CreateContainerRequest, ImageSpec, ImageStatusRequest, LinuxPodSandboxConfig,
    ListPodSandboxRequest, PodSandboxConfig, PodSandboxMetadata, RemoveContainerRequest,
    RemovePodSandboxRequest, RunPodSandboxRequest, StartContainerRequest, StopContainerRequest,
    StopPodSandboxRequest, VersionRequest,
};
use kyb_kubelet::cri::Cri;
use kyb_kubelet::images::{BUSYBOX_IMAGE, PAUSE_IMAGE};
use kyb_testkit::{NetNs, TestContainerd};
use std::path::Path;
use std::time::{Duration, Instant};

async fn image_id(cri: &Cri, image: &str) -> anyhow::Result<Option<String>> {
    let response = cri
        .images
        .clone()
        .image_status(ImageStatusRequest {
            image: Some(ImageSpec {
                image: image.into(),
                ..ImageSpec::default()
            }),
            verbose: false,
        })
        .await?
        .into_inner();
    Ok(response.image.map(|image| image.id))
}

/// Runs a pod sandbox `uid` (in the test's cgroup, logs under `logs`) with one busybox
/// container `main` running `command` (its log `main/0.log`); returns the sandbox's and
/// the container's ids.
pub(crate) async fn run_busybox_pod(
    cri: &Cri,
    containerd: &TestContainerd,
    uid: &str,
    logs: &Path,
    command: &[&str],
) -> anyhow::Result<(String, String)> {
    std::fs::create_dir_all(logs)?;
    let sandbox_config = PodSandboxConfig {
        metadata: Some(PodSandboxMetadata {
            name: format!("pod-{uid}"),
            uid: uid.into(),
            namespace: "default".into(),
            attempt: 0,
        }),
        hostname: format!("pod-{uid}"),
        log_directory: logs.to_string_lossy().into_owned(),
        linux: Some(LinuxPodSandboxConfig {
            cgroup_parent: containerd.cgroup_parent().into(),
            ..LinuxPodSandboxConfig::default()
        }),
        ..PodSandboxConfig::default()
    };
    let mut runtime = cri.runtime.clone();
    let sandbox = runtime
        .run_pod_sandbox(RunPodSandboxRequest {
            config: Some(sandbox_config.clone()),
            runtime_handler: String::new(),
        })
        .await
        .map_err(|status| anyhow::anyhow!("RunPodSandbox: {status:?}\n{}", containerd.output()))?
        .into_inner()
        .pod_sandbox_id;
    let container = runtime
        .create_container(CreateContainerRequest {
            pod_sandbox_id: sandbox.clone(),
            config: Some(ContainerConfig {
                metadata: Some(ContainerMetadata {
                    name: "main".into(),
                    attempt: 0,
                }),
                image: Some(ImageSpec {
                    image: BUSYBOX_IMAGE.into(),
                    ..ImageSpec::default()
                }),
                command: command.iter().map(|arg| arg.to_string()).collect(),
                log_path: "main/0.log".into(),
                ..ContainerConfig::default()
            }),
            sandbox_config: Some(sandbox_config),
        })
        .await?
        .into_inner()
        .container_id;
    runtime
        .start_container(StartContainerRequest {
            container_id: container.clone(),
        })
        .await?;
    Ok((sandbox, container))
}

#[tokio::test]
async fn a_pod_sandbox_and_a_busybox_container_run_through_cri_as_root() -> anyhow::Result<()> {
    let netns = NetNs::create()?;
    let containerd = start_containerd(&netns)?;
    let cri = Cri::connect(&containerd.endpoint())?;
    let version = cri
        .runtime
        .clone()
        .version(VersionRequest {
            version: "v1".into(),
        })
        .await?
        .into_inner();
    assert_eq!(version.runtime_name, "containerd");
    assert_eq!(version.runtime_api_version, "v1");

    assert_eq!(image_id(&cri, BUSYBOX_IMAGE).await?, None);
    import_project_images(&containerd)?;
    let busybox = image_id(&cri, BUSYBOX_IMAGE).await?;
    assert!(
        busybox
            .as_deref()
            .is_some_and(|id| id.starts_with("sha256:")),
        "{busybox:?}"
    );
    assert!(image_id(&cri, PAUSE_IMAGE).await?.is_some());

    let logs = containerd.dir().join("pods").join("uid-1");
    let mut runtime = cri.runtime.clone();
    let (sandbox, container) = run_busybox_pod(
        &cri,
        &containerd,
        "uid-1",
        &logs,
        &["sh", "-c", "echo hi; sleep 1000"],
    )
    .await?;

    // The container's output reaches its CRI log: `<time> stdout F hi`.
    let log = logs.join("main/0.log");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.lines().any(|line| line.ends_with(" stdout F hi")) {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no \"hi\" in {}: {text:?}",
            log.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status = runtime
        .container_status(ContainerStatusRequest {
            container_id: container.clone(),
            verbose: false,
        })
        .await?
        .into_inner()
        .status
        .ok_or_else(|| anyhow::anyhow!("no container status"))?;
    assert_eq!(status.state(), ContainerState::ContainerRunning);

    runtime
        .stop_container(StopContainerRequest {
            container_id: container.clone(),
            timeout: 1,
        })
        .await?;
    runtime
        .remove_container(RemoveContainerRequest {
            container_id: container,
        })
        .await?;
    runtime
        .stop_pod_sandbox(StopPodSandboxRequest {
            pod_sandbox_id: sandbox.clone(),
        })
        .await?;
    runtime
        .remove_pod_sandbox(RemovePodSandboxRequest {
            pod_sandbox_id: sandbox,
        })
        .await?;
    let left = runtime
        .list_pod_sandbox(ListPodSandboxRequest::default())
        .await?
        .into_inner()
        .items;
    assert!(left.is_empty(), "{left:?}");
    Ok(())
}

/// The pids in the cgroup `path` and below, in the pids hierarchy.
fn pids_under(path: &std::path::Path) -> Vec<u32> {
    let mut pids = Vec::new();
    let procs = std::fs::read_to_string(path.join("cgroup.procs")).unwrap_or_default();
    pids.extend(procs.lines().filter_map(|l| l.trim().parse::<u32>().ok()));
    if let Ok(children) = std::fs::read_dir(path) {
        for child in children.flatten() {
            if child.file_type().is_ok_and(|t| t.is_dir()) {
                pids.extend(pids_under(&child.path()));
            }
        }
    }
    pids
}

#[tokio::test]
async fn dropping_the_test_containerd_leaves_nothing_behind_as_root() -> anyhow::Result<()> {
    let netns = NetNs::create()?;
    let containerd = start_containerd(&netns)?;
    import_project_images(&containerd)?;
    let cri = Cri::connect(&containerd.endpoint())?;
    let logs = containerd.dir().join("pods").join("uid-2");
    run_busybox_pod(&cri, &containerd, "uid-2", &logs, &["sleep", "1000"]).await?;

    let cgroup = std::path::Path::new("/sys/fs/cgroup/pids")
        .join(containerd.cgroup_parent().trim_start_matches('/'));
    let pids = pids_under(&cgroup);
    // The pause process and sleep.
    assert!(pids.len() >= 2, "{pids:?} in {}", cgroup.display());
    let dir = containerd.dir().to_path_buf();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")?;
    assert!(mountinfo.contains(&dir.to_string_lossy().into_owned()));

    drop(containerd);
    for pid in &pids {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            stat.is_empty() || stat.contains(") Z "),
            "{pid} left: {stat}"
        );
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")?;
    assert!(
        !mountinfo.contains(&dir.to_string_lossy().into_owned()),
        "{mountinfo}"
    );
    assert!(!cgroup.exists(), "{} left", cgroup.display());
    assert!(!dir.exists(), "{} left", dir.display());
    Ok(())
}
