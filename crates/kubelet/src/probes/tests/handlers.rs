//! Each probe handler against the fake runtime and real loopback servers.

use super::*;
use crate::probes::{Outcome, run_probe};
use k8s_openapi::api::core::v1::{
    ContainerPort, EnvVar, ExecAction, GRPCAction, HTTPGetAction, HTTPHeader, Probe,
    TCPSocketAction,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

fn exec_probe(command: &[&str], timeout: i32) -> Probe {
    Probe {
        exec: Some(ExecAction {
            command: Some(command.iter().map(|s| s.to_string()).collect()),
        }),
        timeout_seconds: Some(timeout),
        ..Default::default()
    }
}

fn http_probe(port: IntOrString, path: &str) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            port,
            path: Some(path.into()),
            ..Default::default()
        }),
        // Generous, for a loaded machine; the timeout tests set 1 s.
        timeout_seconds: Some(10),
        ..Default::default()
    }
}

fn port_of(server: &Server) -> IntOrString {
    IntOrString::Int(i32::from(server.addr.port()))
}

#[tokio::test]
async fn exec_probe_outcomes_and_messages() {
    let exec = FakeExec::default();
    let container = Container {
        name: "app".into(),
        env: Some(vec![EnvVar {
            name: "FILE".into(),
            value: Some("/tmp/healthy".into()),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let target = loopback_target(container);
    let probe = exec_probe(&["cat", "$(FILE)"], 3);

    assert_eq!(run_probe(&probe, &target, &exec).await, Outcome::Success);
    let calls = exec.calls();
    assert_eq!(calls[0].command, vec!["cat", "/tmp/healthy"]);
    assert_eq!(calls[0].timeout, Duration::from_secs(3));
    assert_eq!(calls[0].container_id, "cid");

    exec.set("cid", Behaviour::Exit(1, "out ", "no such file"));
    assert_eq!(
        run_probe(&probe, &target, &exec).await,
        Outcome::Failure("out no such file".into())
    );

    exec.set("cid", Behaviour::TimedOut);
    assert_eq!(
        run_probe(&probe, &target, &exec).await,
        Outcome::Failure(r#"command "cat /tmp/healthy" timed out"#.into())
    );

    exec.set("cid", Behaviour::Fails("container not running"));
    assert_eq!(
        run_probe(&probe, &target, &exec).await,
        Outcome::Unknown("container not running".into())
    );
}

#[tokio::test]
async fn exec_probe_output_is_cut_at_10_kib() {
    let exec = FakeExec::default();
    let long: &'static str = "y".repeat(30 * 1024).leak();
    exec.set("cid", Behaviour::Exit(2, long, ""));
    let target = loopback_target(Container::default());
    match run_probe(&exec_probe(&["check"], 1), &target, &exec).await {
        Outcome::Failure(output) => assert_eq!(output.len(), 10 * 1024),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn http_probe_statuses_and_messages() {
    let (server, _) = http_server(None).await;
    let exec = FakeExec::default();
    let target = loopback_target(Container::default());
    let port = port_of(&server);
    let run = |path: &str| run_probe_owned(http_probe(port.clone(), path), target.clone());

    assert_eq!(run("/ok").await, Outcome::Success);
    assert_eq!(
        run("/fail").await,
        Outcome::Failure("HTTP probe failed with statuscode: 500".into())
    );
    // Redirects to the same host are followed.
    assert_eq!(run("/to-ok").await, Outcome::Success);
    // Redirects elsewhere are not: success with a warning carrying the body.
    assert_eq!(
        run("/away").await,
        Outcome::Warning("Probe terminated redirects, Response body: moved".into())
    );
    assert_eq!(
        run("/loop").await,
        Outcome::Failure(format!(
            "Get \"http://{}/loop\": stopped after 10 redirects",
            server.addr
        ))
    );
    assert_eq!(
        run("/hang-up").await,
        Outcome::Failure(format!("Get \"http://{}/hang-up\": EOF", server.addr))
    );
    match run("/big").await {
        Outcome::Warning(message) => assert_eq!(
            message.len(),
            "Probe terminated redirects, Response body: ".len() + 10 * 1024
        ),
        other => panic!("{other:?}"),
    }
    assert!(exec.calls().is_empty());
}

async fn run_probe_owned(probe: Probe, target: Target) -> Outcome {
    run_probe(&probe, &target, &FakeExec::default()).await
}

#[tokio::test]
async fn http_probe_connection_errors_and_timeouts() {
    let port = closed_port().await;
    let target = loopback_target(Container::default());
    assert_eq!(
        run_probe_owned(
            http_probe(IntOrString::Int(port.into()), "/"),
            target.clone()
        )
        .await,
        Outcome::Failure(format!(
            "Get \"http://127.0.0.1:{port}/\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        ))
    );

    let (server, _) = http_server(None).await;
    let mut slow = http_probe(port_of(&server), "/slow");
    slow.timeout_seconds = Some(1);
    let started = std::time::Instant::now();
    assert_eq!(
        run_probe_owned(slow, target).await,
        Outcome::Failure(format!(
            "Get \"http://{}/slow\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
            server.addr
        ))
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(10),
        "{took:?}"
    );
}

#[tokio::test]
async fn http_probe_headers_named_ports_and_host() {
    let (server, seen) = http_server(None).await;
    let container = Container {
        name: "app".into(),
        ports: Some(vec![ContainerPort {
            name: Some("web".into()),
            container_port: i32::from(server.addr.port()),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let mut probe = http_probe(IntOrString::String("web".into()), "/ok");
    if let Some(action) = probe.http_get.as_mut() {
        action.http_headers = Some(vec![
            HTTPHeader {
                name: "X-Probe".into(),
                value: "yes".into(),
            },
            HTTPHeader {
                name: "Host".into(),
                value: "app.example".into(),
            },
        ]);
    }
    assert_eq!(
        run_probe_owned(probe, loopback_target(container.clone())).await,
        Outcome::Success
    );
    let requests = lock(&seen).clone();
    let (path, headers) = &requests[0];
    assert_eq!(path, "/ok");
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    assert_eq!(header("user-agent"), Some("kube-probe/1.33"));
    assert_eq!(header("accept"), Some("*/*"));
    assert_eq!(header("x-probe"), Some("yes"));
    assert_eq!(header("host"), Some("app.example"));

    // A port name the container does not have is an error, not a failure.
    assert_eq!(
        run_probe_owned(
            http_probe(IntOrString::String("admin".into()), "/ok"),
            loopback_target(container)
        )
        .await,
        Outcome::Unknown(r#"strconv.Atoi: parsing "admin": invalid syntax"#.into())
    );
}

#[tokio::test]
async fn https_probe_skips_certificate_verification() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let (server, seen) = http_server(Some(tls_config(dir.path()))).await;
    let mut probe = http_probe(port_of(&server), "/ok");
    if let Some(action) = probe.http_get.as_mut() {
        action.scheme = Some("HTTPS".into());
    }
    let target = loopback_target(Container::default());
    assert_eq!(run_probe_owned(probe, target).await, Outcome::Success);
    assert_eq!(lock(&seen).len(), 1);
}

#[tokio::test]
async fn tcp_probe_connects_or_fails_with_the_dial_error() {
    let (_listener, addr) = bind_loopback().await;
    let open = addr.port();
    let tcp = |port: u16| Probe {
        tcp_socket: Some(TCPSocketAction {
            port: IntOrString::Int(port.into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let target = loopback_target(Container::default());
    assert_eq!(
        run_probe_owned(tcp(open), target.clone()).await,
        Outcome::Success
    );
    let closed = closed_port().await;
    assert_eq!(
        run_probe_owned(tcp(closed), target.clone()).await,
        Outcome::Failure(format!(
            "dial tcp 127.0.0.1:{closed}: connect: connection refused"
        ))
    );
    let mut no_ip = target;
    no_ip.pod_ip = None;
    assert!(matches!(
        run_probe_owned(tcp(open), no_ip).await,
        Outcome::Unknown(_)
    ));
}

fn grpc_probe(port: u16, service: Option<&str>, timeout: i32) -> Probe {
    Probe {
        grpc: Some(GRPCAction {
            port: port.into(),
            service: service.map(str::to_owned),
        }),
        timeout_seconds: Some(timeout),
        ..Default::default()
    }
}

#[tokio::test]
async fn grpc_probe_health_statuses() {
    let server = grpc_server(true).await;
    let port = server.addr.port();
    let target = loopback_target(Container::default());
    let run =
        |service: Option<&str>| run_probe_owned(grpc_probe(port, service, 10), target.clone());
    assert_eq!(run(None).await, Outcome::Success);
    assert_eq!(
        run(Some("down")).await,
        Outcome::Failure(r#"service unhealthy (responded with "NOT_SERVING")"#.into())
    );
    assert_eq!(
        run(Some("other")).await,
        Outcome::Failure(
            "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"
                .into()
        )
    );
    assert_eq!(
        run_probe_owned(grpc_probe(port, Some("slow"), 1), target.clone()).await,
        Outcome::Failure("timeout: health rpc did not complete within 1s".into())
    );
}

#[tokio::test]
async fn grpc_probe_without_health_service_or_server() {
    let server = grpc_server(false).await;
    let target = loopback_target(Container::default());
    assert_eq!(
        run_probe_owned(grpc_probe(server.addr.port(), None, 10), target.clone()).await,
        Outcome::Failure(
            "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown method"
                .into()
        )
    );
    let closed = closed_port().await;
    assert_eq!(
        run_probe_owned(grpc_probe(closed, None, 1), target).await,
        Outcome::Failure(format!(
            "timeout: failed to connect service \"127.0.0.1:{closed}\" within 1s: context deadline exceeded"
        ))
    );
}

#[tokio::test]
async fn probe_without_handler_is_unknown() {
    assert_eq!(
        run_probe_owned(
            Probe::default(),
            loopback_target(Container {
                name: "app".into(),
                ..Default::default()
            })
        )
        .await,
        Outcome::Unknown("missing probe handler for web_default(uid-1):app".into())
    );
}
