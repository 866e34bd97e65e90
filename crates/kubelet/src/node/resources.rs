//! The node's resources: its capacity measured from the machine (cpu, memory,
//! ephemeral-storage of the root directory's file system, pods, hugepages-<size>), and
//! allocatable = capacity − `--system-reserved` − `--kube-reserved` − the hard eviction
//! thresholds on memory and nodefs, less the huge pages from memory, as the kubelet's
//! container manager computes it. Quantities are written as the kubelet writes them (cpu
//! and pods as decimal numbers, bytes in the binary format: `8148204Ki`).

use super::thresholds::{Signal, Thresholds};
use kyb_apimachinery::quantity::Quantity;
use kyb_node_sys::machine::HugePages;
use std::collections::BTreeMap;

/// Resource amounts by resource name.
pub type ResourceList = BTreeMap<String, Quantity>;

/// Go's `resource.NewQuantity(bytes, resource.BinarySI).String()`: `8148204Ki`, `2Mi`,
/// `1000` (values not divisible by 1024 stay plain).
pub fn binary_si(bytes: u64) -> String {
    let suffixes = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let mut value = bytes;
    let mut k = 0;
    if value >= 1024 {
        while k < 6 && value.is_multiple_of(1024) && value > 0 {
            value /= 1024;
            k += 1;
        }
    }
    format!("{value}{}", suffixes[k])
}

/// A byte count as a binary quantity.
pub fn bytes(bytes: u64) -> Quantity {
    Quantity::parse(&binary_si(bytes)).unwrap_or_else(|_| Quantity::from_int(0))
}

/// What the capacity is measured from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    pub cpus: u32,
    /// Bytes of memory (`MemTotal`).
    pub memory: u64,
    /// Bytes of the root directory's file system.
    pub ephemeral_storage: u64,
    pub huge_pages: Vec<HugePages>,
}

/// The node's capacity: `cpu`, `memory`, `ephemeral-storage`, `pods` and one
/// `hugepages-<size>` per page size.
pub fn capacity(machine: &Machine, max_pods: i64) -> ResourceList {
    let mut list = ResourceList::new();
    list.insert("cpu".into(), Quantity::from_int(i64::from(machine.cpus)));
    list.insert("memory".into(), bytes(machine.memory));
    list.insert("ephemeral-storage".into(), bytes(machine.ephemeral_storage));
    list.insert("pods".into(), Quantity::from_int(max_pods));
    for pages in &machine.huge_pages {
        list.insert(
            format!("hugepages-{}", binary_si(pages.page_size)),
            bytes(pages.page_size.saturating_mul(pages.count)),
        );
    }
    list
}

/// The node's allocatable resources: capacity less the reservations and the hard
/// eviction thresholds (`memory.available` from memory, `nodefs.available` from
/// ephemeral-storage), never below zero; memory also less every huge page size's total.
pub fn allocatable(
    capacity: &ResourceList,
    reserved: &[&ResourceList],
    eviction_hard: &Thresholds,
) -> ResourceList {
    let mut reservation = ResourceList::new();
    for list in reserved {
        for (name, amount) in *list {
            let sum = match reservation.get(name) {
                Some(current) => current.add(amount),
                None => amount.clone(),
            };
            reservation.insert(name.clone(), sum);
        }
    }
    for (signal, resource) in [
        (Signal::MemoryAvailable, "memory"),
        (Signal::NodeFsAvailable, "ephemeral-storage"),
    ] {
        let (Some(threshold), Some(cap)) = (eviction_hard.get(signal), capacity.get(resource))
        else {
            continue;
        };
        let amount = Quantity::from_int(threshold.value.amount(cap.value()));
        let sum = match reservation.get(resource) {
            Some(current) => current.add(&amount),
            None => amount,
        };
        reservation.insert(resource.to_string(), sum);
    }
    let not_negative = |q: Quantity| {
        if q.sign() < 0 {
            Quantity::from_int(0)
        } else {
            q
        }
    };
    let mut allocatable = ResourceList::new();
    for (name, cap) in capacity {
        let value = match reservation.get(name) {
            Some(r) => cap.sub(r),
            None => cap.clone(),
        };
        allocatable.insert(name.clone(), not_negative(value));
    }
    for (name, cap) in capacity {
        if name.starts_with("hugepages-")
            && let Some(memory) = allocatable.get("memory")
        {
            let left = not_negative(memory.sub(cap));
            allocatable.insert("memory".into(), left);
        }
    }
    allocatable
}

