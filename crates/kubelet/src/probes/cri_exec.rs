//! [`Exec`] over CRI `ExecSync`, as kubelet's remote runtime runs probe and hook
//! commands: the timeout goes to the runtime in whole seconds, the call itself is given
//! two more minutes, and `DeadlineExceeded` means the command timed out.

use super::grpc::go_code;
use super::{Exec, ExecError, ExecOutput};
use async_trait::async_trait;
use k8s_cri::v1::ExecSyncRequest;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use std::time::Duration;
use tonic::transport::Channel;

/// How long the runtime gets beyond the command's own timeout (kubelet's default
/// runtime request timeout).
const RUNTIME_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs commands in containers through the runtime's `ExecSync`.
#[derive(Clone, Debug)]
pub struct CriExec {
    runtime: RuntimeServiceClient<Channel>,
}

impl CriExec {
    /// Over `runtime` (`Cri::runtime`).
    pub fn new(runtime: RuntimeServiceClient<Channel>) -> CriExec {
        CriExec { runtime }
    }
}

#[async_trait]
impl Exec for CriExec {
    async fn exec_sync(
        &self,
        container_id: &str,
        command: Vec<String>,
        timeout: Duration,
    ) -> Result<ExecOutput, ExecError> {
        let request = ExecSyncRequest {
            container_id: container_id.to_owned(),
            cmd: command,
            timeout: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
        };
        let mut runtime = self.runtime.clone();
        let call = runtime.exec_sync(request);
        let result = if timeout.is_zero() {
            call.await
        } else {
            match tokio::time::timeout(timeout + RUNTIME_REQUEST_TIMEOUT, call).await {
                Ok(result) => result,
                Err(_) => return Err(ExecError::TimedOut),
            }
        };
        match result {
            Ok(response) => {
                let response = response.into_inner();
                Ok(ExecOutput {
                    exit_code: response.exit_code,
                    stdout: response.stdout,
                    stderr: response.stderr,
                })
            }
            Err(status) if status.code() == tonic::Code::DeadlineExceeded => {
                Err(ExecError::TimedOut)
            }
            Err(status) => Err(ExecError::Failed(format!(
                "rpc error: code = {} desc = {}",
                go_code(status.code()),
                status.message()
            ))),
        }
    }
}
