//! NamespaceLifecycle: the namespaces every cluster needs (`default`, `kube-system`,
//! `kube-public`) may not be deleted. (New objects in a missing or terminating namespace
//! are refused earlier, by the create path's namespace check.)

use super::{Attributes, Context, Operation, Plugin, forbidden};
use async_trait::async_trait;
use kyb_api::Status;
use serde_json::Value;

/// Namespaces that may never be deleted.
const IMMORTAL: [&str; 3] = ["default", "kube-system", "kube-public"];

pub struct NamespaceLifecycle;

#[async_trait]
impl Plugin for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        "NamespaceLifecycle"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        attributes.operation == Operation::Delete && attributes.is_main("", "namespaces")
    }

    async fn validate(
        &self,
        _context: &Context<'_>,
        attributes: &Attributes<'_>,
        _object: Option<&Value>,
    ) -> Result<(), Status> {
        if IMMORTAL.contains(&attributes.name) {
            return Err(forbidden(attributes, "this namespace may not be deleted"));
        }
        Ok(())
    }
}
