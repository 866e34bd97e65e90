//! Admission webhooks against webhook servers written here (HTTPS with their own CA): a
//! mutating webhook labelling pods, a validating webhook refusing a forbidden image
//! (reached through a Service), patches that are validated again, warnings, selectors,
//! match conditions, reinvocation, dry run, and failure policies when a webhook is slow.

use crate::cluster::Cluster;
use crate::webhook_server::{WebhookServer, host_ip, patch_response};
use serde_json::{Value, json};
use std::process::Output;
use std::sync::atomic::Ordering;

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn pod(name: &str, image: &str, labels: Value) -> String {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": image}]},
    })
    .to_string()
}

/// Creates a pod from JSON with kubectl; its output and success.
fn create(cluster: &Cluster, json: &str, extra: &[&str]) -> (String, bool) {
    let path = cluster.write_file("pod.json", json);
    let mut args = vec!["create", "-f", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    let output = cluster.kubectl(&args);
    (text(&output), output.status.success())
}

fn label(cluster: &Cluster, pod: &str, key: &str) -> String {
    cluster.kubectl_ok(&[
        "get",
        "pod",
        pod,
        "-o",
        &format!("jsonpath={{.metadata.labels.{}}}", key.replace('.', "\\.")),
    ])
}

/// The JSON patch adding `labels` to an object (creating the map if needed).
fn add_labels(request: &Value, labels: &[(&str, &str)]) -> Value {
    let object = &request["object"];
    let mut ops = Vec::new();
    if object["metadata"]["labels"].is_null() {
        ops.push(json!({"op": "add", "path": "/metadata/labels", "value": {}}));
    }
    for (key, value) in labels {
        ops.push(json!({"op": "add", "path": format!("/metadata/labels/{}", key.replace('~', "~0").replace('/', "~1")), "value": value}));
    }
    Value::Array(ops)
}

#[test]
fn mutating_and_validating_webhooks() {
    let cluster = Cluster::start();
    // The mutating webhook: labels pods, warns, and (on request) returns a patch that
    // makes the pod invalid. Reinvoked, it records having seen the other webhook's label.
    let mutator = WebhookServer::start(|path, request| {
        let object = &request["object"];
        let labels = &object["metadata"]["labels"];
        match path {
            "/label" => {
                if labels["break"] == "yes" {
                    return patch_response(&json!([
                        {"op": "replace", "path": "/spec/containers/0/image", "value": ""}
                    ]));
                }
                let mut added = vec![("webhooked", "yes")];
                if labels["second"] == "yes" {
                    added.push(("saw-second", "yes"));
                }
                let mut response = patch_response(&add_labels(request, &added));
                response["warnings"] = json!(["labelled by the test webhook"]);
                response["auditAnnotations"] = json!({"labelled": "true"});
                response
            }
            "/second" => patch_response(&add_labels(request, &[("second", "yes")])),
            _ => json!({"allowed": true}),
        }
    });
    // The validating webhook: no image from the "forbidden" registry.
    let validator = WebhookServer::start(|_, request| {
        let images: Vec<&str> = request["object"]["spec"]["containers"]
            .as_array()
            .map(|c| c.iter().filter_map(|c| c["image"].as_str()).collect())
            .unwrap_or_default();
        match images.iter().find(|i| i.starts_with("forbidden/")) {
            Some(image) => json!({
                "allowed": false,
                "status": {"code": 403, "reason": "Forbidden", "message": format!("image {image} is not allowed")},
            }),
            None => json!({"allowed": true}),
        }
    });
    // The validator is reached through a Service (selector-less, with Endpoints at this
    // host), the mutator by URL.
    for object in [
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "webhook", "namespace": "default"},
               "spec": {"ports": [{"name": "https", "port": 443, "targetPort": validator.port}]}}),
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "webhook", "namespace": "default"},
               "subsets": [{"addresses": [{"ip": host_ip().to_string()}], "ports": [{"name": "https", "port": validator.port}]}]}),
    ] {
        cluster.kubectl_stdin(&["apply", "-f", "-"], &object.to_string());
    }
    let pods_rule = json!([{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]);
    let mutating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "label-pods"},
        "webhooks": [
            {"name": "label.test.kyb.io", "clientConfig": {"url": mutator.url("/label"), "caBundle": mutator.ca_bundle()},
             "rules": pods_rule, "sideEffects": "None", "admissionReviewVersions": ["v1"],
             "reinvocationPolicy": "IfNeeded",
             "matchConditions": [{"name": "not-skipped", "expression": "object.metadata.name != 'skip-me'"}],
             "namespaceSelector": {"matchExpressions": [{"key": "webhooks", "operator": "NotIn", "values": ["off"]}]}},
            {"name": "second.test.kyb.io", "clientConfig": {"url": mutator.url("/second"), "caBundle": mutator.ca_bundle()},
             "rules": pods_rule, "sideEffects": "None", "admissionReviewVersions": ["v1"],
             "objectSelector": {"matchLabels": {"want-second": "yes"}}},
        ],
    });
    let validating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "deny-forbidden-images"},
        "webhooks": [
            {"name": "images.test.kyb.io",
             "clientConfig": {"service": {"namespace": "default", "name": "webhook", "path": "/validate"}, "caBundle": validator.ca_bundle()},
             "rules": pods_rule, "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail"},
        ],
    });
    cluster.kubectl_stdin(&["apply", "-f", "-"], &mutating.to_string());
    cluster.kubectl_stdin(&["apply", "-f", "-"], &validating.to_string());

    // Mutated: labelled, with the webhook's warning shown by kubectl.
    let (output, ok) = create(&cluster, &pod("web", "nginx", json!({})), &[]);
    assert!(ok, "{output}");
    assert!(
        output.contains("Warning: labelled by the test webhook"),
        "{output}"
    );
    assert_eq!(label(&cluster, "web", "webhooked"), "yes");

    // Refused by the validating webhook: its message, and nothing stored.
    let (output, ok) = create(&cluster, &pod("bad", "forbidden/miner", json!({})), &[]);
    assert!(!ok);
    assert!(
        output.contains(r#"admission webhook "images.test.kyb.io" denied the request: image forbidden/miner is not allowed"#),
        "{output}"
    );
    assert!(!cluster.kubectl(&["get", "pod", "bad"]).status.success());

    // A patch that breaks the object is caught by validation after mutation.
    let (output, ok) = create(
        &cluster,
        &pod("broken", "nginx", json!({"break": "yes"})),
        &[],
    );
    assert!(!ok);
    assert!(
        output.contains("spec.containers[0].image: Required value"),
        "{output}"
    );

    // Match conditions and selectors keep the webhook away.
    let (output, ok) = create(&cluster, &pod("skip-me", "nginx", json!({})), &[]);
    assert!(ok, "{output}");
    assert_eq!(label(&cluster, "skip-me", "webhooked"), "");
    cluster.kubectl_ok(&["create", "namespace", "quiet"]);
    cluster.kubectl_ok(&["label", "namespace", "quiet", "webhooks=off"]);
    cluster.kubectl_ok(&["run", "calm", "--image=nginx", "-n", "quiet"]);
    assert_eq!(
        cluster.kubectl_ok(&[
            "get",
            "pod",
            "calm",
            "-n",
            "quiet",
            "-o",
            "jsonpath={.metadata.labels.webhooked}"
        ]),
        ""
    );

    // Reinvocation: the second webhook changes the object after the first ran, so the
    // first (IfNeeded) is called again and sees the second's label.
    let (output, ok) = create(
        &cluster,
        &pod("twice", "nginx", json!({"want-second": "yes"})),
        &[],
    );
    assert!(ok, "{output}");
    assert_eq!(label(&cluster, "twice", "second"), "yes");
    assert_eq!(label(&cluster, "twice", "saw-second"), "yes");

    // Dry run: side-effect-free webhooks are called, nothing is stored.
    let calls = mutator.calls.load(Ordering::Relaxed);
    let (output, ok) = create(
        &cluster,
        &pod("dry", "nginx", json!({})),
        &[
            "--dry-run=server",
            "-o",
            "jsonpath={.metadata.labels.webhooked}",
        ],
    );
    assert!(ok, "{output}");
    assert!(output.starts_with("yes"), "{output}");
    assert!(mutator.calls.load(Ordering::Relaxed) > calls);
    assert!(!cluster.kubectl(&["get", "pod", "dry"]).status.success());
}

