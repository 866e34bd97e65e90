//! The documents against the real kubectl.
//!
//! A throwaway HTTP server on a loopback port serves plain (unaggregated) discovery, the
//! `/openapi/v3` documents from `kyb_openapi::Documents`, and just enough of the pods
//! resource for `kubectl create`. kubectl then explains fields from our schemas and
//! decides from our PATCH operations to ask for server-side field validation.
//! Skipped (with a note) when kubectl is not on the PATH.

use kyb_openapi::{Documents, ResourceSpec};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;

/// What the fake server knows and saw.
struct State {
    docs: Documents,
    port: u16,
    /// "METHOD target" of every request.
    requests: Mutex<Vec<String>>,
    /// The one pod `kubectl create`/`apply` made.
    pod: Mutex<Option<Value>>,
    /// Content type and body of every PATCH.
    patches: Mutex<Vec<(String, String)>>,
}

struct Server {
    port: u16,
    state: Arc<State>,
}

impl Server {
    fn requests(&self) -> Vec<String> {
        self.state
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }
}

struct Request {
    method: String,
    target: String,
    content_type: String,
    body: Vec<u8>,
}

fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut length = 0usize;
    let mut content_type = String::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            } else if name.eq_ignore_ascii_case("content-type") {
                content_type = value.trim().to_owned();
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        target,
        content_type,
        body,
    })
}

fn respond(stream: &mut TcpStream, status: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
    let _ = stream.flush();
}

fn resource_list(group_version: &str, resources: Value) -> Vec<u8> {
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
        .to_string()
        .into_bytes()
}

fn handle(mut stream: TcpStream, state: &State) {
    let (docs, port) = (&state.docs, state.port);
    let Some(request) = read_request(&mut stream) else {
        return;
    };
    if let Ok(mut log) = state.requests.lock() {
        log.push(format!("{} {}", request.method, request.target));
    }
    let (path, _query) = request
        .target
        .split_once('?')
        .unwrap_or((request.target.as_str(), ""));
    let all_verbs = json!([
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch"
    ]);
    let body: Option<Vec<u8>> = match (request.method.as_str(), path) {
        ("GET", "/api") => Some(
            json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": format!("127.0.0.1:{port}")}]})
                .to_string()
                .into_bytes(),
        ),
        ("GET", "/apis") => Some(
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [{"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}], "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]})
                .to_string()
                .into_bytes(),
        ),
        ("GET", "/api/v1") => Some(resource_list(
            "v1",
            json!([
                {"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod", "verbs": all_verbs, "shortNames": ["po"]},
                {"name": "pods/status", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": ["get", "patch", "update"]},
            ]),
        )),
        ("GET", "/apis/apps/v1") => Some(resource_list(
            "apps/v1",
            json!([{"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment", "verbs": all_verbs, "shortNames": ["deploy"]}]),
        )),
        ("GET", "/version") => Some(
            json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0", "platform": "linux/amd64"})
                .to_string()
                .into_bytes(),
        ),
        ("GET", "/openapi/v3") => Some(docs.v3_index().bytes().to_vec()),
        ("GET", p) if p.starts_with("/openapi/v3/") => p
            .strip_prefix("/openapi/v3/")
            .and_then(|key| docs.v3(key))
            .map(|d| d.bytes().to_vec()),
        ("POST", "/api/v1/namespaces/default/pods") => {
            let mut object: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            object["metadata"]["namespace"] = "default".into();
            object["metadata"]["uid"] = "00000000-0000-0000-0000-000000000001".into();
            object["metadata"]["resourceVersion"] = "1".into();
            respond(&mut stream, "201 Created", object.to_string().as_bytes());
            if let Ok(mut pod) = state.pod.lock() {
                *pod = Some(object);
            }
            return;
        }
        ("GET", "/api/v1/namespaces/default/pods/web") => state
            .pod
            .lock()
            .ok()
            .and_then(|p| p.clone())
            .map(|p| p.to_string().into_bytes()),
        ("PATCH", "/api/v1/namespaces/default/pods/web") => {
            if let Ok(mut patches) = state.patches.lock() {
                patches.push((
                    request.content_type.clone(),
                    String::from_utf8_lossy(&request.body).into_owned(),
                ));
            }
            state
                .pod
                .lock()
                .ok()
                .and_then(|p| p.clone())
                .map(|p| p.to_string().into_bytes())
        }
        _ => None,
    };
    match body {
        Some(body) => respond(&mut stream, "200 OK", &body),
        None => respond(
            &mut stream,
            "404 Not Found",
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})
                .to_string()
                .as_bytes(),
        ),
    }
}

