//! The node agent's Node against a real `kyb server`, as a node identity
//! (`system:node:<name>`, so the Node authorizer and NodeRestriction apply): registration
//! with labels and taints, status (capacity, allocatable, conditions, nodeInfo) shown by
//! `kubectl get`/`describe`, the Lease renewed, Ready following the runtime, and mirror
//! pods created and deleted. The runtime is a fixed stand-in: containerd is the pod tests'.

use crate::cluster::Cluster;
use crate::nodes::condition;
use crate::poll::wait_for;
use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ContainerImage, Node, Pod};
use kube::api::Api;
use kyb_kubelet::node::{
    NodeAgent, NodeOptions, RuntimeCondition, RuntimeInfo, RuntimeStatus, options, static_pods,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A runtime whose readiness the test switches.
struct Runtime {
    ready: AtomicBool,
}

#[async_trait]
impl RuntimeInfo for Runtime {
    async fn version(&self) -> anyhow::Result<(String, String)> {
        Ok(("containerd".into(), "1.6.20".into()))
    }
    async fn images(&self) -> anyhow::Result<Vec<ContainerImage>> {
        Ok(vec![ContainerImage {
            names: Some(vec!["docker.io/library/busybox:1.36".into()]),
            size_bytes: Some(2_000_000),
        }])
    }
    async fn status(&self) -> anyhow::Result<RuntimeStatus> {
        let runtime_ready = if self.ready.load(Ordering::SeqCst) {
            RuntimeCondition::ready()
        } else {
            RuntimeCondition {
                status: false,
                reason: "ContainerdDown".into(),
                message: "stopped by the test".into(),
            }
        };
        Ok(RuntimeStatus {
            runtime_ready,
            network_ready: RuntimeCondition::ready(),
        })
    }
}

async fn node_client(cluster: &Cluster, node: &str) -> kube::Client {
    let path = cluster.user_kubeconfig(&format!("system:node:{node}"), &["system:nodes"]);
    let kubeconfig = kube::config::Kubeconfig::read_from(path).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

#[tokio::test]
async fn the_node_registers_reports_its_status_and_renews_its_lease() {
    let cluster = Cluster::start();
    let name = "e2e-node-agent";
    let client = node_client(&cluster, name).await;
    let data = tempfile::tempdir().unwrap();
    let mut options = NodeOptions::new(name, data.path().to_path_buf(), "v1.33.0");
    options.node_ip = Some("10.11.12.13".parse().unwrap());
    options.labels = options::parse_labels("tier=e2e").unwrap();
    options.taints = options::parse_taints("dedicated=e2e:NoSchedule").unwrap();
    options.system_reserved = options::parse_reserved("cpu=100m").unwrap();
    options.status_update_frequency = Duration::from_millis(500);
    options.lease_renew_interval = Duration::from_millis(500);
    let runtime = Arc::new(Runtime {
        ready: AtomicBool::new(true),
    });
    let agent = NodeAgent::new(client.clone(), options, runtime.clone());
    let allocatable = agent.allocatable();
    assert!(allocatable.contains_key("cpu") && allocatable.contains_key("memory"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(agent.run(|| true, async move {
        let _ = stopped.await;
    }));

    let nodes: Api<Node> = Api::all(client.clone());
    let node = wait_for("the node to be Ready", || async {
        let node = nodes.get_opt(name).await.ok().flatten()?;
        (condition(&node, "Ready")?.0 == "True").then_some(node)
    })
    .await;
    let ready = condition(&node, "Ready").unwrap();
    assert_eq!(ready.1, "KubeletReady");
    assert_eq!(ready.2, "kubelet is posting ready status");
    let labels = node.metadata.labels.clone().unwrap();
    assert_eq!(labels["kubernetes.io/hostname"], name);
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert_eq!(labels["tier"], "e2e");
    let taints = node.spec.clone().unwrap().taints.unwrap();
    assert!(
        taints
            .iter()
            .any(|t| t.key == "dedicated" && t.effect == "NoSchedule"),
        "{taints:?}"
    );
    let status = node.status.clone().unwrap();
    let info = status.node_info.unwrap();
    assert_eq!(info.container_runtime_version, "containerd://1.6.20");
    assert_eq!(info.kubelet_version, "v1.33.0");
    assert_eq!(info.operating_system, "linux");
    let capacity = status.capacity.unwrap();
    let cpus = std::thread::available_parallelism().unwrap().get() as i64;
    assert_eq!(capacity["cpu"].0, cpus.to_string());
    assert_eq!(capacity["pods"].0, "110");
    assert_eq!(
        status.allocatable.unwrap()["cpu"].0,
        format!("{}m", cpus * 1000 - 100)
    );
    let addresses = status.addresses.unwrap();
    assert_eq!(addresses[0].address, "10.11.12.13");
    assert_eq!(addresses[1].type_, "Hostname");

    // The Lease exists (renewed concurrently with the status) before describe shows it.
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let first = wait_for("the node lease", || async {
        leases.get_opt(name).await.ok().flatten()
    })
    .await;
    let shown = cluster.kubectl_ok(&["get", "node", name]);
    assert!(
        shown.contains("Ready") && shown.contains("v1.33.0"),
        "{shown}"
    );
    let described = cluster.kubectl_ok(&["describe", "node", name]);
    for section in [
        "Taints:",
        "Conditions:",
        "MemoryPressure",
        "KubeletHasSufficientMemory",
        "Addresses:",
        "InternalIP:  10.11.12.13",
        "Capacity:",
        "Allocatable:",
        "System Info:",
        "Container Runtime Version:  containerd://1.6.20",
        "Lease:",
        "HolderIdentity:  e2e-node-agent",
    ] {
        assert!(
            described.contains(section),
            "{section:?} not in:\n{described}"
        );
    }

    // The Lease is renewed, owned by the Node.
    let owner = &first.metadata.owner_references.clone().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("Node", node.metadata.uid.as_deref().unwrap())
    );
    assert_eq!(
        first.spec.as_ref().unwrap().lease_duration_seconds,
        Some(40)
    );
    let renewed = first.spec.unwrap().renew_time;
    wait_for("the lease to be renewed", || async {
        let lease = leases.get(name).await.ok()?;
        (lease.spec?.renew_time != renewed).then_some(())
    })
    .await;

    // Ready follows the runtime, with the kubelet's message.
    runtime.ready.store(false, Ordering::SeqCst);
    let not_ready = wait_for("the node to be NotReady", || async {
        let node = nodes.get(name).await.ok()?;
        let ready = condition(&node, "Ready")?;
        (ready.0 == "False").then_some(ready)
    })
    .await;
    assert_eq!(not_ready.1, "KubeletNotReady");
    assert_eq!(
        not_ready.2,
        "container runtime not ready: RuntimeReady=false reason:ContainerdDown message:stopped by the test"
    );
    let admin = crate::client::client(&cluster).await;
    wait_for("the NodeNotReady event", || async {
        let events = crate::poll::events_of(&admin, name).await;
        let wanted = (
            "NodeNotReady".to_string(),
            format!("Node {name} status is now: NodeNotReady"),
        );
        let registered = events
            .iter()
            .any(|(reason, _)| reason == "NodeHasSufficientMemory");
        (registered && events.contains(&wanted)).then_some(())
    })
    .await;
    runtime.ready.store(true, Ordering::SeqCst);
    wait_for("the node to be Ready again", || async {
        let node = nodes.get(name).await.ok()?;
        (condition(&node, "Ready")?.0 == "True").then_some(())
    })
    .await;

    // A static pod's mirror pod, created as the node and deleted once orphaned.
    let manifest = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n";
    let static_pod = static_pods::pod_from_file(
        std::path::Path::new("/manifests/web.yaml"),
        manifest.as_bytes(),
        name,
        "2026-01-01T00:00:00Z",
    )
    .unwrap();
    let node = nodes.get(name).await.unwrap();
    static_pods::sync_mirror_pod(&client, &static_pod, None, &node)
        .await
        .unwrap();
    let admin: Api<Pod> = Api::namespaced(admin, "default");
    let mirror = admin.get(&format!("web-{name}")).await.unwrap();
    assert!(static_pods::is_mirror_of(&mirror, &static_pod));
    let listed = static_pods::mirror_pods(&client, name).await.unwrap();
    assert_eq!(listed.len(), 1);
    // Already current: nothing to do.
    static_pods::sync_mirror_pod(&client, &static_pod, Some(&listed[0]), &node)
        .await
        .unwrap();
    assert_eq!(
        admin
            .get(&format!("web-{name}"))
            .await
            .unwrap()
            .metadata
            .uid,
        mirror.metadata.uid
    );
    // A changed manifest replaces the mirror pod.
    let changed = static_pods::pod_from_file(
        std::path::Path::new("/manifests/web.yaml"),
        manifest.replace("1.36", "1.37").as_bytes(),
        name,
        "2026-01-01T00:00:00Z",
    )
    .unwrap();
    static_pods::sync_mirror_pod(&client, &changed, Some(&listed[0]), &node)
        .await
        .unwrap();
    let replaced = wait_for("the mirror pod to be replaced", || async {
        let pod = admin.get_opt(&format!("web-{name}")).await.ok()??;
        static_pods::is_mirror_of(&pod, &changed).then_some(pod)
    })
    .await;
    assert_ne!(replaced.metadata.uid, mirror.metadata.uid);
    let deleted = static_pods::delete_orphaned_mirror_pods(&client, name, &[])
        .await
        .unwrap();
    assert_eq!(deleted, [format!("default/web-{name}")]);
    wait_for("the mirror pod to go", || async {
        admin
            .get_opt(&format!("web-{name}"))
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
