//! The options of `pods/exec`, `pods/attach` and `pods/portforward` (`PodExecOptions`,
//! `PodAttachOptions`, `PodPortForwardOptions` from the query), checked as Kubernetes
//! does, and the query the kubelet gets for them (kube-apiserver's `streamParams`:
//! `input`, `output`, `error`, `tty` as `1`, each `command`, `port`).

use kyb_api::Status;
use kyb_serving::Query;

/// Which connect subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Exec,
    Attach,
    PortForward,
}

impl Kind {
    pub fn subresource(self) -> &'static str {
        match self {
            Kind::Exec => "exec",
            Kind::Attach => "attach",
            Kind::PortForward => "portforward",
        }
    }

    /// The kubelet's path segment.
    pub fn kubelet_path(self) -> &'static str {
        match self {
            Kind::Exec => "exec",
            Kind::Attach => "attach",
            Kind::PortForward => "portForward",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamOptions {
    pub container: Option<String>,
    pub command: Vec<String>,
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
    pub ports: Vec<u16>,
}

impl StreamOptions {
    pub fn parse(kind: Kind, query: &Query) -> Result<StreamOptions, Status> {
        if kind == Kind::PortForward {
            let mut ports = Vec::new();
            for value in query.all("ports") {
                let port = value
                    .parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| {
                        Status::bad_request(format!(
                            "strconv.ParseInt: parsing {value:?}: invalid syntax"
                        ))
                    })?;
                ports.push(port);
            }
            return Ok(StreamOptions {
                ports,
                ..StreamOptions::default()
            });
        }
        let tty = query.flag("tty");
        let options = StreamOptions {
            container: query.value("container").map(str::to_string),
            command: query.all("command").to_vec(),
            stdin: query.flag("stdin"),
            stdout: query.flag("stdout"),
            // A terminal merges stderr into stdout (kubelet drops the stream).
            stderr: query.flag("stderr") && !tty,
            tty,
            ports: Vec::new(),
        };
        if kind == Kind::Exec && options.command.is_empty() {
            return Err(Status::bad_request(
                "you must specify at least one command for the container",
            ));
        }
        if !options.stdin && !options.stdout && !options.stderr {
            return Err(Status::bad_request(
                "you must specify at least 1 of stdin, stdout, stderr",
            ));
        }
        Ok(options)
    }

    /// The kubelet's query string (without `?`).
    pub fn kubelet_query(&self) -> String {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        for (flag, name) in [
            (self.stdin, "input"),
            (self.stdout, "output"),
            (self.stderr, "error"),
            (self.tty, "tty"),
        ] {
            if flag {
                pairs.push((name, "1".to_string()));
            }
        }
        for command in &self.command {
            pairs.push(("command", command.clone()));
        }
        if !self.ports.is_empty() {
            let ports: Vec<String> = self.ports.iter().map(u16::to_string).collect();
            pairs.push(("port", ports.join(",")));
        }
        pairs
            .iter()
            .map(|(name, value)| format!("{name}={}", escape(value)))
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// Percent-encodes a query value as Go's `url.QueryEscape` does.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn parse(kind: Kind, query: &str) -> Result<StreamOptions, Status> {
        StreamOptions::parse(kind, &Query::parse(Some(query)))
    }

    #[test]
    fn exec_options_as_kubectl_sends_them() {
        let options = parse(
            Kind::Exec,
            "command=sh&command=-c&command=echo%20hi%20%26%26%20exit%203&container=c&stderr=true&stdout=true",
        )
        .unwrap();
        assert_eq!(options.command, ["sh", "-c", "echo hi && exit 3"]);
        assert_eq!(options.container.as_deref(), Some("c"));
        assert_eq!(
            options.kubelet_query(),
            "output=1&error=1&command=sh&command=-c&command=echo+hi+%26%26+exit+3"
        );
    }

    #[test]
    fn a_terminal_drops_stderr() {
        let options = parse(Kind::Exec, "command=sh&stdin=true&stderr=true&tty=true").unwrap();
        assert!(options.stdin && options.tty && !options.stderr);
        assert_eq!(options.kubelet_query(), "input=1&tty=1&command=sh");
    }

    #[test]
    fn refusals_are_worded_as_kubernetes_words_them() {
        let error = parse(Kind::Exec, "stdout=true").unwrap_err();
        assert_eq!(error.code, 400);
        assert_eq!(
            error.message,
            "you must specify at least one command for the container"
        );
        let error = parse(Kind::Attach, "stdout=false").unwrap_err();
        assert_eq!(
            error.message,
            "you must specify at least 1 of stdin, stdout, stderr"
        );
        assert!(parse(Kind::Attach, "stdin=1").is_ok());
    }

    #[test]
    fn port_forward_ports() {
        let options = parse(Kind::PortForward, "ports=8080&ports=53").unwrap();
        // Go's `url.Values.Encode` escapes the comma.
        assert_eq!(options.kubelet_query(), "port=8080%2C53");
        assert_eq!(parse(Kind::PortForward, "").unwrap().kubelet_query(), "");
        assert_eq!(parse(Kind::PortForward, "ports=x").unwrap_err().code, 400);
    }
}
