//! Untrusted input: every malformed body must give an error, never a panic.

use std::collections::BTreeMap;

use k8s_pb::api::apps::v1 as pb_apps;
use k8s_pb::api::core::v1 as pb;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
use kyb_protobuf::{DecodeError, Problem};

use crate::support::{envelope, go_meta, int_port, quantity};

fn sample_body() -> Vec<u8> {
    let container = pb::Container {
        name: Some("web".into()),
        image: Some("nginx".into()),
        ports: vec![pb::ContainerPort {
            container_port: Some(80),
            ..Default::default()
        }],
        resources: Some(pb::ResourceRequirements {
            limits: BTreeMap::from([("cpu".into(), quantity("1"))]),
            ..Default::default()
        }),
        liveness_probe: Some(pb::Probe {
            handler: Some(pb::ProbeHandler {
                tcp_socket: Some(pb::TcpSocketAction {
                    port: Some(int_port(80)),
                    host: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let deployment = pb_apps::Deployment {
        metadata: Some(pb_meta::ObjectMeta {
            labels: BTreeMap::from([("app".into(), "web".into())]),
            creation_timestamp: Some(pb_meta::Time {
                seconds: Some(1_704_164_645),
                nanos: Some(0),
            }),
            ..go_meta("web", "default")
        }),
        spec: Some(pb_apps::DeploymentSpec {
            replicas: Some(2),
            template: Some(pb::PodTemplateSpec {
                metadata: None,
                spec: Some(pb::PodSpec {
                    containers: vec![container],
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: None,
    };
    envelope("apps/v1", "Deployment", &deployment)
}

#[test]
fn the_sample_decodes() {
    let decoded = kyb_protobuf::decode(&sample_body()).expect("decode");
    assert_eq!(decoded["spec"]["replicas"], 2);
}

#[test]
fn every_truncation_is_handled() {
    let body = sample_body();
    // magic (4), typeMeta (tag, length, bytes), raw (tag, length, bytes), then the two
    // empty trailing strings (2 bytes each).
    let raw_tag = 4 + 2 + usize::from(body[5]);
    let raw_end = body.len() - 4;
    for len in 0..body.len() {
        // A prefix ending on a field boundary of the envelope is a valid (if empty)
        // envelope; a prefix ending inside a field is an error. None may panic.
        let result = kyb_protobuf::decode(&body[..len]);
        let inside_a_field = len < raw_tag || (raw_tag < len && len < raw_end);
        if inside_a_field {
            assert!(
                result.is_err(),
                "a body cut at {len} of {} decoded",
                body.len()
            );
        }
    }
}

#[test]
fn every_truncation_of_the_raw_object_is_an_error_or_a_prefix() {
    let body = sample_body();
    let raw = &body[4..];
    for len in 0..raw.len() {
        let _ = kyb_protobuf::decode_object("apps/v1", "Deployment", &raw[..len]);
    }
}

#[test]
fn bit_flips_never_panic() {
    let body = sample_body();
    let mut errors = 0;
    for i in 0..body.len() {
        for bit in 0..8 {
            let mut flipped = body.clone();
            flipped[i] ^= 1 << bit;
            if kyb_protobuf::decode(&flipped).is_err() {
                errors += 1;
            }
        }
    }
    assert!(errors > 0);
}

#[test]
fn byte_substitutions_never_panic() {
    let body = sample_body();
    for i in 0..body.len() {
        for value in [0x00, 0x07, 0x0b, 0x7f, 0x80, 0xff] {
            let mut changed = body.clone();
            changed[i] = value;
            let _ = kyb_protobuf::decode(&changed);
        }
    }
}

#[test]
fn wrong_magic_is_not_protobuf() {
    let mut body = sample_body();
    body[3] = b'!';
    assert_eq!(kyb_protobuf::decode(&body), Err(DecodeError::NotProtobuf));
    assert_eq!(
        kyb_protobuf::decode(b"{\"apiVersion\":\"v1\"}"),
        Err(DecodeError::NotProtobuf)
    );
    assert_eq!(kyb_protobuf::decode(b""), Err(DecodeError::NotProtobuf));
}

#[test]
fn unknown_kind_is_named() {
    let body = envelope("example.com/v1", "Widget", &pb::Pod::default());
    let err = kyb_protobuf::decode(&body).expect_err("unknown kind");
    assert_eq!(
        err.to_string(),
        "unknown kind \"example.com/v1, Kind=Widget\""
    );
    assert!(kyb_protobuf::decode_object("v1", "Deployment", &[]).is_err());
}

#[test]
fn wrong_wire_type_names_the_field() {
    // ObjectMeta.name (field 1) as a varint, inside Pod.metadata (field 1).
    let raw = [0x0a, 0x02, 0x08, 0x01];
    let err = kyb_protobuf::decode_object("v1", "Pod", &raw).expect_err("wrong wire type");
    match &err {
        DecodeError::Malformed {
            type_name,
            field,
            path,
            problem,
        } => {
            assert_eq!(
                *type_name,
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
            );
            assert_eq!(*field, Some((1, "name")));
            assert_eq!(path, "metadata");
            assert_eq!(
                *problem,
                Problem::WrongWireType {
                    found: 0,
                    expected: "string"
                }
            );
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "malformed protobuf: field 1 (name) of type io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta \
         at metadata: wire type 0 cannot hold a string"
    );
}

#[test]
fn error_paths_point_into_lists() {
    // Pod.spec (2) → PodSpec.containers (2) → second Container: ports (6) → bad port.
    let bad_port = [0x18, 0x80]; // ContainerPort.containerPort: a truncated varint
    let mut second = vec![0x0a, 1, b'b', 0x32, bad_port.len() as u8];
    second.extend_from_slice(&bad_port);
    let first = [0x0a, 1, b'a'];
    let mut spec = vec![0x12, first.len() as u8];
    spec.extend_from_slice(&first);
    spec.push(0x12);
    spec.push(second.len() as u8);
    spec.extend_from_slice(&second);
    let mut raw = vec![0x12, spec.len() as u8];
    raw.extend_from_slice(&spec);
    let err = kyb_protobuf::decode_object("v1", "Pod", &raw).expect_err("truncated");
    let DecodeError::Malformed { path, problem, .. } = err else {
        panic!("{err:?}")
    };
    assert_eq!(path, "spec.containers[1].ports[0]");
    assert_eq!(problem, Problem::Truncated);
}

#[test]
fn absurd_lengths_are_refused() {
    // Pod.metadata claiming 2^60 bytes.
    let mut raw = vec![0x0a];
    let mut len: u64 = 1 << 60;
    while len >= 0x80 {
        raw.push((len as u8) | 0x80);
        len >>= 7;
    }
    raw.push(len as u8);
    let err = kyb_protobuf::decode_object("v1", "Pod", &raw).expect_err("length");
    assert!(
        matches!(
            err,
            DecodeError::Malformed {
                problem: Problem::LengthOutOfRange,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn invalid_embedded_json_is_reported() {
    let revision = pb_apps::ControllerRevision {
        metadata: None,
        data: Some(k8s_pb::apimachinery::pkg::runtime::RawExtension {
            raw: Some(b"{not json".to_vec()),
        }),
        revision: Some(1),
    };
    let err = kyb_protobuf::decode(&envelope("apps/v1", "ControllerRevision", &revision))
        .expect_err("json");
    assert!(
        matches!(
            err,
            DecodeError::Malformed {
                problem: Problem::InvalidJson(_),
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn deep_nesting_is_refused() {
    // JSONSchemaProps.not (field 28) nested far past the limit.
    let mut schema: Vec<u8> = Vec::new();
    for _ in 0..500 {
        let mut outer = vec![0xe2, 0x01]; // field 28, wire type 2
        let mut len = schema.len() as u64;
        while len >= 0x80 {
            outer.push((len as u8) | 0x80);
            len >>= 7;
        }
        outer.push(len as u8);
        outer.extend_from_slice(&schema);
        schema = outer;
    }
    // CustomResourceValidation.openAPIV3Schema (1) ← version.schema (4) ← spec.versions (7)
    // ← CRD.spec (2).
    let wrap = |number: u8, inner: &[u8]| {
        let mut out = vec![(number << 3) | 2];
        let mut len = inner.len() as u64;
        while len >= 0x80 {
            out.push((len as u8) | 0x80);
            len >>= 7;
        }
        out.push(len as u8);
        out.extend_from_slice(inner);
        out
    };
    let raw = wrap(2, &wrap(7, &wrap(4, &wrap(1, &schema))));
    let err =
        kyb_protobuf::decode_object("apiextensions.k8s.io/v1", "CustomResourceDefinition", &raw)
            .expect_err("too deep");
    assert!(matches!(err, DecodeError::TooDeep { .. }), "{err:?}");
}

#[test]
fn unknown_fields_are_skipped() {
    // Pod with an unknown field 99 (varint) and 100 (bytes) before metadata.
    let raw = [
        0x98, 0x06, 0x05, 0xa2, 0x06, 0x01, 0xff, 0x0a, 0x03, 0x0a, 0x01, b'p',
    ];
    let decoded = kyb_protobuf::decode_object("v1", "Pod", &raw).expect("decode");
    assert_eq!(decoded["metadata"]["name"], "p");
}
