//! Commands run in containers for probes and hooks, through CRI `ExecSync`.

use crate::cri::Cri;
use crate::probes::{Exec, ExecError, ExecOutput};
use async_trait::async_trait;
use k8s_cri::v1 as cri;
use std::time::Duration;

/// [`Exec`] over the runtime's `ExecSync`.
pub struct CriExec {
    pub cri: Cri,
}

#[async_trait]
impl Exec for CriExec {
    async fn exec_sync(
        &self,
        container_id: &str,
        command: Vec<String>,
        timeout: Duration,
    ) -> Result<ExecOutput, ExecError> {
        let request = cri::ExecSyncRequest {
            container_id: container_id.to_string(),
            cmd: command,
            timeout: timeout.as_secs().max(1) as i64,
        };
        // The runtime enforces the timeout; the client waits a little longer for its answer.
        let mut client = self.cri.runtime.clone();
        let call = client.exec_sync(request);
        match tokio::time::timeout(timeout + Duration::from_secs(2), call).await {
            Ok(Ok(response)) => {
                let response = response.into_inner();
                Ok(ExecOutput {
                    exit_code: response.exit_code,
                    stdout: response.stdout,
                    stderr: response.stderr,
                })
            }
            Ok(Err(status)) if status.code() == tonic::Code::DeadlineExceeded => {
                Err(ExecError::TimedOut)
            }
            Ok(Err(status)) => Err(ExecError::Failed(status.message().to_string())),
            Err(_) => Err(ExecError::TimedOut),
        }
    }
}
