//! The grpc probe end to end: a real `grpc.health.v1.Health` server, run by the test inside
//! the node's network namespace, probed by the kubelet for a host-network pod.

use crate::node::{BUSYBOX, NodeCluster, condition};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

/// `grpc.health.v1.HealthCheckRequest`.
#[derive(Clone, PartialEq, prost::Message)]
struct HealthCheckRequest {
    #[prost(string, tag = "1")]
    service: String,
}

/// `grpc.health.v1.HealthCheckResponse`.
#[derive(Clone, PartialEq, prost::Message)]
struct HealthCheckResponse {
    #[prost(int32, tag = "1")]
    status: i32,
}

const SERVING: i32 = 1;
const NOT_SERVING: i32 = 2;

/// A health server answering every check with the current `status`; it stops when dropped.
struct HealthServer {
    port: u16,
    status: Arc<AtomicI32>,
    _runtime: tokio::runtime::Runtime,
}

impl HealthServer {
    fn start_in(cluster: &NodeCluster) -> HealthServer {
        let listener =
            kyb_node_sys::netns::bind_tcp(&cluster.netns.path(), "0.0.0.0:0".parse().unwrap())
                .unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let status = Arc::new(AtomicI32::new(NOT_SERVING));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let shared = status.clone();
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((stream, _)) = listener.accept().await {
                let status = shared.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let status = status.clone();
                        async move {
                            let check =
                                tower::service_fn(move |_: tonic::Request<HealthCheckRequest>| {
                                    let status = status.load(Ordering::SeqCst);
                                    async move {
                                        Ok::<_, tonic::Status>(tonic::Response::new(
                                            HealthCheckResponse { status },
                                        ))
                                    }
                                });
                            let codec = tonic_prost::ProstCodec::<
                                HealthCheckResponse,
                                HealthCheckRequest,
                            >::default();
                            let answer: http::Response<tonic::body::Body> =
                                tonic::server::Grpc::new(codec).unary(check, request).await;
                            Ok::<_, Infallible>(answer)
                        }
                    });
                    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        HealthServer {
            port,
            status,
            _runtime: runtime,
        }
    }

    fn set(&self, status: i32) {
        self.status.store(status, Ordering::SeqCst);
    }
}

#[test]
fn a_grpc_probe_fails_and_recovers_as_root() {
    let cluster = NodeCluster::start();
    let health = HealthServer::start_in(&cluster);
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: checked}}
spec:
  hostNetwork: true
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sleep", "3600"]
    readinessProbe:
      grpc: {{port: {}}}
      periodSeconds: 1
      failureThreshold: 1
"#,
        health.port
    ));
    cluster.wait_for("a failed grpc probe", crate::node::POD_WAIT, |cluster| {
        cluster.events("checked").into_iter().find(|e| {
            e == "Unhealthy: Readiness probe failed: service unhealthy (responded with \"NOT_SERVING\")"
        })
    });
    let pod = cluster.pod("checked").unwrap();
    assert_eq!(condition(&pod, "Ready"), Some("False"));
    health.set(SERVING);
    cluster.wait_for_pod("checked", "Ready", |pod| {
        condition(pod, "Ready") == Some("True")
    });
    health.set(NOT_SERVING);
    cluster.wait_for_pod("checked", "not Ready again", |pod| {
        condition(pod, "Ready") == Some("False")
    });
}
