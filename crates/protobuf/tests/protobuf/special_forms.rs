//! Types whose JSON is not a plain object of their fields: micro-times, embedded JSON
//! and embedded objects, schema unions, meta/v1 kinds, packed numbers.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::coordination::v1 as coordination;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use k8s_pb::api::apps::v1 as pb_apps;
use k8s_pb::api::batch::v1 as pb_batch;
use k8s_pb::api::coordination::v1 as pb_coordination;
use k8s_pb::api::core::v1 as pb;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as pb_apiext;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
use k8s_pb::apimachinery::pkg::runtime::RawExtension;
use prost::Message;
use serde_json::json;

use crate::support::{decode_as, envelope, go_meta, quantity, time};

#[test]
fn lease_micro_times_have_six_fractional_digits() {
    let lease = pb_coordination::Lease {
        metadata: Some(go_meta("kube-scheduler", "kube-system")),
        spec: Some(pb_coordination::LeaseSpec {
            holder_identity: Some("node-1".into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(pb_meta::MicroTime {
                seconds: Some(1_704_164_645),
                nanos: Some(123_456_789),
            }),
            renew_time: Some(pb_meta::MicroTime {
                seconds: Some(1_704_164_650),
                nanos: Some(0),
            }),
            lease_transitions: Some(0),
            strategy: None,
            preferred_holder: None,
        }),
    };
    let body = envelope("coordination.k8s.io/v1", "Lease", &lease);
    let decoded = decode_as::<coordination::Lease>(&body);
    assert_eq!(
        decoded["spec"],
        json!({
            "holderIdentity": "node-1",
            "leaseDurationSeconds": 15,
            "acquireTime": "2024-01-02T03:04:05.123456Z",
            "renewTime": "2024-01-02T03:04:10.000000Z",
            "leaseTransitions": 0,
        })
    );
}

#[test]
fn metadata_with_managed_fields_owner_references_and_times() {
    let mut meta = go_meta("web-1", "default");
    meta.uid = Some("8d6f6a1e-0000-4000-8000-000000000001".into());
    meta.resource_version = Some("42".into());
    meta.generation = Some(3);
    meta.creation_timestamp = Some(time(1_704_164_645));
    meta.deletion_grace_period_seconds = Some(0);
    meta.owner_references = vec![pb_meta::OwnerReference {
        api_version: Some("apps/v1".into()),
        kind: Some("ReplicaSet".into()),
        name: Some("web".into()),
        uid: Some("8d6f6a1e-0000-4000-8000-000000000002".into()),
        controller: Some(true),
        block_owner_deletion: Some(false),
    }];
    meta.finalizers = vec!["example.com/cleanup".into()];
    meta.managed_fields = vec![pb_meta::ManagedFieldsEntry {
        manager: Some("kubectl-create".into()),
        operation: Some("Update".into()),
        api_version: Some("v1".into()),
        time: Some(time(1_704_164_645)),
        fields_type: Some("FieldsV1".into()),
        fields_v1: Some(pb_meta::FieldsV1 {
            raw: Some(br#"{"f:metadata":{"f:labels":{}}}"#.to_vec()),
        }),
        subresource: Some(String::new()),
    }];
    let configmap = pb::ConfigMap {
        metadata: Some(meta),
        ..pb::ConfigMap::default()
    };
    let decoded = decode_as::<core::ConfigMap>(&envelope("v1", "ConfigMap", &configmap));
    assert_eq!(
        decoded["metadata"],
        json!({
            "name": "web-1",
            "namespace": "default",
            "uid": "8d6f6a1e-0000-4000-8000-000000000001",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2024-01-02T03:04:05Z",
            "deletionGracePeriodSeconds": 0,
            "ownerReferences": [{
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web",
                "uid": "8d6f6a1e-0000-4000-8000-000000000002",
                "controller": true,
                "blockOwnerDeletion": false,
            }],
            "finalizers": ["example.com/cleanup"],
            "managedFields": [{
                "manager": "kubectl-create",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2024-01-02T03:04:05Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {}}},
            }],
        })
    );
}

