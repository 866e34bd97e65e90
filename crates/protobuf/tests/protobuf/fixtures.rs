//! Bodies recorded from a real kube-apiserver (`fixtures/`, see its README.md): each
//! protobuf body decodes to the JSON the same server sent for the same object (but for the
//! `null`s Go's JSON writes for zero times), and encoding that JSON decodes back to it.
//! The bytes differ: Go writes every non-pointer field even when empty (`selfLink: ""`),
//! which the JSON does not carry and which readers take as absent. A list assembled from
//! separately encoded items is byte for byte the list encoded whole.

use serde_json::Value;
use std::path::PathBuf;

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/protobuf/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_fixture(name: &str) -> Value {
    serde_json::from_slice(&fixture(name)).expect("fixture JSON")
}

const OBJECTS: &[&str] = &[
    "configmap",
    "secret",
    "service",
    "pod",
    "deployment",
    "podlist",
    "status-404",
];

/// The JSON without `null` members (Go writes zero `metav1.Time`s as null).
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

#[test]
fn recorded_bodies_decode_to_the_recorded_json() {
    for name in OBJECTS {
        let decoded = kyb_protobuf::decode(&fixture(&format!("{name}.pb")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected = without_nulls(&json_fixture(&format!("{name}.json")));
        assert!(decoded == expected, "{name}: {decoded:#}\n!=\n{expected:#}");
    }
}

#[test]
fn recorded_json_round_trips() {
    for name in OBJECTS {
        let json = without_nulls(&json_fixture(&format!("{name}.json")));
        let encoded = kyb_protobuf::encode(&json).unwrap_or_else(|e| panic!("{name}: {e}"));
        let decoded = kyb_protobuf::decode(&encoded).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(decoded == json, "{name}: {decoded:#}\n!=\n{json:#}");
    }
}

/// The frames of a protobuf watch stream: (event type, object).
fn frames(mut stream: &[u8]) -> Vec<(String, Value)> {
    let mut events = Vec::new();
    while !stream.is_empty() {
        let (len, rest) = stream.split_at(4);
        let len = u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize;
        let (payload, rest) = rest.split_at(len);
        let event = kyb_protobuf::decode_object("v1", "WatchEvent", payload).expect("frame");
        events.push((
            event["type"].as_str().expect("type").to_owned(),
            event["object"].clone(),
        ));
        stream = rest;
    }
    events
}

#[test]
fn recorded_watch_stream_decodes_and_encodes_frame_by_frame() {
    let recorded = fixture("watch-configmaps.pb");
    let lines = fixture("watch-configmaps.json");
    let expected: Vec<Value> = lines
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("JSON line"))
        .collect();
    let events = frames(&recorded);
    assert_eq!(
        events.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
        ["ADDED", "MODIFIED", "DELETED"]
    );
    let mut encoded = Vec::new();
    for ((kind, object), line) in events.iter().zip(&expected) {
        assert_eq!(kind, line["type"].as_str().expect("type"));
        assert_eq!(object, &line["object"]);
        encoded.extend(kyb_protobuf::encode_watch_event(kind, &line["object"]).expect("encode"));
    }
    assert_eq!(frames(&encoded), events);
}

#[test]
fn a_list_framed_around_separately_encoded_items_is_the_list_encoded_whole() {
    let list = json_fixture("podlist.json");
    let items: Vec<Vec<u8>> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|pod| kyb_protobuf::encode_object("v1", "Pod", pod).expect("pod"))
        .collect();
    let mut framing = kyb_protobuf::ListFraming::new(
        "v1",
        "PodList",
        &list["metadata"],
        items.iter().map(Vec::len),
    )
    .expect("framing");
    let mut body = std::mem::take(&mut framing.head);
    for item in &items {
        body.extend(framing.item_header(item.len()));
        body.extend(item);
    }
    body.extend(&framing.tail);
    assert!(body == kyb_protobuf::encode(&list).expect("encode"));
    let decoded = kyb_protobuf::decode(&body).expect("decode");
    assert!(decoded == kyb_protobuf::decode(&fixture("podlist.pb")).expect("decode"));
}

#[test]
fn an_empty_list_frames_to_what_encoding_it_whole_gives() {
    let list = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMapList",
        "metadata": {"resourceVersion": "12"},
        "items": [],
    });
    let framing = kyb_protobuf::ListFraming::new("v1", "ConfigMapList", &list["metadata"], [])
        .expect("framing");
    let mut body = framing.head.clone();
    body.extend(&framing.tail);
    assert_eq!(body, kyb_protobuf::encode(&list).expect("encode"));
}