/// A resource list as the API's `{name: quantity}` map.
pub fn to_api(
    list: &ResourceList,
) -> BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity> {
    list.iter()
        .map(|(name, q)| {
            (
                name.clone(),
                k8s_openapi::apimachinery::pkg::api::resource::Quantity(q.canonical()),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn machine() -> Machine {
        Machine {
            cpus: 2,
            memory: 8148204 * 1024,
            ephemeral_storage: 100 << 30,
            huge_pages: vec![HugePages {
                page_size: 2 << 20,
                count: 0,
            }],
        }
    }

    fn text(list: &ResourceList) -> BTreeMap<String, String> {
        list.iter()
            .map(|(k, v)| (k.clone(), v.canonical()))
            .collect()
    }

    #[test]
    fn binary_quantities_are_written_as_go_writes_them() {
        assert_eq!(binary_si(8343760896), "8148204Ki");
        assert_eq!(binary_si(2 << 20), "2Mi");
        assert_eq!(binary_si(1000), "1000");
        assert_eq!(binary_si(1025 * 1024), "1025Ki");
        assert_eq!(binary_si(0), "0");
        assert_eq!(bytes(1 << 30).canonical(), "1Gi");
    }

    #[test]
    fn capacity_has_every_resource() {
        let cap = text(&capacity(&machine(), 110));
        assert_eq!(cap["cpu"], "2");
        assert_eq!(cap["memory"], "8148204Ki");
        assert_eq!(cap["ephemeral-storage"], "100Gi");
        assert_eq!(cap["pods"], "110");
        assert_eq!(cap["hugepages-2Mi"], "0");
        assert_eq!(cap.len(), 5);
    }

    #[test]
    fn allocatable_is_capacity_less_reservations_and_hard_eviction() {
        let cap = capacity(&machine(), 110);
        let system: ResourceList = [
            ("cpu".to_string(), Quantity::parse("100m").unwrap()),
            ("memory".to_string(), Quantity::parse("100Mi").unwrap()),
        ]
        .into();
        let kube: ResourceList = [("cpu".to_string(), Quantity::parse("200m").unwrap())].into();
        let alloc = text(&allocatable(
            &cap,
            &[&system, &kube],
            &Thresholds::default_hard(),
        ));
        assert_eq!(alloc["cpu"], "1700m");
        // 8148204Ki − 100Mi − 100Mi (memory.available<100Mi)
        assert_eq!(alloc["memory"], "7943404Ki");
        // 100Gi less 10% (nodefs.available<10%).
        assert_eq!(alloc["ephemeral-storage"], "90Gi");
        assert_eq!(alloc["pods"], "110");
        assert_eq!(alloc["hugepages-2Mi"], "0");
    }

    #[test]
    fn allocatable_never_goes_below_zero_and_excludes_huge_pages() {
        let mut m = machine();
        m.huge_pages[0].count = 512; // 1Gi of huge pages
        let cap = capacity(&m, 110);
        let alloc = text(&allocatable(&cap, &[], &Thresholds::default()));
        assert_eq!(alloc["memory"], "7099628Ki");
        // A percentage of a capacity not divisible by 1024 stays a plain number.
        let mut odd = machine();
        odd.ephemeral_storage = 1000 * 1024 + 10;
        let cap_odd = capacity(&odd, 110);
        let alloc_odd = text(&allocatable(&cap_odd, &[], &Thresholds::default_hard()));
        assert_eq!(alloc_odd["ephemeral-storage"], "921609");
        assert_eq!(alloc["hugepages-2Mi"], "1Gi");
        let greedy: ResourceList = [("cpu".to_string(), Quantity::parse("3").unwrap())].into();
        let alloc = text(&allocatable(&cap, &[&greedy], &Thresholds::default()));
        assert_eq!(alloc["cpu"], "0");
    }
}
