//! The API server's request stack driven in process, without a port: requests built here
//! go through every layer (request info, authentication, audit, impersonation, in-flight
//! limit, authorization, body limit) to the router and the REST engine, over a real
//! embedded store, and the tests read the answers as a client would. A resource added to
//! the registry of a running server is served as the built-in ones are.

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use kyb_api::registry::{Registry, Resource, ResourceDef, Subresource};
use kyb_apiserver::response::Response;
use kyb_apiserver::strategies::Untyped;
use kyb_apiserver::{ApiServer, Config, Connect, Security, Stack};
use kyb_serving::{Body, Connection, ResourceRequest, User};
use kyb_storage::{EmbeddedOptions, EmbeddedStore};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, mpsc};
use tower::ServiceExt;

mod health;
mod kubelet;
mod metrics;

struct InProcess {
    stack: Stack,
    engine: Arc<kyb_apiserver::engine::Engine>,
    registry: Arc<Registry>,
    store: Arc<EmbeddedStore>,
    _dir: tempfile::TempDir,
}

/// A bootstrapped server with `config`, and `connectors` registered, driven in process.
async fn server(
    config: Config,
    connectors: Vec<(&str, &str, &str, Arc<dyn Connect>)>,
) -> anyhow::Result<InProcess> {
    let dir = kyb_testkit::temp_dir("stack")?;
    let store = Arc::new(EmbeddedStore::open(
        &dir.path().join("db"),
        &EmbeddedOptions::default(),
    )?);
    let pki = kyb_pki::Pki::load_or_create(
        &dir.path().join("pki"),
        &kyb_apiserver::serving_names(&config),
    )?;
    let security = Security {
        tls: kyb_pki::tls::server_config(pki.serving(), pki.ca_pem())?,
        authenticator: Default::default(),
        admission: kyb_apiserver::admission::Chain::default_plugins(),
        auditor: None,
        ca_pem: pki.ca_pem().to_string(),
    };
    let mut server = ApiServer::in_process(store.clone(), config, security).await?;
    anyhow::ensure!(
        server.local_addr().is_err(),
        "an in-process server has no port"
    );
    for (group, resource, subresource, handler) in connectors {
        server.connect(group, resource, subresource, handler);
    }
    tokio::time::timeout(Duration::from_secs(30), server.bootstrap()).await?;
    Ok(InProcess {
        stack: server.stack(),
        engine: server.engine(),
        registry: server.registry(),
        store,
        _dir: dir,
    })
}

/// A request from a client whose certificate named `user` in `groups`.
fn request_as(
    user: Option<(&str, &[&str])>,
    method: Method,
    path: &str,
    body: Body,
) -> Request<Body> {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .body(body)
        .expect("a valid request");
    let certificate = user.map(|(name, groups)| {
        let mut groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        groups.push("system:authenticated".into());
        Arc::new(User {
            name: name.into(),
            groups,
            ..User::default()
        })
    });
    request.extensions_mut().insert(Connection {
        peer: None,
        certificate,
    });
    request
}

const ADMIN: Option<(&str, &[&str])> = Some(("admin", &["system:masters"]));

async fn send(stack: &Stack, request: Request<Body>) -> anyhow::Result<(StatusCode, Value)> {
    let (status, bytes) = send_raw(stack, request).await?;
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok((status, value))
}

/// The answer's status and body as bytes.
async fn send_raw(stack: &Stack, request: Request<Body>) -> anyhow::Result<(StatusCode, Bytes)> {
    let response = stack.clone().oneshot(request).await?;
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|never| anyhow::anyhow!("{never:?}"))?
        .to_bytes();
    Ok((status, bytes))
}

