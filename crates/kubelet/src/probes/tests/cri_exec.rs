//! [`CriExec`] against a loopback gRPC server answering CRI `ExecSync`.

use super::*;
use crate::probes::CriExec;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::{ExecSyncRequest, ExecSyncResponse};

/// A runtime whose `ExecSync` answers by the command's first word: `ok` prints the
/// request's container ID and timeout, `fail` exits 2, `slow` is `DeadlineExceeded`,
/// anything else `NotFound`.
async fn runtime() -> Server {
    h2_server(|req: hyper::Request<hyper::body::Incoming>| async move {
        if req.uri().path() != "/runtime.v1.RuntimeService/ExecSync" {
            return tonic::Status::unimplemented("unknown method").into_http();
        }
        let codec = tonic_prost::ProstCodec::<ExecSyncResponse, ExecSyncRequest>::default();
        let exec = tower::service_fn(|req: tonic::Request<ExecSyncRequest>| async move {
            let req = req.into_inner();
            match req.cmd.first().map(String::as_str) {
                Some("ok") => Ok(tonic::Response::new(ExecSyncResponse {
                    stdout: format!("{} {}", req.container_id, req.timeout).into_bytes(),
                    stderr: b"warn".to_vec(),
                    exit_code: 0,
                })),
                Some("fail") => Ok(tonic::Response::new(ExecSyncResponse {
                    exit_code: 2,
                    ..Default::default()
                })),
                Some("slow") => Err(tonic::Status::deadline_exceeded("timeout 1s exceeded")),
                _ => Err(tonic::Status::not_found("container \"c9\" not found")),
            }
        });
        tonic::server::Grpc::new(codec).unary(exec, req).await
    })
    .await
}

#[tokio::test]
async fn exec_sync_outputs_exit_codes_and_errors() {
    let server = runtime().await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr))
        .unwrap_or_else(|e| panic!("endpoint: {e}"))
        .connect_lazy();
    let exec = CriExec::new(RuntimeServiceClient::new(channel));
    let run = |cmd: &str| exec.exec_sync("c1", vec![cmd.to_owned()], Duration::from_secs(5));

    assert_eq!(
        run("ok").await,
        Ok(ExecOutput {
            exit_code: 0,
            stdout: b"c1 5".to_vec(),
            stderr: b"warn".to_vec(),
        })
    );
    assert_eq!(run("fail").await.map(|o| o.exit_code), Ok(2));
    assert_eq!(run("slow").await, Err(ExecError::TimedOut));
    assert_eq!(
        run("gone").await,
        Err(ExecError::Failed(
            "rpc error: code = NotFound desc = container \"c9\" not found".into()
        ))
    );
}
