//! The resources of issue 16 a real 1.33 API server has: `bindings`, `componentstatuses`,
//! `csistoragecapacities`, `servicecidrs` and `ipaddresses`, through kubectl, kube-rs and
//! raw HTTP — listed by `kubectl api-resources` as Kubernetes lists them, validated with
//! Kubernetes' messages, and cluster IPs allocated through ServiceCIDRs and IPAddresses.

use crate::client::client;
use crate::cluster::{Cluster, rows};
use crate::poll::{blocking_wait_for as until, wait_for};
use futures::StreamExt;
use k8s_openapi::api::networking::v1::IPAddress;
use k8s_openapi::api::storage::v1::CSIStorageCapacity;
use kube::api::{Api, DeleteParams, PostParams, WatchEvent, WatchParams};
use std::time::Duration;

/// Runs kubectl with `input` on stdin, expecting it to fail; its stderr.
fn kubectl_fails(cluster: &Cluster, args: &[&str], input: &str) -> String {
    let output = cluster.kubectl_input(args, input);
    assert!(
        !output.status.success(),
        "kubectl {} succeeded: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8(output.stderr).unwrap()
}

fn apply(cluster: &Cluster, manifest: &str) {
    cluster.kubectl_stdin(&["apply", "-f", "-"], manifest);
}

/// Applies `manifest`, expecting it refused; kubectl's stderr.
fn refused(cluster: &Cluster, manifest: &str) -> String {
    kubectl_fails(cluster, &["apply", "-f", "-"], manifest)
}

fn service_cidr(name: &str, cidr: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {{name: {name}}}
spec: {{cidrs: [{cidr}]}}
"
    )
}

fn jsonpath(cluster: &Cluster, args: &[&str], path: &str) -> String {
    let mut all: Vec<&str> = args.to_vec();
    let format = format!("jsonpath={path}");
    all.extend(["-o", &format]);
    let output = cluster.kubectl(&all);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn exists(cluster: &Cluster, kind: &str, name: &str) -> bool {
    cluster.kubectl(&["get", kind, name]).status.success()
}

#[test]
fn api_resources_list_the_new_kinds_as_kubernetes_does() {
    let cluster = Cluster::start();
    let listed = cluster.kubectl_ok(&["api-resources", "-o", "wide", "--no-headers"]);
    let find = |name: &str, group_version: &str| -> Vec<String> {
        rows(&listed)
            .into_iter()
            .find(|r| r[0] == name && r.contains(&group_version.to_string()))
            .unwrap_or_else(|| panic!("{name} not in api-resources:\n{listed}"))
    };
    let bindings = find("bindings", "v1");
    assert_eq!(bindings[2..5], ["true", "Binding", "create"]);
    let statuses = find("componentstatuses", "v1");
    assert_eq!(
        statuses[1..6],
        ["cs", "v1", "false", "ComponentStatus", "get,list"]
    );
    let capacities = find("csistoragecapacities", "storage.k8s.io/v1");
    assert_eq!(capacities[2..4], ["true", "CSIStorageCapacity"]);
    let addresses = find("ipaddresses", "networking.k8s.io/v1");
    assert_eq!(
        addresses[1..5],
        ["ip", "networking.k8s.io/v1", "false", "IPAddress"]
    );
    let cidrs = find("servicecidrs", "networking.k8s.io/v1");
    assert_eq!(cidrs[2..4], ["false", "ServiceCIDR"]);
    for row in [capacities, addresses, cidrs] {
        assert!(
            row.iter()
                .any(|c| c == "create,delete,deletecollection,get,list,patch,update,watch"),
            "{row:?}"
        );
    }
    // OpenAPI knows them (kubectl explain).
    let explained = cluster.kubectl_ok(&["explain", "ipaddresses.spec.parentRef"]);
    assert!(explained.contains("resource") && explained.contains("namespace"));
    let explained = cluster.kubectl_ok(&["explain", "csistoragecapacities"]);
    assert!(explained.contains("maximumVolumeSize"));
}

#[test]
fn component_statuses_report_the_store_scheduler_and_controller_manager() {
    let cluster = Cluster::start();
    let table = until("every component healthy", || {
        let output = cluster.kubectl(&["get", "componentstatuses"]);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            stderr.contains("Warning: v1 ComponentStatus is deprecated in v1.19+"),
            "{stderr}"
        );
        let table = rows(&stdout);
        (table.len() == 4 && table[1..].iter().all(|r| r[1] == "Healthy")).then_some(table)
    });
    assert_eq!(table[0], ["NAME", "STATUS", "MESSAGE", "ERROR"]);
    let names: Vec<&str> = table[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["scheduler", "controller-manager", "etcd-0"]);
    assert_eq!(table[1][2], "ok");
    let condition = jsonpath(
        &cluster,
        &["get", "cs", "etcd-0"],
        "{.conditions[0].type}={.conditions[0].status}",
    );
    assert_eq!(condition, "Healthy=True");
    let (code, head, _) =
        cluster.http_with_headers("GET", "/api/v1/componentstatuses/scheduler", "", b"");
    assert_eq!(code, 200);
    assert!(
        head.contains("v1 ComponentStatus is deprecated in v1.19+"),
        "{head}"
    );
    let (code, _) = cluster.http("GET", "/api/v1/componentstatuses/nothing", "", b"");
    assert_eq!(code, 404);
    let (code, _) = cluster.http("DELETE", "/api/v1/componentstatuses/scheduler", "", b"");
    assert_eq!(code, 405);
}