#[test]
fn controller_revision_data_is_embedded_json() {
    let revision = pb_apps::ControllerRevision {
        metadata: Some(go_meta("web-7d9f", "default")),
        data: Some(RawExtension {
            raw: Some(br#"{"spec":{"template":{"metadata":{}}}}"#.to_vec()),
        }),
        revision: Some(2),
    };
    let decoded = decode_as::<apps::ControllerRevision>(&envelope(
        "apps/v1",
        "ControllerRevision",
        &revision,
    ));
    assert_eq!(
        decoded["data"],
        json!({"spec": {"template": {"metadata": {}}}})
    );
    assert_eq!(decoded["revision"], json!(2));
}

#[test]
fn watch_event_embeds_an_enveloped_object() {
    let pod = pb::Pod {
        metadata: Some(go_meta("web-0", "default")),
        spec: None,
        status: None,
    };
    let event = pb_meta::WatchEvent {
        r#type: Some("ADDED".into()),
        object: Some(RawExtension {
            raw: Some(envelope("v1", "Pod", &pod)),
        }),
    };
    let decoded = kyb_protobuf::decode(&envelope("v1", "WatchEvent", &event)).expect("decode");
    assert_eq!(
        decoded,
        json!({
            "apiVersion": "v1",
            "kind": "WatchEvent",
            "type": "ADDED",
            "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "default"}},
        })
    );
}

#[test]
fn status_and_options_kinds_are_known_in_every_group() {
    let status = pb_meta::Status {
        metadata: Some(pb_meta::ListMeta::default()),
        status: Some("Failure".into()),
        message: Some("pods \"x\" not found".into()),
        reason: Some("NotFound".into()),
        details: Some(pb_meta::StatusDetails {
            name: Some("x".into()),
            group: Some(String::new()),
            kind: Some("pods".into()),
            uid: Some(String::new()),
            causes: vec![],
            retry_after_seconds: Some(0),
        }),
        code: Some(404),
    };
    let decoded = kyb_protobuf::decode(&envelope("v1", "Status", &status)).expect("decode");
    assert_eq!(
        decoded,
        json!({
            "apiVersion": "v1",
            "kind": "Status",
            "metadata": {},
            "status": "Failure",
            "message": "pods \"x\" not found",
            "reason": "NotFound",
            "details": {"name": "x", "kind": "pods"},
            "code": 404,
        })
    );
    let options = pb_meta::DeleteOptions {
        grace_period_seconds: Some(0),
        propagation_policy: Some("Foreground".into()),
        dry_run: vec!["All".into()],
        ..pb_meta::DeleteOptions::default()
    };
    for api_version in ["v1", "apps/v1", "meta.k8s.io/v1"] {
        let decoded = kyb_protobuf::decode(&envelope(api_version, "DeleteOptions", &options))
            .expect("decode");
        assert_eq!(decoded["gracePeriodSeconds"], json!(0), "{api_version}");
        assert_eq!(decoded["dryRun"], json!(["All"]));
    }
    assert!(kyb_protobuf::is_known("batch/v1", "CreateOptions"));
    assert!(!kyb_protobuf::is_known("example.com/v1", "CreateOptions"));
}

#[test]
fn custom_resource_definition_schema_unions() {
    let string_schema = pb_apiext::JsonSchemaProps {
        r#type: Some("string".into()),
        ..Default::default()
    };
    let spec_schema = pb_apiext::JsonSchemaProps {
        r#type: Some("object".into()),
        properties: BTreeMap::from([
            (
                "tags".into(),
                pb_apiext::JsonSchemaProps {
                    r#type: Some("array".into()),
                    items: Some(Box::new(pb_apiext::JsonSchemaPropsOrArray {
                        schema: Some(Box::new(string_schema.clone())),
                        j_son_schemas: vec![],
                    })),
                    max_items: Some(0),
                    ..Default::default()
                },
            ),
            (
                "labels".into(),
                pb_apiext::JsonSchemaProps {
                    r#type: Some("object".into()),
                    additional_properties: Some(Box::new(pb_apiext::JsonSchemaPropsOrBool {
                        allows: Some(true),
                        schema: Some(Box::new(string_schema.clone())),
                    })),
                    ..Default::default()
                },
            ),
            (
                "size".into(),
                pb_apiext::JsonSchemaProps {
                    r#type: Some("integer".into()),
                    default: Some(pb_apiext::Json {
                        raw: Some(b"3".to_vec()),
                    }),
                    minimum: Some(1.0),
                    ..Default::default()
                },
            ),
        ]),
        x_kubernetes_preserve_unknown_fields: Some(false),
        additional_properties: Some(Box::new(pb_apiext::JsonSchemaPropsOrBool {
            allows: Some(false),
            schema: None,
        })),
        ..Default::default()
    };
    let crd = pb_apiext::CustomResourceDefinition {
        metadata: Some(go_meta("widgets.example.com", "")),
        spec: Some(pb_apiext::CustomResourceDefinitionSpec {
            group: Some("example.com".into()),
            names: Some(pb_apiext::CustomResourceDefinitionNames {
                plural: Some("widgets".into()),
                singular: Some("widget".into()),
                kind: Some("Widget".into()),
                list_kind: Some("WidgetList".into()),
                ..Default::default()
            }),
            scope: Some("Namespaced".into()),
            versions: vec![pb_apiext::CustomResourceDefinitionVersion {
                name: Some("v1".into()),
                served: Some(true),
                storage: Some(true),
                schema: Some(pb_apiext::CustomResourceValidation {
                    open_apiv3_schema: Some(pb_apiext::JsonSchemaProps {
                        r#type: Some("object".into()),
                        properties: BTreeMap::from([("spec".into(), spec_schema)]),
                        ..Default::default()
                    }),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    let body = envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", &crd);
    let decoded = decode_as::<apiext::CustomResourceDefinition>(&body);
    assert_eq!(
        decoded["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"],
        json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 0},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "size": {"type": "integer", "default": 3, "minimum": 1.0},
            },
            "x-kubernetes-preserve-unknown-fields": false,
            "additionalProperties": false,
        })
    );
}

#[test]
fn packed_and_unpacked_repeated_numbers_both_decode() {
    let rule = |values: Vec<i32>| pb_batch::PodFailurePolicyRule {
        action: Some("FailJob".into()),
        on_exit_codes: Some(pb_batch::PodFailurePolicyOnExitCodesRequirement {
            container_name: None,
            operator: Some("In".into()),
            values,
        }),
        on_pod_conditions: vec![],
    };
    let unpacked = rule(vec![1, -2, 300]).encode_to_vec();
    // The same rule with `values` (field 3 of the requirement) written packed.
    let mut requirement = Vec::new();
    requirement.extend_from_slice(&[0x12, 2, b'I', b'n']);
    let mut packed = Vec::new();
    for v in [1i64, -2, 300] {
        let mut u = v as u64;
        while u >= 0x80 {
            packed.push((u as u8) | 0x80);
            u >>= 7;
        }
        packed.push(u as u8);
    }
    requirement.push(0x1a);
    requirement.push(packed.len() as u8);
    requirement.extend_from_slice(&packed);
    let mut packed_rule = vec![0x0a, 7];
    packed_rule.extend_from_slice(b"FailJob");
    packed_rule.push(0x12);
    packed_rule.push(requirement.len() as u8);
    packed_rule.extend_from_slice(&requirement);

    for rule in [unpacked, packed_rule] {
        let mut job = Vec::new();
        // JobSpec.podFailurePolicy (field 11) → PodFailurePolicy.rules (field 1).
        let mut policy = vec![0x0a, rule.len() as u8];
        policy.extend_from_slice(&rule);
        job.push(0x5a);
        job.push(policy.len() as u8);
        job.extend_from_slice(&policy);
        let mut body = vec![0x12, job.len() as u8];
        body.extend_from_slice(&job);
        let decoded = kyb_protobuf::decode_object("batch/v1", "Job", &body).expect("decode");
        assert_eq!(
            decoded["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"],
            json!({"operator": "In", "values": [1, -2, 300]})
        );
    }
}

#[test]
fn node_with_large_integers_and_quantities() {
    let node = pb::Node {
        metadata: Some(go_meta("node-1", "")),
        spec: Some(pb::NodeSpec {
            pod_cidr: Some("10.244.0.0/24".into()),
            pod_cid_rs: vec!["10.244.0.0/24".into()],
            unschedulable: Some(false),
            ..Default::default()
        }),
        status: Some(pb::NodeStatus {
            capacity: BTreeMap::from([
                ("cpu".into(), quantity("2")),
                ("memory".into(), quantity("24Gi")),
            ]),
            images: vec![pb::ContainerImage {
                names: vec!["registry.k8s.io/pause:3.10".into()],
                size_bytes: Some(8_000_000_000_000),
            }],
            daemon_endpoints: Some(pb::NodeDaemonEndpoints {
                kubelet_endpoint: Some(pb::DaemonEndpoint { port: Some(10250) }),
            }),
            ..Default::default()
        }),
    };
    let decoded = decode_as::<core::Node>(&envelope("v1", "Node", &node));
    assert_eq!(
        decoded["spec"],
        json!({"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"]})
    );
    assert_eq!(
        decoded["status"]["images"][0]["sizeBytes"],
        json!(8_000_000_000_000i64)
    );
    assert_eq!(
        decoded["status"]["daemonEndpoints"],
        json!({"kubeletEndpoint": {"Port": 10250}})
    );
    assert_eq!(
        decoded["status"]["capacity"],
        json!({"cpu": "2", "memory": "24Gi"})
    );
}

#[test]
fn embedded_structs_are_flattened() {
    // EphemeralContainer embeds EphemeralContainerCommon; ConfigMapKeySelector embeds
    // LocalObjectReference: their fields sit directly in the outer JSON object.
    let debug = pb::EphemeralContainer {
        ephemeral_container_common: Some(pb::EphemeralContainerCommon {
            name: Some("debugger".into()),
            image: Some("busybox".into()),
            env: vec![pb::EnvVar {
                name: Some("LEVEL".into()),
                value: None,
                value_from: Some(pb::EnvVarSource {
                    config_map_key_ref: Some(pb::ConfigMapKeySelector {
                        local_object_reference: Some(pb::LocalObjectReference {
                            name: Some("settings".into()),
                        }),
                        key: Some("level".into()),
                        optional: Some(false),
                    }),
                    ..Default::default()
                }),
            }],
            stdin: Some(true),
            tty: Some(false),
            ..Default::default()
        }),
        target_container_name: Some("web".into()),
    };
    let pod = pb::Pod {
        metadata: Some(go_meta("web-0", "default")),
        spec: Some(pb::PodSpec {
            ephemeral_containers: vec![debug],
            ..Default::default()
        }),
        status: None,
    };
    let decoded = decode_as::<core::Pod>(&envelope("v1", "Pod", &pod));
    assert_eq!(
        decoded["spec"],
        json!({
            "containers": [],
            "ephemeralContainers": [{
                "name": "debugger",
                "image": "busybox",
                "env": [{"name": "LEVEL", "valueFrom": {"configMapKeyRef": {
                    "name": "settings",
                    "key": "level",
                    "optional": false,
                }}}],
                "stdin": true,
                "targetContainerName": "web",
            }],
        })
    );
}

#[test]
fn every_served_kind_is_known() {
    let kinds = [
        (
            "v1",
            &[
                "Namespace",
                "Pod",
                "Service",
                "Endpoints",
                "ConfigMap",
                "Secret",
                "ServiceAccount",
                "Node",
                "Event",
                "LimitRange",
                "ResourceQuota",
                "PersistentVolume",
                "PersistentVolumeClaim",
                "PodTemplate",
                "ReplicationController",
                "Binding",
                "PodList",
                "Status",
                "DeleteOptions",
            ][..],
        ),
        (
            "apps/v1",
            &[
                "Deployment",
                "ReplicaSet",
                "StatefulSet",
                "DaemonSet",
                "ControllerRevision",
            ],
        ),
        ("batch/v1", &["Job", "CronJob"]),
        ("coordination.k8s.io/v1", &["Lease"]),
        ("discovery.k8s.io/v1", &["EndpointSlice"]),
        ("events.k8s.io/v1", &["Event"]),
        ("policy/v1", &["PodDisruptionBudget", "Eviction"]),
        ("autoscaling/v1", &["HorizontalPodAutoscaler", "Scale"]),
        ("autoscaling/v2", &["HorizontalPodAutoscaler"]),
        (
            "networking.k8s.io/v1",
            &["Ingress", "IngressClass", "NetworkPolicy"],
        ),
        (
            "storage.k8s.io/v1",
            &["StorageClass", "CSIDriver", "CSINode", "VolumeAttachment"],
        ),
        ("scheduling.k8s.io/v1", &["PriorityClass"]),
        ("node.k8s.io/v1", &["RuntimeClass"]),
        (
            "rbac.authorization.k8s.io/v1",
            &["Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"],
        ),
        (
            "admissionregistration.k8s.io/v1",
            &[
                "MutatingWebhookConfiguration",
                "ValidatingWebhookConfiguration",
                "ValidatingAdmissionPolicy",
                "ValidatingAdmissionPolicyBinding",
            ],
        ),
        ("apiextensions.k8s.io/v1", &["CustomResourceDefinition"]),
        ("apiregistration.k8s.io/v1", &["APIService"]),
        (
            "authentication.k8s.io/v1",
            &["TokenRequest", "TokenReview", "SelfSubjectReview"],
        ),
        (
            "authorization.k8s.io/v1",
            &[
                "SubjectAccessReview",
                "SelfSubjectAccessReview",
                "SelfSubjectRulesReview",
                "LocalSubjectAccessReview",
            ],
        ),
        ("certificates.k8s.io/v1", &["CertificateSigningRequest"]),
    ];
    for (api_version, names) in kinds {
        for kind in names {
            assert!(
                kyb_protobuf::is_known(api_version, kind),
                "{api_version} {kind}"
            );
        }
    }
}
