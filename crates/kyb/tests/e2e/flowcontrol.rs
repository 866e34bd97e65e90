//! API Priority and Fairness: the FlowSchema and PriorityLevelConfiguration resources
//! through kubectl (columns, validation, the bootstrap objects kept), the PF headers on
//! responses, and a flooding user held to its priority level while another is served.

use crate::cluster::{Cluster, DEADLINE, Who, rows};
use crate::poll::blocking_wait_for;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A response header's value, by case-insensitive name.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

fn uid(cluster: &Cluster, resource: &str, name: &str) -> String {
    cluster
        .kubectl_ok(&["get", resource, name, "-o", "jsonpath={.metadata.uid}"])
        .trim()
        .to_string()
}

fn get_json(cluster: &Cluster, resource: &str, name: &str) -> Option<Value> {
    let output = cluster.kubectl(&["get", resource, name, "-o", "json"]);
    output
        .status
        .success()
        .then(|| serde_json::from_slice(&output.stdout).ok())
        .flatten()
}

/// Waits until the bootstrap configuration is in place (the keeper writes it just after
/// start) and every FlowSchema's Dangling condition is written.
fn wait_for_bootstrap(cluster: &Cluster) {
    blocking_wait_for("the bootstrap flow-control objects", || {
        let schemas = cluster.kubectl_ok(&["get", "flowschemas", "--no-headers"]);
        let levels = cluster.kubectl_ok(&["get", "prioritylevelconfigurations", "--no-headers"]);
        let settled = rows(&schemas)
            .iter()
            .all(|r| r.last().is_some_and(|c| c == "False"));
        (rows(&schemas).len() == 13 && rows(&levels).len() == 8 && settled).then_some(())
    });
}

