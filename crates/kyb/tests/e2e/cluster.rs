//! A `kyb server` started for one test, with kubectl pointed at it.

use kyb_testkit::Process;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

pub const DEADLINE: Duration = Duration::from_secs(30);

pub struct Cluster {
    pub process: Process,
    pub dir: tempfile::TempDir,
    pub port: u16,
}

impl Cluster {
    pub fn start() -> Self {
        let dir = kyb_testkit::temp_dir("cluster").unwrap();
        Self::start_in(dir)
    }

    /// Starts (or restarts) a server on an existing data dir.
    pub fn start_in(dir: tempfile::TempDir) -> Self {
        Self::start_with(dir, &[])
    }

    /// Starts a server with extra flags.
    pub fn start_with(dir: tempfile::TempDir, flags: &[&str]) -> Self {
        let port = kyb_testkit::free_port().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_kyb"));
        command
            .env_remove("RUST_LOG")
            .args([
                "server",
                "--disable-agent",
                "--bind-address",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--data-dir",
            ])
            .arg(dir.path())
            .args(flags);
        let mut process = Process::spawn(&mut command).unwrap();
        process.wait_for_line("kyb server ready", DEADLINE).unwrap();
        let cluster = Self { process, dir, port };
        // The controller manager creates the `default` namespace's `default` ServiceAccount
        // and `kube-root-ca.crt` ConfigMap just after the server is ready; pods are refused
        // until the account exists (Kubernetes has the same race). Tests choosing their
        // controllers wait for what they need.
        if !flags.iter().any(|f| f.starts_with("--controllers")) {
            cluster.wait_for_default_account("default");
            cluster.wait_for_path("/api/v1/namespaces/default/configmaps/kube-root-ca.crt");
        }
        cluster
    }

    /// Waits for the namespace's `default` ServiceAccount (the service-account controller
    /// creates it just after the namespace).
    pub fn wait_for_default_account(&self, namespace: &str) {
        self.wait_for_path(&format!(
            "/api/v1/namespaces/{namespace}/serviceaccounts/default"
        ));
    }

