//! Lifecycle hooks: exec, httpGet (with the HTTPS-to-HTTP fallback), sleep, and the
//! unsupported tcpSocket, with kubelet's messages.

use super::*;
use crate::probes::run_hook;
use k8s_openapi::api::core::v1::{
    ExecAction, HTTPGetAction, LifecycleHandler, SleepAction, TCPSocketAction,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

fn target() -> Target {
    loopback_target(Container {
        name: "app".into(),
        ..Default::default()
    })
}

fn exec_hook(command: &[&str]) -> LifecycleHandler {
    LifecycleHandler {
        exec: Some(ExecAction {
            command: Some(command.iter().map(|s| s.to_string()).collect()),
        }),
        ..Default::default()
    }
}

fn http_hook(port: u16, path: &str, scheme: &str) -> LifecycleHandler {
    LifecycleHandler {
        http_get: Some(HTTPGetAction {
            port: IntOrString::Int(port.into()),
            path: Some(path.into()),
            scheme: Some(scheme.into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

const MINUTE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn exec_hook_success_and_failure() {
    let exec = FakeExec::default();
    let hook = exec_hook(&["sh", "-c", "echo hi"]);
    assert_eq!(run_hook(&hook, &target(), &exec, MINUTE).await, Ok(()));
    assert_eq!(exec.calls()[0].command, vec!["sh", "-c", "echo hi"]);

    exec.set("cid", Behaviour::Exit(3, "partial", "bad thing"));
    assert_eq!(
        run_hook(&hook, &target(), &exec, MINUTE).await,
        Err(r#"Exec lifecycle hook ([sh -c echo hi]) for Container "app" in Pod "web_default(uid-1)" failed - error: command 'sh -c echo hi' exited with 3: bad thing, message: "partialbad thing""#.into())
    );

    exec.set("cid", Behaviour::Fails("container not found"));
    assert_eq!(
        run_hook(&hook, &target(), &exec, MINUTE).await,
        Err(r#"Exec lifecycle hook ([sh -c echo hi]) for Container "app" in Pod "web_default(uid-1)" failed - error: container not found, message: """#.into())
    );
}

#[tokio::test]
async fn http_hook_needs_a_response_not_a_good_status() {
    let (server, seen) = http_server(None).await;
    let port = server.addr.port();
    let exec = FakeExec::default();
    // Kubelet does not look at the status code of a hook's response.
    assert_eq!(
        run_hook(&http_hook(port, "/fail", "HTTP"), &target(), &exec, MINUTE).await,
        Ok(())
    );
    let requests = lock(&seen).clone();
    assert_eq!(requests[0].0, "/fail");
    assert_eq!(
        requests[0]
            .1
            .get("user-agent")
            .and_then(|v| v.to_str().ok()),
        Some("kube-lifecycle/1.33")
    );

    let closed = closed_port().await;
    assert_eq!(
        run_hook(
            &http_hook(closed, "/stop", "HTTP"),
            &target(),
            &exec,
            MINUTE
        )
        .await,
        Err(format!(
            "HTTP lifecycle hook (/stop) for Container \"app\" in Pod \"web_default(uid-1)\" failed - error: Get \"http://127.0.0.1:{closed}/stop\": dial tcp 127.0.0.1:{closed}: connect: connection refused"
        ))
    );
}

#[tokio::test]
async fn https_hook_answered_in_http_is_retried_over_http() {
    let (server, seen) = http_server(None).await;
    let hook = http_hook(server.addr.port(), "/ok", "HTTPS");
    assert_eq!(
        run_hook(&hook, &target(), &FakeExec::default(), MINUTE).await,
        Ok(())
    );
    assert_eq!(
        lock(&seen).len(),
        1,
        "one plain HTTP request reached the server"
    );
}

#[tokio::test(start_paused = true)]
async fn sleep_hook_sleeps_or_is_cut_short() {
    let hook = LifecycleHandler {
        sleep: Some(SleepAction { seconds: 5 }),
        ..Default::default()
    };
    let exec = FakeExec::default();
    let start = Instant::now();
    assert_eq!(run_hook(&hook, &target(), &exec, MINUTE).await, Ok(()));
    assert_eq!(start.elapsed(), Duration::from_secs(5));

    let start = Instant::now();
    assert_eq!(
        run_hook(&hook, &target(), &exec, Duration::from_secs(2)).await,
        Err(r#"Sleep lifecycle hook (5) for Container "app" in Pod "web_default(uid-1)" failed - error: container terminated before sleep hook finished"#.into())
    );
    assert_eq!(start.elapsed(), Duration::from_secs(2));
}

#[tokio::test]
async fn tcp_socket_hook_is_not_supported() {
    let hook = LifecycleHandler {
        tcp_socket: Some(TCPSocketAction {
            port: IntOrString::Int(8080),
            host: None,
        }),
        ..Default::default()
    };
    assert_eq!(
        run_hook(&hook, &target(), &FakeExec::default(), MINUTE).await,
        Err("Cannot run handler: invalid handler: &LifecycleHandler{Exec:nil,HTTPGet:nil,TCPSocket:&TCPSocketAction{Port:{0 8080 },Host:,},Sleep:nil,}".into())
    );
}
