//! Protobuf responses and content negotiation against a real `kyb server`, over raw HTTPS:
//! objects, lists, failures, metadata-only lists and watch streams asked for as
//! `application/vnd.kubernetes.protobuf`, read back with `kyb-protobuf`; mixed and
//! weighted `Accept` lists; 406 where nothing acceptable can be given (Tables of the
//! reviews, protobuf of custom resources, media types the server has not).

use crate::cluster::{Cluster, Who};
use serde_json::{Value, json};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A response: status code, the head's headers (lower-cased names), the body.
struct Reply {
    code: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or_default()
    }

    /// The body as protobuf (asserting the Content-Type says so).
    fn protobuf(&self) -> Value {
        assert_eq!(self.content_type(), PROTOBUF, "{}", self.text());
        kyb_protobuf::decode(&self.body)
            .unwrap_or_else(|e| panic!("not a protobuf body ({e}): {:?}", self.body))
    }

    /// The body as JSON (asserting the Content-Type says so).
    fn json(&self) -> Value {
        assert_eq!(self.content_type(), "application/json", "{}", self.text());
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.text()))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Undoes HTTP/1.1 chunked transfer coding.
fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = std::str::from_utf8(&data[..end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next()?.trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = end + 2;
        out.extend_from_slice(&data[start..start + size]);
        data = &data[start + size + 2..];
    }
}