#[test]
fn bootstrap_objects_are_listed_kept_and_restored() {
    let cluster = Cluster::start();
    wait_for_bootstrap(&cluster);
    let schemas = cluster.kubectl_ok(&["get", "flowschemas"]);
    let table = rows(&schemas);
    assert_eq!(
        table[0],
        [
            "NAME",
            "PRIORITYLEVEL",
            "MATCHINGPRECEDENCE",
            "DISTINGUISHERMETHOD",
            "AGE",
            "MISSINGPL"
        ]
    );
    // Sorted by name, as kubectl lists; precedence order is the server's business.
    let row = |name: &str| {
        table
            .iter()
            .find(|r| r[0] == name)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(row("probes")[1..4], ["exempt", "2", "<none>"]);
    assert_eq!(
        row("global-default")[1..4],
        ["global-default", "9900", "ByUser"]
    );
    assert_eq!(
        row("kube-scheduler")[1..4],
        ["workload-high", "800", "ByNamespace"]
    );
    let levels = cluster.kubectl_ok(&["get", "prioritylevelconfigurations"]);
    let table = rows(&levels);
    assert_eq!(
        table[0],
        [
            "NAME",
            "TYPE",
            "NOMINALCONCURRENCYSHARES",
            "QUEUES",
            "HANDSIZE",
            "QUEUELENGTHLIMIT",
            "AGE"
        ]
    );
    let row = |name: &str| {
        table
            .iter()
            .find(|r| r[0] == name)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        row("exempt")[1..6],
        ["Exempt", "<none>", "<none>", "<none>", "<none>"]
    );
    assert_eq!(
        row("catch-all")[1..6],
        ["Limited", "5", "<none>", "<none>", "<none>"]
    );
    assert_eq!(
        row("global-default")[1..6],
        ["Limited", "20", "128", "6", "50"]
    );

    // Deleted bootstrap objects, suggested and mandatory, come back (as new objects).
    let old = (
        uid(&cluster, "flowschema", "global-default"),
        uid(&cluster, "prioritylevelconfiguration", "catch-all"),
    );
    cluster.kubectl_ok(&["delete", "flowschema", "global-default"]);
    cluster.kubectl_ok(&["delete", "prioritylevelconfiguration", "catch-all"]);
    blocking_wait_for("the deleted bootstrap objects to come back", || {
        let schema = get_json(&cluster, "flowschema", "global-default")?;
        let level = get_json(&cluster, "prioritylevelconfiguration", "catch-all")?;
        (schema["metadata"]["uid"] != old.0.as_str() && level["metadata"]["uid"] != old.1.as_str())
            .then_some(())
    });

    // A mandatory spec cannot be changed at all.
    let output = cluster.kubectl(&[
        "patch",
        "flowschema",
        "catch-all",
        "--type=merge",
        "-p",
        r#"{"spec":{"matchingPrecedence":9000}}"#,
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("spec of 'catch-all' must equal the fixed value"),
        "{stderr}"
    );

    // A suggested object annotated for auto-update gets its spec back …
    let shares = |cluster: &Cluster| {
        get_json(cluster, "prioritylevelconfiguration", "workload-low")
            .and_then(|l| l["spec"]["limited"]["nominalConcurrencyShares"].as_i64())
    };
    cluster.kubectl_ok(&[
        "patch",
        "prioritylevelconfiguration",
        "workload-low",
        "--type=merge",
        "-p",
        r#"{"spec":{"limited":{"nominalConcurrencyShares":7}}}"#,
    ]);
    blocking_wait_for("workload-low's spec to be restored", || {
        (shares(&cluster) == Some(100)).then_some(())
    });
    // … and keeps the administrator's once the annotation says "false".
    cluster.kubectl_ok(&[
        "patch", "prioritylevelconfiguration", "workload-low", "--type=merge", "-p",
        r#"{"metadata":{"annotations":{"apf.kubernetes.io/autoupdate-spec":"false"}},"spec":{"limited":{"nominalConcurrencyShares":7}}}"#,
    ]);
    // The keeper reacts to every change: a later change it does act on (a deleted
    // suggested schema) proves it has seen this one.
    let old = uid(&cluster, "flowschema", "service-accounts");
    cluster.kubectl_ok(&["delete", "flowschema", "service-accounts"]);
    blocking_wait_for("service-accounts to come back", || {
        let schema = get_json(&cluster, "flowschema", "service-accounts")?;
        (schema["metadata"]["uid"] != old.as_str()).then_some(())
    });
    assert_eq!(shares(&cluster), Some(7));
}

#[test]
fn validation_errors_and_dangling_schemas() {
    let cluster = Cluster::start();
    let apply = |manifest: &str| {
        let path = cluster.write_file("object.yaml", manifest);
        cluster.kubectl(&["apply", "-f", crate::cluster::path_str(&path)])
    };
    let output = apply(
        "apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: first}
spec:
  matchingPrecedence: 1
  priorityLevelConfiguration: {name: global-default}
  rules:
  - subjects: [{kind: Robot}]
    nonResourceRules: [{verbs: ['*'], nonResourceURLs: ['/metrics*']}]
",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    for message in [
        "\"first\" is invalid",
        "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1",
        "spec.rules[0].subjects[0].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\"",
        "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"/metrics*\": wildcard can only do suffix matching",
    ] {
        assert!(stderr.contains(message), "{message} not in {stderr}");
    }
    let output = apply(
        "apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: small}
spec:
  type: Limited
  limited:
    lendablePercent: 101
    limitResponse: {type: Queue, queuing: {queues: 4, handSize: 5}}
",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    for message in [
        "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
        "spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)",
    ] {
        assert!(stderr.contains(message), "{message} not in {stderr}");
    }

    // A schema naming a missing level is accepted, as Kubernetes does, and marked
    // Dangling until the level exists; defaults are filled in.
    let output = apply(
        "apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: orphan}
spec:
  priorityLevelConfiguration: {name: later}
  rules:
  - subjects: [{kind: User, user: {name: nobody}}]
    resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true}]
",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let dangling = |cluster: &Cluster| {
        let schema = get_json(cluster, "flowschema", "orphan")?;
        let condition = schema["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "Dangling")?
            .clone();
        Some((schema, condition))
    };
    let (schema, condition) = blocking_wait_for("the Dangling condition", || dangling(&cluster));
    assert_eq!(schema["spec"]["matchingPrecedence"], 1000);
    assert_eq!(condition["status"], "True");
    assert_eq!(condition["reason"], "NotFound");
    assert_eq!(
        condition["message"],
        "This FlowSchema references the PriorityLevelConfiguration object named \"later\" but there is no such object"
    );
    let row = cluster.kubectl_ok(&["get", "flowschema", "orphan", "--no-headers"]);
    assert_eq!(rows(&row)[0].last().map(String::as_str), Some("True"));
    let output = apply(
        "apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: later}
spec:
  type: Limited
  limited:
    limitResponse: {type: Queue, queuing: {}}
",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let level = get_json(&cluster, "prioritylevelconfiguration", "later").unwrap();
    assert_eq!(
        level["spec"]["limited"],
        serde_json::json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}})
    );
    blocking_wait_for("the Dangling condition to clear", || {
        let (_, condition) = dangling(&cluster)?;
        (condition["status"] == "False" && condition["reason"] == "Found").then_some(())
    });
}

#[test]
fn responses_carry_the_flow_schema_and_priority_level_uids() {
    let cluster = Cluster::start();
    wait_for_bootstrap(&cluster);
    let expect = |who: Who<'_>, path: &str, headers: &[(&str, &str)], schema: &str, level: &str| {
        let (code, head, _) = cluster.http_as(who, "GET", path, headers, b"");
        assert!(code < 500, "{code} {head}");
        assert_eq!(
            header(&head, "X-Kubernetes-PF-FlowSchema-UID"),
            Some(uid(&cluster, "flowschema", schema).as_str()),
            "{path}: {head}"
        );
        assert_eq!(
            header(&head, "X-Kubernetes-PF-PriorityLevel-UID"),
            Some(uid(&cluster, "prioritylevelconfiguration", level).as_str()),
            "{path}: {head}"
        );
    };
    expect(Who::Admin, "/api/v1/namespaces", &[], "exempt", "exempt");
    expect(Who::Anonymous, "/readyz", &[], "probes", "exempt");
    expect(
        Who::Anonymous,
        "/version",
        &[],
        "global-default",
        "global-default",
    );
    let jane = [("Impersonate-User", "jane")];
    expect(
        Who::Admin,
        "/api/v1/namespaces/default/configmaps",
        &jane,
        "global-default",
        "global-default",
    );
    let node = [
        ("Impersonate-User", "system:node:n1"),
        ("Impersonate-Group", "system:nodes"),
    ];
    expect(
        Who::Admin,
        "/api/v1/nodes/n1",
        &node,
        "system-node-high",
        "node-high",
    );
}

