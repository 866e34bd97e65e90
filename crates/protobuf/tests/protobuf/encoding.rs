//! JSON → protobuf: the bytes are what Kubernetes' own (prost-compatible) decoders read.

use std::collections::BTreeMap;

use k8s_pb::api::core::v1 as pb;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use kyb_protobuf::EncodeError;
use prost::Message;
use serde_json::json;

#[test]
fn encoded_pod_reads_back_with_prost() {
    let json = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-0",
            "namespace": "default",
            "labels": {"b": "2", "a": "1"},
            "creationTimestamp": "2024-01-02T03:04:05Z",
        },
        "spec": {
            "containers": [{
                "name": "web",
                "image": "nginx",
                "args": ["-g", "daemon off;"],
                "resources": {"limits": {"cpu": "500m"}},
            }],
            "terminationGracePeriodSeconds": 0,
            "hostNetwork": true,
        },
    });
    let body = kyb_protobuf::encode(&json).expect("encode");
    assert_eq!(&body[..4], b"k8s\0");
    let unknown = Unknown::decode(&body[4..]).expect("envelope");
    let type_meta = unknown.type_meta.expect("typeMeta");
    assert_eq!(type_meta.api_version.as_deref(), Some("v1"));
    assert_eq!(type_meta.kind.as_deref(), Some("Pod"));
    let pod = pb::Pod::decode(unknown.raw.expect("raw").as_slice()).expect("pod");
    let expected = pb::Pod {
        metadata: Some(pb_meta::ObjectMeta {
            name: Some("web-0".into()),
            namespace: Some("default".into()),
            labels: BTreeMap::from([("a".into(), "1".into()), ("b".into(), "2".into())]),
            creation_timestamp: Some(pb_meta::Time {
                seconds: Some(1_704_164_645),
                nanos: Some(0),
            }),
            ..Default::default()
        }),
        spec: Some(pb::PodSpec {
            containers: vec![pb::Container {
                name: Some("web".into()),
                image: Some("nginx".into()),
                args: vec!["-g".into(), "daemon off;".into()],
                resources: Some(pb::ResourceRequirements {
                    limits: BTreeMap::from([(
                        "cpu".into(),
                        k8s_pb::apimachinery::pkg::api::resource::Quantity {
                            string: Some("500m".into()),
                        },
                    )]),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            termination_grace_period_seconds: Some(0),
            host_network: Some(true),
            ..Default::default()
        }),
        status: None,
    };
    assert_eq!(pod, expected);
    // Field order and map key order match prost's (and Go's) canonical encoding.
    assert_eq!(unknown_raw(&body), expected.encode_to_vec());
}

fn unknown_raw(body: &[u8]) -> Vec<u8> {
    Unknown::decode(&body[4..])
        .expect("envelope")
        .raw
        .expect("raw")
}

#[test]
fn round_trips_through_decode() {
    let json = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{
                    "name": "web",
                    "image": "nginx",
                    "livenessProbe": {"httpGet": {"port": "http", "path": "/"}},
                }]},
            },
        },
    });
    let body = kyb_protobuf::encode(&json).expect("encode");
    assert_eq!(kyb_protobuf::decode(&body).expect("decode"), json);
}

#[test]
fn secret_bytes_must_be_base64() {
    let json = json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "not base64!"}});
    assert_eq!(
        kyb_protobuf::encode(&json),
        Err(EncodeError::InvalidValue {
            path: "data.k".into(),
            expected: "base64 string"
        })
    );
    let json = json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "aGk="}});
    let raw = unknown_raw(&kyb_protobuf::encode(&json).expect("encode"));
    assert_eq!(
        pb::Secret::decode(raw.as_slice()).expect("secret").data["k"],
        b"hi"
    );
}

#[test]
fn type_errors_name_the_path() {
    let json = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": {"containers": [{"name": "a"}, {"name": "b", "ports": [{"containerPort": "80"}]}]},
    });
    assert_eq!(
        kyb_protobuf::encode(&json),
        Err(EncodeError::InvalidValue {
            path: "spec.containers[1].ports[0].containerPort".into(),
            expected: "int32"
        })
    );
    let json = json!({"apiVersion": "v1", "kind": "Pod", "spec": {"priority": 1_i64 << 40}});
    assert!(kyb_protobuf::encode(&json).is_err());
    let json =
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"creationTimestamp": "yesterday"}});
    assert!(kyb_protobuf::encode(&json).is_err());
}

#[test]
fn watch_events_are_framed_raw_with_an_enveloped_object() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "resourceVersion": "7"}});
    let frame = kyb_protobuf::encode_watch_event("ADDED", &pod).expect("encode");
    let len = u32::from_be_bytes(frame[..4].try_into().expect("length")) as usize;
    assert_eq!(len, frame.len() - 4);
    let event = pb_meta::WatchEvent::decode(&frame[4..]).expect("watch event");
    assert_eq!(event.r#type.as_deref(), Some("ADDED"));
    let object = event.object.expect("object").raw.expect("raw");
    assert_eq!(kyb_protobuf::decode(&object).expect("decode"), pod);
}

#[test]
fn needs_a_known_type() {
    assert_eq!(
        kyb_protobuf::encode(&json!({"kind": "Pod"})),
        Err(EncodeError::MissingTypeMeta)
    );
    assert_eq!(
        kyb_protobuf::encode(&json!({"apiVersion": "example.com/v1", "kind": "Widget"})),
        Err(EncodeError::UnknownKind {
            api_version: "example.com/v1".into(),
            kind: "Widget".into()
        })
    );
}
