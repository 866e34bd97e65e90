//! Resources as the runtime applies them, as Kubernetes' kubelet computes them on Linux:
//! CPU shares from requests (at least 2), the CFS quota over a 100 ms period from limits,
//! the memory limit, hugepage limits, the OOM score adjustment per QoS class, the pod's
//! cgroup (`kubepods/<qos>/pod<uid>`) and the sandbox's resources and overhead.

use super::ContainerKind;
use k8s_cri::v1::{HugepageLimit, LinuxContainerResources};
use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use kyb_apimachinery::quantity::Quantity;
use kyb_component_helpers::qos::pod_qos;
use kyb_component_helpers::resource::{Amounts, pod_amounts};
use kyb_node_sys::cgroup::Driver;
use std::collections::BTreeMap;

/// The fewest CPU shares a container gets.
pub const MIN_SHARES: i64 = 2;
const SHARES_PER_CPU: i64 = 1024;
/// The CFS period, in microseconds.
pub const QUOTA_PERIOD: i64 = 100_000;
/// The smallest CFS quota, in microseconds.
pub const MIN_QUOTA_PERIOD: i64 = 1000;
/// The OOM score adjustment of Guaranteed pods' containers (and node-critical pods').
pub const GUARANTEED_OOM_SCORE_ADJ: i64 = -997;
/// The OOM score adjustment of BestEffort pods' containers.
pub const BEST_EFFORT_OOM_SCORE_ADJ: i64 = 1000;
/// Priorities from here up are system-critical.
const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// CPU shares for `milli_cpu` millicores.
pub fn milli_cpu_to_shares(milli_cpu: i64) -> i64 {
    if milli_cpu == 0 {
        return MIN_SHARES;
    }
    (milli_cpu.saturating_mul(SHARES_PER_CPU) / 1000).max(MIN_SHARES)
}

/// The CFS quota for `milli_cpu` millicores over `period` (0: no limit).
pub fn milli_cpu_to_quota(milli_cpu: i64, period: i64) -> i64 {
    if milli_cpu == 0 {
        return 0;
    }
    (milli_cpu.saturating_mul(period) / 1000).max(MIN_QUOTA_PERIOD)
}

/// A resource of a resource list, parsed (None when absent or unreadable).
pub(crate) fn amount(list: Option<&BTreeMap<String, ApiQuantity>>, name: &str) -> Option<Quantity> {
    list?.get(name).and_then(|q| Quantity::parse(&q.0).ok())
}

/// CPU shares, CFS quota and period, and the memory limit (`calculateLinuxResources`):
/// shares from the request, or from the limit when only that is set.
pub fn linux_resources(
    cpu_request: Option<&Quantity>,
    cpu_limit: Option<&Quantity>,
    memory_limit: Option<&Quantity>,
) -> LinuxContainerResources {
    let milli = |q: Option<&Quantity>| q.map_or(0, Quantity::milli_value_i64);
    let shares = match (cpu_request, cpu_limit) {
        (None, Some(limit)) => milli_cpu_to_shares(limit.milli_value_i64()),
        (request, _) => milli_cpu_to_shares(milli(request)),
    };
    LinuxContainerResources {
        cpu_shares: shares,
        memory_limit_in_bytes: memory_limit.map_or(0, Quantity::value),
        cpu_period: QUOTA_PERIOD,
        cpu_quota: milli_cpu_to_quota(milli(cpu_limit), QUOTA_PERIOD),
        ..Default::default()
    }
}

/// A container's resources: [`linux_resources`] of its requests and limits, its OOM score
/// adjustment and its hugepage limits.
pub fn container_resources(
    pod: &Pod,
    container: &Container,
    kind: ContainerKind,
    memory_capacity: i64,
) -> LinuxContainerResources {
    let resources = container.resources.as_ref();
    let requests = resources.and_then(|r| r.requests.as_ref());
    let limits = resources.and_then(|r| r.limits.as_ref());
    let mut linux = linux_resources(
        amount(requests, "cpu").as_ref(),
        amount(limits, "cpu").as_ref(),
        amount(limits, "memory").as_ref(),
    );
    linux.oom_score_adj = oom_score_adj(pod, container, kind, memory_capacity);
    linux.hugepage_limits = hugepage_limits(limits);
    linux
}

