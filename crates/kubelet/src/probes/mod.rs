//! Probes and lifecycle hooks. (Interim: no probes run; every container counts as started
//! and ready.)

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Container, LifecycleHandler, Pod};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[async_trait]
pub trait Exec: Send + Sync + 'static {
    async fn exec_sync(
        &self,
        container_id: &str,
        command: Vec<String>,
        timeout: Duration,
    ) -> Result<ExecOutput, String>;
}

pub struct ExecOutput {
    pub exit_code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

pub struct Target {
    pub pod_ip: Option<IpAddr>,
    pub container_id: String,
    pub container: Container,
}

pub async fn run_hook(
    _handler: &LifecycleHandler,
    _target: &Target,
    _exec: &dyn Exec,
    _timeout: Duration,
) -> Result<(), String> {
    Ok(())
}

pub trait ProbeEvents: Send + Sync {
    fn unhealthy(&self, pod: &Pod, container: &str, message: String);
}

pub struct ProbeManager {
    _exec: Arc<dyn Exec>,
}

impl ProbeManager {
    pub fn new(exec: Arc<dyn Exec>, _events: Arc<dyn ProbeEvents>) -> ProbeManager {
        ProbeManager { _exec: exec }
    }
    pub fn container_started(
        &self,
        _pod: &Pod,
        _container_name: &str,
        _container_id: &str,
        _started_at: Instant,
        _pod_ip: Option<IpAddr>,
    ) {
    }
    pub fn container_stopped(&self, _pod_uid: &str, _container_name: &str) {}
    pub fn remove_pod(&self, _pod_uid: &str) {}
    pub fn readiness(&self, _pod_uid: &str, _container_name: &str) -> bool {
        true
    }
    pub fn started(&self, _pod_uid: &str, _container_name: &str) -> bool {
        true
    }
    pub fn take_failed_liveness(&self, _pod_uid: &str) -> Vec<(String, String)> {
        vec![]
    }
    pub fn subscribe(&self) -> tokio::sync::mpsc::UnboundedReceiver<String> {
        let (_tx, rx) = tokio::sync::mpsc::unbounded_channel();
        rx
    }
}
