//! The eviction manager: it observes the eviction signals on the machine
//! (`memory.available` = capacity − the root cgroup's working set; `nodefs`/`imagefs`
//! from `statvfs` of the root directory and the image file system; `pid.available`),
//! sets the pressure conditions (held for the 5 min pressure transition period after a
//! threshold stops being met), and, while a hard threshold is met, evicts one pod per
//! pass: ranked as the kubelet ranks them (those using more than they request first, then
//! lower priority, then larger usage above requests), never a critical pod, with the
//! kubelet's `Evicted` message.

use super::agent::PressureHandle;
use super::resources::binary_si;
use super::status::Pressure;
use super::thresholds::{Signal, Threshold, Thresholds};
use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Container, Pod};
use kyb_apimachinery::quantity::Quantity;
use kyb_node_sys::machine;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The status reason of an evicted pod.
pub const REASON: &str = "Evicted";

/// The kubelet's `--eviction-pressure-transition-period` default.
pub const PRESSURE_TRANSITION_PERIOD: Duration = Duration::from_secs(300);

/// The kubelet's `evictionMonitoringPeriod`.
pub const MONITORING_PERIOD: Duration = Duration::from_secs(10);

/// The priority from which a pod is critical (`system-cluster-critical`'s).
const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// One signal's observed value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observation {
    /// What is left.
    pub available: i64,
    /// The total, for percentage thresholds.
    pub capacity: i64,
}

/// The signals observed in one pass.
pub type Observations = BTreeMap<Signal, Observation>;

/// Observes the machine: memory, the file system of `root_dir` (nodefs) and of
/// `image_fs` (imagefs; nodefs when `None`), and process IDs. A signal that cannot be
/// read is left out.
pub fn observe(root_dir: &std::path::Path, image_fs: Option<&std::path::Path>) -> Observations {
    let mut observations = Observations::new();
    let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    if let (Ok(info), Ok(working_set)) = (machine::meminfo(), machine::memory_working_set()) {
        observations.insert(
            Signal::MemoryAvailable,
            Observation {
                available: clamp(info.total.saturating_sub(working_set)),
                capacity: clamp(info.total),
            },
        );
    }
    let mut file_system = |path: &std::path::Path, bytes: Signal, inodes: Signal| {
        if let Ok(fs) = machine::fs_stats(path) {
            observations.insert(
                bytes,
                Observation {
                    available: clamp(fs.available),
                    capacity: clamp(fs.capacity),
                },
            );
            observations.insert(
                inodes,
                Observation {
                    available: clamp(fs.inodes_free),
                    capacity: clamp(fs.inodes),
                },
            );
        }
    };
    file_system(root_dir, Signal::NodeFsAvailable, Signal::NodeFsInodesFree);
    file_system(
        image_fs.unwrap_or(root_dir),
        Signal::ImageFsAvailable,
        Signal::ImageFsInodesFree,
    );
    if let Ok(pids) = machine::pids() {
        observations.insert(
            Signal::PidAvailable,
            Observation {
                available: clamp(pids.max.saturating_sub(pids.running)),
                capacity: clamp(pids.max),
            },
        );
    }
    observations
}

/// The thresholds whose signal is below them now.
pub fn thresholds_met<'a>(
    thresholds: &'a Thresholds,
    observations: &Observations,
) -> Vec<&'a Threshold> {
    thresholds
        .0
        .iter()
        .filter(|t| {
            observations
                .get(&t.signal)
                .is_some_and(|o| o.available < t.value.amount(o.capacity))
        })
        .collect()
}

/// What the eviction manager knows of a running pod: its object and its containers'
/// usage.
#[derive(Clone, Debug)]
pub struct PodUsage {
    pub pod: Arc<Pod>,
    pub containers: Vec<ContainerUsage>,
}

/// One container's usage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerUsage {
    pub name: String,
    /// The memory working set in bytes.
    pub memory: u64,
    /// Bytes written to its writable layer and logs (and, on the first container, the
    /// pod's local volumes).
    pub ephemeral_storage: u64,
    pub inodes: u64,
    pub processes: u64,
}

impl PodUsage {
    fn usage(&self, resource: &str) -> i64 {
        let total: u64 = self
            .containers
            .iter()
            .map(|c| match resource {
                "memory" => c.memory,
                "ephemeral-storage" => c.ephemeral_storage,
                "inodes" => c.inodes,
                _ => c.processes,
            })
            .sum();
        i64::try_from(total).unwrap_or(i64::MAX)
    }