#[tokio::test]
async fn requests_pass_authentication_and_authorization_in_process() -> anyhow::Result<()> {
    let server = server(Config::default(), Vec::new()).await?;
    let stack = &server.stack;

    // No credential: anonymous, which RBAC lets read health but not namespaces.
    let (code, _) = send(
        stack,
        request_as(None, Method::GET, "/healthz", Body::empty()),
    )
    .await?;
    assert_eq!(code, StatusCode::OK);
    let (code, status) = send(
        stack,
        request_as(None, Method::GET, "/api/v1/namespaces", Body::empty()),
    )
    .await?;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "namespaces is forbidden: User \"system:anonymous\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
    );

    // A bearer token nobody issued is refused outright.
    let mut request = request_as(None, Method::GET, "/api/v1/namespaces", Body::empty());
    request
        .headers_mut()
        .insert(http::header::AUTHORIZATION, "Bearer nonsense".parse()?);
    let (code, status) = send(stack, request).await?;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    assert_eq!(status["reason"], "Unauthorized");

    // The admin's certificate: the default namespaces bootstrap created.
    let (code, list) = send(
        stack,
        request_as(ADMIN, Method::GET, "/api/v1/namespaces", Body::empty()),
    )
    .await?;
    assert_eq!(code, StatusCode::OK);
    let names: Vec<&str> = list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    for expected in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }

    // Impersonation: the admin acting as bob gets bob's answer.
    let mut request = request_as(ADMIN, Method::GET, "/api/v1/namespaces", Body::empty());
    request
        .headers_mut()
        .insert("impersonate-user", "bob".parse()?);
    let (code, status) = send(stack, request).await?;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("User \"bob\"")),
        "{status}"
    );

    // A write goes through admission and storage, and reads back.
    let body = Body::full(
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"in-process"},"data":{"a":"b"}}"#,
    );
    let mut request = request_as(
        ADMIN,
        Method::POST,
        "/api/v1/namespaces/default/configmaps",
        body,
    );
    request
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, "application/json".parse()?);
    let (code, created) = send(stack, request).await?;
    assert_eq!(code, StatusCode::CREATED, "{created}");
    let (code, read) = send(
        stack,
        request_as(
            ADMIN,
            Method::GET,
            "/api/v1/namespaces/default/configmaps/in-process",
            Body::empty(),
        ),
    )
    .await?;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(read["data"]["a"], "b");
    assert_eq!(read["metadata"]["uid"], created["metadata"]["uid"]);
    Ok(())
}

#[tokio::test]
async fn bodies_over_the_limit_are_refused_declared_or_streamed() -> anyhow::Result<()> {
    let config = Config {
        max_body_bytes: 1024,
        ..Config::default()
    };
    let server = server(config, Vec::new()).await?;
    let path = "/api/v1/namespaces/default/configmaps";
    let large = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"large"}},"data":{{"a":"{}"}}}}"#,
        "x".repeat(2048)
    );

    // Declared: refused before the handler reads anything.
    let mut request = request_as(ADMIN, Method::POST, path, Body::full(large.clone()));
    request.headers_mut().insert(
        http::header::CONTENT_LENGTH,
        large.len().to_string().parse()?,
    );
    let (code, status) = send(&server.stack, request).await?;
    assert_eq!(code, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(status["message"], "Request entity too large: limit is 1024");

    // Streamed without a length: refused as it grows past the limit.
    let (sender, receiver) = mpsc::channel::<Bytes>(4);
    let request = request_as(ADMIN, Method::POST, path, Body::new(ChannelBody(receiver)));
    let feed = tokio::spawn(async move {
        for chunk in large.as_bytes().chunks(256) {
            if sender.send(Bytes::copy_from_slice(chunk)).await.is_err() {
                break;
            }
        }
    });
    let (code, _) = send(&server.stack, request).await?;
    assert_eq!(code, StatusCode::PAYLOAD_TOO_LARGE);
    feed.await?;

    // Nothing was stored.
    let (code, _) = send(
        &server.stack,
        request_as(
            ADMIN,
            Method::GET,
            "/api/v1/namespaces/default/configmaps/large",
            Body::empty(),
        ),
    )
    .await?;
    assert_eq!(code, StatusCode::NOT_FOUND);
    Ok(())
}

