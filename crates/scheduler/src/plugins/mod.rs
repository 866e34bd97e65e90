//! The in-tree plugins, registered by name in [`registry`].

pub mod capacity_scheduling;
pub mod coscheduling;
pub mod default_binder;
pub mod default_preemption;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources;
pub mod node_unschedulable;
pub mod pod_topology_spread;
pub mod priority_sort;
pub mod scheduling_gates;
pub mod taint_toleration;

use crate::framework::Registry;

/// A registry holding every in-tree plugin. The names are distinct constants, so no
/// registration is refused (`every_default_plugin_is_registered` checks it).
pub fn registry() -> Registry {
    let mut registry = Registry::new();
    let _ = registry.register(capacity_scheduling::NAME, capacity_scheduling::factory);
    let _ = registry.register(coscheduling::NAME, coscheduling::factory);
    let _ = registry.register(default_binder::NAME, default_binder::factory);
    let _ = registry.register(default_preemption::NAME, default_preemption::factory);
    let _ = registry.register(image_locality::NAME, image_locality::factory);
    let _ = registry.register(inter_pod_affinity::NAME, inter_pod_affinity::factory);
    let _ = registry.register(node_affinity::NAME, node_affinity::factory);
    let _ = registry.register(node_name::NAME, node_name::factory);
    let _ = registry.register(node_ports::NAME, node_ports::factory);
    let _ = registry.register(
        node_resources::balanced::NAME,
        node_resources::balanced::factory,
    );
    let _ = registry.register(node_resources::fit::NAME, node_resources::fit::factory);
    let _ = registry.register(node_unschedulable::NAME, node_unschedulable::factory);
    let _ = registry.register(pod_topology_spread::NAME, pod_topology_spread::factory);
    let _ = registry.register(priority_sort::NAME, priority_sort::factory);
    let _ = registry.register(scheduling_gates::NAME, scheduling_gates::factory);
    let _ = registry.register(taint_toleration::NAME, taint_toleration::factory);
    registry
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::framework::testing;
    use serde_json::Value;

    #[test]
    fn every_default_plugin_is_registered() {
        let registry = registry();
        for (name, _) in crate::config::DEFAULT_PLUGINS {
            let factory = registry
                .get(name)
                .unwrap_or_else(|| panic!("{name} is not registered"));
            // Each builds without arguments, and is named as registered.
            let plugin = factory(&Value::Null, &testing::handle()).unwrap();
            assert_eq!(plugin.name(), *name);
        }
    }
}