    fn requests(&self, resource: &str) -> i64 {
        #[derive(Clone, Default)]
        struct Amount(i64);
        impl kyb_component_helpers::resource::Amounts for Amount {
            fn add(&mut self, other: &Self) {
                self.0 = self.0.saturating_add(other.0);
            }
            fn max_with(&mut self, other: &Self) {
                self.0 = self.0.max(other.0);
            }
        }
        let Some(spec) = &self.pod.spec else {
            return 0;
        };
        kyb_component_helpers::resource::pod_amounts(
            spec,
            |c| Amount(container_request(c, resource).map_or(0, |q| q.value())),
            |list| {
                Amount(
                    list.get(resource)
                        .and_then(|q| Quantity::parse(&q.0).ok())
                        .map_or(0, |q| q.value()),
                )
            },
        )
        .0
    }

    fn priority(&self) -> i32 {
        self.pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
    }
}

fn container_request(container: &Container, resource: &str) -> Option<Quantity> {
    let requests = container.resources.as_ref()?.requests.as_ref()?;
    Quantity::parse(&requests.get(resource)?.0).ok()
}

/// Whether a pod must never be evicted: a static or mirror pod, or one of system-critical
/// priority (the kubelet's `IsCriticalPod`).
pub fn is_critical(pod: &Pod) -> bool {
    let annotations = pod.metadata.annotations.as_ref();
    let source = annotations.and_then(|a| a.get("kubernetes.io/config.source"));
    let mirror = annotations.is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"));
    source.is_some_and(|s| s != "api")
        || mirror
        || pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0) >= SYSTEM_CRITICAL_PRIORITY
}

/// Orders pods for eviction to reclaim `resource`, first to go first: for memory and
/// ephemeral-storage those using more than they request, then lower priority, then
/// larger usage above requests; for inodes and PIDs, priority then usage.
pub fn rank(pods: &mut [PodUsage], resource: &str) {
    let by_requests = matches!(resource, "memory" | "ephemeral-storage");
    pods.sort_by(|a, b| {
        let over = |p: &PodUsage| p.usage(resource) > p.requests(resource);
        let above = |p: &PodUsage| {
            if by_requests {
                p.usage(resource) - p.requests(resource)
            } else {
                p.usage(resource)
            }
        };
        let exceeds = if by_requests {
            over(b).cmp(&over(a))
        } else {
            Ordering::Equal
        };
        exceeds
            .then(a.priority().cmp(&b.priority()))
            .then(above(b).cmp(&above(a)))
    });
}

/// The kubelet's eviction message (`The node was low on resource: memory. Threshold
/// quantity: 100Mi, available: 50Mi. Container x was using 1Gi, request is 0, has larger
/// consumption of memory. `), trailing space included, as the kubelet writes it.
pub fn message(
    resource: &str,
    pod: &PodUsage,
    threshold: &Threshold,
    observation: &Observation,
) -> String {
    let mut message = format!("The node was low on resource: {resource}. ");
    let quantity = match &threshold.value {
        super::thresholds::ThresholdValue::Quantity(q) => q.canonical(),
        // The kubelet's `GetThresholdQuantity`: a binary quantity.
        value => binary_si(u64::try_from(value.amount(observation.capacity)).unwrap_or(0)),
    };
    let available = if resource == "memory" || resource == "ephemeral-storage" {
        binary_si(u64::try_from(observation.available).unwrap_or(0))
    } else {
        observation.available.to_string()
    };
    message.push_str(&format!(
        "Threshold quantity: {quantity}, available: {available}. "
    ));
    if resource != "memory" && resource != "ephemeral-storage" {
        return message;
    }
    let containers = pod
        .pod
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    for usage in &pod.containers {
        let Some(container) = containers.iter().find(|c| c.name == usage.name) else {
            continue;
        };
        let request = container_request(container, resource);
        let used = if resource == "memory" {
            usage.memory
        } else {
            usage.ephemeral_storage
        };
        let request_value = request.as_ref().map_or(0, |q| q.value());
        if i64::try_from(used).unwrap_or(i64::MAX) > request_value {
            let request_text = request.map_or_else(|| "0".to_string(), |q| q.canonical());
            message.push_str(&format!(
                "Container {} was using {}, request is {}, has larger consumption of {resource}. ",
                container.name,
                binary_si(used),
                request_text
            ));
        }
    }
    message
}