/// Echoes a request's body back frame by frame, as it arrives.
struct Echo;

impl Connect for Echo {
    fn connect(
        &self,
        _engine: Arc<kyb_apiserver::engine::Engine>,
        user: Arc<User>,
        target: ResourceRequest,
        request: Request<Body>,
    ) -> Pin<Box<dyn Future<Output = Response> + Send>> {
        Box::pin(async move {
            let mut body = request.into_body();
            let (sender, response) = kyb_apiserver::response::stream();
            tokio::spawn(async move {
                let greeting = format!(
                    "{} {}/{}\n",
                    user.name,
                    target.resource,
                    target.name.unwrap_or_default()
                );
                let _ = sender.send(Bytes::from(greeting)).await;
                while let Some(Ok(frame)) = body.frame().await {
                    if let Ok(data) = frame.into_data()
                        && sender.send(data).await.is_err()
                    {
                        return;
                    }
                }
            });
            response
        })
    }
}

/// Holds every request until told to answer.
/// A handler that says when it has started (`entered`) and then waits for `release`.
struct Hold {
    entered: Arc<Notify>,
    release: Arc<Notify>,
}

impl Connect for Hold {
    fn connect(
        &self,
        _engine: Arc<kyb_apiserver::engine::Engine>,
        _user: Arc<User>,
        _target: ResourceRequest,
        _request: Request<Body>,
    ) -> Pin<Box<dyn Future<Output = Response> + Send>> {
        let (entered, release) = (self.entered.clone(), self.release.clone());
        Box::pin(async move {
            entered.notify_one();
            release.notified().await;
            kyb_apiserver::response::stream().1
        })
    }
}

#[tokio::test]
async fn connect_handlers_stream_and_long_running_ones_are_not_counted_in_flight()
-> anyhow::Result<()> {
    let release = Arc::new(Notify::new());
    let entered = Arc::new(Notify::new());
    let config = Config {
        max_requests_in_flight: 1,
        priority_and_fairness: false,
        ..Config::default()
    };
    let server = server(
        config,
        vec![
            ("", "pods", "exec", Arc::new(Echo) as Arc<dyn Connect>),
            (
                "",
                "pods",
                "hold",
                Arc::new(Hold {
                    entered: entered.clone(),
                    release: release.clone(),
                }),
            ),
        ],
    )
    .await?;
    let stack = &server.stack;

    // Streamed both ways: each chunk comes back before the next one is sent.
    let (sender, receiver) = mpsc::channel::<Bytes>(1);
    let request = request_as(
        ADMIN,
        Method::POST,
        "/api/v1/namespaces/default/pods/web/exec",
        Body::new(ChannelBody(receiver)),
    );
    let response = stack.clone().oneshot(request).await?;
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut next = async || -> anyhow::Result<Bytes> {
        let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await?
            .ok_or_else(|| anyhow::anyhow!("the stream ended"))?
            .map_err(|never| anyhow::anyhow!("{never:?}"))?;
        frame.into_data().map_err(|_| anyhow::anyhow!("not data"))
    };
    assert_eq!(next().await?, "admin pods/web\n");
    for chunk in ["one", "two", "three"] {
        sender.send(Bytes::from(chunk)).await?;
        assert_eq!(next().await?, chunk);
    }
    drop(sender);

    // One request in flight takes the only slot: the next is refused with 429, while an
    // exec (long-running) and a health check (not a resource) still get through.
    let held = tokio::spawn({
        let stack = stack.clone();
        async move {
            stack
                .oneshot(request_as(
                    ADMIN,
                    Method::GET,
                    "/api/v1/namespaces/default/pods/web/hold",
                    Body::empty(),
                ))
                .await
        }
    });
    // Once its handler runs, the held request has the slot (no other request is in flight).
    tokio::time::timeout(Duration::from_secs(10), entered.notified())
        .await
        .map_err(|_| anyhow::anyhow!("the held request never reached its handler"))?;
    let (code, status) = send(
        stack,
        request_as(ADMIN, Method::GET, "/api/v1/namespaces", Body::empty()),
    )
    .await?;
    assert_eq!(code, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        status["message"],
        "Too many requests, please try again later."
    );
    let response = stack
        .clone()
        .oneshot(request_as(
            ADMIN,
            Method::POST,
            "/api/v1/namespaces/default/pods/web/exec",
            Body::empty(),
        ))
        .await?;
    assert_eq!(response.status(), StatusCode::OK);
    let (code, _) = send(
        stack,
        request_as(None, Method::GET, "/readyz", Body::empty()),
    )
    .await?;
    assert_eq!(code, StatusCode::OK);

    release.notify_one();
    assert_eq!(held.await??.status(), StatusCode::OK);
    let (code, _) = send(
        stack,
        request_as(ADMIN, Method::GET, "/api/v1/namespaces", Body::empty()),
    )
    .await?;
    assert_eq!(code, StatusCode::OK);
    Ok(())
}

