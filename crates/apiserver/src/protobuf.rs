//! Protobuf request bodies (kubectl's generator commands send them), decoded by
//! `kyb-protobuf` into the same JSON form as any other body.

use kyb_api::Status;
use serde_json::Value;

/// Decodes an enveloped protobuf body to the object's JSON form.
pub fn decode(body: &[u8]) -> Result<Value, Status> {
    kyb_protobuf::decode(body)
        .map_err(|e| Status::bad_request(format!("the object provided is unrecognized: {e}")))
}
