//! The in-tree plugins, registered by name in [`registry`].

use crate::framework::Registry;

/// A registry holding every in-tree plugin.
pub fn registry() -> Registry {
    Registry::new()
}
