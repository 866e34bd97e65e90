//! [`NodeAgent`]: registers the Node, then renews its Lease and reports its status until
//! cancelled — the kubelet's `registerWithAPIServer`, `nodeLeaseController` and
//! `syncNodeStatus` in one loop.
//!
//! The InternalIP is `--node-ip` when given, otherwise the source address of the default
//! route (the kubelet's last fallback; it asks DNS for the node's name first, which we
//! skip). A node with neither — a network namespace holding only a loopback — reports
//! just its Hostname address, as the kubelet does (it logs `can't get ip address of
//! node`): give such a node `--node-ip`.

use super::RuntimeInfo;
use super::lease::LeaseRenewer;
use super::options::NodeOptions;
use super::register;
use super::resources::{self, Machine, ResourceList};
use super::status::{self, Health, Pressure};
use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Event, EventSource, Node, NodeDaemonEndpoints, NodeStatus, NodeSystemInfo,
    ObjectReference,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kyb_node_sys::machine;
use std::future::Future;
use std::net::{IpAddr, UdpSocket};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a runtime status check stays good (the kubelet's `maxWaitForContainerRuntime`).
const RUNTIME_SYNC_THRESHOLD: Duration = Duration::from_secs(30);

/// The node's capacity and allocatable resources, kept current by the agent; cheap to
/// clone, for admission and `resourceFieldRef`.
#[derive(Clone, Debug, Default)]
pub struct NodeResources(Arc<Mutex<(ResourceList, ResourceList)>>);

impl NodeResources {
    /// The node's capacity.
    pub fn capacity(&self) -> ResourceList {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .clone()
    }

    /// The node's allocatable resources.
    pub fn allocatable(&self) -> ResourceList {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .1
            .clone()
    }

    fn set(&self, capacity: ResourceList, allocatable: ResourceList) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = (capacity, allocatable);
    }
}

/// The pressure conditions, which the eviction manager sets and the status reports.
#[derive(Clone, Debug, Default)]
pub struct PressureHandle(Arc<Mutex<Pressure>>);

impl PressureHandle {
    pub fn get(&self) -> Pressure {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn set(&self, pressure: Pressure) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = pressure;
    }
}

/// The Node's agent: registration, Lease, status.
pub struct NodeAgent {
    client: kube::Client,
    options: NodeOptions,
    runtime: Arc<dyn RuntimeInfo>,
    resources: NodeResources,
    pressure: PressureHandle,
}

/// Measures the machine for the node's capacity.
pub fn measure(options: &NodeOptions) -> anyhow::Result<Machine> {
    use anyhow::Context as _;
    Ok(Machine {
        cpus: machine::cpu_count().context("counting CPUs")?,
        memory: machine::meminfo().context("reading memory")?.total,
        ephemeral_storage: machine::fs_stats(&options.root_dir)
            .context("reading the root directory's file system")?
            .capacity,
        huge_pages: machine::huge_pages().unwrap_or_default(),
    })
}

/// The source address of the default route (no packet is sent: a UDP socket is only
/// connected), the kubelet's fallback when `--node-ip` is not given.
pub fn default_route_address() -> Option<IpAddr> {
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    Some(socket.local_addr().ok()?.ip())
}

impl NodeAgent {
    pub fn new(
        client: kube::Client,
        options: NodeOptions,
        runtime: Arc<dyn RuntimeInfo>,
    ) -> NodeAgent {
        let agent = NodeAgent {
            client,
            options,
            runtime,
            resources: NodeResources::default(),
            pressure: PressureHandle::default(),
        };
        match measure(&agent.options) {
            Ok(machine) => {
                agent.update_resources(&machine);
            }
            Err(e) => tracing::warn!(error = %format!("{e:#}"), "measuring the machine"),
        }
        agent
    }

    /// The node's resources, kept current while the agent runs.
    pub fn resources(&self) -> NodeResources {
        self.resources.clone()
    }

    /// The node's allocatable resources now.
    pub fn allocatable(&self) -> ResourceList {
        self.resources.allocatable()
    }

    /// The handle the eviction manager reports pressure through.
    pub fn pressure(&self) -> PressureHandle {
        self.pressure.clone()
    }

