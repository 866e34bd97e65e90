//! `kyb_kubelet::containerd::Containerd`: started, replaced when an earlier agent left it
//! running, restarted when it dies, stopped on cancel. containerd runs in the test's
//! network namespace through a wrapper (`nsenter … containerd "$@"`) given as its binary.

use kyb_kubelet::containerd::{Containerd, ContainerdConfig};
use kyb_kubelet::cri::Cri;
use kyb_testkit::NetNs;
use std::path::Path;
use std::time::{Duration, Instant};

/// Kills what the pid file names when the test ends, however it ends.
struct KillOnDrop(std::path::PathBuf);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.0) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", pid.trim()])
                .output();
        }
    }
}

fn pid_of(config: &ContainerdConfig) -> anyhow::Result<u32> {
    Ok(std::fs::read_to_string(config.pid_file())?.trim().parse()?)
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.get(stat.rfind(')')? + 2..)?.chars().next()?;
            Some(state != 'Z')
        })
        .unwrap_or(false)
}

async fn answers(endpoint: &str) -> bool {
    let Ok(cri) = Cri::connect(endpoint) else {
        return false;
    };
    let request = k8s_cri::v1::VersionRequest {
        version: "v1".into(),
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(2), cri.runtime.clone().version(request)).await,
        Ok(Ok(_))
    )
}

async fn wait_for(what: &str, mut condition: impl AsyncFnMut() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !condition().await {
        anyhow::ensure!(Instant::now() < deadline, "{what}: not within 30s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

fn config_in(netns: &NetNs, dir: &Path) -> anyhow::Result<ContainerdConfig> {
    let wrapper = dir.join("containerd-in-netns");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec nsenter --net={} -- containerd \"$@\"\n",
            netns.path().display()
        ),
    )?;
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status()?;
    let mut config = ContainerdConfig::new(dir.join("agent"));
    config.binary = wrapper;
    Ok(config)
}

#[tokio::test]
async fn containerd_is_replaced_restarted_and_stopped_as_root() -> anyhow::Result<()> {
    let netns = NetNs::create()?;
    let dir = kyb_testkit::temp_dir("supervise")?;
    let config = config_in(&netns, dir.path())?;
    let _guard = KillOnDrop(config.pid_file());

    let first = Containerd::start(config.clone()).await?;
    let first_pid = pid_of(&config)?;
    assert_eq!(first.id(), Some(first_pid));
    assert!(answers(&first.endpoint()).await);
    // The agent crashes: its containerd stays. The next agent replaces it.
    std::mem::forget(first);
    let second = Containerd::start(config.clone()).await?;
    let second_pid = pid_of(&config)?;
    assert_ne!(second_pid, first_pid);
    wait_for("the leftover containerd to exit", async || {
        !alive(first_pid)
    })
    .await?;

    // Supervised: killed, it comes back (after the 1 s back-off) on the same socket.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let supervisor = tokio::spawn(second.supervise(async move {
        let _ = stopped.await;
    }));
    std::process::Command::new("kill")
        .args(["-KILL", &second_pid.to_string()])
        .status()?;
    wait_for("a restarted containerd", async || {
        pid_of(&config).is_ok_and(|pid| pid != second_pid && alive(pid))
            && answers(&config.endpoint()).await
    })
    .await?;
    let third_pid = pid_of(&config)?;

    // Cancelled: it stops, and forgets its pid.
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(30), supervisor).await??;
    assert!(!alive(third_pid));
    assert!(!config.pid_file().exists());
    Ok(())
}
