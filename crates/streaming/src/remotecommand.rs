//! Kubernetes' remotecommand protocol over SPDY, the client side (client-go's
//! `streamProtocolV4`): one stream per purpose, named by its `streamType` header and
//! opened in the order error, stdin, stdout, stderr, resize — stderr only without a TTY,
//! resize only with one. The error stream carries the command's final `metav1.Status`
//! (nothing, or `Success`, when it exited 0; `NonZeroExitCode` with an `ExitCode` cause
//! otherwise).

use crate::spdy::{Error, Headers, Session, StreamReader, StreamWriter};
use serde::Deserialize;

/// The SPDY protocol versions a remotecommand client offers, newest first
/// (`X-Stream-Protocol-Version`).
pub const PROTOCOLS: [&str; 4] = [
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
];

/// The header naming a stream's purpose.
pub const STREAM_TYPE: &str = "streamType";

/// The largest status we read from the error stream.
const MAX_STATUS: usize = 64 * 1024;

/// Which of the command's streams are wanted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Streams {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
}

/// The open streams of one exec or attach.
pub struct RemoteCommand {
    pub session: Session,
    pub error: StreamReader,
    pub stdin: Option<StreamWriter>,
    pub stdout: Option<StreamReader>,
    pub stderr: Option<StreamReader>,
    pub resize: Option<StreamWriter>,
}

impl RemoteCommand {
    /// Opens the streams on `session` (whose upgrade negotiated a remotecommand protocol)
    /// and waits for the server to accept each.
    pub async fn start(session: Session, streams: Streams) -> Result<RemoteCommand, Error> {
        let open = |kind: &str| {
            let session = session.clone();
            let headers = Headers::from([(STREAM_TYPE, kind)]);
            async move {
                let mut stream = session.open(headers, false)?;
                stream.wait_reply().await?;
                Ok::<_, Error>(stream.into_split())
            }
        };
        // Opened one after another, as client-go does; each SYN_STREAM is queued at once,
        // so the waits overlap little.
        let (error, _) = open("error").await?;
        let stdin = match streams.stdin {
            true => Some(open("stdin").await?.1),
            false => None,
        };
        let stdout = match streams.stdout {
            true => Some(open("stdout").await?.0),
            false => None,
        };
        let stderr = match streams.stderr && !streams.tty {
            true => Some(open("stderr").await?.0),
            false => None,
        };
        let resize = match streams.tty {
            true => Some(open("resize").await?.1),
            false => None,
        };
        Ok(RemoteCommand {
            session,
            error,
            stdin,
            stdout,
            stderr,
            resize,
        })
    }
}

/// Reads the error stream to its end: the status bytes as the server wrote them (empty
/// when it wrote none), at most 64 KiB.
pub async fn read_status(error: &mut StreamReader) -> Vec<u8> {
    let mut status = Vec::new();
    while let Some(chunk) = error.read().await {
        if status.len() + chunk.len() > MAX_STATUS {
            break;
        }
        status.extend_from_slice(&chunk);
    }
    status
}

/// How a command ended, from its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// It exited non-zero.
    Exited(i32),
    /// It could not run, or failed otherwise: the status' message.
    Failed(String),
}

#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    status: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    details: Option<Details>,
}

#[derive(Deserialize)]
struct Details {
    #[serde(default)]
    causes: Vec<Cause>,
}

#[derive(Deserialize)]
struct Cause {
    // metav1.StatusCause's `Type` is `reason` in JSON.
    #[serde(default, rename = "reason")]
    kind: String,
    #[serde(default)]
    message: String,
}

/// Decodes a status as client-go's `errorDecoderV4` does: no bytes or `Success` is
/// success; `NonZeroExitCode` carries the code in its `ExitCode` cause.
pub fn outcome(status: &[u8]) -> Outcome {
    if status.is_empty() {
        return Outcome::Success;
    }
    let status: Status = match serde_json::from_slice(status) {
        Ok(status) => status,
        Err(e) => return Outcome::Failed(format!("error stream protocol error: {e}")),
    };
    if status.status == "Success" {
        return Outcome::Success;
    }
    if status.reason == "NonZeroExitCode" {
        let code = status
            .details
            .iter()
            .flat_map(|d| &d.causes)
            .find(|c| c.kind == "ExitCode")
            .and_then(|c| c.message.parse().ok());
        if let Some(code) = code {
            return Outcome::Exited(code);
        }
    }
    Outcome::Failed(status.message)
}

/// The status a remotecommand server writes for `outcome` (kubelet's wording).
pub fn status(outcome: &Outcome) -> serde_json::Value {
    match outcome {
        Outcome::Success => serde_json::json!({"metadata": {}, "status": "Success"}),
        Outcome::Exited(code) => serde_json::json!({
            "metadata": {},
            "status": "Failure",
            "message": format!("command terminated with non-zero exit code: exit status {code}"),
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
        }),
        Outcome::Failed(message) => serde_json::json!({
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": "InternalError",
            "code": 500,
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn statuses_decode_as_client_go_does() {
        assert_eq!(outcome(b""), Outcome::Success);
        assert_eq!(
            outcome(br#"{"metadata":{},"status":"Success"}"#),
            Outcome::Success
        );
        let exited = br#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: exit status 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#;
        assert_eq!(outcome(exited), Outcome::Exited(3));
        assert_eq!(
            outcome(br#"{"status":"Failure","message":"no such container"}"#),
            Outcome::Failed("no such container".into())
        );
        assert!(matches!(outcome(b"{"), Outcome::Failed(_)));
    }
}
