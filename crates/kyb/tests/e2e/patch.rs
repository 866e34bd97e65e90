//! PATCH over plain HTTP: every patch type on objects and on their status and scale
//! subresources, the answers to bad patches (and that they change nothing), dry runs,
//! field validation, and server-side apply's ownership rules.

use crate::cluster::Cluster;
use serde_json::{Value, json};

const JSON_PATCH: &str = "application/json-patch+json";
const MERGE: &str = "application/merge-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";

fn parse(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// A request that must answer `code`; the parsed body.
fn expect(
    cluster: &Cluster,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
    code: u16,
) -> Value {
    let (got, text) = cluster.http(method, path, content_type, body.as_bytes());
    assert_eq!(
        got, code,
        "{method} {path} ({content_type}) {body}\n→ {text}"
    );
    parse(&text)
}

fn get(cluster: &Cluster, path: &str) -> Value {
    expect(cluster, "GET", path, "application/json", "", 200)
}

fn create_deployment(cluster: &Cluster) {
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{
                    "name": "nginx", "image": "nginx",
                    "env": [{"name": "A", "value": "1"}],
                    "ports": [{"containerPort": 80}]
                }]}
            }
        }
    });
    expect(
        cluster,
        "POST",
        DEPLOYMENTS,
        "application/json",
        &deployment.to_string(),
        201,
    );
}