/// The p-th percentile of durations.
fn percentile(mut samples: Vec<Duration>, p: f64) -> Duration {
    samples.sort();
    let index = ((samples.len() as f64 * p).ceil() as usize).clamp(1, samples.len()) - 1;
    samples[index]
}

#[test]
fn a_flooding_user_gets_429s_while_another_is_served() {
    let cluster = Cluster::start();
    wait_for_bootstrap(&cluster);
    // The flooder's own level: 1 share of 246 (3 of the 600 seats), one queue of 2.
    let path = cluster.write_file(
        "flood.yaml",
        "apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: flood}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    limitResponse: {type: Queue, queuing: {queues: 1, handSize: 1, queueLengthLimit: 2}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: flooder}
spec:
  matchingPrecedence: 500
  priorityLevelConfiguration: {name: flood}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: flooder}}]
    resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true}]
",
    );
    cluster.kubectl_ok(&["apply", "-f", crate::cluster::path_str(&path)]);
    cluster.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "readers",
        "--clusterrole=view",
        "--user=flooder",
        "--user=bystander",
    ]);
    let flood_uid = uid(&cluster, "prioritylevelconfiguration", "flood");
    let as_flooder = [("Impersonate-User", "flooder")];
    blocking_wait_for("the flooder's schema to be in force", || {
        let (_, head, _) = cluster.http_as(
            Who::Admin,
            "GET",
            "/api/v1/namespaces/default/configmaps",
            &as_flooder,
            b"",
        );
        (header(&head, "X-Kubernetes-PF-PriorityLevel-UID") == Some(flood_uid.as_str()))
            .then_some(())
    });

    // Eight threads LIST as fast as they can; each LIST asks for a future resourceVersion,
    // so it holds its seat for the cache's 3 s wait (then 504).
    let stop = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicUsize::new(0));
    let flooders: Vec<_> = (0..8)
        .map(|_| {
            let (connector, stop, refused) = (cluster.connector(Who::Admin), stop.clone(), refused.clone());
            std::thread::spawn(move || {
                let mut answers = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let response = connector.send(b"GET /api/v1/namespaces/default/configmaps?resourceVersion=999999999 HTTP/1.1\r\nHost: x\r\nImpersonate-User: flooder\r\nConnection: close\r\n\r\n");
                    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
                    let code = head.split(' ').nth(1).unwrap_or_default().to_string();
                    let retry_after = header(head, "Retry-After").map(str::to_string);
                    if code == "429" {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                    answers.push((code, retry_after, body.to_string()));
                }
                answers
            })
        })
        .collect();

    // Meanwhile the bystander's LISTs, one at a time, are all served, and quickly (at
    // least 60, and until the flooder has been refused).
    let deadline = Instant::now() + DEADLINE;
    let mut latencies = Vec::new();
    let as_bystander = [("Impersonate-User", "bystander")];
    while (latencies.len() < 60 || refused.load(Ordering::Relaxed) == 0)
        && Instant::now() < deadline
    {
        let started = Instant::now();
        let (code, head, _) = cluster.http_as(
            Who::Admin,
            "GET",
            "/api/v1/namespaces/default/configmaps",
            &as_bystander,
            b"",
        );
        latencies.push(started.elapsed());
        assert_eq!(code, 200, "{head}");
    }
    stop.store(true, Ordering::Relaxed);
    let answers: Vec<_> = flooders
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let rejected: Vec<_> = answers.iter().filter(|a| a.0 == "429").collect();
    assert!(
        !rejected.is_empty(),
        "the flooder was never refused: {answers:?}"
    );
    for (_, retry_after, body) in &rejected {
        assert_eq!(retry_after.as_deref(), Some("1"));
        assert_eq!(
            body.trim_end(),
            "Too many requests, please try again later."
        );
    }
    // What was not refused was served (the slow LIST's own 504).
    assert!(
        answers.iter().all(|a| a.0 == "429" || a.0 == "504"),
        "{answers:?}"
    );
    assert!(latencies.len() >= 60);
    let p99 = percentile(latencies, 0.99);
    assert!(
        p99 < Duration::from_secs(2),
        "the bystander's p99 was {p99:?}"
    );
}
