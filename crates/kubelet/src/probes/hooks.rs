//! Lifecycle hooks (postStart, preStop), as kubelet's handler runner runs them: exec in
//! the container, an HTTP GET (only a failure to get any response fails it; the status
//! code is not looked at), or a sleep. `tcpSocket` is deprecated and never supported as a
//! hook: it fails at run time.
//!
//! What the caller does with a failure (kubelet's behaviour):
//! - **postStart** failing: record a Warning event [`FAILED_POST_START_HOOK`] with the
//!   message `PostStartHook failed` (the details are not put in the event, where secrets
//!   could leak), kill the container (reason `FailedPostStartHook`) and report it waiting
//!   with reason `PostStartHookError` and the returned message.
//! - **preStop** failing: record a Warning event [`FAILED_PRE_STOP_HOOK`] with the
//!   message `PreStop hook failed`; termination continues. A preStop hook still running
//!   when the grace period ends is abandoned (pass the grace period as `timeout`).

use super::handlers::{go_quote, join_host_port};
use super::http_get::{self, Request, Scheme};
use super::{Exec, ExecError, Target};
use k8s_openapi::api::core::v1::LifecycleHandler;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::time::Duration;

/// Event reason of a failed postStart hook (message `PostStartHook failed`).
pub const FAILED_POST_START_HOOK: &str = "FailedPostStartHook";
/// Event reason of a failed preStop hook (message `PreStop hook failed`).
pub const FAILED_PRE_STOP_HOOK: &str = "FailedPreStopHook";

/// Runs a postStart or preStop `handler` for `target`, giving up after `timeout` (for
/// preStop: the termination grace period; for postStart kubelet has no limit, pass a
/// long one). The error is kubelet's message, e.g. ``Exec lifecycle hook ([sh -c exit 1])
/// for Container "app" in Pod "web_default(uid)" failed - error: command 'sh -c exit 1'
/// exited with 1: , message: ""``.
pub async fn run_hook(
    handler: &LifecycleHandler,
    target: &Target,
    exec: &dyn Exec,
    timeout: Duration,
) -> Result<(), String> {
    let container = &target.container.name;
    let pod = &target.pod;
    if let Some(action) = &handler.exec {
        let command = action.command.clone().unwrap_or_default();
        let joined = command.join(" ");
        let listed = format!("[{joined}]");
        let run = exec.exec_sync(&target.container_id, command, timeout);
        let (err, output) = match tokio::time::timeout(timeout, run).await {
            Ok(Ok(output)) if output.exit_code == 0 => return Ok(()),
            Ok(Ok(output)) => {
                let err = format!(
                    "command '{joined}' exited with {}: {}",
                    output.exit_code,
                    String::from_utf8_lossy(&output.stderr)
                );
                let mut data = output.stdout;
                data.extend_from_slice(&output.stderr);
                (err, String::from_utf8_lossy(&data).into_owned())
            }
            Ok(Err(ExecError::TimedOut)) | Err(_) => (
                format!("command {} timed out", go_quote(&joined)),
                String::new(),
            ),
            Ok(Err(ExecError::Failed(err))) => (err, String::new()),
        };
        return Err(format!(
            "Exec lifecycle hook ({listed}) for Container {} in Pod {} failed - error: {err}, message: {}",
            go_quote(container),
            go_quote(pod),
            go_quote(&output)
        ));
    }
    if let Some(action) = &handler.http_get {
        let path = action.path.clone().unwrap_or_default();
        let fail = |err: String| {
            format!(
                "HTTP lifecycle hook ({path}) for Container {} in Pod {} failed - error: {err}",
                go_quote(container),
                go_quote(pod)
            )
        };
        if action.host.as_deref().unwrap_or_default().is_empty() && target.pod_ip.is_none() {
            return Err(fail(
                "failed to find networking container: the pod has no IP address".to_owned(),
            ));
        }
        let request = Request::for_action(action, &target.container, target.pod_ip, "lifecycle")
            .map_err(fail)?;
        let err = match http_get::get(&request, timeout).await {
            Ok(_) => return Ok(()),
            Err(err) => err,
        };
        if !err.http_response_to_https {
            return Err(fail(err.message));
        }
        // An HTTPS hook answered in plain HTTP is retried over HTTP, without credentials
        // (kubelet does so and records a LifecycleHTTPFallback event).
        tracing::info!(
            pod = %pod, container = %container, host = %join_host_port(&request.host, request.port),
            "HTTPS request to lifecycle hook got HTTP response, retrying with HTTP"
        );
        let mut plain = request;
        plain.scheme = Scheme::Http;
        plain
            .headers
            .retain(|(n, _)| !n.eq_ignore_ascii_case("authorization"));
        return match http_get::get(&plain, timeout).await {
            Ok(_) => Ok(()),
            Err(_) => Err(fail(err.message)),
        };
    }
    if let Some(action) = &handler.sleep {
        let seconds = u64::try_from(action.seconds).unwrap_or(0);
        let wanted = Duration::from_secs(seconds);
        if wanted <= timeout {
            tokio::time::sleep(wanted).await;
            return Ok(());
        }
        tokio::time::sleep(timeout).await;
        return Err(format!(
            "Sleep lifecycle hook ({}) for Container {} in Pod {} failed - error: container terminated before sleep hook finished",
            action.seconds,
            go_quote(container),
            go_quote(pod)
        ));
    }
    Err(format!(
        "Cannot run handler: invalid handler: {}",
        go_handler(handler)
    ))
}

/// A handler as Go's `%v` prints it, for the "invalid handler" message.
fn go_handler(handler: &LifecycleHandler) -> String {
    let tcp = match &handler.tcp_socket {
        Some(tcp) => {
            let port = match &tcp.port {
                IntOrString::Int(n) => format!("{{0 {n} }}"),
                IntOrString::String(s) => format!("{{1 0 {s}}}"),
            };
            format!(
                "&TCPSocketAction{{Port:{port},Host:{},}}",
                tcp.host.as_deref().unwrap_or_default()
            )
        }
        None => "nil".to_owned(),
    };
    format!("&LifecycleHandler{{Exec:nil,HTTPGet:nil,TCPSocket:{tcp},Sleep:nil,}}")
}