/// A request as the admin with the given headers.
fn request(
    cluster: &Cluster,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut text = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(body);
    let response = cluster.connector(Who::Admin).send_bytes(&bytes);
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let mut lines = head.lines();
    let code = lines
        .next()
        .and_then(|status| status.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let raw = &response[split + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(raw) } else { raw.to_vec() };
    Reply {
        code,
        headers,
        body,
    }
}

fn get(cluster: &Cluster, path: &str, accept: &str) -> Reply {
    request(cluster, "GET", path, &[("Accept", accept)], b"")
}

/// The events of a protobuf watch stream: (type, object).
fn frames(mut stream: &[u8]) -> Vec<(String, Value)> {
    let mut events = Vec::new();
    while stream.len() >= 4 {
        let (len, rest) = stream.split_at(4);
        let len = u32::from_be_bytes(len.try_into().unwrap()) as usize;
        assert!(rest.len() >= len, "a truncated frame");
        let (payload, rest) = rest.split_at(len);
        let event = kyb_protobuf::decode_object("v1", "WatchEvent", payload)
            .unwrap_or_else(|e| panic!("not a WatchEvent ({e})"));
        events.push((
            event["type"].as_str().unwrap().to_string(),
            event["object"].clone(),
        ));
        stream = rest;
    }
    assert!(stream.is_empty(), "trailing bytes after the last frame");
    events
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

#[test]
fn objects_lists_and_failures_in_protobuf() {
    let cluster = Cluster::start();
    // Create, answered in protobuf.
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "labels": {"app": "pb"}}, "data": {"mode": "fast"}});
    let created = request(
        &cluster,
        "POST",
        CONFIGMAPS,
        &[("Content-Type", "application/json"), ("Accept", PROTOBUF)],
        body.to_string().as_bytes(),
    );
    assert_eq!(created.code, 201, "{}", created.text());
    let created = created.protobuf();
    assert_eq!(created["kind"], "ConfigMap");
    assert_eq!(created["data"], json!({"mode": "fast"}));
    assert!(created["metadata"]["uid"].is_string());

    // A protobuf request body, answered in protobuf too.
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "pb"}},
        "spec": {"containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]}]}});
    let created_pod = request(
        &cluster,
        "POST",
        "/api/v1/namespaces/default/pods",
        &[("Content-Type", PROTOBUF), ("Accept", PROTOBUF)],
        &kyb_protobuf::encode(&pod).unwrap(),
    );
    assert_eq!(created_pod.code, 201, "{}", created_pod.text());
    assert_eq!(
        created_pod.protobuf()["spec"]["containers"][0]["ports"][0]["containerPort"],
        80
    );

    // A get: the same object as the JSON answer.
    let path = format!("{CONFIGMAPS}/settings");
    let as_json = get(&cluster, &path, "application/json").json();
    let as_protobuf = get(&cluster, &path, PROTOBUF).protobuf();
    assert_eq!(as_protobuf, as_json);
    // The scheduler may write the pod's status between two reads (no node can take it):
    // compare two reads of the same version.
    let pod_path = "/api/v1/namespaces/default/pods/web";
    let (pod_protobuf, pod_json) =
        crate::poll::blocking_wait_for("two reads of one version", || {
            let protobuf = get(&cluster, pod_path, PROTOBUF).protobuf();
            let json = get(&cluster, pod_path, "application/json").json();
            (protobuf["metadata"]["resourceVersion"] == json["metadata"]["resourceVersion"])
                .then_some((protobuf, json))
        });
    assert_eq!(pod_protobuf, pod_json);

    // A list (the watch-cache path), a list of another kind, and a paginated one.
    let list = get(
        &cluster,
        &format!("{CONFIGMAPS}?labelSelector=app%3Dpb"),
        PROTOBUF,
    )
    .protobuf();
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["apiVersion"], "v1");
    assert!(list["metadata"]["resourceVersion"].is_string());
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1));
    // Items carry no apiVersion and kind in protobuf (their type is the list's).
    let mut item = as_json.clone();
    item.as_object_mut()
        .unwrap()
        .retain(|k, _| k != "apiVersion" && k != "kind");
    assert_eq!(list["items"][0], item);
    let pods = get(&cluster, "/api/v1/pods", PROTOBUF).protobuf();
    assert_eq!(pods["kind"], "PodList");
    assert_eq!(pods["items"][0]["metadata"]["name"], "web");
    let page = get(&cluster, "/api/v1/namespaces?limit=1", PROTOBUF).protobuf();
    assert_eq!(page["items"].as_array().map(Vec::len), Some(1));
    assert!(page["metadata"]["continue"].is_string(), "{page}");
    let empty = get(
        &cluster,
        "/api/v1/namespaces/default/secrets?labelSelector=none%3Dhere",
        PROTOBUF,
    )
    .protobuf();
    assert_eq!(empty["kind"], "SecretList");
    assert!(
        empty.get("items").is_none_or(|i| i == &json!([])),
        "{empty}"
    );

    // Failures are protobuf Status objects for protobuf clients.
    let missing = get(&cluster, &format!("{CONFIGMAPS}/missing"), PROTOBUF);
    assert_eq!(missing.code, 404);
    let status = missing.protobuf();
    assert_eq!(
        (status["kind"].as_str(), status["apiVersion"].as_str()),
        (Some("Status"), Some("v1"))
    );
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["message"], "configmaps \"missing\" not found");
    assert_eq!(status["code"], 404);
    assert_eq!(
        status["details"],
        json!({"name": "missing", "kind": "configmaps"})
    );

    // Mixed and weighted Accept lists.
    let mixed = get(
        &cluster,
        &path,
        "application/vnd.kubernetes.protobuf, application/json",
    );
    assert_eq!(mixed.protobuf(), as_json);
    let weighted = get(
        &cluster,
        &path,
        "application/vnd.kubernetes.protobuf;q=0.5, application/json;q=0.9",
    );
    assert_eq!(weighted.json(), as_json);
    assert_eq!(get(&cluster, &path, "*/*").json(), as_json);
    assert_eq!(get(&cluster, &path, "application/*").json(), as_json);
    let yaml = get(&cluster, &path, "application/yaml");
    assert_eq!(yaml.code, 200);
    assert_eq!(yaml.content_type(), "application/yaml");
    assert!(yaml.text().contains("mode: fast"), "{}", yaml.text());

    // Nothing acceptable: 406, written as JSON.
    let refused = get(&cluster, &path, "text/html, image/*");
    assert_eq!(refused.code, 406);
    let status = refused.json();
    assert_eq!(status["reason"], "NotAcceptable");
    assert_eq!(
        status["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );

    // Metadata only, in protobuf, as client-go's metadata client asks for it.
    let metadata = get(
        &cluster,
        &format!("{CONFIGMAPS}?labelSelector=app%3Dpb"),
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
    )
    .protobuf();
    assert_eq!(
        (metadata["kind"].as_str(), metadata["apiVersion"].as_str()),
        (Some("PartialObjectMetadataList"), Some("meta.k8s.io/v1"))
    );
    assert_eq!(metadata["items"][0]["metadata"], as_json["metadata"]);
    assert!(metadata["items"][0].get("data").is_none());
    let one = get(
        &cluster,
        &path,
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    )
    .protobuf();
    assert_eq!(one["kind"], "PartialObjectMetadata");
    assert_eq!(one["metadata"]["name"], "settings");

    // A Table has no protobuf form: the next acceptable clause, else 406.
    let table_or_json = get(
        &cluster,
        CONFIGMAPS,
        "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json",
    )
    .json();
    assert_eq!(table_or_json["kind"], "ConfigMapList");
    let table_only = get(
        &cluster,
        CONFIGMAPS,
        "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
    );
    assert_eq!(table_only.code, 406, "{}", table_only.text());

    // Subresources: a scale in protobuf.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    let (code, text) = cluster.http(
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        "application/json",
        deployment.to_string().as_bytes(),
    );
    assert_eq!(code, 201, "{text}");
    let scale = get(
        &cluster,
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
        PROTOBUF,
    )
    .protobuf();
    assert_eq!(
        (scale["kind"].as_str(), scale["apiVersion"].as_str()),
        (Some("Scale"), Some("autoscaling/v1"))
    );
    assert_eq!(scale["spec"]["replicas"], 2);

    // Custom (untyped) resources have no protobuf form: JSON when acceptable, else 406.
    let podgroups = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups";
    let custom = get(
        &cluster,
        podgroups,
        "application/vnd.kubernetes.protobuf, application/json",
    );
    assert_eq!(custom.code, 200, "{}", custom.text());
    assert_eq!(custom.json()["kind"], "PodGroupList");
    assert_eq!(get(&cluster, podgroups, PROTOBUF).code, 406);

    // A delete answered in protobuf: the Status of a deleted ConfigMap.
    let deleted = request(&cluster, "DELETE", &path, &[("Accept", PROTOBUF)], b"");
    assert_eq!(deleted.code, 200, "{}", deleted.text());
    let status = deleted.protobuf();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Success");
    assert_eq!(status["details"]["name"], "settings");
}

