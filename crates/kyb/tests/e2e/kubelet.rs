//! A stand-in for kubelets until the real one exists: it registers Node objects (Ready,
//! with capacity), renews their Leases in `kube-node-lease`, and writes the status a
//! kubelet would for pods bound to its nodes — through the API, as a kubelet does.
//!
//! What a pod "does" is read from its annotations, so tests steer pods through their
//! templates:
//! - (none): Running, Ready.
//! - `kyb.test/ready: "false"`: Running, not Ready.
//! - `kyb.test/exit: "<code>"`: the container exits with that code (phase Succeeded for
//!   0, Failed otherwise; for `restartPolicy: Always` pods the phase stays Running).
//!
//! [`FakeKubelet::set_ready`] changes a pod's readiness later; [`FakeKubelet::stop_node`]
//! stops a node's heartbeats (its Lease is no longer renewed and its pods are left alone),
//! as if the machine died. Pods deleted on a live node are removed once their deletion
//! starts (their containers "stop" at once), as a kubelet confirms a graceful deletion. Pod IPs come from the node's pod CIDR when it has one
//! (node IPAM), else from 10.244.<node index>.0/24.

#![allow(dead_code)]

use crate::cluster::Cluster;
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A kube-rs client for the cluster's admin.
pub async fn admin_client(cluster: &Cluster) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(cluster.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

#[derive(Default)]
struct State {
    /// Nodes whose heartbeats stopped.
    stopped: HashSet<String>,
    /// Readiness overrides by `namespace/name`.
    ready: HashMap<String, bool>,
    /// The next host number per node for pod IPs.
    next_ip: HashMap<String, u32>,
    /// Pods already given an IP.
    ips: HashMap<String, String>,
}

pub struct FakeKubelet {
    client: kube::Client,
    nodes: Vec<String>,
    state: Arc<Mutex<State>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl FakeKubelet {
    /// Registers `nodes` (4 CPUs, 8 GiB, 110 pods each) and starts playing their kubelets.
    pub async fn start(client: kube::Client, nodes: &[&str]) -> FakeKubelet {
        let mut kubelet = FakeKubelet {
            client: client.clone(),
            nodes: vec![],
            state: Arc::default(),
            tasks: vec![],
        };
        for node in nodes {
            kubelet.add_node(node).await;
        }
        let state = kubelet.state.clone();
        kubelet
            .tasks
            .push(tokio::spawn(run_pods(client.clone(), state.clone())));
        kubelet.tasks.push(tokio::spawn(run_heartbeats(
            client,
            kubelet.nodes.clone(),
            state,
        )));
        kubelet
    }

    /// Registers one more node (its heartbeats start with the next round).
    pub async fn add_node(&mut self, name: &str) {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
            }},
            "status": {
                "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "conditions": [ready_condition()],
                // Loopback: the metrics API's scraper reaches for the node's kubelet (none
                // listens here unless a test serves one), and tests stay on loopback.
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                              {"type": "Hostname", "address": name}],
            },
        }))
        .unwrap();
        match nodes.create(&PostParams::default(), &node).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => panic!("registering node {name}: {e}"),
        }
        // Status is a subresource: write the Ready condition there too.
        let status = json!({"status": {"conditions": [ready_condition()]}});
        nodes
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .unwrap();
        // Admission's `not-ready` taint on new nodes is lifted by the node lifecycle
        // controller once the node is Ready.
        renew_lease(&self.client, name).await;
        let index = self.nodes.len();
        self.nodes.push(name.to_string());
        self.state
            .lock()
            .unwrap()
            .next_ip
            .insert(format!("base:{name}"), index as u32 + 1);
        // Heartbeats for added nodes: restart the heartbeat task with the new list.
        if let Some(task) = self.tasks.get(1) {
            task.abort();
            self.tasks[1] = tokio::spawn(run_heartbeats(
                self.client.clone(),
                self.nodes.clone(),
                self.state.clone(),
            ));
        }
    }

    /// Makes a pod's Ready condition `ready` from now on.
    pub fn set_ready(&self, namespace: &str, name: &str, ready: bool) {
        self.state
            .lock()
            .unwrap()
            .ready
            .insert(format!("{namespace}/{name}"), ready);
    }

    /// Stops a node's heartbeats and leaves its pods alone, as if it died.
    pub fn stop_node(&self, name: &str) {
        self.state.lock().unwrap().stopped.insert(name.to_string());
    }
}

