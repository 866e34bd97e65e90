//! The real kubectl against `kyb server`: what users type, checked by what kubectl prints.

use crate::cluster::{Cluster, DEADLINE, path_str, rows};
use kyb_testkit::Process;

const MANIFESTS: &str = "\
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
  labels: {app: web, tier: front}
data:
  color: blue
  size: large
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
";

#[test]
fn version_discovery_and_health() {
    let cluster = Cluster::start();
    let version = cluster.kubectl_ok(&["version"]);
    assert!(version.contains("Server Version: v1.33."), "{version}");

    let resources = cluster.kubectl_ok(&["api-resources"]);
    let table = rows(&resources);
    let find = |name: &str| {
        table
            .iter()
            .find(|r| r.first().map(String::as_str) == Some(name))
            .cloned()
    };
    assert_eq!(
        find("pods"),
        Some(
            vec!["pods", "po", "v1", "true", "Pod"]
                .into_iter()
                .map(String::from)
                .collect()
        )
    );
    assert_eq!(
        find("deployments"),
        Some(
            vec!["deployments", "deploy", "apps/v1", "true", "Deployment"]
                .into_iter()
                .map(String::from)
                .collect()
        )
    );
    assert_eq!(
        find("nodes").map(|r| r[3].clone()),
        Some("false".to_string())
    );

    let versions = cluster.kubectl_ok(&["api-versions"]);
    for expected in [
        "v1",
        "apps/v1",
        "batch/v1",
        "autoscaling/v2",
        "rbac.authorization.k8s.io/v1",
    ] {
        assert!(
            versions.lines().any(|l| l == expected),
            "{expected} missing from {versions}"
        );
    }

    let readyz = cluster.kubectl_ok(&["get", "--raw", "/readyz?verbose"]);
    assert!(
        readyz.contains("[+]etcd ok") && readyz.contains("readyz check passed"),
        "{readyz}"
    );
    assert_eq!(cluster.kubectl_ok(&["get", "--raw", "/livez"]), "ok");
}

#[test]
fn explain_reads_the_openapi_documents() {
    let cluster = Cluster::start();
    let explained = cluster.kubectl_ok(&["explain", "pod.spec.containers"]);
    assert!(explained.contains("KIND:       Pod"), "{explained}");
    assert!(explained.contains("FIELD: containers"), "{explained}");
    assert!(
        explained.contains("image\t<string>") || explained.contains("image <string>"),
        "{explained}"
    );
}