/// The eviction manager's pod admission (the kubelet's `Admit`): under pressure a new pod
/// is refused with reason [`REASON`] and `The node had condition: [MemoryPressure]. `,
/// except a critical pod, or, under memory pressure alone, a pod that is not BestEffort
/// or tolerates the `node.kubernetes.io/memory-pressure` taint.
pub fn admit(pod: &Pod, pressure: Pressure) -> Result<(), String> {
    let conditions: Vec<&str> = [
        (pressure.memory, "MemoryPressure"),
        (pressure.disk, "DiskPressure"),
        (pressure.pid, "PIDPressure"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    if conditions.is_empty() || is_critical(pod) {
        return Ok(());
    }
    if conditions == ["MemoryPressure"] {
        let best_effort = pod.spec.as_ref().is_none_or(|spec| {
            let spec = serde_json::to_value(spec).unwrap_or_default();
            kyb_component_helpers::qos::compute_pod_qos_json(&spec) == "BestEffort"
        });
        let taint = k8s_openapi::api::core::v1::Taint {
            key: "node.kubernetes.io/memory-pressure".to_string(),
            effect: "NoSchedule".to_string(),
            ..Default::default()
        };
        let tolerations = pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.as_deref())
            .unwrap_or_default();
        if !best_effort
            || kyb_component_helpers::tolerations::tolerations_tolerate(tolerations, &taint)
        {
            return Ok(());
        }
    }
    Err(format!(
        "The node had condition: [{}]. ",
        conditions.join(" ")
    ))
}

/// What the eviction manager reads: the running pods and their usage (the pod workers
/// and the runtime's stats; the agent's wiring implements it).
#[async_trait]
pub trait PodStats: Send + Sync {
    async fn active_pods(&self) -> anyhow::Result<Vec<PodUsage>>;

    /// The active pods with local storage limits (see [`super::local_storage`]), with
    /// their usage and their emptyDir volumes' usage by name; nothing to measure (and no
    /// call to the runtime) when no pod has such a limit.
    async fn local_storage(&self) -> anyhow::Result<Vec<(PodUsage, Vec<(String, u64)>)>> {
        Ok(vec![])
    }
}

/// Evicts a pod: the agent's wiring sets its phase `Failed`, reason [`REASON`] and the
/// message, and kills it with no grace period.
#[async_trait]
pub trait PodKiller: Send + Sync {
    async fn evict(&self, pod: &Pod, message: &str) -> anyhow::Result<()>;
}

/// Frees node-level resources before pods are evicted to reclaim `resource` (the agent's
/// garbage collection, [`super::gc::Reclaimer`]).
#[async_trait]
pub trait NodeReclaimer: Send + Sync {
    async fn reclaim(&self, resource: &str) -> anyhow::Result<()>;
}

/// The eviction manager's state between passes.
pub struct EvictionManager {
    thresholds: Thresholds,
    pressure: PressureHandle,
    transition_period: Duration,
    /// When each condition last had a threshold met.
    last_met: BTreeMap<&'static str, Instant>,
}

impl EvictionManager {
    pub fn new(thresholds: Thresholds, pressure: PressureHandle) -> EvictionManager {
        EvictionManager {
            thresholds,
            pressure,
            transition_period: PRESSURE_TRANSITION_PERIOD,
            last_met: BTreeMap::new(),
        }
    }

    /// The pressure conditions after a pass at `now` that met `met`: a condition holds
    /// while its threshold is met and for the transition period after.
    pub fn update_pressure(&mut self, met: &[&Threshold], now: Instant) -> Pressure {
        for threshold in met {
            self.last_met.insert(threshold.signal.condition(), now);
        }
        let holds = |condition: &str| {
            self.last_met
                .get(condition)
                .is_some_and(|t| now.duration_since(*t) < self.transition_period)
        };
        let pressure = Pressure {
            memory: holds("MemoryPressure"),
            disk: holds("DiskPressure"),
            pid: holds("PIDPressure"),
        };
        self.pressure.set(pressure);
        pressure
    }

    /// One pass: observe, update the conditions, and, if a threshold is met, first
    /// reclaim node-level resources (disk: dead containers, unused images) and observe
    /// again, then evict the first pod in rank that is not critical. Returns the evicted
    /// pod's name.
    pub async fn synchronize(
        &mut self,
        observe: &(dyn Fn() -> Observations + Send + Sync),
        stats: &dyn PodStats,
        killer: &dyn PodKiller,
        reclaimer: Option<&dyn NodeReclaimer>,
    ) -> anyhow::Result<Option<String>> {
        let thresholds = self.thresholds.clone();
        let mut observations = observe();
        let mut met = thresholds_met(&thresholds, &observations);
        self.update_pressure(&met, Instant::now());
        // Local storage limits first, pressure or not (kubelet's `localStorageEviction`).
        let mut evicted = None;
        for (usage, empty_dirs) in stats.local_storage().await? {
            let Some(message) = super::local_storage::violation(&usage, &empty_dirs) else {
                continue;
            };
            if is_critical(&usage.pod) {
                continue;
            }
            let name = usage.pod.metadata.name.clone().unwrap_or_default();
            killer.evict(&usage.pod, &message).await?;
            tracing::info!(pod = %name, %message, "evicted a pod over its local storage limits");
            evicted.get_or_insert(name);
        }
        if evicted.is_some() {
            return Ok(evicted);
        }
        // Memory first, as the kubelet's `byEvictionPriority`.
        met.sort_by_key(|t| t.signal.resource() != "memory");
        let Some(mut threshold) = met.first().copied() else {
            return Ok(None);
        };
        let resource = threshold.signal.resource();
        tracing::warn!(signal = %threshold.signal, resource, "eviction threshold met, reclaiming");
        if let Some(reclaimer) = reclaimer
            && matches!(resource, "ephemeral-storage" | "inodes")
        {
            if let Err(e) = reclaimer.reclaim(resource).await {
                tracing::warn!(error = %format!("{e:#}"), "eviction manager: reclaiming node-level resources");
            }
            observations = observe();
            let still: Vec<&Threshold> = thresholds_met(&thresholds, &observations)
                .into_iter()
                .filter(|t| t.signal.resource() == resource)
                .collect();
            match still.first() {
                Some(t) => threshold = t,
                None => {
                    tracing::info!(
                        "eviction manager: able to reduce resource pressure without evicting pods"
                    );
                    return Ok(None);
                }
            }
        }
        let Some(observation) = observations.get(&threshold.signal) else {
            return Ok(None);
        };
        let mut pods = stats.active_pods().await?;
        rank(&mut pods, resource);
        for pod in &pods {
            if is_critical(&pod.pod) {
                continue;
            }
            let message = message(resource, pod, threshold, observation);
            let name = pod.pod.metadata.name.clone().unwrap_or_default();
            killer.evict(&pod.pod, &message).await?;
            tracing::info!(pod = %name, %message, "evicted a pod");
            return Ok(Some(name));
        }
        Ok(None)
    }

    /// Runs a pass every 10 s until `cancel`.
    pub async fn run(
        mut self,
        root_dir: PathBuf,
        image_fs: Option<PathBuf>,
        stats: Arc<dyn PodStats>,
        killer: Arc<dyn PodKiller>,
        reclaimer: Option<Arc<dyn NodeReclaimer>>,
        cancel: impl Future<Output = ()>,
    ) {
        tokio::pin!(cancel);
        let mut tick = tokio::time::interval(MONITORING_PERIOD);
        loop {
            tokio::select! {
                _ = &mut cancel => return,
                _ = tick.tick() => {
                    let observer = || observe(&root_dir, image_fs.as_deref());
                    let result = self
                        .synchronize(&observer, stats.as_ref(), killer.as_ref(), reclaimer.as_deref())
                        .await;
                    if let Err(e) = result {
                        tracing::warn!(error = %format!("{e:#}"), "eviction manager: failed to synchronize");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Mutex;

    fn pod(name: &str, priority: i32, requests: &[(&str, &str)]) -> Arc<Pod> {
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}], "priority": priority}
        }))
        .unwrap();
        let resources = pod.spec.as_mut().unwrap().containers[0]
            .resources
            .get_or_insert_with(Default::default);
        resources.requests = Some(
            requests
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        k8s_openapi::apimachinery::pkg::api::resource::Quantity(v.to_string()),
                    )
                })
                .collect(),
        );
        Arc::new(pod)
    }

    fn usage(pod: Arc<Pod>, memory: u64) -> PodUsage {
        PodUsage {
            pod,
            containers: vec![ContainerUsage {
                name: "c".into(),
                memory,
                ..Default::default()
            }],
        }
    }

    fn names(pods: &[PodUsage]) -> Vec<String> {
        pods.iter()
            .map(|p| p.pod.metadata.name.clone().unwrap())
            .collect()
    }

    #[test]
    fn pods_over_their_requests_go_first_then_low_priority_then_usage() {
        let mut pods = vec![
            usage(pod("within", 0, &[("memory", "1Gi")]), 512 << 20),
            usage(pod("over-important", 1000, &[]), 100 << 20),
            usage(pod("over-small", 0, &[]), 10 << 20),
            usage(pod("over-big", 0, &[("memory", "10Mi")]), 200 << 20),
        ];
        rank(&mut pods, "memory");
        assert_eq!(
            names(&pods),
            ["over-big", "over-small", "over-important", "within"]
        );
    }

    #[test]
    fn thresholds_are_met_below_their_amount() {
        let thresholds = Thresholds::default_hard();
        let mut observations = Observations::new();
        observations.insert(
            Signal::MemoryAvailable,
            Observation {
                available: 50 << 20,
                capacity: 1 << 30,
            },
        );
        observations.insert(
            Signal::NodeFsAvailable,
            Observation {
                available: 20,
                capacity: 100,
            },
        );
        let met = thresholds_met(&thresholds, &observations);
        assert_eq!(met.len(), 1);
        assert_eq!(met[0].signal, Signal::MemoryAvailable);
        observations.insert(
            Signal::NodeFsAvailable,
            Observation {
                available: 9,
                capacity: 100,
            },
        );
        assert_eq!(thresholds_met(&thresholds, &observations).len(), 2);
    }

    #[test]
    fn the_message_is_the_kubelet_s() {
        let threshold = Thresholds::default_hard()
            .get(Signal::MemoryAvailable)
            .unwrap()
            .clone();
        let observation = Observation {
            available: 50 << 20,
            capacity: 1 << 30,
        };
        let p = usage(pod("x", 0, &[]), 1 << 30);
        assert_eq!(
            message("memory", &p, &threshold, &observation),
            "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. \
             Container c was using 1Gi, request is 0, has larger consumption of memory. "
        );
        let within = usage(pod("y", 0, &[("memory", "2Gi")]), 1 << 30);
        assert_eq!(
            message("memory", &within, &threshold, &observation),
            "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
        );
    }

    #[test]
    fn pressure_holds_for_the_transition_period() {
        let pressure = PressureHandle::default();
        let mut manager = EvictionManager::new(Thresholds::default_hard(), pressure.clone());
        let thresholds = Thresholds::default_hard();
        let memory = thresholds.get(Signal::MemoryAvailable).unwrap();
        let t0 = Instant::now();
        assert!(manager.update_pressure(&[memory], t0).memory);
        assert!(pressure.get().memory);
        assert!(
            manager
                .update_pressure(&[], t0 + Duration::from_secs(60))
                .memory
        );
        let later = manager.update_pressure(&[], t0 + Duration::from_secs(301));
        assert_eq!(later, Pressure::default());
    }

    struct Stats(Vec<PodUsage>);
    #[async_trait]
    impl PodStats for Stats {
        async fn active_pods(&self) -> anyhow::Result<Vec<PodUsage>> {
            Ok(self.0.clone())
        }
    }
    #[derive(Default)]
    struct Killer(Mutex<Vec<(String, String)>>);
    #[async_trait]
    impl PodKiller for Killer {
        async fn evict(&self, pod: &Pod, message: &str) -> anyhow::Result<()> {
            self.0
                .lock()
                .unwrap()
                .push((pod.metadata.name.clone().unwrap(), message.to_string()));
            Ok(())
        }
    }

    #[tokio::test]
    async fn one_pod_is_evicted_per_pass_and_never_a_critical_one() {
        let mut critical = (*pod("static", 0, &[])).clone();
        critical.metadata.annotations = Some(
            [(
                "kubernetes.io/config.source".to_string(),
                "file".to_string(),
            )]
            .into(),
        );
        let stats = Stats(vec![
            usage(Arc::new(critical), 900 << 20),
            usage(pod("victim", 0, &[]), 100 << 20),
            usage(pod("other", 0, &[]), 10 << 20),
        ]);
        let killer = Killer::default();
        let pressure = PressureHandle::default();
        let mut manager = EvictionManager::new(Thresholds::default_hard(), pressure.clone());
        let mut observations = Observations::new();
        observations.insert(
            Signal::MemoryAvailable,
            Observation {
                available: 200 << 20,
                capacity: 1 << 30,
            },
        );
        let now = observations.clone();
        assert_eq!(
            manager
                .synchronize(&move || now.clone(), &stats, &killer, None)
                .await
                .unwrap(),
            None
        );
        assert!(!pressure.get().memory);
        observations.insert(
            Signal::MemoryAvailable,
            Observation {
                available: 50 << 20,
                capacity: 1 << 30,
            },
        );
        let now = observations.clone();
        let evicted = manager
            .synchronize(&move || now.clone(), &stats, &killer, None)
            .await
            .unwrap();
        assert_eq!(evicted.as_deref(), Some("victim"));
        assert!(pressure.get().memory);
        let killed = killer.0.lock().unwrap();
        assert_eq!(killed.len(), 1);
        assert!(
            killed[0]
                .1
                .contains("Container c was using 100Mi, request is 0"),
            "{}",
            killed[0].1
        );
    }

    #[test]
    fn admission_under_pressure_is_the_kubelet_s() {
        let best_effort = pod("be", 0, &[]);
        let burstable = pod("b", 0, &[("memory", "10Mi")]);
        let memory = Pressure {
            memory: true,
            ..Default::default()
        };
        assert_eq!(admit(&best_effort, Pressure::default()), Ok(()));
        assert_eq!(
            admit(&best_effort, memory).unwrap_err(),
            "The node had condition: [MemoryPressure]. "
        );
        assert_eq!(admit(&burstable, memory), Ok(()));
        let mut tolerant = (*best_effort).clone();
        tolerant.spec.as_mut().unwrap().tolerations =
            Some(vec![k8s_openapi::api::core::v1::Toleration {
                key: Some("node.kubernetes.io/memory-pressure".into()),
                operator: Some("Exists".into()),
                effect: Some("NoSchedule".into()),
                ..Default::default()
            }]);
        assert_eq!(admit(&tolerant, memory), Ok(()));
        let both = Pressure {
            memory: true,
            disk: true,
            pid: false,
        };
        assert_eq!(
            admit(&burstable, both).unwrap_err(),
            "The node had condition: [MemoryPressure DiskPressure]. "
        );
        let mut critical = (*burstable).clone();
        critical.spec.as_mut().unwrap().priority = Some(2_000_001_000);
        assert_eq!(admit(&critical, both), Ok(()));
    }

    /// Frees disk when asked, as GC would.
    struct Reclaim(Mutex<Vec<String>>, Arc<Mutex<i64>>);
    #[async_trait]
    impl NodeReclaimer for Reclaim {
        async fn reclaim(&self, resource: &str) -> anyhow::Result<()> {
            self.0.lock().unwrap().push(resource.to_string());
            *self.1.lock().unwrap() += 30;
            Ok(())
        }
    }

    #[tokio::test]
    async fn disk_pressure_reclaims_node_resources_before_evicting() {
        let stats = Stats(vec![usage(pod("victim", 0, &[]), 1)]);
        let killer = Killer::default();
        let available = Arc::new(Mutex::new(5i64));
        let reclaim = Reclaim(Mutex::default(), available.clone());
        let mut manager =
            EvictionManager::new(Thresholds::default_hard(), PressureHandle::default());
        let observer = {
            let available = available.clone();
            move || {
                let mut o = Observations::new();
                let free = *available.lock().unwrap();
                o.insert(
                    Signal::NodeFsAvailable,
                    Observation {
                        available: free,
                        capacity: 100,
                    },
                );
                o
            }
        };
        // 5% free < 10%: GC frees 30 more and nothing is evicted.
        let evicted = manager
            .synchronize(&observer, &stats, &killer, Some(&reclaim))
            .await
            .unwrap();
        assert_eq!(evicted, None);
        assert_eq!(*reclaim.0.lock().unwrap(), ["ephemeral-storage"]);
        assert!(killer.0.lock().unwrap().is_empty());
        // Without reclaim the pod goes, with the storage message.
        *available.lock().unwrap() = 5;
        let evicted = manager
            .synchronize(&observer, &stats, &killer, None)
            .await
            .unwrap();
        assert_eq!(evicted.as_deref(), Some("victim"));
        assert!(killer.0.lock().unwrap()[0].1.starts_with(
            "The node was low on resource: ephemeral-storage. Threshold quantity: 10, available: 5. "
        ));
    }

    #[test]
    fn this_machine_is_observed() {
        let observations = observe(std::path::Path::new("/"), None);
        let memory = observations[&Signal::MemoryAvailable];
        assert!(
            memory.available > 0 && memory.available <= memory.capacity,
            "{memory:?}"
        );
        assert!(observations.contains_key(&Signal::NodeFsAvailable));
        assert!(observations.contains_key(&Signal::PidAvailable));
    }
}
