//! kyb-streaming's SPDY client against containerd's own streaming server (Go's
//! spdystream, the protocol peer the kubelet proxies to): CRI `Exec` gives the URL, the
//! client upgrades to SPDY/3.1 and runs remotecommand v4 — stdin to its end and past
//! 64 KiB (spdystream keeps no windows), stdout and stderr apart, the exit code in the
//! error stream's Status.

use crate::cri::run_busybox_pod;
use crate::{import_project_images, start_containerd};
use bytes::Bytes;
use k8s_cri::v1::ExecRequest;
use kyb_kubelet::cri::Cri;
use kyb_streaming::remotecommand::{self, Outcome, RemoteCommand, Streams};
use kyb_streaming::spdy::upgrade::upgrade;
use kyb_streaming::spdy::{Session, StreamReader};
use kyb_testkit::NetNs;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(60);

/// A TCP connection to `address` (`host:port`) made inside `netns`.
fn connect_in(netns: &NetNs, address: &str) -> anyhow::Result<tokio::net::TcpStream> {
    let stream = kyb_node_sys::netns::connect_tcp(&netns.path(), address.parse()?)?;
    stream.set_nonblocking(true)?;
    Ok(tokio::net::TcpStream::from_std(stream)?)
}

async fn read_all(reader: Option<StreamReader>) -> Vec<u8> {
    let mut all = Vec::new();
    if let Some(mut reader) = reader {
        while let Some(chunk) = reader.read().await {
            all.extend_from_slice(&chunk);
        }
    }
    all
}

#[tokio::test]
async fn remotecommand_over_spdy_runs_against_containerds_streaming_server_as_root()
-> anyhow::Result<()> {
    let netns = NetNs::create()?;
    let containerd = start_containerd(&netns)?;
    let cri = Cri::connect(&containerd.endpoint())?;
    import_project_images(&containerd)?;
    let logs = containerd.dir().join("pods").join("uid-exec");
    let (_sandbox, container) =
        run_busybox_pod(&cri, &containerd, "uid-exec", &logs, &["sleep", "1000"]).await?;

    let url = cri
        .runtime
        .clone()
        .exec(ExecRequest {
            container_id: container,
            cmd: ["sh", "-c", "cat; echo warning >&2; exit 3"]
                .map(String::from)
                .to_vec(),
            tty: false,
            stdin: true,
            stdout: true,
            stderr: true,
        })
        .await?
        .into_inner()
        .url;
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow::anyhow!("exec URL {url}"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut io = connect_in(&netns, authority)?;
    let negotiated = upgrade(&mut io, authority, path, &["v4.channel.k8s.io"]).await?;
    assert_eq!(negotiated, "v4.channel.k8s.io");

    let streams = Streams {
        stdin: true,
        stdout: true,
        stderr: true,
        tty: false,
    };
    let run = async {
        let RemoteCommand {
            mut error,
            stdin,
            stdout,
            stderr,
            ..
        } = RemoteCommand::start(Session::client(io), streams).await?;
        let stdin = stdin.ok_or_else(|| anyhow::anyhow!("no stdin stream"))?;
        // Past SPDY's 64 KiB window: spdystream grants none, so none must be awaited.
        let input: Vec<u8> = (0..300 * 1024).map(|i| b'a' + (i % 26) as u8).collect();
        let expected = input.clone();
        let feeding = async move {
            stdin.write(Bytes::from(input)).await?;
            stdin.close().await?;
            Ok::<_, anyhow::Error>(())
        };
        let (fed, out, err) = tokio::join!(feeding, read_all(stdout), read_all(stderr));
        fed?;
        let status = remotecommand::read_status(&mut error).await;
        anyhow::ensure!(out == expected, "stdout: {} bytes", out.len());
        Ok::<_, anyhow::Error>((err, status))
    };
    let (err, status) = tokio::time::timeout(DEADLINE, run).await??;
    assert_eq!(err, b"warning\n");
    assert_eq!(
        remotecommand::outcome(&status),
        Outcome::Exited(3),
        "{}",
        String::from_utf8_lossy(&status)
    );
    Ok(())
}
