//! Startup, liveness and readiness probes, and lifecycle hooks (postStart, preStop), as
//! kubelet's prober and lifecycle handler runner do.
//!
//! - [`run_probe`] runs one probe once (exec, httpGet, tcpSocket, grpc) and says what
//!   kubelet would: success, failure with its message, a warning, or an error.
//! - [`run_hook`] runs a lifecycle handler (exec, httpGet, sleep).
//! - [`ProbeManager`] runs one worker per (container, probe kind) on the probe's period,
//!   applies the thresholds, gates liveness and readiness on the startup probe, records
//!   the `Unhealthy`/`ProbeWarning` events, and keeps the results the pod worker reads
//!   (ready, started, failed liveness).
//!
//! Commands run in containers through the [`Exec`] trait (CRI `ExecSync`, implemented by
//! the pod code); network probes go from the node to the pod's IP.
//!
//! # Submodules
//! - `cri_exec`: [`Exec`] over CRI `ExecSync`.
//! - `handlers`: one probe run (dispatch, exec, tcpSocket, ports, command expansion).
//! - `http_get`: the small HTTP/1.1 client of httpGet probes and hooks (TLS unverified).
//! - `grpc`: the `grpc.health.v1.Health/Check` client.
//! - `hooks`: lifecycle handlers.
//! - `worker`: a probe's loop (delays, period, thresholds, gating).
//! - `manager`: the workers of every container, their results and events.
//! - `metrics`: `prober_probe_total`, the counters `/metrics/probes` serves.

mod cri_exec;
mod grpc;
mod handlers;
mod hooks;
mod http_get;
mod manager;
pub mod metrics;
mod worker;

#[cfg(test)]
mod tests;

pub use cri_exec::CriExec;
pub use handlers::run_probe;
pub use hooks::{FAILED_POST_START_HOOK, FAILED_PRE_STOP_HOOK, run_hook};
pub use manager::{FailedProbe, ProbeEvents, ProbeManager};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Container, Pod};
use std::net::IpAddr;
use std::time::Duration;

/// The Kubernetes minor version probes announce in `User-Agent: kube-probe/1.33`.
pub const KUBE_VERSION: &str = "1.33";

/// Event reason of a failed probe (`Liveness probe failed: …`).
pub const REASON_UNHEALTHY: &str = "Unhealthy";
/// Event reason of a probe that succeeded with a warning (an HTTP redirect not followed).
pub const REASON_PROBE_WARNING: &str = "ProbeWarning";

/// What a command run in a container produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    pub exit_code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Why a command could not be run to completion in a container.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// It did not finish within the timeout (CRI `ExecSync` answered `DeadlineExceeded`).
    #[error("timed out")]
    TimedOut,
    /// The runtime failed to run it (the container is gone, ...), with the runtime's message.
    #[error("{0}")]
    Failed(String),
}

/// How probes and hooks run a command in a container: CRI `ExecSync` ([`CriExec`]; a
/// fake in tests). `timeout` is the probe's `timeoutSeconds` or the hook's limit; zero
/// means none.
#[async_trait]
pub trait Exec: Send + Sync + 'static {
    async fn exec_sync(
        &self,
        container_id: &str,
        command: Vec<String>,
        timeout: Duration,
    ) -> Result<ExecOutput, ExecError>;
}

/// Where a probe or hook goes.
#[derive(Debug, Clone)]
pub struct Target {
    /// The pod's IP: the first of `status.podIPs` (the host's IP for hostNetwork pods);
    /// network probes and hooks without a `host` fail without it.
    pub pod_ip: Option<IpAddr>,
    /// The runtime's ID of the container (for exec).
    pub container_id: String,
    /// The container's spec: its named ports and environment (`$(VAR)` in exec commands).
    pub container: Container,
    /// The pod as kubelet names it in messages: `name_namespace(uid)`.
    pub pod: String,
}

impl Target {
    /// The target for `container` (with runtime ID `container_id`) of `pod`.
    pub fn new(
        pod: &Pod,
        container: &Container,
        container_id: &str,
        pod_ip: Option<IpAddr>,
    ) -> Target {
        Target {
            pod_ip,
            container_id: container_id.to_owned(),
            container: container.clone(),
            pod: format_pod(pod),
        }
    }
}

pub use crate::container::format_pod;

/// The result of one probe run, as kubelet's `probe.Result` with its output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The container answered as healthy.
    Success,
    /// Healthy, with a warning to record as a `ProbeWarning` event (an HTTP redirect to
    /// another host, not followed): the message.
    Warning(String),
    /// Unhealthy, with kubelet's output (`HTTP probe failed with statuscode: 500`).
    Failure(String),
    /// The probe could not be run (a port name not found, the runtime failing): kubelet
    /// records `… probe errored and resulted in unknown state: <error>` and keeps the
    /// previous result.
    Unknown(String),
}

/// The three kinds of probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProbeKind {
    Startup,
    Liveness,
    Readiness,
}

impl ProbeKind {
    /// As kubelet's messages capitalise it: `Liveness`, `Readiness`, `Startup`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeKind::Startup => "Startup",
            ProbeKind::Liveness => "Liveness",
            ProbeKind::Readiness => "Readiness",
        }
    }
}

impl std::fmt::Display for ProbeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