/// A request body fed chunk by chunk through a channel, with no declared length.
struct ChannelBody(mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        self.get_mut()
            .0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| Ok(http_body::Frame::data(c))))
    }
}

/// A request as the admin with a JSON body of `content_type`.
fn admin_json(method: Method, path: &str, body: &Value, content_type: &str) -> Request<Body> {
    let mut request = request_as(ADMIN, method, path, Body::full(body.to_string()));
    if let Ok(value) = content_type.parse() {
        request
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, value);
    }
    request
}

fn admin_get(path: &str) -> Request<Body> {
    request_as(ADMIN, Method::GET, path, Body::empty())
}

/// The next watch event of a streamed response body.
async fn next_event(body: &mut kyb_apiserver::response::Body) -> anyhow::Result<Value> {
    let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
        .await?
        .ok_or_else(|| anyhow::anyhow!("the watch ended"))?
        .map_err(|never| anyhow::anyhow!("{never:?}"))?;
    let data = frame
        .into_data()
        .map_err(|_| anyhow::anyhow!("not a data frame"))?;
    Ok(serde_json::from_slice(&data)?)
}

/// The names a discovery document lists under `field` of each of `items`.
fn names(items: &Value, field: &str) -> Vec<String> {
    items
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i[field].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_resource_added_at_run_time_is_served_until_removed() -> anyhow::Result<()> {
    let server = server(Config::default(), Vec::new()).await?;
    let stack = &server.stack;
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let (code, _) = send(stack, admin_get(widgets)).await?;
    assert_eq!(code, StatusCode::NOT_FOUND, "not served before it is added");

    // A namespaced kind without a type, with a status subresource: a custom resource's
    // definition and the generic strategy.
    let def = ResourceDef {
        subresources: std::borrow::Cow::Borrowed(&[Subresource::Status]),
        short_names: vec!["wd".into()].into(),
        ..ResourceDef::custom("example.com", "v1", "Widget", "widgets", true)
    };
    let strategy = Arc::new(Untyped::of(def.clone(), None));
    server.registry.add(Resource::new(def, strategy))?;

    // Create, get, list.
    let widget = serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "labels": {"app": "demo"}},
        "spec": {"size": 1, "anything": ["goes", 1]},
        "status": {"ready": true},
    });
    let (code, created) = send(
        stack,
        admin_json(Method::POST, widgets, &widget, "application/json"),
    )
    .await?;
    assert_eq!(code, StatusCode::CREATED, "{created}");
    assert_eq!(created["spec"]["anything"], serde_json::json!(["goes", 1]));
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created["metadata"]["namespace"], "default");
    let (code, read) = send(stack, admin_get(&format!("{widgets}/w1"))).await?;
    assert_eq!(code, StatusCode::OK, "{read}");
    assert_eq!(read["metadata"]["uid"], created["metadata"]["uid"]);
    let (code, list) = send(
        stack,
        admin_get(&format!("{widgets}?labelSelector=app%3Ddemo")),
    )
    .await?;
    assert_eq!(code, StatusCode::OK, "{list}");
    assert_eq!(list["kind"], "WidgetList");
    let listed: Vec<&str> = list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(listed, vec!["w1"]);
    let (code, all) = send(stack, admin_get("/apis/example.com/v1/widgets")).await?;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(all["items"].as_array().map(Vec::len), Some(1));

    // A watch from the list's revision sees what follows.
    let revision = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let watch = stack
        .clone()
        .oneshot(admin_get(&format!(
            "{widgets}?watch=true&resourceVersion={revision}"
        )))
        .await?;
    assert_eq!(watch.status(), StatusCode::OK);
    let mut events = watch.into_body();

    // A merge patch changes the spec (and the generation); strategic merge patch needs a
    // type, which this kind has not.
    let patch = serde_json::json!({"spec": {"size": 2}, "status": {"ready": false}});
    let (code, patched) = send(
        stack,
        admin_json(
            Method::PATCH,
            &format!("{widgets}/w1"),
            &patch,
            "application/merge-patch+json",
        ),
    )
    .await?;
    assert_eq!(code, StatusCode::OK, "{patched}");
    assert_eq!(patched["spec"]["size"], 2);
    assert_eq!(patched["metadata"]["generation"], 2);
    assert_eq!(
        patched["status"],
        serde_json::json!({"ready": true}),
        "status only changes through /status"
    );
    let (code, _) = send(
        stack,
        admin_json(
            Method::PATCH,
            &format!("{widgets}/w1"),
            &patch,
            "application/strategic-merge-patch+json",
        ),
    )
    .await?;
    assert_eq!(code, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let event = next_event(&mut events).await?;
    assert_eq!(event["type"], "MODIFIED");
    assert_eq!(event["object"]["spec"]["size"], 2);

    // The status subresource.
    let (code, status) = send(
        stack,
        admin_json(
            Method::PATCH,
            &format!("{widgets}/w1/status"),
            &serde_json::json!({"status": {"ready": false}, "spec": {"size": 9}}),
            "application/merge-patch+json",
        ),
    )
    .await?;
    assert_eq!(code, StatusCode::OK, "{status}");
    assert_eq!(status["status"]["ready"], false);
    assert_eq!(
        status["spec"]["size"], 2,
        "the spec does not change through /status"
    );
    let (code, status) = send(stack, admin_get(&format!("{widgets}/w1/status"))).await?;
    assert_eq!(
        (code, &status["status"]["ready"]),
        (StatusCode::OK, &Value::Bool(false))
    );
    let event = next_event(&mut events).await?;
    assert_eq!(event["type"], "MODIFIED");
    assert_eq!(event["object"]["status"]["ready"], false);

    // Discovery lists it: plain and aggregated; OpenAPI describes it.
    let (_, groups) = send(stack, admin_get("/apis")).await?;
    assert!(names(&groups["groups"], "name").contains(&"example.com".to_string()));
    let (code, resources) = send(stack, admin_get("/apis/example.com/v1")).await?;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(
        names(&resources["resources"], "name"),
        vec!["widgets", "widgets/status"]
    );
    assert_eq!(
        resources["resources"][0]["shortNames"],
        serde_json::json!(["wd"])
    );
    let mut aggregated = admin_get("/apis");
    aggregated.headers_mut().insert(
        http::header::ACCEPT,
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList".parse()?,
    );
    let (_, aggregated) = send(stack, aggregated).await?;
    let group = aggregated["items"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .find(|i| i["metadata"]["name"] == "example.com")
        })
        .cloned()
        .unwrap_or_default();
    assert_eq!(group["versions"][0]["resources"][0]["resource"], "widgets");
    let (_, index) = send(stack, admin_get("/openapi/v3")).await?;
    assert!(
        index["paths"].get("apis/example.com/v1").is_some(),
        "{index}"
    );

    // Delete.
    let (code, deleted) = send(
        stack,
        request_as(
            ADMIN,
            Method::DELETE,
            &format!("{widgets}/w1"),
            Body::empty(),
        ),
    )
    .await?;
    assert_eq!(code, StatusCode::OK, "{deleted}");
    let event = next_event(&mut events).await?;
    assert_eq!(event["type"], "DELETED");
    let (code, _) = send(stack, admin_get(&format!("{widgets}/w1"))).await?;
    assert_eq!(code, StatusCode::NOT_FOUND);
    let (code, _) = send(
        stack,
        admin_json(Method::POST, widgets, &widget, "application/json"),
    )
    .await?;
    assert_eq!(code, StatusCode::CREATED);
    let event = next_event(&mut events).await?;
    assert_eq!(event["type"], "ADDED");

    // Removed: not served, not listed, its watches end.
    assert!(
        server
            .registry
            .remove("example.com", "v1", "widgets")
            .is_some()
    );
    for path in [
        widgets.to_string(),
        format!("{widgets}/w1"),
        format!("{widgets}/w1/status"),
    ] {
        let (code, _) = send(stack, admin_get(&path)).await?;
        assert_eq!(code, StatusCode::NOT_FOUND, "{path}");
    }
    let (code, _) = send(
        stack,
        admin_json(Method::POST, widgets, &widget, "application/json"),
    )
    .await?;
    assert_eq!(code, StatusCode::NOT_FOUND);
    let (_, groups) = send(stack, admin_get("/apis")).await?;
    assert!(!names(&groups["groups"], "name").contains(&"example.com".to_string()));
    let (code, _) = send(stack, admin_get("/apis/example.com/v1")).await?;
    assert_eq!(code, StatusCode::NOT_FOUND);
    let mut aggregated = admin_get("/apis");
    aggregated.headers_mut().insert(
        http::header::ACCEPT,
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList".parse()?,
    );
    let (_, aggregated) = send(stack, aggregated).await?;
    let listed = aggregated["items"]
        .as_array()
        .is_some_and(|items| items.iter().any(|i| i["metadata"]["name"] == "example.com"));
    assert!(!listed);
    let (_, index) = send(stack, admin_get("/openapi/v3")).await?;
    assert!(index["paths"].get("apis/example.com/v1").is_none());
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match events.frame().await {
                None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the watch of a removed resource ends");

    // Added again: its objects, still stored, are served again.
    let def = ResourceDef::custom("example.com", "v1", "Widget", "widgets", true);
    let strategy = Arc::new(Untyped::of(def.clone(), None));
    server.registry.add(Resource::new(def, strategy))?;
    let (code, list) = send(stack, admin_get(widgets)).await?;
    assert_eq!(code, StatusCode::OK, "{list}");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1));
    Ok(())
}