impl Drop for FakeKubelet {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

fn ready_condition() -> serde_json::Value {
    let now = jiff_now();
    json!({"type": "Ready", "status": "True", "reason": "KubeletReady",
           "message": "kubelet is posting ready status",
           "lastHeartbeatTime": now, "lastTransitionTime": now})
}

fn jiff_now() -> String {
    k8s_openapi::jiff::Timestamp::from_second(k8s_openapi::jiff::Timestamp::now().as_second())
        .unwrap()
        .to_string()
}

async fn renew_lease(client: &kube::Client, node: &str) {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
        k8s_openapi::jiff::Timestamp::now(),
    );
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": node, "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": now},
    }))
    .unwrap();
    match leases.create(&PostParams::default(), &lease).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {
            let patch = json!({"spec": {"renewTime": now}});
            let _ = leases
                .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
                .await;
        }
        Err(_) => {}
    }
}

/// Renews each live node's Lease every 2 s and its Ready heartbeat every 10 s.
async fn run_heartbeats(client: kube::Client, nodes: Vec<String>, state: Arc<Mutex<State>>) {
    let mut round = 0u64;
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        round += 1;
        for node in &nodes {
            if state.lock().unwrap().stopped.contains(node) {
                continue;
            }
            renew_lease(&client, node).await;
            if round.is_multiple_of(5) {
                let api: Api<Node> = Api::all(client.clone());
                let status = json!({"status": {"conditions": [ready_condition()]}});
                let _ = api
                    .patch_status(node, &PatchParams::default(), &Patch::Merge(&status))
                    .await;
            }
        }
    }
}

/// Writes the status of every pod bound to a live node, whenever the pod changes (and
/// again every few seconds, for readiness overrides).
async fn run_pods(client: kube::Client, state: Arc<Mutex<State>>) {
    let pods: Api<Pod> = Api::all(client.clone());
    let nodes: Api<Node> = Api::all(client.clone());
    let mut stream = watcher::watcher(pods.clone(), watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut known: HashMap<String, Pod> = HashMap::new();
    loop {
        let changed: Vec<Pod> = tokio::select! {
            event = stream.next() => match event {
                Some(Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod))) => {
                    let key = key(&pod);
                    known.insert(key, pod.clone());
                    vec![pod]
                }
                Some(Ok(watcher::Event::Delete(pod))) => {
                    known.remove(&key(&pod));
                    vec![]
                }
                Some(_) => vec![],
                None => return,
            },
            _ = tick.tick() => known.values().cloned().collect(),
        };
        for pod in changed {
            if finish_deletion(&client, &pod, &state).await {
                continue;
            }
            if let Some(status) = desired_status(&pod, &nodes, &state).await {
                let name = pod.metadata.name.clone().unwrap_or_default();
                let namespace = pod.metadata.namespace.clone().unwrap_or_default();
                let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
                let _ = api
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                    .await;
            }
        }
    }
}

/// Completes the graceful deletion of a pod on a live node (a kubelet confirms its
/// containers stopped by deleting the pod with grace period 0); returns whether it did.
async fn finish_deletion(client: &kube::Client, pod: &Pod, state: &Mutex<State>) -> bool {
    let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) else {
        return false;
    };
    if pod.metadata.deletion_timestamp.is_none() || state.lock().unwrap().stopped.contains(node) {
        return false;
    }
    let api: Api<Pod> = Api::namespaced(
        client.clone(),
        pod.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let _ = api
        .delete(
            pod.metadata.name.as_deref().unwrap_or_default(),
            &kube::api::DeleteParams::default().grace_period(0),
        )
        .await;
    true
}