#[test]
fn failure_policies_when_a_webhook_times_out() {
    let cluster = Cluster::start();
    let slow = WebhookServer::start(|_, _| {
        std::thread::sleep(std::time::Duration::from_secs(3));
        json!({"allowed": true})
    });
    let configuration = |policy: &str| {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "slow"},
            "webhooks": [{"name": "slow.test.kyb.io",
                "clientConfig": {"url": slow.url("/"), "caBundle": slow.ca_bundle()},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
                "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 1, "failurePolicy": policy}],
        })
        .to_string()
    };
    cluster.kubectl_stdin(&["apply", "-f", "-"], &configuration("Fail"));
    let started = std::time::Instant::now();
    let output = cluster.kubectl(&["create", "configmap", "refused"]);
    assert!(!output.status.success());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "the timeout was not kept"
    );
    assert!(
        text(&output).contains(r#"failed calling webhook "slow.test.kyb.io""#)
            && text(&output).contains("context deadline exceeded"),
        "{}",
        text(&output)
    );
    assert!(
        !cluster
            .kubectl(&["get", "configmap", "refused"])
            .status
            .success()
    );

    cluster.kubectl_stdin(&["apply", "-f", "-"], &configuration("Ignore"));
    let output = cluster.kubectl(&["create", "configmap", "admitted"]);
    assert!(output.status.success(), "{}", text(&output));

    // A webhook that cannot be reached at all, and whose CA is wrong.
    let elsewhere = WebhookServer::start(|_, _| json!({"allowed": true}));
    let wrong_ca = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "slow"},
        "webhooks": [{"name": "slow.test.kyb.io",
            "clientConfig": {"url": elsewhere.url("/"), "caBundle": slow.ca_bundle()},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail"}],
    });
    cluster.kubectl_stdin(&["apply", "-f", "-"], &wrong_ca.to_string());
    let output = cluster.kubectl(&["create", "configmap", "untrusted"]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains("failed calling webhook"),
        "{}",
        text(&output)
    );
    assert_eq!(
        elsewhere.calls.load(Ordering::Relaxed),
        0,
        "no request over untrusted TLS"
    );
}
