//! Service-account tokens as users and pods use them: `kubectl create token` (the
//! TokenRequest API), authenticating with the token, audiences, binding to a pod, and
//! tokens dying with what they are bound to; TokenReview.

use crate::cluster::{Cluster, DEADLINE};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Waits until kubectl with `kubeconfig` fails with `needle` in its output.
fn wait_refused(cluster: &Cluster, kubeconfig: &Path, args: &[&str], needle: &str) {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let output = cluster.kubectl_as(kubeconfig, args);
        if !output.status.success() && text(&output).contains(needle) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still not refused: {}",
            text(&output)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn tokens_authenticate_while_what_they_are_bound_to_lives() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "serviceaccount", "robot"]);
    cluster.kubectl_ok(&[
        "create",
        "rolebinding",
        "robot-view",
        "--clusterrole=view",
        "--serviceaccount=default:robot",
    ]);
    let token = cluster.kubectl_ok(&["create", "token", "robot"]);
    let token = token.trim();
    let robot = cluster.token_kubeconfig("robot", token);
    let output = cluster.kubectl_as(
        &robot,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    );
    assert_eq!(text(&output), "system:serviceaccount:default:robot");
    let output = cluster.kubectl_as(
        &robot,
        &["auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}"],
    );
    assert_eq!(
        text(&output),
        r#"["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"]"#
    );
    let output = cluster.kubectl_as(&robot, &["get", "pods"]);
    assert!(output.status.success(), "{}", text(&output));
    let output = cluster.kubectl_as(&robot, &["create", "configmap", "x"]);
    assert!(text(&output).contains("is forbidden"), "{}", text(&output));

    // A token for another audience is not accepted by the API server, but a TokenReview
    // for that audience accepts it.
    let vault = cluster.kubectl_ok(&["create", "token", "robot", "--audience", "vault"]);
    let vault = vault.trim();
    let other = cluster.token_kubeconfig("vault", vault);
    let output = cluster.kubectl_as(&other, &["get", "pods"]);
    assert!(text(&output).contains("Unauthorized"), "{}", text(&output));
    let review = |token: &str, audiences: &str| -> Value {
        let body = format!(
            r#"{{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{{"token":"{token}","audiences":{audiences}}}}}"#
        );
        let (code, text) = cluster.http(
            "POST",
            "/apis/authentication.k8s.io/v1/tokenreviews",
            "application/json",
            body.as_bytes(),
        );
        assert_eq!(code, 201, "{text}");
        serde_json::from_str(&text).unwrap()
    };
    let answer = review(vault, r#"["vault"]"#);
    assert_eq!(answer["status"]["authenticated"], true, "{answer}");
    assert_eq!(answer["status"]["audiences"], serde_json::json!(["vault"]));
    assert_eq!(
        answer["status"]["user"]["username"],
        "system:serviceaccount:default:robot"
    );
    let answer = review(vault, "[]");
    assert_ne!(answer["status"]["authenticated"], true, "{answer}");
    // A tampered token is refused.
    let mut forged = token.to_string();
    forged.pop();
    forged.push(if token.ends_with('A') { 'B' } else { 'A' });
    let answer = review(&forged, "[]");
    assert_ne!(answer["status"]["authenticated"], true, "{answer}");

    // Too short a lifetime is refused, as Kubernetes refuses it.
    let output = cluster.kubectl(&["create", "token", "robot", "--duration", "1m"]);
    assert!(
        text(&output).contains("may not specify a duration less than 10 minutes"),
        "{}",
        text(&output)
    );

    // A token bound to a pod dies with the pod.
    cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"worker"},"spec":{"serviceAccountName":"robot","automountServiceAccountToken":false,"containers":[{"name":"c","image":"busybox"}]}}"#,
    );
    let bound = cluster.kubectl_ok(&[
        "create",
        "token",
        "robot",
        "--bound-object-kind",
        "Pod",
        "--bound-object-name",
        "worker",
    ]);
    let pod_bound = cluster.token_kubeconfig("pod-bound", bound.trim());
    let output = cluster.kubectl_as(&pod_bound, &["auth", "whoami", "-o", "json"]);
    let whoami: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        whoami["status"]["userInfo"]["extra"]["authentication.kubernetes.io/pod-name"],
        serde_json::json!(["worker"])
    );
    let output = cluster.kubectl(&[
        "create",
        "token",
        "robot",
        "--bound-object-kind",
        "Pod",
        "--bound-object-name",
        "nobody",
    ]);
    assert!(text(&output).contains("not found"), "{}", text(&output));
    cluster.kubectl_ok(&["delete", "pod", "worker", "--grace-period=0", "--force"]);
    wait_refused(&cluster, &pod_bound, &["get", "pods"], "Unauthorized");

    // Deleting the service account ends every token it had.
    let output = cluster.kubectl_as(&robot, &["get", "pods"]);
    assert!(output.status.success(), "{}", text(&output));
    cluster.kubectl_ok(&["delete", "serviceaccount", "robot"]);
    wait_refused(&cluster, &robot, &["get", "pods"], "Unauthorized");
    // A new account of the same name does not bring the old tokens back (UIDs differ).
    cluster.kubectl_ok(&["create", "serviceaccount", "robot"]);
    let output = cluster.kubectl_as(&robot, &["get", "pods"]);
    assert!(text(&output).contains("Unauthorized"), "{}", text(&output));
}