fn key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The status to write for `pod`, or `None` when it already has it (or is not ours).
async fn desired_status(
    pod: &Pod,
    nodes: &Api<Node>,
    state: &Mutex<State>,
) -> Option<serde_json::Value> {
    let node = pod.spec.as_ref()?.node_name.clone()?;
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let status = pod.status.clone().unwrap_or_default();
    let phase = status.phase.clone().unwrap_or_default();
    if phase == "Succeeded" || phase == "Failed" {
        return None;
    }
    let key = key(pod);
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    let (ip, ready_override) = {
        let state = state.lock().unwrap();
        if state.stopped.contains(&node) {
            return None;
        }
        (state.ips.get(&key).cloned(), state.ready.get(&key).copied())
    };
    let ip = match ip {
        Some(ip) => ip,
        None => {
            let cidr = nodes
                .get(&node)
                .await
                .ok()
                .and_then(|n| n.spec.and_then(|s| s.pod_cidr));
            let mut state = state.lock().unwrap();
            let base = state
                .next_ip
                .get(&format!("base:{node}"))
                .copied()
                .unwrap_or(200);
            let host = state.next_ip.entry(node.clone()).or_insert(1);
            *host += 1;
            let host = *host;
            let ip = match cidr.as_deref().and_then(|c| c.split('/').next()) {
                Some(network) => {
                    let octets: Vec<&str> = network.split('.').collect();
                    format!("{}.{}.{}.{}", octets[0], octets[1], octets[2], host % 254)
                }
                None => format!("10.244.{base}.{}", host % 254),
            };
            state.ips.insert(key.clone(), ip.clone());
            ip
        }
    };
    let containers = pod.spec.as_ref()?.containers.clone();
    let restart_always = pod
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .is_none_or(|p| p == "Always");
    let exit: Option<i32> = annotations
        .get("kyb.test/exit")
        .and_then(|c| c.parse().ok());
    let now = jiff_now();
    let started = status
        .start_time
        .as_ref()
        .map(|t| t.0.to_string())
        .unwrap_or_else(|| now.clone());
    let (phase, ready, container_state) = match exit {
        Some(code) if !restart_always => (
            if code == 0 { "Succeeded" } else { "Failed" },
            false,
            json!({"terminated": {"exitCode": code, "reason": if code == 0 {"Completed"} else {"Error"},
                   "startedAt": started, "finishedAt": now}}),
        ),
        _ => {
            let ready = ready_override.unwrap_or_else(|| {
                annotations.get("kyb.test/ready").map(String::as_str) != Some("false")
            });
            ("Running", ready, json!({"running": {"startedAt": started}}))
        }
    };
    // Already written as wanted: nothing to do.
    let current_ready = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status == "True");
    if status.phase.as_deref() == Some(phase)
        && current_ready == Some(ready)
        && status.pod_ip.as_deref() == Some(ip.as_str())
    {
        return None;
    }
    let flag = |b: bool| if b { "True" } else { "False" };
    let transition = |kind: &str, value: bool| {
        let previous = status.conditions.iter().flatten().find(|c| c.type_ == kind);
        match previous {
            Some(c) if c.status == flag(value) => c
                .last_transition_time
                .as_ref()
                .map(|t| t.0.to_string())
                .unwrap_or_else(|| now.clone()),
            _ => now.clone(),
        }
    };
    let statuses: Vec<serde_json::Value> = containers
        .iter()
        .map(|c| {
            json!({"name": c.name, "image": c.image, "imageID": "", "ready": ready,
                   "restartCount": 0, "started": phase == "Running", "state": container_state})
        })
        .collect();
    Some(json!({"status": {
        "phase": phase,
        "hostIP": "192.0.2.1",
        "hostIPs": [{"ip": "192.0.2.1"}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": started,
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": transition("PodScheduled", true)},
            {"type": "Initialized", "status": "True", "lastTransitionTime": transition("Initialized", true)},
            {"type": "ContainersReady", "status": flag(ready), "lastTransitionTime": transition("ContainersReady", ready)},
            {"type": "Ready", "status": flag(ready), "lastTransitionTime": transition("Ready", ready)},
        ],
        "containerStatuses": statuses,
    }}))
}