/// Whether a pod is critical to its node (`IsNodeCriticalPod`): a static, mirror or
/// system-critical-priority pod of the `system-node-critical` priority class.
pub fn is_node_critical(pod: &Pod) -> bool {
    let annotations = pod.metadata.annotations.as_ref();
    let source = annotations.and_then(|a| a.get("kubernetes.io/config.source"));
    let is_static = source.is_some_and(|s| s != "api");
    let is_mirror = annotations.is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"));
    let spec = pod.spec.as_ref();
    let critical_priority = spec
        .and_then(|s| s.priority)
        .is_some_and(|p| p >= SYSTEM_CRITICAL_PRIORITY);
    (is_static || is_mirror || critical_priority)
        && spec.and_then(|s| s.priority_class_name.as_deref()) == Some("system-node-critical")
}

fn memory_request(container: &Container) -> i64 {
    let requests = container
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref());
    amount(requests, "memory").map_or(0, |q| q.value())
}

/// The OOM score adjustment of a container (`GetContainerOOMScoreAdjust`): -997 for
/// Guaranteed and node-critical pods, 1000 for BestEffort ones; for Burstable ones
/// `1000 - 1000 × request / capacity`, within 3..=999 — a sidecar's no higher than the
/// smallest regular container's.
pub fn oom_score_adj(
    pod: &Pod,
    container: &Container,
    kind: ContainerKind,
    memory_capacity: i64,
) -> i64 {
    if is_node_critical(pod) {
        return GUARANTEED_OOM_SCORE_ADJ;
    }
    match pod_qos(pod) {
        "Guaranteed" => return GUARANTEED_OOM_SCORE_ADJ,
        "BestEffort" => return BEST_EFFORT_OOM_SCORE_ADJ,
        _ => {}
    }
    let capacity = i128::from(memory_capacity.max(1));
    let score = |request: i64| (1000 - (1000 * i128::from(request)) / capacity) as i64;
    let mut adj = score(memory_request(container));
    if kind == ContainerKind::Sidecar {
        let min_regular = pod
            .spec
            .as_ref()
            .map(|s| s.containers.iter().map(memory_request).min().unwrap_or(0))
            .unwrap_or(0);
        if min_regular != 0 {
            adj = adj.min(score(min_regular));
        }
    }
    if adj < 1000 + GUARANTEED_OOM_SCORE_ADJ {
        return 1000 + GUARANTEED_OOM_SCORE_ADJ;
    }
    if adj == BEST_EFFORT_OOM_SCORE_ADJ {
        return adj - 1;
    }
    adj
}

/// The hugepage limits of a container's `hugepages-<size>` limits, page sizes written as
/// the cgroup files name them (`2MB`, `1GB`).
pub fn hugepage_limits(limits: Option<&BTreeMap<String, ApiQuantity>>) -> Vec<HugepageLimit> {
    const UNITS: [&str; 6] = ["B", "KB", "MB", "GB", "TB", "PB"];
    let mut out = Vec::new();
    for (name, amount) in limits.into_iter().flatten() {
        let Some(size) = name.strip_prefix("hugepages-") else {
            continue;
        };
        let (Ok(size), Ok(amount)) = (Quantity::parse(size), Quantity::parse(&amount.0)) else {
            continue;
        };
        let mut size = size.value();
        if size <= 0 {
            continue;
        }
        let mut unit = 0;
        while size % 1024 == 0 && unit < UNITS.len() - 1 {
            size /= 1024;
            unit += 1;
        }
        if size > 1024 && unit < UNITS.len() - 1 {
            continue;
        }
        out.push(HugepageLimit {
            page_size: format!("{size}{}", UNITS[unit]),
            limit: u64::try_from(amount.value()).unwrap_or(0),
        });
    }
    out
}

/// CPU and memory amounts of a pod, for [`pod_amounts`].
#[derive(Clone, Default)]
struct CpuMemory {
    cpu: Option<Quantity>,
    memory: Option<Quantity>,
}

impl Amounts for CpuMemory {
    fn add(&mut self, other: &Self) {
        fn add(a: &mut Option<Quantity>, b: &Option<Quantity>) {
            if let Some(b) = b {
                *a = Some(match a {
                    Some(a) => a.add(b),
                    None => b.clone(),
                });
            }
        }
        add(&mut self.cpu, &other.cpu);
        add(&mut self.memory, &other.memory);
    }
    fn max_with(&mut self, other: &Self) {
        fn max(a: &mut Option<Quantity>, b: &Option<Quantity>) {
            if let Some(b) = b
                && a.as_ref().is_none_or(|a| a.cmp_q(b).is_lt())
            {
                *a = Some(b.clone());
            }
        }
        max(&mut self.cpu, &other.cpu);
        max(&mut self.memory, &other.memory);
    }
}

