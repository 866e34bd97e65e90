//! The in-tree plugins, registered by name in [`registry`].

pub mod capacity_scheduling;
pub mod coscheduling;

use crate::framework::Registry;

/// A registry holding every in-tree plugin.
pub fn registry() -> Registry {
    let mut registry = Registry::new();
    let _ = registry.register(capacity_scheduling::NAME, capacity_scheduling::factory);
    let _ = registry.register(coscheduling::NAME, coscheduling::factory);
    registry
}
