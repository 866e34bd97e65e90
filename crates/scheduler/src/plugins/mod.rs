//! The in-tree plugins, registered by name in [`registry`].

pub mod pod_topology_spread;

use crate::framework::Registry;

/// A registry holding every in-tree plugin.
pub fn registry() -> Registry {
    let mut registry = Registry::new();
    // One line per plugin, sorted by module; the names are distinct, so none is refused.
    let _ = registry.register(pod_topology_spread::NAME, pod_topology_spread::factory);
    registry
}