#[test]
fn the_bindings_resource_binds_a_pod_once() {
    let cluster = Cluster::start();
    apply(
        &cluster,
        "apiVersion: v1
kind: Pod
metadata: {name: lone, namespace: default}
spec:
  schedulerName: nobody
  containers: [{name: c, image: busybox}]
",
    );
    let binding = |pod: &str, node: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Binding","metadata":{{"name":"{pod}"}},"target":{{"apiVersion":"v1","kind":"Node","name":"{node}"}}}}"#
        )
    };
    let path = "/api/v1/namespaces/default/bindings";
    let (code, text) = cluster.http(
        "POST",
        path,
        "application/json",
        binding("lone", "n1").as_bytes(),
    );
    assert_eq!(code, 201, "{text}");
    assert_eq!(
        jsonpath(&cluster, &["get", "pod", "lone"], "{.spec.nodeName}"),
        "n1"
    );
    let (code, text) = cluster.http(
        "POST",
        path,
        "application/json",
        binding("lone", "n2").as_bytes(),
    );
    assert_eq!(code, 409, "{text}");
    assert!(
        text.contains(r#"pod lone is already assigned to node \"n1\""#),
        "{text}"
    );
    let (code, _) = cluster.http(
        "POST",
        path,
        "application/json",
        binding("missing", "n1").as_bytes(),
    );
    assert_eq!(code, 404);
    let (code, text) = cluster.http(
        "POST",
        path,
        "application/json",
        br#"{"apiVersion":"v1","kind":"Binding","metadata":{"name":"lone"},"target":{}}"#,
    );
    assert_eq!(code, 422, "{text}");
    assert!(text.contains("target.name"), "{text}");
    let (code, _) = cluster.http("GET", "/api/v1/namespaces/default/bindings", "", b"");
    assert_eq!(code, 405);
}

