//! The in-tree plugins, registered by name in [`registry`].

pub mod default_binder;
pub mod image_locality;
pub mod node_name;
pub mod node_ports;
pub mod node_resources;
pub mod node_unschedulable;
pub mod priority_sort;
pub mod scheduling_gates;

use crate::framework::Registry;

/// A registry holding every in-tree plugin. The names are distinct constants, so no
/// registration is refused (`every_plugin_is_registered` checks it).
pub fn registry() -> Registry {
    let mut registry = Registry::new();
    let _ = registry.register(default_binder::NAME, default_binder::factory);
    let _ = registry.register(image_locality::NAME, image_locality::factory);
    let _ = registry.register(node_name::NAME, node_name::factory);
    let _ = registry.register(node_ports::NAME, node_ports::factory);
    let _ = registry.register(
        node_resources::balanced::NAME,
        node_resources::balanced::factory,
    );
    let _ = registry.register(node_resources::fit::NAME, node_resources::fit::factory);
    let _ = registry.register(node_unschedulable::NAME, node_unschedulable::factory);
    let _ = registry.register(priority_sort::NAME, priority_sort::factory);
    let _ = registry.register(scheduling_gates::NAME, scheduling_gates::factory);
    registry
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::framework::testing;
    use serde_json::Value;

    #[test]
    fn every_plugin_is_registered() {
        let registry = registry();
        let names: Vec<&str> = registry.names().collect();
        for name in [
            default_binder::NAME,
            image_locality::NAME,
            node_name::NAME,
            node_ports::NAME,
            node_resources::balanced::NAME,
            node_resources::fit::NAME,
            node_unschedulable::NAME,
            priority_sort::NAME,
            scheduling_gates::NAME,
        ] {
            assert!(names.contains(&name), "{name} is not registered");
            // Each builds without arguments, and is named as registered.
            let plugin = registry.get(name).unwrap()(&Value::Null, &testing::handle()).unwrap();
            assert_eq!(plugin.name(), name);
        }
    }
}