#[test]
fn every_patch_type_on_objects_and_subresources() {
    // The test writes the Deployment's status itself; its controller would race it.
    let dir = kyb_testkit::temp_dir("cluster").unwrap();
    let cluster = Cluster::start_with(dir, &["--controllers=*,-deployment-controller"]);
    create_deployment(&cluster);
    let web = format!("{DEPLOYMENTS}/web");

    // Strategic merge: env merged by name, ports by containerPort.
    let patched = expect(
        &cluster,
        "PATCH",
        &web,
        STRATEGIC,
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","env":[{"name":"B","value":"2"}],"ports":[{"containerPort":443}]}]}}}}"#,
        200,
    );
    let container = &patched["spec"]["template"]["spec"]["containers"][0];
    let env: Vec<&str> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(env, ["B", "A"]);
    assert_eq!(container["ports"].as_array().unwrap().len(), 2);
    assert_eq!(container["image"], "nginx");

    // $patch: delete removes one item by its key; $patch: replace replaces a list.
    let patched = expect(
        &cluster,
        "PATCH",
        &web,
        STRATEGIC,
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","env":[{"name":"A","$patch":"delete"}]}]}}}}"#,
        200,
    );
    assert_eq!(
        patched["spec"]["template"]["spec"]["containers"][0]["env"],
        json!([{"name": "B", "value": "2"}])
    );
    let patched = expect(
        &cluster,
        "PATCH",
        &web,
        STRATEGIC,
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","ports":[{"containerPort":8080}, {"$patch":"replace"}]}]}}}}"#,
        200,
    );
    assert_eq!(
        patched["spec"]["template"]["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 8080, "protocol": "TCP"}])
    );

    // The status subresource: JSON patch and merge patch change status only.
    let status = expect(
        &cluster,
        "PATCH",
        &format!("{web}/status"),
        JSON_PATCH,
        r#"[{"op":"add","path":"/status","value":{"observedGeneration":3}}]"#,
        200,
    );
    assert_eq!(status["status"]["observedGeneration"], 3);
    let status = expect(
        &cluster,
        "PATCH",
        &format!("{web}/status"),
        MERGE,
        r#"{"spec":{"replicas":9},"status":{"replicas":2}}"#,
        200,
    );
    assert_eq!(status["status"]["replicas"], 2);
    assert_eq!(
        status["spec"]["replicas"], 1,
        "a status write leaves spec alone"
    );
    // ... and the main resource ignores status.
    let main = expect(
        &cluster,
        "PATCH",
        &web,
        MERGE,
        r#"{"status":{"replicas":5}}"#,
        200,
    );
    assert_eq!(main["status"]["replicas"], 2);

    // The scale subresource, with each patch type.
    let scale = expect(
        &cluster,
        "PATCH",
        &format!("{web}/scale"),
        STRATEGIC,
        r#"{"spec":{"replicas":3}}"#,
        200,
    );
    assert_eq!(
        (scale["kind"].as_str(), scale["spec"]["replicas"].as_i64()),
        (Some("Scale"), Some(3))
    );
    expect(
        &cluster,
        "PATCH",
        &format!("{web}/scale"),
        JSON_PATCH,
        r#"[{"op":"replace","path":"/spec/replicas","value":5}]"#,
        200,
    );
    assert_eq!(get(&cluster, &web)["spec"]["replicas"], 5);
    expect(
        &cluster,
        "PATCH",
        &format!("{web}/scale"),
        MERGE,
        r#"{"spec":{"replicas":4}}"#,
        200,
    );
    assert_eq!(get(&cluster, &web)["spec"]["replicas"], 4);

    // Server-side apply of status, recorded as the applier's, for the status subresource.
    let applied = expect(
        &cluster,
        "PATCH",
        &format!("{web}/status?fieldManager=reporter"),
        APPLY,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nstatus:\n  readyReplicas: 1\n  availableReplicas: 1\n",
        200,
    );
    assert_eq!(applied["status"]["availableReplicas"], 1);
    let entry = applied["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "reporter")
        .cloned()
        .unwrap_or_else(|| panic!("no entry for the applier: {applied}"));
    assert_eq!(
        (entry["operation"].as_str(), entry["subresource"].as_str()),
        (Some("Apply"), Some("status"))
    );
    assert!(
        entry["fieldsV1"]["f:status"]["f:availableReplicas"].is_object(),
        "{entry}"
    );
}

#[test]
fn bad_patches_are_answered_and_change_nothing() {
    let cluster = Cluster::start();
    create_deployment(&cluster);
    let web = format!("{DEPLOYMENTS}/web");
    let before = get(&cluster, &web);

    let cases: &[(&str, &str, u16, &str)] = &[
        // Not a patch type.
        (
            "application/json",
            r#"{"spec":{}}"#,
            415,
            "UnsupportedMediaType",
        ),
        ("text/plain", "hello", 415, "UnsupportedMediaType"),
        // Malformed patches.
        (MERGE, "{", 400, "BadRequest"),
        (STRATEGIC, "[1,2]", 400, "BadRequest"),
        (JSON_PATCH, r#"{"op":"add"}"#, 400, "BadRequest"),
        (
            JSON_PATCH,
            r#"[{"op":"frobnicate","path":"/spec"}]"#,
            422,
            "Invalid",
        ),
        // Well-formed, but not applicable to this object.
        (
            JSON_PATCH,
            r#"[{"op":"test","path":"/spec/replicas","value":7}]"#,
            422,
            "Invalid",
        ),
        (
            JSON_PATCH,
            r#"[{"op":"replace","path":"/spec/nothing/here","value":1}]"#,
            422,
            "Invalid",
        ),
        // A result that does not validate.
        (MERGE, r#"{"spec":{"replicas":-1}}"#, 422, "Invalid"),
        (
            STRATEGIC,
            r#"{"metadata":{"labels":{"bad key!":"x"}}}"#,
            422,
            "Invalid",
        ),
        (
            JSON_PATCH,
            r#"[{"op":"replace","path":"/spec/replicas","value":2},{"op":"remove","path":"/spec/selector"}]"#,
            422,
            "Invalid",
        ),
        // A stale resourceVersion is a failed precondition.
        (
            MERGE,
            r#"{"metadata":{"resourceVersion":"1"},"spec":{"replicas":2}}"#,
            409,
            "Conflict",
        ),
        // An immutable field.
        (
            MERGE,
            r#"{"spec":{"selector":{"matchLabels":{"app":"other"}}}}"#,
            422,
            "Invalid",
        ),
    ];
    for (content_type, patch, code, reason) in cases {
        let status = expect(&cluster, "PATCH", &web, content_type, patch, *code);
        assert_eq!(
            (status["kind"].as_str(), status["reason"].as_str()),
            (Some("Status"), Some(*reason)),
            "{patch}: {status}"
        );
    }
    // A strategic list item without its merge key: Kubernetes answers 500, reason unknown.
    expect(
        &cluster,
        "PATCH",
        &web,
        STRATEGIC,
        r#"{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}"#,
        500,
    );
    // Not found.
    expect(
        &cluster,
        "PATCH",
        &format!("{DEPLOYMENTS}/nothing"),
        MERGE,
        "{}",
        404,
    );

    // What the patches could have touched: the Deployment's controller writes its status
    // and revision annotation meanwhile, which no patch here does.
    let after = get(&cluster, &web);
    for pointer in ["/spec", "/metadata/labels", "/metadata/generation"] {
        assert_eq!(
            after.pointer(pointer),
            before.pointer(pointer),
            "no failed patch may change {pointer}"
        );
    }
}

#[test]
fn dry_run_and_field_validation_on_patches() {
    let cluster = Cluster::start();
    expect(
        &cluster,
        "POST",
        CONFIG_MAPS,
        "application/json",
        r#"{"metadata":{"name":"cm"},"data":{"a":"1"}}"#,
        201,
    );
    let cm = format!("{CONFIG_MAPS}/cm");
    let before = get(&cluster, &cm);

    // dryRun=All: the answer shows the change, the store does not.
    let dry = expect(
        &cluster,
        "PATCH",
        &format!("{cm}?dryRun=All"),
        MERGE,
        r#"{"data":{"a":"2"}}"#,
        200,
    );
    assert_eq!(dry["data"]["a"], "2");
    let dry = expect(
        &cluster,
        "PATCH",
        &format!("{cm}?dryRun=All"),
        JSON_PATCH,
        r#"[{"op":"add","path":"/data/b","value":"x"}]"#,
        200,
    );
    assert_eq!(dry["data"]["b"], "x");
    let dry = expect(
        &cluster,
        "PATCH",
        &format!("{cm}?dryRun=All&fieldManager=dry"),
        APPLY,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  c: \"y\"\n",
        200,
    );
    assert_eq!(dry["data"]["c"], "y");
    assert_eq!(get(&cluster, &cm), before);
    // Create-on-apply in a dry run creates nothing.
    expect(
        &cluster,
        "PATCH",
        &format!("{CONFIG_MAPS}/ghost?dryRun=All&fieldManager=dry"),
        APPLY,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ghost\n",
        201,
    );
    expect(
        &cluster,
        "GET",
        &format!("{CONFIG_MAPS}/ghost"),
        "application/json",
        "",
        404,
    );
    // An unknown dryRun value: PatchOptions are invalid, as Kubernetes words it.
    let unknown_dry_run = expect(
        &cluster,
        "PATCH",
        &format!("{cm}?dryRun=Some"),
        MERGE,
        "{}",
        422,
    );
    assert_eq!(
        unknown_dry_run["message"],
        r#"PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All""#
    );

    // Unknown fields: Strict refuses, Warn warns, Ignore is silent.
    let unknown = r#"{"data":{"a":"3"},"spec":{"nope":1}}"#;
    let strict = expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldValidation=Strict"),
        MERGE,
        unknown,
        400,
    );
    assert!(
        strict["message"]
            .as_str()
            .unwrap()
            .contains(r#"unknown field "spec""#),
        "{strict}"
    );
    let (code, head, _) = cluster.http_with_headers(
        "PATCH",
        &format!("{cm}?fieldValidation=Warn"),
        MERGE,
        unknown.as_bytes(),
    );
    assert_eq!(code, 200);
    assert!(
        head.to_ascii_lowercase().contains("warning: 299") && head.contains("unknown field"),
        "{head}"
    );
    let (code, head, _) = cluster.http_with_headers(
        "PATCH",
        &format!("{cm}?fieldValidation=Ignore"),
        MERGE,
        unknown.as_bytes(),
    );
    assert_eq!(code, 200);
    assert!(!head.to_ascii_lowercase().contains("warning:"), "{head}");

    // Duplicate fields in a JSON patch body.
    let duplicated = r#"{"data":{"a":"4","a":"5"}}"#;
    let strict = expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldValidation=Strict"),
        MERGE,
        duplicated,
        400,
    );
    assert!(
        strict["message"]
            .as_str()
            .unwrap()
            .contains("duplicate field"),
        "{strict}"
    );
    let (code, head, _) = cluster.http_with_headers(
        "PATCH",
        &format!("{cm}?fieldValidation=Warn"),
        MERGE,
        duplicated.as_bytes(),
    );
    assert_eq!(code, 200);
    assert!(head.contains("duplicate field"), "{head}");
    let sometimes = expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldValidation=Sometimes"),
        MERGE,
        "{}",
        422,
    );
    assert_eq!(
        sometimes["message"],
        r#"PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Sometimes": supported values: "", "Ignore", "Strict", "Warn""#
    );
}

fn manager_entry<'a>(object: &'a Value, manager: &str) -> Option<&'a Value> {
    object["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|m| m["manager"] == manager)
}

#[test]
fn server_side_apply_ownership_over_http() {
    let cluster = Cluster::start();
    let cm = format!("{CONFIG_MAPS}/settings");
    let config = |data: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n{data}")
    };

    // An apply needs a field manager.
    expect(&cluster, "PATCH", &cm, APPLY, &config("  x: \"1\"\n"), 400);

    // Create on apply, owned by the applier.
    let created = expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldManager=a"),
        APPLY,
        &config("  x: \"1\"\n"),
        201,
    );
    let entry = manager_entry(&created, "a").unwrap();
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["fieldsV1"], json!({"f:data": {"f:x": {}}}));

    // Another applier with a different value conflicts...
    let conflict = expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldManager=b"),
        APPLY,
        &config("  x: \"2\"\n"),
        409,
    );
    assert_eq!(conflict["reason"], "Conflict");
    assert_eq!(
        conflict["message"],
        r#"Apply failed with 1 conflict: conflict with "a": .data.x"#
    );
    assert_eq!(
        conflict["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"a\"", "field": ".data.x"}])
    );
    // ... the same value is shared ownership...
    expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldManager=b"),
        APPLY,
        &config("  x: \"1\"\n"),
        200,
    );
    // ... and force takes the field over.
    let forced = expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldManager=b&force=true"),
        APPLY,
        &config("  x: \"2\"\n"),
        200,
    );
    assert_eq!(forced["data"]["x"], "2");
    assert!(
        manager_entry(&forced, "a").is_none(),
        "a owned nothing else: {forced}"
    );

    // A field dropped from b's configuration goes when nobody else owns it.
    let dropped = expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldManager=b"),
        APPLY,
        &config("  y: \"1\"\n"),
        200,
    );
    assert_eq!(dropped["data"], json!({"y": "1"}));

    // A plain update takes ownership, and the next apply conflicts with it.
    expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldManager=c"),
        MERGE,
        r#"{"data":{"y":"3"}}"#,
        200,
    );
    let conflict = expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldManager=b"),
        APPLY,
        &config("  y: \"4\"\n"),
        409,
    );
    assert_eq!(
        conflict["message"],
        r#"Apply failed with 1 conflict: conflict with "c" using v1: .data.y"#
    );

    // Configurations that are not this object, and non-apply patches with force.
    let wrong_kind = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: settings\n";
    expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldManager=b"),
        APPLY,
        wrong_kind,
        400,
    );
    expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldManager=b"),
        APPLY,
        "data: [unclosed",
        400,
    );
    let other_name = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n";
    expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldManager=b"),
        APPLY,
        other_name,
        400,
    );
    let with_managed = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  managedFields:\n  - manager: x\n";
    expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldManager=b"),
        APPLY,
        with_managed,
        400,
    );
    expect(
        &cluster,
        "PATCH",
        &format!("{cm}?force=true"),
        MERGE,
        "{}",
        422,
    );

    // A stale resourceVersion in the configuration is a precondition that fails.
    let stale =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  resourceVersion: \"1\"\n";
    expect(
        &cluster,
        "PATCH",
        &format!("{cm}?fieldManager=b"),
        APPLY,
        stale,
        409,
    );
    assert_eq!(get(&cluster, &cm)["data"], json!({"y": "3"}));
}