    fn update_resources(&self, machine: &Machine) -> (ResourceList, ResourceList) {
        let capacity = resources::capacity(machine, self.options.max_pods);
        let allocatable = resources::allocatable(
            &capacity,
            &[&self.options.system_reserved, &self.options.kube_reserved],
            &self.options.eviction_hard,
        );
        self.resources.set(capacity.clone(), allocatable.clone());
        (capacity, allocatable)
    }

    /// Registers the Node, then renews its Lease and reports its status until `cancel`
    /// completes. `pods_ready` tells whether the pod workers are healthy (the Ready
    /// condition's PLEG check).
    pub async fn run(
        self,
        pods_ready: impl Fn() -> bool,
        cancel: impl Future<Output = ()>,
    ) -> anyhow::Result<()> {
        tokio::pin!(cancel);
        let nodes: Api<Node> = Api::all(self.client.clone());
        let mut runtime = RuntimeTracker::default();
        // Registration, with the kubelet's back-off (100 ms doubling to 7 s).
        let mut delay = Duration::from_millis(100);
        let mut node = loop {
            runtime.check(self.runtime.as_ref()).await;
            let (status, events) = self
                .status(&NodeStatus::default(), &runtime.health(pods_ready()))
                .await;
            let initial = register::initial_node(&self.options, status);
            match register::try_register(&nodes, &initial).await {
                Ok(node) => {
                    // The kubelet records its conditions' first states at registration.
                    for event in events {
                        self.record_event(event).await;
                    }
                    break node;
                }
                Err(e) => {
                    tracing::warn!(node = %self.options.node_name, error = %format!("{e:#}"), "registering the node")
                }
            }
            tokio::select! {
                _ = &mut cancel => return Ok(()),
                _ = tokio::time::sleep(delay) => {}
            }
            delay = (delay * 2).min(Duration::from_secs(7));
        };
        let mut lease = LeaseRenewer::new(
            self.client.clone(),
            &self.options.node_name,
            self.options.lease_duration,
        );
        let mut lease_tick = tokio::time::interval(self.options.lease_renew_interval);
        let mut status_tick = tokio::time::interval(self.options.status_update_frequency);
        let mut last_report: Option<Instant> = None;
        loop {
            tokio::select! {
                _ = &mut cancel => return Ok(()),
                _ = lease_tick.tick() => {
                    if let Err(e) = lease.renew(Some(&node)).await {
                        tracing::warn!(node = %self.options.node_name, error = %format!("{e:#}"), "renewing the node lease");
                    }
                }
                _ = status_tick.tick() => {
                    runtime.check(self.runtime.as_ref()).await;
                    match self.sync_status(&nodes, &runtime.health(pods_ready()), &mut last_report).await {
                        Ok(Some(updated)) => node = updated,
                        Ok(None) => {}
                        Err(e) => tracing::warn!(node = %self.options.node_name, error = %format!("{e:#}"), "updating the node status"),
                    }
                }
            }
        }
    }

