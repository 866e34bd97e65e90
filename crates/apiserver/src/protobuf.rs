//! Protobuf request bodies (kubectl's generator commands send them), decoded by
//! `kyb-protobuf` into the same JSON form as any other body. (Responses are encoded where
//! they are made: `rest::present`, `rest::watch`, `response`.)

use kyb_api::Status;
use serde_json::Value;

/// Decodes an enveloped protobuf body to the object's JSON form.
pub fn decode(body: &[u8]) -> Result<Value, Status> {
    kyb_protobuf::decode(body)
        .map_err(|e| Status::bad_request(format!("the object provided is unrecognized: {e}")))
}

#[cfg(test)]
mod tests {
    use crate::strategies::Builtin;
    use kyb_api::registry::BUILTIN;

    /// Every built-in kind with a type (as Kubernetes: not the custom-resource-like
    /// untyped ones) has a protobuf form, and so has the list of every stored one.
    #[test]
    fn every_typed_builtin_kind_has_a_protobuf_form() {
        let mut missing = Vec::new();
        for def in BUILTIN {
            if Builtin::of(def).is_none() {
                continue;
            }
            let api_version = def.api_version();
            if !kyb_protobuf::is_known(&api_version, &def.kind) {
                missing.push(format!("{api_version} {}", def.kind));
            }
            if !def.is_virtual() && !kyb_protobuf::is_known(&api_version, &def.list_kind()) {
                missing.push(format!("{api_version} {}", def.list_kind()));
            }
        }
        assert!(missing.is_empty(), "no protobuf form: {missing:?}");
    }
}