#[test]
fn generator_commands_create_objects() {
    let cluster = Cluster::start();
    // These send protobuf bodies.
    cluster.kubectl_ok(&["create", "namespace", "tools"]);
    cluster.kubectl_ok(&[
        "create",
        "configmap",
        "app-config",
        "-n",
        "tools",
        "--from-literal=mode=fast",
        "--from-literal=level=3",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "tools",
        "--from-literal=password=s3cret",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "deployment",
        "api",
        "-n",
        "tools",
        "--image=busybox",
        "--replicas=2",
    ]);
    cluster.kubectl_ok(&["create", "serviceaccount", "robot", "-n", "tools"]);
    cluster.kubectl_ok(&["create", "job", "once", "-n", "tools", "--image=busybox"]);
    cluster.kubectl_ok(&[
        "create",
        "cronjob",
        "nightly",
        "-n",
        "tools",
        "--image=busybox",
        "--schedule=0 3 * * *",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "role",
        "reader",
        "-n",
        "tools",
        "--verb=get,list",
        "--resource=pods",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "rolebinding",
        "reader",
        "-n",
        "tools",
        "--role=reader",
        "--serviceaccount=tools:robot",
    ]);
    cluster.kubectl_ok(&["create", "quota", "small", "-n", "tools", "--hard=pods=10"]);
    cluster.kubectl_ok(&["create", "priorityclass", "urgent", "--value=1000"]);

    let data = cluster.kubectl_ok(&[
        "get",
        "configmap",
        "app-config",
        "-n",
        "tools",
        "-o",
        "jsonpath={.data.mode}/{.data.level}",
    ]);
    assert_eq!(data, "fast/3");
    let password = cluster.kubectl_ok(&[
        "get",
        "secret",
        "creds",
        "-n",
        "tools",
        "-o",
        "jsonpath={.data.password}",
    ]);
    assert_eq!(password, "czNjcmV0"); // base64 of "s3cret"
    let replicas = cluster.kubectl_ok(&[
        "get",
        "deployment",
        "api",
        "-n",
        "tools",
        "-o",
        "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}",
    ]);
    assert_eq!(replicas, "2 busybox");
    let schedule = cluster.kubectl_ok(&[
        "get",
        "cronjob",
        "nightly",
        "-n",
        "tools",
        "-o",
        "jsonpath={.spec.schedule}",
    ]);
    assert_eq!(schedule, "0 3 * * *");
    let subject = cluster.kubectl_ok(&[
        "get",
        "rolebinding",
        "reader",
        "-n",
        "tools",
        "-o",
        "jsonpath={.subjects[0].kind}/{.subjects[0].name}",
    ]);
    assert_eq!(subject, "ServiceAccount/robot");
    let value = cluster.kubectl_ok(&["get", "priorityclass", "urgent", "-o", "jsonpath={.value}"]);
    assert_eq!(value, "1000");
    let names = cluster.kubectl_ok(&["get", "sa,role,quota,job", "-n", "tools", "-o", "name"]);
    for expected in [
        "serviceaccount/robot",
        "role.rbac.authorization.k8s.io/reader",
        "resourcequota/small",
        "job.batch/once",
    ] {
        assert!(
            names.lines().any(|l| l == expected),
            "{expected} missing from {names}"
        );
    }
}