/// A container's CPU and memory requests (or limits).
fn cpu_memory(container: &Container, limits: bool) -> CpuMemory {
    let resources = container.resources.as_ref();
    let list = if limits {
        resources.and_then(|r| r.limits.as_ref())
    } else {
        resources.and_then(|r| r.requests.as_ref())
    };
    CpuMemory {
        cpu: amount(list, "cpu"),
        memory: amount(list, "memory"),
    }
}

/// The sandbox's resources: [`linux_resources`] of the pod's requests and limits without
/// its overhead (`calculateSandboxResources`).
pub fn sandbox_resources(pod: &Pod) -> LinuxContainerResources {
    let Some(spec) = pod.spec.as_ref() else {
        return linux_resources(None, None, None);
    };
    let no_overhead = |_: &BTreeMap<String, ApiQuantity>| CpuMemory::default();
    let requests = pod_amounts(spec, |c| cpu_memory(c, false), no_overhead);
    let limits = pod_amounts(spec, |c| cpu_memory(c, true), no_overhead);
    linux_resources(
        requests.cpu.as_ref(),
        limits.cpu.as_ref(),
        limits.memory.as_ref(),
    )
}

/// The sandbox's overhead (`spec.overhead`), as requests equal to limits; None without one.
pub fn overhead_resources(pod: &Pod) -> Option<LinuxContainerResources> {
    let overhead = pod.spec.as_ref()?.overhead.as_ref()?;
    let cpu = amount(Some(overhead), "cpu").unwrap_or_else(|| Quantity::from_int(0));
    let memory = amount(Some(overhead), "memory");
    Some(linux_resources(Some(&cpu), Some(&cpu), memory.as_ref()))
}

/// The limits of the pod's cgroup, as kubelet's `ResourceConfigForPod` computes them: CPU
/// shares from the pod's requests (BestEffort: the fewest); the CFS quota and the memory
/// limit from the pod's limits, only when every container declares that limit (a
/// Guaranteed pod always does); the pod's overhead counted in.
pub fn pod_cgroup_limits(pod: &Pod) -> kyb_node_sys::cgroup::Limits {
    let unlimited = kyb_node_sys::cgroup::Limits {
        cpu_shares: MIN_SHARES as u64,
        cpu_quota: None,
        cpu_period: QUOTA_PERIOD as u64,
        memory: None,
    };
    let Some(spec) = pod.spec.as_ref() else {
        return unlimited;
    };
    let qos = pod_qos(pod);
    if qos == "BestEffort" {
        return unlimited;
    }
    let overhead = |list: &BTreeMap<String, ApiQuantity>| CpuMemory {
        cpu: amount(Some(list), "cpu"),
        memory: amount(Some(list), "memory"),
    };
    let requests = pod_amounts(spec, |c| cpu_memory(c, false), overhead);
    let limits = pod_amounts(spec, |c| cpu_memory(c, true), overhead);
    let declared = |name: &str| {
        spec.containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
            .all(|c| {
                amount(c.resources.as_ref().and_then(|r| r.limits.as_ref()), name)
                    .is_some_and(|q| q.milli_value_i64() > 0)
            })
    };
    let milli = |q: &Option<Quantity>| q.as_ref().map_or(0, Quantity::milli_value_i64);
    let cpu_quota = (qos == "Guaranteed" || declared("cpu"))
        .then(|| milli_cpu_to_quota(milli(&limits.cpu), QUOTA_PERIOD))
        .filter(|quota| *quota > 0);
    let memory = (qos == "Guaranteed" || declared("memory"))
        .then(|| limits.memory.as_ref().map(Quantity::value))
        .flatten()
        .filter(|bytes| *bytes > 0);
    kyb_node_sys::cgroup::Limits {
        cpu_shares: milli_cpu_to_shares(milli(&requests.cpu)) as u64,
        cpu_quota,
        cpu_period: QUOTA_PERIOD as u64,
        memory,
    }
}