#[tokio::test]
async fn csi_storage_capacities_are_served_with_their_validation() {
    let cluster = Cluster::start();
    let api: Api<CSIStorageCapacity> = Api::namespaced(client(&cluster).await, "default");
    let mut events = api
        .watch(&WatchParams::default().timeout(60), "0")
        .await
        .unwrap()
        .boxed();
    apply(
        &cluster,
        "apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: zone-a, namespace: default}
storageClassName: fast
capacity: 1024Mi
maximumVolumeSize: 512Mi
nodeTopology:
  matchLabels: {topology.kubernetes.io/zone: a}
",
    );
    let table = rows(&cluster.kubectl_ok(&["get", "csistoragecapacities"]));
    assert_eq!(table[0], ["NAME", "STORAGECLASSNAME", "CAPACITY"]);
    assert_eq!(table[1], ["zone-a", "fast", "1Gi"]);
    let added = tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .unwrap();
    match added {
        Some(Ok(WatchEvent::Added(capacity))) => {
            assert_eq!(capacity.storage_class_name, "fast");
        }
        other => panic!("expected the capacity's ADDED event, got {other:?}"),
    }
    // Update: the capacity may change, the class may not.
    let mut capacity = api.get("zone-a").await.unwrap();
    capacity.capacity = Some(k8s_openapi::apimachinery::pkg::api::resource::Quantity(
        "2Gi".into(),
    ));
    api.replace("zone-a", &PostParams::default(), &capacity)
        .await
        .unwrap();
    let modified = tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .unwrap();
    assert!(
        matches!(modified, Some(Ok(WatchEvent::Modified(c))) if c.capacity.as_ref().map(|q| q.0.as_str()) == Some("2Gi"))
    );
    let stderr = kubectl_fails(
        &cluster,
        &[
            "patch",
            "csistoragecapacity",
            "zone-a",
            "--type=merge",
            "-p",
            r#"{"storageClassName":"slow"}"#,
        ],
        "",
    );
    assert!(
        stderr.contains("storageClassName: Invalid value: \"slow\": field is immutable"),
        "{stderr}"
    );
    let stderr = refused(
        &cluster,
        "apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: bad, namespace: default}
storageClassName: Not_A_Class
capacity: -1Gi
nodeTopology:
  matchExpressions: [{key: zone, operator: Near}]
",
    );
    assert!(
        stderr.contains("The CSIStorageCapacity \"bad\" is invalid"),
        "{stderr}"
    );
    assert!(
        stderr.contains("storageClassName: Invalid value: \"Not_A_Class\""),
        "{stderr}"
    );
    assert!(
        stderr.contains("capacity: Invalid value: \"-1Gi\": must be greater than or equal to 0"),
        "{stderr}"
    );
    assert!(
        stderr.contains("nodeTopology.matchExpressions[0].operator"),
        "{stderr}"
    );
    api.delete("zone-a", &DeleteParams::default())
        .await
        .unwrap();
    let deleted = tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .unwrap();
    assert!(
        matches!(deleted, Some(Ok(WatchEvent::Deleted(_)))),
        "{deleted:?}"
    );
    let (code, _) = cluster.http(
        "GET",
        "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities/zone-a",
        "",
        b"",
    );
    assert_eq!(code, 404);
}

/// The IPAddress of `ip`: `namespace/name` of its parent Service and its managed-by label.
fn ip_address(cluster: &Cluster, ip: &str) -> Option<(String, String)> {
    let output = cluster.kubectl(&[
        "get",
        "ipaddress",
        ip,
        "-o",
        r#"jsonpath={.spec.parentRef.resource}/{.spec.parentRef.namespace}/{.spec.parentRef.name} {.metadata.labels.ipaddress\.kubernetes\.io/managed-by} {.metadata.labels.ipaddress\.kubernetes\.io/ip-family}"#,
    ]);
    output.status.success().then(|| {
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let (parent, labels) = text.split_once(' ').unwrap_or((&text, ""));
        (parent.to_string(), labels.to_string())
    })
}

fn cluster_ip(cluster: &Cluster, service: &str) -> String {
    jsonpath(cluster, &["get", "service", service], "{.spec.clusterIP}")
}