#[test]
fn create_from_files_and_get_in_every_format() {
    let cluster = Cluster::start();
    let file = cluster.write_file("shop.yaml", MANIFESTS);
    let created = cluster.kubectl_ok(&["create", "-f", path_str(&file)]);
    for line in [
        "namespace/shop created",
        "configmap/settings created",
        "deployment.apps/web created",
        "service/web created",
    ] {
        assert!(created.contains(line), "{created}");
    }

    // Tables, as Kubernetes prints them.
    let deployments = rows(&cluster.kubectl_ok(&["get", "deployments", "-n", "shop"]));
    assert_eq!(
        deployments[0],
        vec!["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    );
    // UP-TO-DATE is whatever the Deployment controller has made so far; no kubelet runs
    // the pods, so none is ready or available.
    assert_eq!(
        (&deployments[1][..2], &deployments[1][3]),
        (
            &["web".to_string(), "0/3".to_string()][..],
            &"0".to_string()
        )
    );
    let wide = rows(&cluster.kubectl_ok(&["get", "deployments", "-n", "shop", "-o", "wide"]));
    assert_eq!(&wide[0][5..], &["CONTAINERS", "IMAGES", "SELECTOR"]);
    assert_eq!(&wide[1][5..], &["nginx", "nginx:1.27", "app=web"]);
    let services = rows(&cluster.kubectl_ok(&["get", "svc", "web", "-n", "shop"]));
    assert_eq!(
        services[0],
        vec![
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    assert_eq!(services[1][1], "ClusterIP");
    assert!(services[1][2].starts_with("10.43."), "{:?}", services[1]);
    assert_eq!(services[1][4], "80/TCP");
    let namespaces = rows(&cluster.kubectl_ok(&["get", "ns", "shop"]));
    assert_eq!(&namespaces[1][..2], &["shop", "Active"]);

    // Structured output.
    let yaml = cluster.kubectl_ok(&["get", "configmap", "settings", "-n", "shop", "-o", "yaml"]);
    assert!(
        yaml.contains("color: blue") && yaml.contains("resourceVersion:") && yaml.contains("uid:"),
        "{yaml}"
    );
    let json: serde_json::Value = serde_json::from_str(&cluster.kubectl_ok(&[
        "get",
        "configmap",
        "settings",
        "-n",
        "shop",
        "-o",
        "json",
    ]))
    .unwrap();
    assert_eq!(json["data"]["size"], "large");
    assert_eq!(json["kind"], "ConfigMap");
    let name = cluster.kubectl_ok(&["get", "deployment", "web", "-n", "shop", "-o", "name"]);
    assert_eq!(name.trim(), "deployment.apps/web");
    let path = cluster.kubectl_ok(&[
        "get",
        "deployment",
        "web",
        "-n",
        "shop",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image}",
    ]);
    assert_eq!(path, "nginx:1.27");
    let columns = rows(&cluster.kubectl_ok(&[
        "get",
        "cm",
        "-n",
        "shop",
        "-l",
        "app=web",
        "-o",
        "custom-columns=NAME:.metadata.name,COLOR:.data.color",
    ]));
    assert_eq!(
        columns,
        vec![vec!["NAME", "COLOR"], vec!["settings", "blue"]]
    );
    let labels =
        rows(&cluster.kubectl_ok(&["get", "cm", "settings", "-n", "shop", "--show-labels"]));
    assert_eq!(labels[0].last().map(String::as_str), Some("LABELS"));
    assert_eq!(
        labels[1].last().map(String::as_str),
        Some("app=web,tier=front")
    );

    // Selectors.
    let none = cluster.kubectl(&["get", "cm", "-n", "shop", "-l", "tier=back"]);
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("No resources found in shop namespace.")
    );
    let by_field = rows(&cluster.kubectl_ok(&[
        "get",
        "cm",
        "-n",
        "shop",
        "--field-selector",
        "metadata.name=settings",
        "-o",
        "name",
    ]));
    assert_eq!(by_field, vec![vec!["configmap/settings"]]);
    let bad = cluster.kubectl(&[
        "get",
        "cm",
        "-n",
        "shop",
        "--field-selector",
        "spec.nodeName=x",
    ]);
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("field label not supported: spec.nodeName"),
        "{bad:?}"
    );

    // Pagination: kubectl follows the continue tokens.
    for i in 0..7 {
        cluster.kubectl_ok(&["create", "configmap", &format!("page-{i}"), "-n", "shop"]);
    }
    let chunked = cluster.kubectl_ok(&["get", "cm", "-n", "shop", "--chunk-size=2", "-o", "name"]);
    // Every namespace also holds the cluster CA's ConfigMap.
    let mut expected = vec!["configmap/kube-root-ca.crt".to_string()];
    expected.extend((0..7).map(|i| format!("configmap/page-{i}")));
    expected.push("configmap/settings".into());
    assert_eq!(chunked.lines().collect::<Vec<_>>(), expected);
    let table = rows(&cluster.kubectl_ok(&["get", "cm", "-n", "shop", "--chunk-size=3"]));
    assert_eq!(table.len(), 10, "one header and nine rows: {table:?}");
}

#[test]
fn get_all_across_namespaces() {
    let cluster = Cluster::start();
    let file = cluster.write_file("shop.yaml", MANIFESTS);
    cluster.kubectl_ok(&["create", "-f", path_str(&file)]);
    let all = cluster.kubectl_ok(&["get", "all", "-A"]);
    assert!(all.contains("default     service/kubernetes"), "{all}");
    assert!(all.contains("shop        service/web"), "{all}");
    assert!(all.contains("shop        deployment.apps/web"), "{all}");
}

#[test]
fn watch_prints_events_as_they_happen() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["run", "first", "--image=nginx"]);
    let mut watch = Process::spawn(&mut cluster.kubectl_command(&["get", "pods", "-w"])).unwrap();
    watch.wait_for_line("first", DEADLINE).unwrap();
    cluster.kubectl_ok(&["run", "second", "--image=nginx"]);
    watch.wait_for_line("second", DEADLINE).unwrap();
    cluster.kubectl_ok(&["label", "pod", "first", "watched=yes"]);
    cluster.kubectl_ok(&["delete", "pod", "second"]);
    // first (initial), second (added), first (modified), second (deleted).
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let output = watch.output();
        let first = output.lines().filter(|l| l.starts_with("first ")).count();
        let second = output.lines().filter(|l| l.starts_with("second ")).count();
        if first >= 2 && second >= 2 {
            assert!(
                output.lines().next().is_some_and(|l| l.starts_with("NAME")),
                "{output}"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "watch output: {output}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn delete_by_name_label_and_all() {
    let cluster = Cluster::start();
    for (name, tier) in [("a", "front"), ("b", "front"), ("c", "back"), ("d", "back")] {
        cluster.kubectl_ok(&["create", "configmap", name]);
        cluster.kubectl_ok(&["label", "configmap", name, &format!("tier={tier}")]);
    }
    assert!(
        cluster
            .kubectl_ok(&["delete", "configmap", "a"])
            .contains("configmap \"a\" deleted")
    );
    let deleted = cluster.kubectl_ok(&["delete", "configmap", "-l", "tier=front"]);
    assert!(deleted.contains("configmap \"b\" deleted"), "{deleted}");
    let left = cluster.kubectl_ok(&["get", "cm", "-o", "name"]);
    assert_eq!(
        left.lines().collect::<Vec<_>>(),
        vec!["configmap/c", "configmap/d", "configmap/kube-root-ca.crt"]
    );
    cluster.kubectl_ok(&["delete", "configmap", "--all"]);
    let gone = cluster.kubectl(&["get", "configmap", "c"]);
    assert!(
        String::from_utf8_lossy(&gone.stderr).contains("configmaps \"c\" not found"),
        "{gone:?}"
    );
}

#[test]
fn errors_read_like_kubernetes() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "configmap", "dup"]);
    let again = cluster.kubectl(&["create", "configmap", "dup"]);
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("configmaps \"dup\" already exists"),
        "{again:?}"
    );
    let missing = cluster.kubectl(&["get", "deployment", "nope"]);
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("deployments.apps \"nope\" not found"),
        "{missing:?}"
    );
    let invalid = cluster.kubectl_stdin(
        &["create", "-f", "-", "--dry-run=server", "-o", "name"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok-name\n",
    );
    assert_eq!(invalid.trim(), "configmap/ok-name");
    let bad_name = cluster.kubectl(&["create", "configmap", "Bad_Name"]);
    assert!(
        String::from_utf8_lossy(&bad_name.stderr).contains("is invalid"),
        "{bad_name:?}"
    );
    // Nothing was stored by the dry run.
    assert!(
        !cluster
            .kubectl(&["get", "configmap", "ok-name"])
            .status
            .success()
    );
}