fn start() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().expect("local address").port();
    let state = Arc::new(State {
        docs: Documents::new(
            kyb_api::registry::BUILTIN
                .iter()
                .map(ResourceSpec::of)
                .collect(),
        ),
        port,
        requests: Mutex::new(Vec::new()),
        pod: Mutex::new(None),
        patches: Mutex::new(Vec::new()),
    });
    let shared = Arc::clone(&state);
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let state = Arc::clone(&shared);
            thread::spawn(move || handle(stream, &state));
        }
    });
    Server { port, state }
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn kubectl(server: &Server, home: &std::path::Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut command = Command::new("kubectl");
    command
        .args(args)
        .arg(format!("--server=http://127.0.0.1:{}", server.port))
        .arg("--request-timeout=60s")
        .env("HOME", home)
        .env_remove("KUBECONFIG")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("run kubectl");
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input.as_bytes())
            .expect("write kubectl stdin");
    }
    child.wait_with_output().expect("wait for kubectl")
}

fn temp_home(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("kyb-openapi-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create a temporary HOME");
    dir
}

#[test]
fn kubectl_explain_reads_our_schemas() {
    if !kubectl_available() {
        eprintln!("kubectl is not on the PATH: skipping");
        return;
    }
    let server = start();
    let home = temp_home("explain");

    let out = kubectl(&server, &home, &["explain", "pod.spec.containers"], None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "kubectl failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("KIND:       Pod"), "{stdout}");
    assert!(stdout.contains("containers <[]Container>"), "{stdout}");
    assert!(
        stdout.contains("List of containers belonging to the pod."),
        "{stdout}"
    );
    assert!(stdout.contains("imagePullPolicy"), "{stdout}");

    let out = kubectl(
        &server,
        &home,
        &["explain", "deployments.spec.strategy"],
        None,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("GROUP:      apps"), "{stdout}");
    assert!(stdout.contains("rollingUpdate"), "{stdout}");

    let requests = server.requests();
    assert!(
        requests.iter().any(|r| r.starts_with("GET /openapi/v3?")),
        "{requests:?}"
    );
    assert!(
        requests
            .iter()
            .any(|r| r.starts_with("GET /openapi/v3/api/v1?hash=")),
        "{requests:?}"
    );
    let _ = std::fs::remove_dir_all(&home);
}

const POD: &str = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
    "spec": {"containers": [{"name": "web", "image": "nginx"}]}}"#;

#[test]
fn kubectl_asks_for_server_side_field_validation() {
    if !kubectl_available() {
        eprintln!("kubectl is not on the PATH: skipping");
        return;
    }
    let server = start();
    let home = temp_home("create");
    let out = kubectl(
        &server,
        &home,
        &["create", "-f", "-", "--namespace=default"],
        Some(POD),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "kubectl failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("pod/web created"), "{stdout}");
    let requests = server.requests();
    let create = requests
        .iter()
        .find(|r| r.starts_with("POST /api/v1/namespaces/default/pods"))
        .expect("a create request");
    assert!(create.contains("fieldValidation=Strict"), "{create}");
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn kubectl_apply_creates_with_field_validation() {
    if !kubectl_available() {
        eprintln!("kubectl is not on the PATH: skipping");
        return;
    }
    let server = start();
    let home = temp_home("apply");
    let out = kubectl(
        &server,
        &home,
        &["apply", "-f", "-", "--namespace=default"],
        Some(POD),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "kubectl failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("pod/web created"), "{stdout}");
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.starts_with("POST /api/v1/namespaces/default/pods")
                && r.contains("fieldManager=kubectl-client-side-apply")
                && r.contains("fieldValidation=Strict")),
        "{requests:?}"
    );
    assert!(
        !requests.iter().any(|r| r.starts_with("GET /openapi/v2")),
        "{requests:?}"
    );

    // Applying a change: kubectl computes a strategic merge patch from our schema.
    // With the containers' merge key it keeps the list order with a
    // $setElementOrder directive and sends only the changed container.
    let changed = POD.replace("\"nginx\"", "\"nginx:2\"");
    let out = kubectl(
        &server,
        &home,
        &["apply", "-f", "-", "--namespace=default"],
        Some(&changed),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "kubectl failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("pod/web configured"), "{stdout}");
    let patches = server
        .state
        .patches
        .lock()
        .map(|p| p.clone())
        .unwrap_or_default();
    let (content_type, body) = patches.first().expect("a PATCH request");
    assert_eq!(content_type, "application/strategic-merge-patch+json");
    let patch: Value = serde_json::from_str(body).expect("a JSON patch body");
    assert_eq!(
        patch["spec"]["$setElementOrder/containers"],
        json!([{"name": "web"}]),
        "{patch}"
    );
    assert_eq!(
        patch["spec"]["containers"],
        json!([{"image": "nginx:2", "name": "web"}]),
        "{patch}"
    );
    let _ = std::fs::remove_dir_all(&home);
}
