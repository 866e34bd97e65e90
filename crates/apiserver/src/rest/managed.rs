//! Field managers: who is writing (`fieldManager`, or the client's user agent), and the
//! `metadata.managedFields` bookkeeping every write goes through (`kyb-apply`).

use super::Call;
use crate::util;
use kyb_api::{ResourceDef, Status};
use serde_json::Value;

/// The longest field manager name Kubernetes accepts.
const MAX_MANAGER: usize = 128;

/// The request's field manager: `fieldManager`, else the user agent up to its first `/`
/// (`kubectl/v1.32.4 (linux/amd64) …` → `kubectl`), as Kubernetes derives it.
pub fn field_manager(call: &Call<'_>) -> Result<String, Status> {
    if let Some(manager) = call.query.value("fieldManager") {
        super::options::check_field_manager(call.verb, manager)?;
        return Ok(manager.to_string());
    }
    let agent = call.header("user-agent").unwrap_or_default();
    let prefix: String = agent
        .split('/')
        .next()
        .unwrap_or_default()
        .chars()
        .take(MAX_MANAGER)
        .collect();
    Ok(if prefix.is_empty() {
        "unknown".to_string()
    } else {
        prefix
    })
}

/// The fields a write to `subresource` does not manage (Kubernetes' reset fields): the
/// status for the main resource of a kind with a status subresource, everything but the
/// status for `/status`.
pub fn reset_fields(def: &ResourceDef, subresource: Option<&str>) -> &'static [&'static str] {
    match subresource {
        Some("status" | "approval") => &["spec", "metadata"],
        _ if def.has_subresource(kyb_api::Subresource::Status) => &["status"],
        _ => &[],
    }
}

/// Records a non-apply write of `new` (over `old`, `None` for a create) in its managedFields.
pub fn record(
    call: &Call<'_>,
    old: Option<&Value>,
    new: &mut Value,
    subresource: Option<&str>,
) -> Result<(), Status> {
    let manager = field_manager(call)?;
    let def = call.storage();
    let now = util::now();
    let api_version = call.def.api_version();
    let writer = kyb_apply::Writer {
        manager: &manager,
        api_version: &api_version,
        subresource,
        time: &now,
    };
    kyb_apply::update(
        def.strategy.definition().unwrap_or_default(),
        old,
        new,
        &writer,
        reset_fields(def, subresource),
    );
    Ok(())
}