#[test]
fn each_kinds_status_strategy_decides_what_status_writes_keep() {
    let cluster = Cluster::start();
    // A Namespace's status strategy resets only the spec: metadata changes are kept.
    cluster.kubectl_ok(&["create", "namespace", "statusy"]);
    let namespace = expect(
        &cluster,
        "PATCH",
        "/api/v1/namespaces/statusy/status",
        MERGE,
        r#"{"metadata":{"annotations":{"example.com/note":"kept"}},"spec":{"finalizers":[]}}"#,
        200,
    );
    assert_eq!(
        namespace["metadata"]["annotations"]["example.com/note"],
        "kept"
    );
    assert_eq!(namespace["spec"]["finalizers"], json!(["kubernetes"]));
    // A Deployment's resets the labels too, and keeps annotations.
    create_deployment(&cluster);
    let web = "/apis/apps/v1/namespaces/default/deployments/web";
    let before = get(&cluster, web);
    let deployment = expect(
        &cluster,
        "PATCH",
        &format!("{web}/status"),
        MERGE,
        r#"{"metadata":{"labels":{"extra":"no"},"annotations":{"example.com/note":"yes"}}}"#,
        200,
    );
    assert_eq!(
        deployment["metadata"]["labels"],
        before["metadata"]["labels"]
    );
    assert_eq!(
        deployment["metadata"]["annotations"]["example.com/note"],
        "yes"
    );
}

