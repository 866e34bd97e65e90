//! One probe run, as kubelet's prober runs it: the handler (exec, httpGet, tcpSocket,
//! grpc) picked from the probe, its port resolved against the container's named ports,
//! and the outcome worded as kubelet words it.

use super::{Exec, ExecError, Outcome, Target, grpc, http_get};
use k8s_openapi::api::core::v1::{Container, EnvVar, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// How much of an exec probe's output is kept (kubelet's `maxReadLength`).
const MAX_EXEC_OUTPUT: usize = 10 * 1024;

/// The probe's `timeoutSeconds` (1 when unset or not positive, as the API defaults it).
pub(crate) fn probe_timeout(probe: &Probe) -> Duration {
    Duration::from_secs(positive(probe.timeout_seconds, 1))
}

/// `value` when set and positive, else `default`.
pub(crate) fn positive(value: Option<i32>, default: u64) -> u64 {
    match value {
        Some(v) if v > 0 => v as u64,
        _ => default,
    }
}

/// Runs `probe` once against `target`: exec through `exec` with the probe's timeout,
/// httpGet/tcpSocket/grpc from the node to the pod's IP (or the handler's `host`).
/// A probe without a handler is `Unknown` (`missing probe handler for <pod>:<container>`).
pub async fn run_probe(probe: &Probe, target: &Target, exec: &dyn Exec) -> Outcome {
    let timeout = probe_timeout(probe);
    if let Some(action) = &probe.exec {
        let command = expand_command_static(
            action.command.as_deref().unwrap_or_default(),
            target.container.env.as_deref().unwrap_or_default(),
        );
        return exec_probe(exec, &target.container_id, command, timeout).await;
    }
    if let Some(action) = &probe.http_get {
        let request = match http_get::Request::for_action(
            action,
            &target.container,
            target.pod_ip,
            "probe",
        ) {
            Ok(request) => request,
            Err(err) => return Outcome::Unknown(err),
        };
        return http_get::probe(&request, timeout).await;
    }
    if let Some(action) = &probe.tcp_socket {
        let port = match resolve_container_port(&action.port, &target.container) {
            Ok(port) => port,
            Err(err) => return Outcome::Unknown(err),
        };
        let host = match action.host.as_deref().filter(|h| !h.is_empty()) {
            Some(host) => host.to_owned(),
            None => match target.pod_ip {
                Some(ip) => ip.to_string(),
                None => return Outcome::Unknown(NO_POD_IP.to_owned()),
            },
        };
        return tcp_probe(&host, port, timeout).await;
    }
    if let Some(action) = &probe.grpc {
        let Some(ip) = target.pod_ip else {
            return Outcome::Unknown(NO_POD_IP.to_owned());
        };
        let service = action.service.clone().unwrap_or_default();
        return grpc::probe(ip, action.port, &service, timeout).await;
    }
    Outcome::Unknown(format!(
        "missing probe handler for {}:{}",
        target.pod, target.container.name
    ))
}

/// Why a network probe could not run before the pod has an address.
pub(crate) const NO_POD_IP: &str = "the pod has no IP address yet";

/// An exec probe: exit code 0 is success, any other a failure with the command's
/// output (stdout then stderr, up to 10 KiB); a timeout is a failure
/// `command "<cmd>" timed out`; the runtime failing to run it is unknown.
async fn exec_probe(
    exec: &dyn Exec,
    container_id: &str,
    command: Vec<String>,
    timeout: Duration,
) -> Outcome {
    let joined = command.join(" ");
    match exec.exec_sync(container_id, command, timeout).await {
        Ok(output) => {
            let mut data = output.stdout;
            data.extend_from_slice(&output.stderr);
            data.truncate(MAX_EXEC_OUTPUT);
            if output.exit_code == 0 {
                Outcome::Success
            } else {
                Outcome::Failure(String::from_utf8_lossy(&data).into_owned())
            }
        }
        Err(ExecError::TimedOut) => {
            Outcome::Failure(format!("command {} timed out", go_quote(&joined)))
        }
        Err(ExecError::Failed(err)) => Outcome::Unknown(err),
    }
}

/// A tcpSocket probe: success when a connection opens within the timeout (then closed).
pub(crate) async fn tcp_probe(host: &str, port: u16, timeout: Duration) -> Outcome {
    match dial(host, port, timeout).await {
        Ok(_) => Outcome::Success,
        Err(err) => Outcome::Failure(err),
    }
}

/// Opens a TCP connection to `host:port` within `timeout`; errors are worded as Go's
/// dialer words them (`dial tcp 10.0.0.1:80: connect: connection refused`,
/// `dial tcp 10.0.0.1:80: i/o timeout`).
pub(crate) async fn dial(
    host: &str,
    port: u16,
    timeout: Duration,
) -> Result<tokio::net::TcpStream, String> {
    let address = join_host_port(host, port);
    let connect = async {
        let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((host, port))
                .await
                .map_err(|err| format!("dial tcp: lookup {host}: {}", go_io_error(&err)))?
                .collect(),
        };
        let mut last = format!("dial tcp: lookup {host}: no such host");
        for addr in addrs {
            match tokio::net::TcpStream::connect(addr).await {
                Ok(stream) => return Ok(stream),
                Err(err) => last = format!("dial tcp {addr}: connect: {}", go_io_error(&err)),
            }
        }
        Err(last)
    };
    match tokio::time::timeout(timeout, connect).await {
        Ok(result) => result,
        Err(_) => Err(format!("dial tcp {address}: i/o timeout")),
    }
}