/// The pod's cgroup, as kubelet's pod container manager names it under the `kubepods`
/// root: `/kubepods/pod<uid>` (Guaranteed), `/kubepods/burstable/pod<uid>`,
/// `/kubepods/besteffort/pod<uid>` for cgroupfs; the systemd slice
/// `kubepods-burstable-pod<uid with _ for ->.slice` for systemd.
pub fn cgroup_parent(pod: &Pod, driver: Driver) -> String {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let qos = match pod_qos(pod) {
        "Guaranteed" => None,
        "Burstable" => Some("burstable"),
        _ => Some("besteffort"),
    };
    match driver {
        Driver::Cgroupfs => match qos {
            Some(qos) => format!("/kubepods/{qos}/pod{uid}"),
            None => format!("/kubepods/pod{uid}"),
        },
        Driver::Systemd => {
            let uid = uid.replace('-', "_");
            match qos {
                Some(qos) => format!("kubepods-{qos}-pod{uid}.slice"),
                None => format!("kubepods-pod{uid}.slice"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::tests::pod_from;
    use super::*;
    use serde_json::json;

    fn pod(containers: serde_json::Value) -> Pod {
        pod_from(
            json!({"name": "p", "namespace": "ns", "uid": "12-34"}),
            json!({"containers": containers}),
        )
    }

    const GI: i64 = 1 << 30;

    #[test]
    fn cpu_and_memory_numbers() {
        let q = |s: &str| Quantity::parse(s).unwrap();
        let r = linux_resources(Some(&q("250m")), Some(&q("250m")), Some(&q("128Mi")));
        assert_eq!(r.cpu_shares, 256);
        assert_eq!((r.cpu_quota, r.cpu_period), (25_000, 100_000));
        assert_eq!(r.memory_limit_in_bytes, 128 << 20);
        // No request: the limit's shares; nothing: the minimum, no quota.
        assert_eq!(linux_resources(None, Some(&q("2")), None).cpu_shares, 2048);
        let none = linux_resources(None, None, None);
        assert_eq!(
            (none.cpu_shares, none.cpu_quota, none.memory_limit_in_bytes),
            (2, 0, 0)
        );
        assert_eq!(none.cpu_period, 100_000);
        // Tiny amounts are raised to the minimums.
        assert_eq!(milli_cpu_to_shares(1), 2);
        assert_eq!(milli_cpu_to_quota(1, QUOTA_PERIOD), 1000);
        assert_eq!(milli_cpu_to_quota(1500, QUOTA_PERIOD), 150_000);
    }

    #[test]
    fn oom_score_per_qos_class() {
        let guaranteed = pod(json!([{"name": "c", "resources": {
            "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]));
        let c = &guaranteed.spec.as_ref().unwrap().containers[0];
        assert_eq!(
            oom_score_adj(&guaranteed, c, ContainerKind::Regular, 4 * GI),
            -997
        );

        let best_effort = pod(json!([{"name": "c"}]));
        let c = &best_effort.spec.as_ref().unwrap().containers[0];
        assert_eq!(
            oom_score_adj(&best_effort, c, ContainerKind::Regular, 4 * GI),
            1000
        );

        // Burstable: 1 GiB of 4 GiB → 1000 - 250.
        let burstable = pod(json!([
            {"name": "a", "resources": {"requests": {"memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "100m"}}},
            {"name": "c", "resources": {"requests": {"memory": "4Gi"}}},
        ]));
        let cs = &burstable.spec.as_ref().unwrap().containers;
        assert_eq!(
            oom_score_adj(&burstable, &cs[0], ContainerKind::Regular, 4 * GI),
            750
        );
        // No memory request: 999, below BestEffort's 1000.
        assert_eq!(
            oom_score_adj(&burstable, &cs[1], ContainerKind::Regular, 4 * GI),
            999
        );
        // All the memory: no lower than 3.
        assert_eq!(
            oom_score_adj(&burstable, &cs[2], ContainerKind::Regular, 4 * GI),
            3
        );

        // A sidecar scores no higher than the smallest regular container.
        let with_sidecar: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "uid": "u"},
            "spec": {"containers": [{"name": "a", "resources": {"requests": {"memory": "2Gi"}}}],
                "initContainers": [{"name": "s", "restartPolicy": "Always",
                    "resources": {"requests": {"memory": "1Gi"}}}]}}))
        .unwrap();
        let sidecar = &with_sidecar
            .spec
            .as_ref()
            .unwrap()
            .init_containers
            .as_ref()
            .unwrap()[0];
        assert_eq!(
            oom_score_adj(&with_sidecar, sidecar, ContainerKind::Sidecar, 4 * GI),
            500
        );
        assert_eq!(
            oom_score_adj(&with_sidecar, sidecar, ContainerKind::Init, 4 * GI),
            750
        );

        // Node-critical pods are protected whatever their class.
        let mut critical = best_effort.clone();
        let spec = critical.spec.as_mut().unwrap();
        spec.priority = Some(2_000_001_000);
        spec.priority_class_name = Some("system-node-critical".into());
        let c = &critical.spec.as_ref().unwrap().containers[0];
        assert_eq!(
            oom_score_adj(&critical, c, ContainerKind::Regular, 4 * GI),
            -997
        );
    }

    #[test]
    fn container_resources_with_hugepages() {
        let p = pod(json!([{"name": "c", "resources": {
            "requests": {"cpu": "500m", "memory": "64Mi"},
            "limits": {"cpu": "1", "memory": "128Mi", "hugepages-2Mi": "4Mi"}}}]));
        let c = &p.spec.as_ref().unwrap().containers[0];
        let r = container_resources(&p, c, ContainerKind::Regular, 4 * GI);
        assert_eq!((r.cpu_shares, r.cpu_quota), (512, 100_000));
        assert_eq!(r.memory_limit_in_bytes, 128 << 20);
        assert_eq!(r.oom_score_adj, 1000 - (1000 * (64 << 20)) / (4 * GI));
        assert_eq!(
            r.hugepage_limits,
            [HugepageLimit {
                page_size: "2MB".into(),
                limit: 4 << 20
            }]
        );
    }

    #[test]
    fn sandbox_resources_and_overhead() {
        let mut p = pod(json!([
            {"name": "a", "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m", "memory": "64Mi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "300m"}, "limits": {"memory": "64Mi"}}},
        ]));
        let r = sandbox_resources(&p);
        assert_eq!(r.cpu_shares, 409);
        assert_eq!(r.cpu_quota, 20_000);
        assert_eq!(r.memory_limit_in_bytes, 128 << 20);
        assert!(overhead_resources(&p).is_none());
        p.spec.as_mut().unwrap().overhead = Some(BTreeMap::from([
            ("cpu".to_string(), ApiQuantity("250m".into())),
            ("memory".to_string(), ApiQuantity("120Mi".into())),
        ]));
        let o = overhead_resources(&p).unwrap();
        assert_eq!(
            (o.cpu_shares, o.cpu_quota, o.memory_limit_in_bytes),
            (256, 25_000, 120 << 20)
        );
    }

    #[test]
    fn pod_cgroup_limits_follow_kubelet() {
        let guaranteed = pod(json!([
            {"name": "a", "resources": {"limits": {"cpu": "200m", "memory": "64Mi"},
                                        "requests": {"cpu": "200m", "memory": "64Mi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "100m", "memory": "32Mi"},
                                        "requests": {"cpu": "100m", "memory": "32Mi"}}}]));
        let limits = pod_cgroup_limits(&guaranteed);
        assert_eq!(limits.cpu_shares, 307);
        assert_eq!(limits.cpu_quota, Some(30_000));
        assert_eq!(limits.memory, Some(96 << 20));
        // One container without a memory limit: the pod has none either.
        let burstable = pod(json!([
            {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "64Mi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "500m"}, "requests": {"cpu": "250m"}}}]));
        let limits = pod_cgroup_limits(&burstable);
        assert_eq!(limits.cpu_shares, 256);
        assert_eq!(limits.cpu_quota, Some(150_000));
        assert_eq!(limits.memory, None);
        let best_effort = pod_cgroup_limits(&pod(json!([{"name": "c"}])));
        assert_eq!(
            (
                best_effort.cpu_shares,
                best_effort.cpu_quota,
                best_effort.memory
            ),
            (2, None, None)
        );
    }

    #[test]
    fn cgroup_parents() {
        let best_effort = pod(json!([{"name": "c"}]));
        assert_eq!(
            cgroup_parent(&best_effort, Driver::Cgroupfs),
            "/kubepods/besteffort/pod12-34"
        );
        assert_eq!(
            cgroup_parent(&best_effort, Driver::Systemd),
            "kubepods-besteffort-pod12_34.slice"
        );
        let burstable = pod(json!([{"name": "c", "resources": {"requests": {"cpu": "1"}}}]));
        assert_eq!(
            cgroup_parent(&burstable, Driver::Cgroupfs),
            "/kubepods/burstable/pod12-34"
        );
        let guaranteed = pod(json!([{"name": "c", "resources": {
            "limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}}]));
        assert_eq!(
            cgroup_parent(&guaranteed, Driver::Cgroupfs),
            "/kubepods/pod12-34"
        );
        assert_eq!(
            cgroup_parent(&guaranteed, Driver::Systemd),
            "kubepods-pod12_34.slice"
        );
    }
}