    /// Waits until a GET of `path` succeeds.
    pub fn wait_for_path(&self, path: &str) {
        let deadline = std::time::Instant::now() + DEADLINE;
        while self.http("GET", path, "application/json", b"").0 != 200 {
            assert!(
                std::time::Instant::now() < deadline,
                "{path} never appeared"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig.yaml")
    }

    /// A raw HTTP request to the server as the admin: (status code, body).
    pub fn http(&self, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, String) {
        let (code, _, body) = self.http_with_headers(method, path, content_type, body);
        (code, body)
    }

    /// A raw HTTP request to the server as the admin: (status code, response head, body).
    pub fn http_with_headers(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> (u16, String, String) {
        self.http_as(
            Who::Admin,
            method,
            path,
            &[("Content-Type", content_type)],
            body,
        )
    }

    /// A raw HTTP request as `who`, with extra headers: (status code, response head, body).
    pub fn http_as(
        &self,
        who: Who<'_>,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, String, String) {
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        if let Who::Token(token) = who {
            request.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        request.push_str("\r\n");
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(body);
        let response = self.connector(who).send(&bytes);
        let code = response
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
        (code, head.to_string(), body.to_string())
    }

    /// What opens TLS connections to the server as `who` (certificates from the data dir).
    pub fn connector(&self, who: Who<'_>) -> Connector {
        let pki = self.dir.path().join("pki");
        let read = |file: &str| std::fs::read_to_string(pki.join(file)).unwrap();
        let identity = match who {
            Who::Admin => Some(kyb_pki::Credentials {
                cert_pem: read("admin.crt"),
                key_pem: read("admin.key"),
            }),
            Who::Anonymous | Who::Token(_) => None,
        };
        Connector {
            config: kyb_pki::tls::client_config(&read("ca.crt"), identity.as_ref()).unwrap(),
            port: self.port,
        }
    }

    /// Stops the server and hands back its data dir.
    pub fn stop(mut self) -> tempfile::TempDir {
        self.process.terminate().unwrap();
        assert!(self.process.wait_exit(DEADLINE).unwrap().success());
        self.dir
    }

    /// Runs kubectl against the cluster.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_command(args).output().unwrap()
    }

    pub fn kubectl_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("kubectl");
        command
            .env("KUBECONFIG", self.kubeconfig())
            .arg("--cache-dir")
            .arg(self.dir.path().join("kubectl-cache"))
            .args(args);
        command
    }

    /// Runs kubectl and returns its stdout, failing the test if it fails.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let output = self.kubectl(args);
        assert!(
            output.status.success(),
            "kubectl {} failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Runs kubectl with `input` on stdin, whatever its outcome.
    pub fn kubectl_input(&self, args: &[&str], input: &str) -> Output {
        use std::io::Write;
        let mut child = self
            .kubectl_command(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    /// Runs kubectl with `input` on stdin.
    pub fn kubectl_stdin(&self, args: &[&str], input: &str) -> String {
        let output = self.kubectl_input(args, input);
        assert!(
            output.status.success(),
            "kubectl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// A kubeconfig for `user` in `groups`, with a client certificate the test issues from
    /// the cluster's CA (as an administrator would for a new user).
    pub fn user_kubeconfig(&self, user: &str, groups: &[&str]) -> PathBuf {
        let pki = kyb_pki::ClientIssuer::open(&self.dir.path().join("pki")).unwrap();
        let file = format!("user-{}", user.replace(':', "-"));
        let credentials = pki.client(&file, user, groups).unwrap();
        self.write_kubeconfig(
            &file,
            user,
            &kyb_pki::kubeconfig::User::Certificate(&credentials),
        )
    }

    /// A kubeconfig authenticating with a client certificate and key the test holds.
    pub fn certificate_kubeconfig(
        &self,
        name: &str,
        credentials: &kyb_pki::Credentials,
    ) -> PathBuf {
        self.write_kubeconfig(
            &format!("cert-{name}"),
            name,
            &kyb_pki::kubeconfig::User::Certificate(credentials),
        )
    }

    /// A kubeconfig authenticating with a bearer token.
    pub fn token_kubeconfig(&self, name: &str, token: &str) -> PathBuf {
        self.write_kubeconfig(
            &format!("token-{name}"),
            name,
            &kyb_pki::kubeconfig::User::Token(token),
        )
    }

    fn write_kubeconfig(
        &self,
        file: &str,
        user: &str,
        credentials: &kyb_pki::kubeconfig::User<'_>,
    ) -> PathBuf {
        let ca = std::fs::read_to_string(self.dir.path().join("pki/ca.crt")).unwrap();
        let url = format!("https://127.0.0.1:{}", self.port);
        let path = self.dir.path().join(format!("{file}.kubeconfig"));
        let text = kyb_pki::kubeconfig::render(&url, &ca, user, credentials);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Runs kubectl with another kubeconfig.
    pub fn kubectl_as(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        let mut command = self.kubectl_command(args);
        command.env("KUBECONFIG", kubeconfig);
        command.output().unwrap()
    }

    pub fn write_file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }
}

/// Who a raw request is sent as.
#[derive(Clone, Copy)]
pub enum Who<'a> {
    /// The admin client certificate (`system:masters`).
    Admin,
    /// No credentials at all.
    Anonymous,
    /// A bearer token.
    Token(&'a str),
}

/// Opens TLS connections to the server with one identity.
#[derive(Clone)]
pub struct Connector {
    config: std::sync::Arc<rustls::ClientConfig>,
    port: u16,
}

impl Connector {
    /// Sends raw request bytes on a new connection and reads the response to its end
    /// (or to a read error, such as the deadline).
    pub fn send(&self, request: &[u8]) -> String {
        String::from_utf8_lossy(&self.send_bytes(request)).into_owned()
    }

    /// [`Self::send`], the response as bytes (protobuf bodies).
    pub fn send_bytes(&self, request: &[u8]) -> Vec<u8> {
        use std::io::{Read, Write};
        let socket = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        socket.set_read_timeout(Some(DEADLINE)).unwrap();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let connection = rustls::ClientConnection::new(self.config.clone(), name).unwrap();
        let mut stream = rustls::StreamOwned::new(connection, socket);
        stream.write_all(request).unwrap();
        stream.flush().unwrap();
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response);
        response
    }
}

/// The rows of `kubectl get` output, split into columns.
pub fn rows(output: &str) -> Vec<Vec<String>> {
    output
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

pub fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}