#[test]
fn a_status_write_to_a_pod_being_stopped_does_not_finish_its_deletion() {
    // The preemption flake: a second DisruptionTarget patch on a victim in its grace
    // period deleted it, where Kubernetes deletes on update only once no grace is left.
    let cluster = Cluster::start();
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "stopping"},
        "spec": {"nodeName": "somewhere", "containers": [{"name": "c", "image": "busybox"}]},
    });
    cluster.kubectl_stdin(&["create", "-f", "-"], &pod.to_string());
    cluster.kubectl_ok(&["delete", "pod", "stopping", "--wait=false"]);
    let path = "/api/v1/namespaces/default/pods/stopping";
    let deleting = get(&cluster, path);
    assert_eq!(deleting["metadata"]["deletionGracePeriodSeconds"], 30);
    let patched = expect(
        &cluster,
        "PATCH",
        &format!("{path}/status"),
        MERGE,
        r#"{"status":{"conditions":[{"type":"DisruptionTarget","status":"True","reason":"PreemptionByScheduler"}]}}"#,
        200,
    );
    assert_eq!(
        patched["status"]["conditions"][0]["type"],
        "DisruptionTarget"
    );
    assert!(get(&cluster, path)["metadata"]["deletionTimestamp"].is_string());
    // The kubelet's own delete ends it.
    cluster.kubectl_ok(&["delete", "pod", "stopping", "--grace-period=0", "--force"]);
    let (code, _) = cluster.http("GET", path, "application/json", b"");
    assert_eq!(code, 404);
}
