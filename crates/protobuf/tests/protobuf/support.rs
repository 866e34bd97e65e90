//! Helpers: build bodies the way kubectl does (Go's encoder writes every non-pointer
//! field, zero or not), and check decoded JSON against k8s-openapi's serde form.

use k8s_openapi::serde::Serialize;
use k8s_openapi::serde::de::DeserializeOwned;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message;
use serde_json::Value;

/// `k8s\0` + runtime.Unknown, with every field written, as Go's serializer does.
pub fn envelope<M: Message>(api_version: &str, kind: &str, object: &M) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(object.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    [b"k8s\0".as_slice(), &unknown.encode_to_vec()].concat()
}

/// ObjectMeta as kubectl's Go encoder writes it for a new object: the plain string and
/// integer fields present with zero values and an empty (zero) creationTimestamp.
pub fn go_meta(name: &str, namespace: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        generate_name: Some(String::new()),
        namespace: Some(namespace.into()),
        self_link: Some(String::new()),
        uid: Some(String::new()),
        resource_version: Some(String::new()),
        generation: Some(0),
        creation_timestamp: Some(Time::default()),
        ..ObjectMeta::default()
    }
}

pub fn quantity(text: &str) -> Quantity {
    Quantity {
        string: Some(text.into()),
    }
}

/// IntOrString with all three fields written, as Go does.
pub fn int_port(port: i32) -> IntOrString {
    IntOrString {
        r#type: Some(0),
        int_val: Some(port),
        str_val: Some(String::new()),
    }
}

pub fn named_port(name: &str) -> IntOrString {
    IntOrString {
        r#type: Some(1),
        int_val: Some(0),
        str_val: Some(name.into()),
    }
}

pub fn time(seconds: i64) -> Time {
    Time {
        seconds: Some(seconds),
        nanos: Some(0),
    }
}

/// Decodes a body and checks that k8s-openapi reads and writes the result unchanged: so
/// every field name and value type is the one Kubernetes' JSON uses.
pub fn decode_as<T: DeserializeOwned + Serialize>(body: &[u8]) -> Value {
    let decoded = match kyb_protobuf::decode(body) {
        Ok(v) => v,
        Err(e) => panic!("decode failed: {e}"),
    };
    let typed: T = serde_json::from_value(decoded.clone()).expect("k8s-openapi reads the JSON");
    let again = serde_json::to_value(&typed).expect("k8s-openapi writes the JSON");
    assert_eq!(
        again, decoded,
        "k8s-openapi's form differs from the decoded JSON"
    );
    // And the reverse direction gives the same JSON back.
    let encoded = kyb_protobuf::encode(&decoded).expect("encode");
    assert_eq!(
        kyb_protobuf::decode(&encoded).expect("decode of encode"),
        decoded
    );
    decoded
}
