//! The grpc probe: the standard `grpc.health.v1.Health/Check` call (its two tiny
//! messages encoded here with prost) over plaintext HTTP/2 to the pod's IP, with
//! kubelet's outcomes and messages (`SERVING` is success).

use super::Outcome;
use super::handlers::{go_duration, go_quote, join_host_port};
use std::net::IpAddr;
use std::time::Duration;
use tokio::time::Instant;
use tonic::transport::{Channel, Endpoint};

/// `grpc.health.v1.HealthCheckRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct HealthCheckRequest {
    #[prost(string, tag = "1")]
    pub service: String,
}

/// `grpc.health.v1.HealthCheckResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct HealthCheckResponse {
    #[prost(int32, tag = "1")]
    pub status: i32,
}

/// `HealthCheckResponse.ServingStatus.SERVING`.
pub(crate) const SERVING: i32 = 1;

/// The name of a serving status, as the protocol spells it.
pub(crate) fn status_name(status: i32) -> String {
    match status {
        0 => "UNKNOWN".to_owned(),
        1 => "SERVING".to_owned(),
        2 => "NOT_SERVING".to_owned(),
        3 => "SERVICE_UNKNOWN".to_owned(),
        other => other.to_string(),
    }
}

/// The method's path.
pub(crate) const CHECK_PATH: &str = "/grpc.health.v1.Health/Check";

/// Calls `Check(service)` on `ip:port` within `timeout` (connecting included, retried
/// until then as grpc-go's blocking dial does).
pub(crate) async fn probe(ip: IpAddr, port: i32, service: &str, timeout: Duration) -> Outcome {
    let address = join_host_port(&ip.to_string(), u16::try_from(port).unwrap_or(0));
    let deadline = Instant::now() + timeout;
    let connect_timeout = format!(
        "timeout: failed to connect service {} within {}: context deadline exceeded",
        go_quote(&address),
        go_duration(timeout)
    );
    let endpoint = match Endpoint::from_shared(format!("http://{address}")) {
        Ok(endpoint) => endpoint,
        Err(err) => {
            return Outcome::Failure(format!(
                "error: failed to connect service at {}: {err}",
                go_quote(&address)
            ));
        }
    };
    let endpoint = match endpoint.user_agent(format!("kube-probe/{}", super::KUBE_VERSION)) {
        Ok(endpoint) => endpoint,
        Err(err) => return Outcome::Unknown(err.to_string()),
    };
    let channel = match tokio::time::timeout_at(deadline, connect(endpoint)).await {
        Ok(channel) => channel,
        Err(_) => return Outcome::Failure(connect_timeout),
    };
    let mut grpc = tonic::client::Grpc::new(channel);
    let call = async {
        grpc.ready()
            .await
            .map_err(|err| tonic::Status::unavailable(format!("connection error: {err}")))?;
        let path = http::uri::PathAndQuery::from_static(CHECK_PATH);
        let codec = tonic_prost::ProstCodec::<HealthCheckRequest, HealthCheckResponse>::default();
        let request = tonic::Request::new(HealthCheckRequest {
            service: service.to_owned(),
        });
        grpc.unary(request, path, codec).await
    };
    let rpc_timeout = format!(
        "timeout: health rpc did not complete within {}",
        go_duration(timeout)
    );
    match tokio::time::timeout_at(deadline, call).await {
        Err(_) => Outcome::Failure(rpc_timeout),
        Ok(Ok(response)) => {
            let status = response.into_inner().status;
            if status == SERVING {
                Outcome::Success
            } else {
                Outcome::Failure(format!(
                    "service unhealthy (responded with {})",
                    go_quote(&status_name(status))
                ))
            }
        }
        Ok(Err(status)) => match status.code() {
            tonic::Code::Unimplemented => Outcome::Failure(format!(
                "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): {}",
                status.message()
            )),
            tonic::Code::DeadlineExceeded => Outcome::Failure(rpc_timeout),
            code => Outcome::Failure(format!(
                "error: health rpc probe failed: rpc error: code = {} desc = {}",
                go_code(code),
                status.message()
            )),
        },
    }
}

/// Connects, retrying every 100 ms until it succeeds (the caller bounds it).
async fn connect(endpoint: Endpoint) -> Channel {
    loop {
        if let Ok(channel) = endpoint.connect().await {
            return channel;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A status code as grpc-go prints it.
pub(crate) fn go_code(code: tonic::Code) -> String {
    match code {
        tonic::Code::Ok => "OK".to_owned(),
        tonic::Code::Cancelled => "Canceled".to_owned(),
        other => format!("{other:?}"),
    }
}