#[tokio::test]
async fn an_exact_list_at_a_compacted_revision_is_expired() -> anyhow::Result<()> {
    use kyb_storage::Store;
    let server = server(Config::default(), Vec::new()).await?;
    let stack = &server.stack;
    let path = "/api/v1/namespaces/default/configmaps";
    let (code, created) = send(
        stack,
        admin_json(
            Method::POST,
            path,
            &serde_json::json!({"metadata": {"name": "a"}}),
            "application/json",
        ),
    )
    .await?;
    assert_eq!(code, StatusCode::CREATED, "{created}");
    let old = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (code, _) = send(
        stack,
        admin_json(
            Method::POST,
            path,
            &serde_json::json!({"metadata": {"name": "b"}}),
            "application/json",
        ),
    )
    .await?;
    assert_eq!(code, StatusCode::CREATED);
    let current = server.store.current_revision().await?;
    server.store.compact(current).await?;
    let exact = format!("{path}?resourceVersion={old}&resourceVersionMatch=Exact");
    let (code, status) = send(stack, admin_get(&exact)).await?;
    assert_eq!(code, StatusCode::GONE, "{status}");
    assert_eq!(status["reason"], "Expired");
    assert_eq!(
        status["message"],
        "The resourceVersion for the provided list is too old."
    );
    Ok(())
}
