//! exec, attach, cp, `run -it --rm` and port-forward with the real kubectl through the
//! API server and the node's kubelet to containerd (see [`crate::node`]): over WebSocket
//! (`v5.channel.k8s.io`, translated to SPDY by the API server; port-forward's SPDY
//! tunnelled in WebSocket), and over SPDY end to end, which kubectl uses when its
//! WebSocket executors are switched off. Each test needs root.

use crate::cluster::{Cluster, Who};
use crate::node::{BUSYBOX, NodeCluster};
use kyb_streaming::remotecommand;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write as _};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

/// kubectl's switches for its WebSocket executors (on by default): off, it speaks SPDY.
const SPDY_ONLY: [(&str, &str); 2] = [
    ("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false"),
    ("KUBECTL_PORT_FORWARD_WEBSOCKETS", "false"),
];

/// kubectl with `env` and `input` on its standard input.
fn kubectl(cluster: &NodeCluster, env: &[(&str, &str)], args: &[&str], input: &str) -> Output {
    let mut child = cluster
        .command("kubectl")
        .env("KUBECONFIG", cluster.kubeconfig())
        .envs(env.iter().copied())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    wait_output(cluster, child, Duration::from_secs(60))
}

/// Waits for `child` (its stdin already closed or kept by the caller), its output read
/// as it comes (a full pipe would stall it), killing it past `limit`.
fn wait_output(cluster: &NodeCluster, mut child: Child, limit: Duration) -> Output {
    use std::io::Read as _;
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let stderr = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.read_to_end(&mut bytes);
        bytes
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
            panic!(
                "timed out; {} bytes of stdout ending {:?}, stderr {:?}; the server said:\n{}",
                stdout.len(),
                text(&stdout[stdout.len().saturating_sub(200)..]),
                text(&stderr),
                tail(&cluster.server_output(), 6000)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// `command` under `script`, so kubectl gets a terminal; `input` typed into it. Its
/// exit code is the command's (`script -e`).
fn in_terminal(cluster: &NodeCluster, command: &str, input: &str) -> Output {
    let mut child = cluster
        .command("script")
        .env("KUBECONFIG", cluster.kubeconfig())
        .args(["-q", "-e", "-c", command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kept open until the command ends: script ends early at the end of its input.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    let output = wait_output(cluster, child, Duration::from_secs(60));
    drop(stdin);
    output
}

fn tail(text: &str, bytes: usize) -> &str {
    let mut start = text.len().saturating_sub(bytes);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run_pod(cluster: &NodeCluster, manifest: &str, name: &str) {
    cluster.apply(manifest);
    cluster.wait_for_pod(name, "Running", |pod| pod["status"]["phase"] == "Running");
}

#[test]
fn exec_attach_cp_and_run_through_the_kubelet_as_root() {
    let cluster = NodeCluster::start();
    run_pod(
        &cluster,
        &format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: shell}}\nspec:\n  containers:\n  \
             - {{name: shell, image: {BUSYBOX}, command: [sleep, '3600']}}\n"
        ),
        "shell",
    );

    for (protocol, env) in [("WebSocket", &[][..]), ("SPDY", &SPDY_ONLY[..])] {
        // The command's exit code becomes kubectl's; stdout and stderr stay apart.
        let output = kubectl(
            &cluster,
            env,
            &[
                "exec",
                "shell",
                "--",
                "sh",
                "-c",
                "echo out; echo err >&2; exit 3",
            ],
            "",
        );
        assert_eq!(output.status.code(), Some(3), "{protocol}: {output:?}");
        assert_eq!(text(&output.stdout), "out\n", "{protocol}");
        assert!(
            text(&output.stderr).starts_with("err\n"),
            "{protocol}: {output:?}"
        );
        // stdin is read to its end, past SPDY's 64 KiB window.
        let input = "0123456789abcdef\n".repeat(8 * 1024);
        let output = kubectl(&cluster, env, &["exec", "-i", "shell", "--", "cat"], &input);
        assert!(
            output.status.success(),
            "{protocol}: {}",
            text(&output.stderr)
        );
        assert_eq!(output.stdout.len(), input.len(), "{protocol}");
        assert!(output.stdout == input.as_bytes(), "{protocol}");
    }

    // A terminal: a shell that reads the typed lines (the quotes tell the echoed
    // command from its output) and exits 7.
    let output = in_terminal(
        &cluster,
        "kubectl exec -it shell -- sh",
        "echo in-t''ty\nexit 7\n",
    );
    assert!(text(&output.stdout).contains("in-tty"), "{output:?}");
    assert_eq!(output.status.code(), Some(7), "{output:?}");

    // cp both ways with a directory (tar over exec).
    let local = tempfile::tempdir().unwrap();
    let tree = local.path().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(tree.join("sub/b.txt"), "beta\n").unwrap();
    cluster.kubectl_ok(&["cp", tree.to_str().unwrap(), "shell:/tmp/tree"]);
    assert_eq!(
        cluster.kubectl_ok(&["exec", "shell", "--", "cat", "/tmp/tree/sub/b.txt"]),
        "beta\n"
    );
    let back = local.path().join("back");
    cluster.kubectl_ok(&["cp", "shell:/tmp/tree", back.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(back.join("a.txt")).unwrap(),
        "alpha\n"
    );
    assert_eq!(
        std::fs::read_to_string(back.join("sub/b.txt")).unwrap(),
        "beta\n"
    );

    // attach: the container's stdin (stdinOnce) is ours until we close it.
    run_pod(
        &cluster,
        &format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: echo}}\nspec:\n  restartPolicy: Never\n  \
             containers:\n  - {{name: echo, image: {BUSYBOX}, command: [cat], stdin: true, \
             stdinOnce: true}}\n"
        ),
        "echo",
    );
    let output = kubectl(&cluster, &[], &["attach", "-i", "echo"], "through attach\n");
    assert!(
        text(&output.stdout).contains("through attach"),
        "{output:?}"
    );

    // run -it --rm: a shell in a new pod, which is deleted when it ends.
    let output = in_terminal(
        &cluster,
        &format!("kubectl run -it --rm once --image={BUSYBOX} --restart=Never -- sh"),
        "echo from-r''un\nexit\n",
    );
    assert!(text(&output.stdout).contains("from-run"), "{output:?}");
    cluster.wait_for("pod once deleted", Duration::from_secs(60), |cluster| {
        cluster.pod("once").is_none().then_some(())
    });

    // Without `create` on pods/exec, neither protocol gets a stream.
    cluster.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: peek}\nrules:\n\
         - {apiGroups: [''], resources: [pods, pods/exec], verbs: [get, list]}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: peek}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: peek}\n\
         subjects: [{kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}]\n",
    );
    for env in [&[][..], &SPDY_ONLY[..]] {
        let output = kubectl(
            &cluster,
            env,
            &[
                "--as=alice",
                "exec",
                "shell",
                "--",
                "touch",
                "/tmp/forbidden",
            ],
            "",
        );
        assert!(!output.status.success());
        assert!(
            text(&output.stderr)
                .contains("User \"alice\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"default\""),
            "{output:?}"
        );
    }
    let output = cluster.kubectl(&["exec", "shell", "--", "test", "-e", "/tmp/forbidden"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");

    // SPDY through the API server with our own client (kyb-streaming's remotecommand).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (negotiated, stdout, stderr, outcome) = runtime
        .block_on(async {
            let script = "echo spdy-out; echo spdy-err >&2; exit 5";
            tokio::time::timeout(Duration::from_secs(60), spdy_exec(&cluster, script)).await
        })
        .unwrap()
        .unwrap();
    assert_eq!(negotiated, "v4.channel.k8s.io");
    assert_eq!(stdout, b"spdy-out\n");
    assert_eq!(stderr, b"spdy-err\n");
    assert_eq!(outcome, remotecommand::Outcome::Exited(5));
}

/// Runs `sh -c script` in pod `shell` over SPDY through the API server (inside the
/// cluster's namespace, through busybox `nc`) as the admin: the negotiated protocol,
/// stdout, stderr and how it ended.
async fn spdy_exec(
    cluster: &NodeCluster,
    script: &str,
) -> anyhow::Result<(String, Vec<u8>, Vec<u8>, remotecommand::Outcome)> {
    let pki = cluster.kubeconfig().with_file_name("pki");
    let read = |file: &str| std::fs::read_to_string(pki.join(file));
    let admin = kyb_pki::Credentials {
        cert_pem: read("admin.crt")?,
        key_pem: read("admin.key")?,
    };
    let tls = kyb_pki::tls::client_config(&read("ca.crt")?, Some(&admin))?;
    let mut nc = tokio::process::Command::from(cluster.command("busybox"));
    nc.args(["nc", "127.0.0.1", "6443"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    let mut nc = nc.spawn()?;
    let pipes = tokio::io::join(
        nc.stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?,
        nc.stdin.take().ok_or_else(|| anyhow::anyhow!("no stdin"))?,
    );
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1")?;
    let mut stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, pipes)
        .await?;
    let query: String = ["sh", "-c", script]
        .iter()
        .map(|arg| format!("command={}&", percent(arg)))
        .collect();
    let path = format!("/api/v1/namespaces/default/pods/shell/exec?{query}stdout=true&stderr=true");
    let versions = ["v4.channel.k8s.io", "v3.channel.k8s.io"];
    let negotiated =
        kyb_streaming::spdy::upgrade::upgrade(&mut stream, "127.0.0.1", &path, &versions).await?;
    let streams = remotecommand::Streams {
        stdout: true,
        stderr: true,
        ..remotecommand::Streams::default()
    };
    let session = kyb_streaming::spdy::Session::client(stream);
    let remotecommand::RemoteCommand {
        mut error,
        stdout,
        stderr,
        ..
    } = remotecommand::RemoteCommand::start(session, streams).await?;
    let (stdout, stderr) = tokio::join!(read_all(stdout), read_all(stderr));
    let status = remotecommand::read_status(&mut error).await;
    Ok((negotiated, stdout, stderr, remotecommand::outcome(&status)))
}

async fn read_all(reader: Option<kyb_streaming::spdy::StreamReader>) -> Vec<u8> {
    let mut all = Vec::new();
    if let Some(mut reader) = reader {
        while let Some(chunk) = reader.read().await {
            all.extend_from_slice(&chunk);
        }
    }
    all
}

/// Percent-encodes a query value.
fn percent(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `kubectl port-forward pod/web LOCAL:8080` until it says it is forwarding.
fn port_forward(cluster: &NodeCluster, env: &[(&str, &str)], local: u16) -> Child {
    let mut child = cluster
        .command("kubectl")
        .env("KUBECONFIG", cluster.kubeconfig())
        .envs(env.iter().copied())
        .args(["port-forward", "pod/web", &format!("{local}:8080")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("Forwarding from"), "{line:?}");
    // Keep reading so kubectl never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    child
}

#[test]
fn port_forward_reaches_a_pods_port_through_the_kubelet_as_root() {
    let cluster = NodeCluster::start();
    run_pod(
        &cluster,
        &format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: web}}\nspec:\n  containers:\n  \
             - name: web\n    image: {BUSYBOX}\n    command: [sh, -c, 'echo forwarded > \
             /var/www/index.html && exec httpd -f -p 8080 -h /var/www']\n"
        ),
        "web",
    );
    for (local, env) in [(18081, &[][..]), (18082, &SPDY_ONLY[..])] {
        let mut forwarding = port_forward(&cluster, env, local);
        // Several requests: each is a new forwarded connection (new SPDY streams).
        for _ in 0..3 {
            let body = cluster.wait_for("a forwarded answer", Duration::from_secs(30), |c| {
                c.http_get("127.0.0.1", local, "/index.html")
            });
            assert_eq!(body, "forwarded\n", "through port {local}");
        }
        forwarding.kill().unwrap();
        forwarding.wait().unwrap();
    }
}

/// A WebSocket upgrade for `path` as kubectl sends it, offering `protocol`, as the admin
/// or as `as_user` (impersonated): (code, the Status' message).
fn websocket_get(
    cluster: &Cluster,
    path: &str,
    protocol: &str,
    as_user: Option<&str>,
) -> (u16, String) {
    let mut headers = vec![
        ("Connection", "Upgrade"),
        ("Upgrade", "websocket"),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("Sec-WebSocket-Protocol", protocol),
    ];
    if let Some(user) = as_user {
        headers.push(("Impersonate-User", user));
    }
    let (code, _, body) = cluster.http_as(Who::Admin, "GET", path, &headers, b"");
    let status: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(status["kind"], "Status", "{body}");
    assert_eq!(status["code"], code, "{body}");
    (
        code,
        status["message"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn exec_attach_and_port_forward_requests_are_checked_before_the_kubelet() {
    let cluster = Cluster::start();
    // No node: the pod stays unscheduled.
    cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Pod\nmetadata: {name: two}\nspec:\n  containers:\n  \
         - {name: a, image: busybox}\n  - {name: b, image: busybox}\n",
    );
    cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: peek}\nrules:\n\
         - {apiGroups: [''], resources: [pods, pods/exec, pods/portforward], verbs: [get]}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: peek}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: peek}\n\
         subjects: [{kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}]\n",
    );
    let pods = "/api/v1/namespaces/default/pods";
    let v5 = "v5.channel.k8s.io";
    let cases: &[(&str, &str, Option<&str>, u16, &str)] = &[
        (
            "two/exec?command=true&stdout=true",
            v5,
            None,
            400,
            "a container name must be specified for pod two, choose one of: [a b]",
        ),
        (
            "two/exec?command=true&stdout=true&container=c",
            v5,
            None,
            400,
            "container c is not valid for pod two",
        ),
        (
            "two/exec?command=true&stdout=true&container=a",
            v5,
            None,
            400,
            "pod two does not have a host assigned",
        ),
        (
            "two/attach?stdout=true&container=b",
            "v4.channel.k8s.io",
            None,
            400,
            "pod two does not have a host assigned",
        ),
        (
            "two/portforward",
            "SPDY/3.1+portforward.k8s.io",
            None,
            400,
            "pod two does not have a host assigned",
        ),
        (
            "nope/exec?command=true&stdout=true",
            v5,
            None,
            404,
            "pods \"nope\" not found",
        ),
        (
            "two/exec?stdout=true&container=a",
            v5,
            None,
            400,
            "you must specify at least one command for the container",
        ),
        (
            "two/attach?container=a",
            v5,
            None,
            400,
            "you must specify at least 1 of stdin, stdout, stderr",
        ),
        (
            "two/exec?command=true&stdout=true&container=a",
            "base64.channel.k8s.io",
            None,
            400,
            "requested protocol(s) are not supported: [base64.channel.k8s.io]; supports [v5.channel.k8s.io v4.channel.k8s.io]",
        ),
        // `get` on pods/exec lets the upgrade through the filters; `create` is needed too.
        (
            "two/exec?command=true&stdout=true&container=a",
            v5,
            Some("alice"),
            403,
            "pods \"two\" is forbidden: User \"alice\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"default\"",
        ),
        (
            "two/portforward",
            "SPDY/3.1+portforward.k8s.io",
            Some("alice"),
            403,
            "pods \"two\" is forbidden: User \"alice\" cannot create resource \"pods/portforward\" in API group \"\" in the namespace \"default\"",
        ),
    ];
    for (path, protocol, user, code, message) in cases {
        let answer = websocket_get(&cluster, &format!("{pods}/{path}"), protocol, *user);
        assert_eq!(answer, (*code, message.to_string()), "{path} ({protocol})");
    }
    // A kubelet that cannot be reached: the WebSocket is already up, so the failure comes
    // on the error channel, as kube-apiserver's translator reports it.
    let closed = kyb_testkit::free_port().unwrap();
    cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        &format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: ghost}}\nstatus:\n  addresses: \
             [{{type: InternalIP, address: 127.0.0.1}}]\n  daemonEndpoints: \
             {{kubeletEndpoint: {{Port: {closed}}}}}\n---\napiVersion: v1\nkind: Pod\n\
             metadata: {{name: stranded}}\nspec:\n  nodeName: ghost\n  containers:\n  \
             - {{name: a, image: busybox}}\n"
        ),
    );
    let (code, head, body) = cluster.http_as(
        Who::Admin,
        "GET",
        &format!("{pods}/stranded/exec?command=true&stdout=true"),
        &[
            ("Connection", "Upgrade"),
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("Sec-WebSocket-Protocol", v5),
        ],
        b"",
    );
    assert_eq!(code, 101, "{head}");
    assert!(head.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "{head}");
    // One binary message on channel 3 (unmasked, a 16-bit length), then a Close.
    let json_start = body.find('{').unwrap_or_else(|| panic!("{body:?}"));
    assert_eq!(body.as_bytes()[json_start - 1], 3, "{body:?}");
    let json_end = body.rfind('}').unwrap();
    let status: Value = serde_json::from_str(&body[json_start..=json_end]).unwrap();
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["reason"], "InternalError");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Internal error occurred: unable to upgrade connection: Post \"https://127.0.0.1:"
        ) && message.ends_with("connect: connection refused"),
        "{message}"
    );

    // Neither WebSocket nor SPDY: Kubernetes' proxy requires an upgrade.
    let (code, body) = cluster.http(
        "POST",
        &format!("{pods}/two/exec?command=true&stdout=true&container=a"),
        "application/json",
        b"",
    );
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("Upgrade request required"), "{body}");
}