#[test]
fn a_terminating_namespace_refuses_new_objects() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "namespace", "leaving"]);
    // A finalizer on its content keeps the namespace Terminating: the namespace controller
    // finalizes it only once it is empty.
    cluster.kubectl_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"before","namespace":"leaving","finalizers":["example.com/hold"]}}"#,
    );
    cluster.kubectl_ok(&["delete", "namespace", "leaving", "--wait=false"]);
    let phase = cluster.kubectl_ok(&[
        "get",
        "namespace",
        "leaving",
        "-o",
        "jsonpath={.status.phase}",
    ]);
    assert_eq!(phase, "Terminating");
    let refused = cluster.kubectl(&["create", "configmap", "after", "-n", "leaving"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(
            "unable to create new content in namespace leaving because it is being terminated"
        ),
        "{stderr}"
    );
    let missing = cluster.kubectl(&["create", "configmap", "x", "-n", "nowhere"]);
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("namespaces \"nowhere\" not found"),
        "{missing:?}"
    );
    // Released, the content goes and so does the namespace.
    cluster.kubectl_ok(&[
        "patch",
        "configmap",
        "before",
        "-n",
        "leaving",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    let deadline = std::time::Instant::now() + DEADLINE;
    while cluster
        .kubectl(&["get", "namespace", "leaving"])
        .status
        .success()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "namespace not removed"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