fn service(name: &str, ip: Option<&str>) -> String {
    let ip = ip
        .map(|ip| format!("  clusterIP: {ip}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: v1
kind: Service
metadata: {{name: {name}, namespace: default}}
spec:
{ip}  ports: [{{port: 80}}]
"
    )
}

#[tokio::test]
async fn cluster_ips_come_from_service_cidrs_as_ip_addresses() {
    let dir = kyb_testkit::temp_dir("cluster").unwrap();
    // Six addresses: .1 is the `kubernetes` service's, five are left.
    let cluster = Cluster::start_with(dir, &["--service-cluster-ip-range", "10.96.0.0/29"]);
    until("the default ServiceCIDR Ready and protected", || {
        let state = jsonpath(
            &cluster,
            &["get", "servicecidr", "kubernetes"],
            "{.spec.cidrs[0]} {.status.conditions[0].type}={.status.conditions[0].status} {.metadata.finalizers[0]}",
        );
        (state == "10.96.0.0/29 Ready=True networking.k8s.io/service-cidr-finalizer").then_some(())
    });
    assert_eq!(
        ip_address(&cluster, "10.96.0.1"),
        Some((
            "services/default/kubernetes".to_string(),
            "ipallocator.k8s.io IPv4".to_string()
        ))
    );
    let mut ips = Vec::new();
    for i in 0..5 {
        let name = format!("s{i}");
        apply(&cluster, &service(&name, None));
        let ip = cluster_ip(&cluster, &name);
        assert!(ip.starts_with("10.96.0.") && ip != "10.96.0.1", "{ip}");
        assert_eq!(
            ip_address(&cluster, &ip).map(|(parent, _)| parent),
            Some(format!("services/default/{name}"))
        );
        ips.push(ip);
    }
    let table = rows(&cluster.kubectl_ok(&["get", "ipaddresses"]));
    assert_eq!(table[0], ["NAME", "PARENTREF"]);
    assert!(table.contains(&vec![ips[0].clone(), "services/default/s0".to_string()]));
    let full = refused(&cluster, &service("s5", None));
    assert!(
        full.contains("failed to allocate a serviceIP: range is full"),
        "{full}"
    );
    let taken = refused(&cluster, &service("taken", Some(&ips[0])));
    assert!(
        taken.contains(&format!(
            "spec.clusterIPs: Invalid value: [\"{0}\"]: failed to allocate IP {0}: provided IP is already allocated",
            ips[0]
        )),
        "{taken}"
    );
    let outside = refused(&cluster, &service("far", Some("10.200.0.5")));
    assert!(
        outside.contains("failed to allocate IP 10.200.0.5: the provided network does not match the current range"),
        "{outside}"
    );

    // A second ServiceCIDR extends the range.
    apply(&cluster, &service_cidr("extra", "10.97.0.0/30"));
    until("the extra ServiceCIDR Ready", || {
        let ready = jsonpath(
            &cluster,
            &["get", "servicecidr", "extra"],
            "{.status.conditions[0].status} {.status.conditions[0].message}",
        );
        (ready == "True Kubernetes Service CIDR is ready").then_some(())
    });
    apply(&cluster, &service("s5", None));
    let extra_ip = cluster_ip(&cluster, "s5");
    assert!(
        ["10.97.0.1", "10.97.0.2"].contains(&extra_ip.as_str()),
        "{extra_ip}"
    );
    assert!(ip_address(&cluster, &extra_ip).is_some());

    // Deleting a Service releases its address before the delete returns: the address can
    // be asked for again at once (watched through kube-rs as it goes and comes back).
    let addresses: Api<IPAddress> = Api::all(client(&cluster).await);
    let listed = addresses.list(&Default::default()).await.unwrap();
    let revision = listed.metadata.resource_version.unwrap_or_default();
    let mut events = addresses
        .watch(&WatchParams::default().timeout(60), &revision)
        .await
        .unwrap()
        .boxed();
    cluster.kubectl_ok(&["delete", "service", "s0"]);
    assert_eq!(ip_address(&cluster, &ips[0]), None);
    apply(&cluster, &service("again", Some(&ips[0])));
    assert_eq!(cluster_ip(&cluster, "again"), ips[0]);
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(20), events.next())
            .await
            .unwrap();
        match event {
            Some(Ok(WatchEvent::Deleted(a))) if a.metadata.name.as_ref() == Some(&ips[0]) => {
                seen.push("DELETED".to_string());
            }
            Some(Ok(WatchEvent::Added(a))) if a.metadata.name.as_ref() == Some(&ips[0]) => {
                let parent = a.spec.map(|s| s.parent_ref.name);
                seen.push(format!("ADDED {}", parent.unwrap_or_default()));
            }
            Some(Ok(_)) => {}
            other => panic!("watch of ipaddresses ended: {other:?}"),
        }
    }
    assert_eq!(seen, ["DELETED", "ADDED again"]);
    cluster.kubectl_ok(&["delete", "service", "again"]);
    // A missing IPAddress is recreated, a leaked one deleted; one the allocator does not
    // manage is left alone.
    cluster.kubectl_ok(&["delete", "ipaddress", &ips[1]]);
    let repaired = until("s1's IPAddress repaired", || ip_address(&cluster, &ips[1]));
    assert_eq!(repaired.0, "services/default/s1");
    let address = |ip: &str, managed: bool| {
        let labels = if managed {
            "  labels: {ipaddress.kubernetes.io/managed-by: ipallocator.k8s.io}\n"
        } else {
            ""
        };
        format!(
            "apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata:
  name: {ip}
{labels}spec:
  parentRef: {{group: \"\", resource: services, namespace: default, name: ghost}}
"
        )
    };
    apply(&cluster, &address("10.96.0.200", false));
    apply(&cluster, &address(&ips[0], true));
    until("the leaked IPAddress deleted", || {
        (!exists(&cluster, "ipaddress", &ips[0])).then_some(())
    });
    assert!(exists(&cluster, "ipaddress", "10.96.0.200"));

    // A ServiceCIDR holding an allocated address waits for it before it goes.
    cluster.kubectl_ok(&["delete", "servicecidr", "extra", "--wait=false"]);
    until("the extra ServiceCIDR terminating", || {
        let state = jsonpath(
            &cluster,
            &["get", "servicecidr", "extra"],
            "{.status.conditions[0].status} {.status.conditions[0].reason}",
        );
        (state == "False Terminating").then_some(())
    });
    let blocked = refused(&cluster, &service("s6", Some("10.97.0.3")));
    assert!(
        blocked.contains("does not match the current range"),
        "{blocked}"
    );
    cluster.kubectl_ok(&["delete", "service", "s5"]);
    until("the extra ServiceCIDR gone", || {
        (!exists(&cluster, "servicecidr", "extra")).then_some(())
    });
    // The default one holds the remaining addresses: deleting it leaves it terminating.
    cluster.kubectl_ok(&["delete", "servicecidr", "kubernetes", "--wait=false"]);
    let client = client(&cluster).await;
    let cidrs: Api<k8s_openapi::api::networking::v1::ServiceCIDR> = Api::all(client);
    wait_for("the default ServiceCIDR terminating", || async {
        let cidr = cidrs.get_opt("kubernetes").await.ok()??;
        let condition = cidr.status?.conditions?.into_iter().next()?;
        (cidr.metadata.deletion_timestamp.is_some() && condition.reason == "Terminating")
            .then_some(())
    })
    .await;
}

#[test]
fn service_cidrs_and_ip_addresses_are_validated() {
    let cluster = Cluster::start();
    let stderr = refused(
        &cluster,
        "apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 10.43.0.010}
spec:
  parentRef: {resource: services, name: a}
",
    );
    assert!(
        stderr.contains("metadata.name: Invalid value: \"10.43.0.010\": must not have leading 0s"),
        "{stderr}"
    );
    let stderr = refused(
        &cluster,
        "apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 10.43.9.9}
spec: {}
",
    );
    assert!(
        stderr.contains("spec.parentRef: Required value"),
        "{stderr}"
    );
    apply(
        &cluster,
        "apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 10.43.9.9}
spec:
  parentRef: {resource: services, namespace: default, name: a}
",
    );
    cluster.kubectl_ok(&["label", "ipaddress", "10.43.9.9", "team=net"]);
    let stderr = kubectl_fails(
        &cluster,
        &[
            "patch",
            "ipaddress",
            "10.43.9.9",
            "--type=merge",
            "-p",
            r#"{"spec":{"parentRef":{"name":"b"}}}"#,
        ],
        "",
    );
    assert!(
        stderr.contains("spec.parentRef: Invalid value") && stderr.contains("field is immutable"),
        "{stderr}"
    );
    cluster.kubectl_ok(&["delete", "ipaddress", "10.43.9.9"]);
    let stderr = refused(&cluster, &service_cidr("sloppy", "10.98.0.1/24"));
    assert!(
        stderr.contains("spec.cidrs[0]: Invalid value: \"10.98.0.1/24\": must not have bits set beyond the prefix length"),
        "{stderr}"
    );
    let stderr = refused(
        &cluster,
        "apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: empty}
spec: {}
",
    );
    assert!(
        stderr.contains("spec.cidrs: Required value: at least one CIDR required"),
        "{stderr}"
    );
    apply(&cluster, &service_cidr("more", "10.98.0.0/24"));
    let stderr = kubectl_fails(
        &cluster,
        &[
            "patch",
            "servicecidr",
            "more",
            "--type=merge",
            "-p",
            r#"{"spec":{"cidrs":["10.99.0.0/24"]}}"#,
        ],
        "",
    );
    assert!(stderr.contains("spec.cidrs: Invalid value"), "{stderr}");
    assert!(stderr.contains("field is immutable"), "{stderr}");
    let table = rows(&cluster.kubectl_ok(&["get", "servicecidrs"]));
    assert_eq!(table[0], ["NAME", "CIDRS", "AGE"]);
    assert!(
        table
            .iter()
            .any(|r| r[0] == "more" && r[1] == "10.98.0.0/24")
    );
    assert!(
        table
            .iter()
            .any(|r| r[0] == "kubernetes" && r[1] == "10.43.0.0/16")
    );
    // The status is the keeper's, through /status only.
    let status = cluster.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/networking.k8s.io/v1/servicecidrs/more/status",
    ]);
    assert!(status.contains("\"kind\":\"ServiceCIDR\""));
}
