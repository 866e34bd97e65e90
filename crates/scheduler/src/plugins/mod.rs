//! The in-tree plugins, registered by name in [`registry`].

pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod taint_toleration;

use crate::framework::Registry;

/// A registry holding every in-tree plugin.
pub fn registry() -> Registry {
    let mut registry = Registry::new();
    // Each name is registered once: registering cannot fail.
    let _ = registry.register(inter_pod_affinity::NAME, inter_pod_affinity::factory);
    let _ = registry.register(node_affinity::NAME, node_affinity::factory);
    let _ = registry.register(taint_toleration::NAME, taint_toleration::factory);
    registry
}