/// `host:port`, with IPv6 addresses bracketed (Go's `net.JoinHostPort`).
pub(crate) fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// An I/O error as Go's syscall errors read: the C library's text, lowercased, without
/// Rust's `(os error N)`.
pub(crate) fn go_io_error(err: &std::io::Error) -> String {
    if err.kind() == std::io::ErrorKind::TimedOut {
        return "i/o timeout".to_owned();
    }
    let text = err.to_string();
    let text = match text.find(" (os error") {
        Some(at) => &text[..at],
        None => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The port a probe or hook names: a number, or the name of one of the container's ports
/// (falling back to a number written as a string), between 1 and 65535. Errors are
/// kubelet's (`strconv.Atoi: parsing "http": invalid syntax`, `invalid port number: 0`).
pub(crate) fn resolve_container_port(
    port: &IntOrString,
    container: &Container,
) -> Result<u16, String> {
    let number: i64 = match port {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(name) => {
            let named = container
                .ports
                .iter()
                .flatten()
                .find(|p| p.name.as_deref() == Some(name.as_str()));
            match named {
                Some(p) => i64::from(p.container_port),
                None => parse_go_int(name)?,
            }
        }
    };
    match u16::try_from(number) {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(format!("invalid port number: {number}")),
    }
}

/// Go's `strconv.Atoi`, with its error wording.
fn parse_go_int(text: &str) -> Result<i64, String> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            go_quote(text)
        ));
    }
    text.parse::<i64>().map_err(|_| {
        format!(
            "strconv.Atoi: parsing {}: value out of range",
            go_quote(text)
        )
    })
}

/// A string quoted as Go's `%q` quotes it.
pub(crate) fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A duration of whole seconds as Go prints it (`1s`, `1m30s`, `1h0m0s`).
pub(crate) fn go_duration(duration: Duration) -> String {
    let secs = duration.as_secs();
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

/// An exec probe's command with `$(VAR)` replaced by the container's environment
/// variables that have a literal `value` (those from `valueFrom` are empty), as kubelet's
/// `ExpandContainerCommandOnlyStatic`: `$$` is a literal `$`, unknown references stay.
pub(crate) fn expand_command_static(command: &[String], env: &[EnvVar]) -> Vec<String> {
    let lookup = |name: &str| {
        env.iter()
            .rev()
            .find(|e| e.name == name)
            .map(|e| e.value.clone().unwrap_or_default())
    };
    command.iter().map(|arg| expand(arg, &lookup)).collect()
}

/// Kubernetes' `$(VAR)` expansion of one string.
fn expand(input: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let Some(next) = after.chars().next() else {
            // A trailing `$` is kept as is.
            out.push('$');
            rest = after;
            break;
        };
        match next {
            '$' => {
                out.push('$');
                rest = &after[1..];
            }
            '(' => match after.find(')') {
                Some(close) => {
                    let name = &after[1..close];
                    match lookup(name) {
                        Some(value) => out.push_str(&value),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &after[close + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = &after[1..];
                }
            },
            other => {
                out.push('$');
                out.push(other);
                rest = &after[other.len_utf8()..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ContainerPort;

    fn env(name: &str, value: Option<&str>) -> EnvVar {
        EnvVar {
            name: name.to_owned(),
            value: value.map(str::to_owned),
            ..Default::default()
        }
    }

    #[test]
    fn expansion_follows_kubernetes_rules() {
        let env = [env("A", Some("x")), env("FROM", None)];
        let cases = [
            ("$(A)", "x"),
            ("a$(A)b", "axb"),
            ("$$(A)", "$(A)"),
            ("$(B)", "$(B)"),
            ("$(FROM)", ""),
            ("$(A", "$(A"),
            ("$A", "$A"),
            ("cost$", "cost$"),
            ("$$", "$"),
            ("é$(A)é", "éxé"),
        ];
        for (input, want) in cases {
            assert_eq!(
                expand_command_static(&[input.to_owned()], &env),
                vec![want.to_owned()],
                "{input}"
            );
        }
    }

    #[test]
    fn ports_resolve_by_name_number_or_numeric_string() {
        let container = Container {
            name: "c".into(),
            ports: Some(vec![ContainerPort {
                name: Some("http".into()),
                container_port: 8080,
                ..Default::default()
            }]),
            ..Default::default()
        };
        let resolve = |p| resolve_container_port(&p, &container);
        assert_eq!(resolve(IntOrString::Int(80)), Ok(80));
        assert_eq!(resolve(IntOrString::String("http".into())), Ok(8080));
        assert_eq!(resolve(IntOrString::String("81".into())), Ok(81));
        assert_eq!(
            resolve(IntOrString::String("grpc".into())),
            Err(r#"strconv.Atoi: parsing "grpc": invalid syntax"#.to_owned())
        );
        assert_eq!(
            resolve(IntOrString::Int(0)),
            Err("invalid port number: 0".to_owned())
        );
        assert_eq!(
            resolve(IntOrString::Int(70000)),
            Err("invalid port number: 70000".to_owned())
        );
    }

    #[test]
    fn go_formatting() {
        assert_eq!(go_quote("sh -c \"x\"\n"), r#""sh -c \"x\"\n""#);
        assert_eq!(go_duration(Duration::from_secs(1)), "1s");
        assert_eq!(go_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(go_duration(Duration::from_secs(3600)), "1h0m0s");
        let refused = std::io::Error::from_raw_os_error(111);
        assert_eq!(go_io_error(&refused), "connection refused");
        assert_eq!(join_host_port("::1", 80), "[::1]:80");
    }
}
