//! The registry: plugin names to the functions that build them. The in-tree plugins are
//! registered by [`crate::plugins::registry`]; an out-of-tree plugin is one more entry
//! ([`Registry::register`]) and can then be enabled by name in a profile.

use super::handle::Handle;
use super::plugin::Plugin;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Builds a plugin from its `pluginConfig` arguments (`Value::Null` when none).
pub type PluginFactory =
    Arc<dyn Fn(&Value, &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> + Send + Sync>;

/// Plugin factories by name.
#[derive(Clone, Default)]
pub struct Registry {
    factories: BTreeMap<String, PluginFactory>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Registers a plugin; a name registered twice is refused.
    pub fn register(
        &mut self,
        name: &str,
        factory: impl Fn(&Value, &Arc<Handle>) -> Result<Arc<dyn Plugin>, String>
        + Send
        + Sync
        + 'static,
    ) -> Result<(), String> {
        if self.factories.contains_key(name) {
            return Err(format!("a plugin named {name:?} already exists"));
        }
        self.factories.insert(name.to_string(), Arc::new(factory));
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&PluginFactory> {
        self.factories.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.factories.keys().map(String::as_str)
    }
}