    /// One status update: read the Node, compute its status, and patch it when it
    /// changed or the report period has passed. Returns the Node when patched.
    async fn sync_status(
        &self,
        nodes: &Api<Node>,
        health: &Health,
        last_report: &mut Option<Instant>,
    ) -> anyhow::Result<Option<Node>> {
        let name = &self.options.node_name;
        let node = nodes
            .get(name)
            .await
            .map_err(|e| anyhow::Error::new(e).context(format!("error getting node {name:?}")))?;
        let old = node.status.clone().unwrap_or_default();
        let (new, events) = self.status(&old, health).await;
        let due = last_report.is_none_or(|t| t.elapsed() >= self.options.status_report_frequency);
        if !status::changed(&old, &new) && !due {
            return Ok(None);
        }
        let patch = serde_json::json!({ "status": new });
        let patched = nodes
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| anyhow::Error::new(e).context("patching the node status"))?;
        *last_report = Some(Instant::now());
        for event in events {
            self.record_event(event).await;
        }
        Ok(Some(patched))
    }

    /// The node's status computed now from the machine, the runtime and `old`'s
    /// conditions, with the events of the conditions' transitions.
    pub async fn status(
        &self,
        old: &NodeStatus,
        health: &Health,
    ) -> (NodeStatus, Vec<&'static str>) {
        let (capacity, allocatable) = match measure(&self.options) {
            Ok(machine) => self.update_resources(&machine),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "measuring the machine");
                (self.resources.capacity(), self.resources.allocatable())
            }
        };
        let names: Vec<&str> = capacity.keys().map(String::as_str).collect();
        let not_ready = status::ready_errors(health, &names);
        let now = Time(jiff::Timestamp::now());
        let (conditions, events) = status::conditions(
            old.conditions.as_deref().unwrap_or_default(),
            &now,
            self.pressure.get(),
            &not_ready,
        );
        let identity = machine::identity();
        let candidates: Vec<IpAddr> = default_route_address().into_iter().collect();
        let addresses =
            status::addresses(self.options.node_ip, &candidates, &self.options.node_name);
        let runtime_version = match self.runtime.version().await {
            Ok((name, version)) => format!("{name}://{version}"),
            Err(_) => old
                .node_info
                .as_ref()
                .map(|i| i.container_runtime_version.clone())
                .unwrap_or_default(),
        };
        let images = match self.runtime.images().await {
            Ok(images) => Some(status::images(images)),
            Err(_) => old.images.clone(),
        };
        let status = NodeStatus {
            capacity: Some(resources::to_api(&capacity)),
            allocatable: Some(resources::to_api(&allocatable)),
            conditions: Some(conditions),
            addresses: Some(addresses),
            daemon_endpoints: Some(NodeDaemonEndpoints {
                kubelet_endpoint: Some(DaemonEndpoint {
                    port: self.options.kubelet_port,
                }),
            }),
            node_info: Some(NodeSystemInfo {
                machine_id: identity.machine_id,
                system_uuid: identity.system_uuid,
                boot_id: identity.boot_id,
                kernel_version: identity.kernel_version,
                os_image: machine::os_image(),
                container_runtime_version: runtime_version,
                kubelet_version: self.options.kubelet_version.clone(),
                // Deprecated (KEP-4004): a 1.33 kubelet leaves it empty
                // (DisableNodeKubeProxyVersion is on by default).
                kube_proxy_version: String::new(),
                operating_system: "linux".to_string(),
                architecture: machine::go_arch().to_string(),
                ..Default::default()
            }),
            images,
            ..old.clone()
        };
        (status, events)
    }

    /// Records a node event (`NodeReady`, ...) as the kubelet does: in `default`, about
    /// the Node whose UID is its name. Best effort.
    async fn record_event(&self, reason: &str) {
        let name = &self.options.node_name;
        let now = jiff::Timestamp::now();
        let event = Event {
            metadata: ObjectMeta {
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                namespace: Some("default".to_string()),
                ..Default::default()
            },
            involved_object: ObjectReference {
                kind: Some("Node".to_string()),
                name: Some(name.clone()),
                uid: Some(name.clone()),
                ..Default::default()
            },
            reason: Some(reason.to_string()),
            message: Some(format!("Node {name} status is now: {reason}")),
            source: Some(EventSource {
                component: Some("kubelet".to_string()),
                host: Some(name.clone()),
            }),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            count: Some(1),
            type_: Some("Normal".to_string()),
            ..Default::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), "default");
        if let Err(e) = api.create(&PostParams::default(), &event).await {
            tracing::debug!(error = %e, reason, "recording a node event");
        }
    }
}

/// The runtime's health as the kubelet's `runtimeState` tracks it.
#[derive(Default)]
struct RuntimeTracker {
    last_ok: Option<Instant>,
    last: Option<super::RuntimeStatus>,
}

impl RuntimeTracker {
    async fn check(&mut self, runtime: &dyn RuntimeInfo) {
        match tokio::time::timeout(Duration::from_secs(10), runtime.status()).await {
            Ok(Ok(status)) => {
                if status.runtime_ready.status {
                    self.last_ok = Some(Instant::now());
                }
                self.last = Some(status);
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %format!("{e:#}"), "container runtime sanity check failed")
            }
            Err(_) => tracing::warn!("container runtime sanity check timed out"),
        }
    }

    fn health(&self, pods_ready: bool) -> Health {
        Health {
            runtime: self.last.clone(),
            runtime_checked: self.last_ok.is_some(),
            runtime_stale: self
                .last_ok
                .is_some_and(|t| t.elapsed() >= RUNTIME_SYNC_THRESHOLD),
            pods_ready,
        }
    }
}