#[test]
fn watch_streams_in_protobuf() {
    let cluster = Cluster::start();
    let list = get(&cluster, CONFIGMAPS, "application/json").json();
    let since = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    // Create, change and delete a ConfigMap, then watch from before the creation: the
    // events come from the cache's window, and the watch ends at its timeout.
    let body = json!({"metadata": {"name": "watched"}, "data": {"a": "1"}});
    let (code, text) = cluster.http(
        "POST",
        CONFIGMAPS,
        "application/json",
        body.to_string().as_bytes(),
    );
    assert_eq!(code, 201, "{text}");
    let (code, text) = cluster.http(
        "PATCH",
        &format!("{CONFIGMAPS}/watched"),
        "application/merge-patch+json",
        br#"{"data":{"a":"2"}}"#,
    );
    assert_eq!(code, 200, "{text}");
    let (code, text) = cluster.http(
        "DELETE",
        &format!("{CONFIGMAPS}/watched"),
        "application/json",
        b"",
    );
    assert_eq!(code, 200, "{text}");

    let watch = get(
        &cluster,
        &format!("{CONFIGMAPS}?watch=1&resourceVersion={since}&timeoutSeconds=1"),
        "application/vnd.kubernetes.protobuf;stream=watch",
    );
    assert_eq!(watch.code, 200);
    assert_eq!(
        watch.content_type(),
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    assert_eq!(watch.header("cache-control"), Some("no-cache, private"));
    let events = frames(&watch.body);
    let seen: Vec<(&str, &str, Option<&str>)> = events
        .iter()
        .map(|(kind, object)| {
            (
                kind.as_str(),
                object["metadata"]["name"].as_str().unwrap(),
                object["data"]["a"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("ADDED", "watched", Some("1")),
            ("MODIFIED", "watched", Some("2")),
            ("DELETED", "watched", Some("2")),
        ]
    );
    assert!(
        events
            .iter()
            .all(|(_, o)| o["kind"] == "ConfigMap" && o["apiVersion"] == "v1")
    );

    // The same watch as JSON lines sees the same objects.
    let json_watch = get(
        &cluster,
        &format!("{CONFIGMAPS}?watch=1&resourceVersion={since}&timeoutSeconds=1"),
        "application/json;stream=watch",
    );
    assert_eq!(json_watch.content_type(), "application/json");
    let lines: Vec<Value> = json_watch
        .text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let from_json: Vec<(String, Value)> = lines
        .iter()
        .map(|l| (l["type"].as_str().unwrap().to_string(), l["object"].clone()))
        .collect();
    assert_eq!(from_json, events);

    // Initial events, then the bookmark that ends them.
    let initial = get(
        &cluster,
        "/api/v1/namespaces?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1",
        PROTOBUF,
    );
    let events = frames(&initial.body);
    let (last, bookmark) = events.last().expect("events");
    assert_eq!(last, "BOOKMARK");
    assert_eq!(bookmark["kind"], "Namespace");
    assert_eq!(
        bookmark["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    let added: Vec<&str> = events
        .iter()
        .filter(|(kind, _)| kind == "ADDED")
        .map(|(_, o)| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(
        added.contains(&"default") && added.contains(&"kube-system"),
        "{added:?}"
    );

    // YAML has no stream form.
    let yaml = get(
        &cluster,
        &format!("{CONFIGMAPS}?watch=1&timeoutSeconds=1"),
        "application/yaml",
    );
    assert_eq!(yaml.code, 406, "{}", yaml.text());
}

#[test]
fn tables_only_where_kubernetes_has_them() {
    let cluster = Cluster::start();
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}});
    // A review has no table conversion: asked for a Table alone, 406 Not Acceptable.
    let refused = request(
        &cluster,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &[("Content-Type", "application/json"), ("Accept", table)],
        review.to_string().as_bytes(),
    );
    assert_eq!(refused.code, 406, "{}", refused.text());
    assert_eq!(refused.json()["reason"], "NotAcceptable");
    // With kubectl's fallback to the object, the review itself.
    let answered = request(
        &cluster,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &[
            ("Content-Type", "application/json"),
            (
                "Accept",
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
            ),
        ],
        review.to_string().as_bytes(),
    );
    assert_eq!(answered.code, 201, "{}", answered.text());
    let answered = answered.json();
    assert_eq!(answered["kind"], "SelfSubjectAccessReview");
    assert_eq!(answered["status"]["allowed"], true);
    // ... or in protobuf.
    let in_protobuf = request(
        &cluster,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &[("Content-Type", "application/json"), ("Accept", PROTOBUF)],
        review.to_string().as_bytes(),
    );
    assert_eq!(in_protobuf.code, 201, "{}", in_protobuf.text());
    assert_eq!(in_protobuf.protobuf()["status"]["allowed"], true);
    // Stored resources (and their status) have tables.
    let listed = get(&cluster, "/api/v1/namespaces", table).json();
    assert_eq!(listed["kind"], "Table");
    let status = get(&cluster, "/api/v1/namespaces/default/status", table).json();
    assert_eq!(status["kind"], "Table");
    // kubectl still works against the reviews.
    assert_eq!(
        cluster.kubectl_ok(&["auth", "can-i", "get", "pods"]).trim(),
        "yes"
    );
}
