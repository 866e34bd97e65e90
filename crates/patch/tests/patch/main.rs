//! Integration tests of `kyb-patch`: the strategic merge patch rules on built-in types
//! (`strategic`), the patches kubectl sends (`kubectl`), the RFC 6902 and RFC 7386
//! appendix examples (`rfc6902`, `rfc7386`), and malformed or hostile input (`hostile`).

#![allow(clippy::unwrap_used)]

mod hostile;
mod kubectl;
mod rfc6902;
mod rfc7386;
mod strategic;

use kyb_patch::PatchError;
use serde_json::Value;

pub const POD: &str = "io.k8s.api.core.v1.Pod";
pub const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";

/// Applies a strategic merge patch to an object of type `definition`.
pub fn smp(definition: &str, original: &Value, patch: &Value) -> Result<Value, PatchError> {
    kyb_patch::strategic::apply(original, patch, definition)
}

/// One strategic merge patch case: the live object, the patch, the expected result.
pub struct Case {
    pub name: &'static str,
    pub definition: &'static str,
    pub live: Value,
    pub patch: Value,
    pub expected: Value,
}

/// Runs every case and reports all failures at once.
pub fn run(cases: Vec<Case>) {
    let mut failures = Vec::new();
    for case in cases {
        match smp(case.definition, &case.live, &case.patch) {
            Ok(result) if result == case.expected => {}
            Ok(result) => failures.push(format!(
                "{}:\n  expected {}\n  got      {}",
                case.name, case.expected, result
            )),
            Err(error) => failures.push(format!("{}: error {error:?}", case.name)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
