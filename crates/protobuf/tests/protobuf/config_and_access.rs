//! ConfigMaps, Secrets, RBAC, quotas, tokens and access reviews: what `kubectl create
//! configmap|secret|role|rolebinding|quota|priorityclass|token` and `kubectl auth can-i`
//! send.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::authentication::v1 as authn;
use k8s_openapi::api::authorization::v1 as authz;
use k8s_openapi::api::certificates::v1 as certs;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::networking::v1 as networking;
use k8s_openapi::api::policy::v1 as policy;
use k8s_openapi::api::rbac::v1 as rbac;
use k8s_openapi::api::scheduling::v1 as scheduling;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::api::authentication::v1 as pb_authn;
use k8s_pb::api::authorization::v1 as pb_authz;
use k8s_pb::api::certificates::v1 as pb_certs;
use k8s_pb::api::core::v1 as pb;
use k8s_pb::api::networking::v1 as pb_networking;
use k8s_pb::api::policy::v1 as pb_policy;
use k8s_pb::api::rbac::v1 as pb_rbac;
use k8s_pb::api::scheduling::v1 as pb_scheduling;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
use serde_json::json;

use crate::support::{decode_as, envelope, go_meta, named_port, quantity};

#[test]
fn secret_with_binary_data_matches_k8s_openapi() {
    let binary: Vec<u8> = vec![0, 159, 146, 150, 255, b'\n'];
    let secret = pb::Secret {
        metadata: Some(go_meta("creds", "default")),
        immutable: Some(false),
        data: BTreeMap::from([("key".into(), binary.clone()), ("empty".into(), vec![])]),
        string_data: BTreeMap::new(),
        r#type: Some("Opaque".into()),
    };
    let decoded = decode_as::<core::Secret>(&envelope("v1", "Secret", &secret));
    let expected = core::Secret {
        metadata: meta::ObjectMeta {
            name: Some("creds".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        immutable: Some(false),
        data: Some(BTreeMap::from([
            ("key".to_owned(), ByteString(binary)),
            ("empty".to_owned(), ByteString(vec![])),
        ])),
        type_: Some("Opaque".into()),
        ..Default::default()
    };
    assert_eq!(decoded, serde_json::to_value(&expected).expect("serialize"));
    assert_eq!(decoded["data"]["key"], json!("AJ+Slv8K"));
}

#[test]
fn configmap_with_data_and_binary_data_matches_k8s_openapi() {
    let configmap = pb::ConfigMap {
        metadata: Some(go_meta("settings", "default")),
        immutable: None,
        data: BTreeMap::from([
            ("mode".into(), "fast".into()),
            ("blank".into(), String::new()),
        ]),
        binary_data: BTreeMap::from([("blob".into(), vec![1, 2, 3])]),
    };
    let decoded = decode_as::<core::ConfigMap>(&envelope("v1", "ConfigMap", &configmap));
    let expected = core::ConfigMap {
        metadata: meta::ObjectMeta {
            name: Some("settings".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([
            ("mode".to_owned(), "fast".to_owned()),
            ("blank".to_owned(), String::new()),
        ])),
        binary_data: Some(BTreeMap::from([(
            "blob".to_owned(),
            ByteString(vec![1, 2, 3]),
        )])),
        ..Default::default()
    };
    assert_eq!(decoded, serde_json::to_value(&expected).expect("serialize"));
}

#[test]
fn role_and_binding_keep_required_and_empty_group_names() {
    let role = pb_rbac::Role {
        metadata: Some(go_meta("reader", "default")),
        rules: vec![pb_rbac::PolicyRule {
            verbs: vec!["get".into(), "list".into()],
            api_groups: vec![String::new()],
            resources: vec!["pods".into()],
            resource_names: vec![],
            non_resource_ur_ls: vec![],
        }],
    };
    let decoded = decode_as::<rbac::Role>(&envelope("rbac.authorization.k8s.io/v1", "Role", &role));
    assert_eq!(
        decoded["rules"],
        json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}])
    );

    let binding = pb_rbac::RoleBinding {
        metadata: Some(go_meta("read-pods", "default")),
        subjects: vec![pb_rbac::Subject {
            kind: Some("ServiceAccount".into()),
            api_group: Some(String::new()),
            name: Some("builder".into()),
            namespace: Some("ci".into()),
        }],
        role_ref: Some(pb_rbac::RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: Some("Role".into()),
            name: Some("reader".into()),
        }),
    };
    let body = envelope("rbac.authorization.k8s.io/v1", "RoleBinding", &binding);
    let decoded = decode_as::<rbac::RoleBinding>(&body);
    let expected = rbac::RoleBinding {
        metadata: meta::ObjectMeta {
            name: Some("read-pods".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        subjects: Some(vec![rbac::Subject {
            kind: "ServiceAccount".into(),
            name: "builder".into(),
            namespace: Some("ci".into()),
            ..Default::default()
        }]),
        role_ref: rbac::RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: "reader".into(),
        },
    };
    assert_eq!(decoded, serde_json::to_value(&expected).expect("serialize"));
}

#[test]
fn token_request_from_kubectl_create_token() {
    let request = pb_authn::TokenRequest {
        metadata: Some(go_meta("builder", "ci")),
        spec: Some(pb_authn::TokenRequestSpec {
            audiences: vec![],
            expiration_seconds: Some(3600),
            bound_object_ref: None,
        }),
        status: Some(pb_authn::TokenRequestStatus {
            token: Some(String::new()),
            expiration_timestamp: Some(pb_meta::Time::default()),
        }),
    };
    let body = envelope("authentication.k8s.io/v1", "TokenRequest", &request);
    let decoded = kyb_protobuf::decode(&body).expect("decode");
    assert_eq!(
        decoded,
        json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {"name": "builder", "namespace": "ci"},
            "spec": {"audiences": [], "expirationSeconds": 3600},
            "status": {"token": ""},
        })
    );
    // Without the status (which Go always writes), k8s-openapi agrees field for field.
    let request = pb_authn::TokenRequest {
        status: None,
        ..request
    };
    let body = envelope("authentication.k8s.io/v1", "TokenRequest", &request);
    let decoded = decode_as::<authn::TokenRequest>(&body);
    let expected = authn::TokenRequest {
        metadata: meta::ObjectMeta {
            name: Some("builder".into()),
            namespace: Some("ci".into()),
            ..Default::default()
        },
        spec: authn::TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..Default::default()
        },
        status: None,
    };
    assert_eq!(decoded, serde_json::to_value(&expected).expect("serialize"));
}

#[test]
fn self_subject_access_review_from_auth_can_i() {
    let review = pb_authz::SelfSubjectAccessReview {
        metadata: Some(go_meta("", "")),
        spec: Some(pb_authz::SelfSubjectAccessReviewSpec {
            resource_attributes: Some(pb_authz::ResourceAttributes {
                namespace: Some("default".into()),
                verb: Some("create".into()),
                group: Some(String::new()),
                version: Some(String::new()),
                resource: Some("pods".into()),
                subresource: Some(String::new()),
                name: Some(String::new()),
                field_selector: None,
                label_selector: None,
            }),
            non_resource_attributes: None,
        }),
        status: Some(pb_authz::SubjectAccessReviewStatus {
            allowed: Some(false),
            denied: Some(false),
            reason: Some(String::new()),
            evaluation_error: Some(String::new()),
        }),
    };
    let body = envelope(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        &review,
    );
    let decoded = decode_as::<authz::SelfSubjectAccessReview>(&body);
    assert_eq!(
        decoded,
        json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "metadata": {},
            "spec": {"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "pods"}},
            "status": {"allowed": false},
        })
    );
}

#[test]
fn quota_priority_class_pdb_and_ingress() {
    let quota = pb::ResourceQuota {
        metadata: Some(go_meta("limits", "team")),
        spec: Some(pb::ResourceQuotaSpec {
            hard: BTreeMap::from([
                ("pods".into(), quantity("10")),
                ("requests.cpu".into(), quantity("4")),
            ]),
            scopes: vec!["NotTerminating".into()],
            scope_selector: None,
        }),
        status: Some(pb::ResourceQuotaStatus::default()),
    };
    let decoded = decode_as::<core::ResourceQuota>(&envelope("v1", "ResourceQuota", &quota));
    assert_eq!(
        decoded["spec"],
        json!({"hard": {"pods": "10", "requests.cpu": "4"}, "scopes": ["NotTerminating"]})
    );

    let class = pb_scheduling::PriorityClass {
        metadata: Some(go_meta("low", "")),
        value: Some(0),
        global_default: Some(false),
        description: Some(String::new()),
        preemption_policy: Some("Never".into()),
    };
    let body = envelope("scheduling.k8s.io/v1", "PriorityClass", &class);
    let decoded = decode_as::<scheduling::PriorityClass>(&body);
    // value is required (no omitempty in Go): kept at 0; globalDefault is a plain bool.
    assert_eq!(
        decoded,
        json!({
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "low"},
            "value": 0,
            "preemptionPolicy": "Never",
        })
    );

    let pdb = pb_policy::PodDisruptionBudget {
        metadata: Some(go_meta("web", "default")),
        spec: Some(pb_policy::PodDisruptionBudgetSpec {
            min_available: Some(named_port("50%")),
            selector: Some(pb_meta::LabelSelector {
                match_labels: BTreeMap::new(),
                match_expressions: vec![pb_meta::LabelSelectorRequirement {
                    key: Some("app".into()),
                    operator: Some("Exists".into()),
                    values: vec![],
                }],
            }),
            max_unavailable: None,
            unhealthy_pod_eviction_policy: None,
        }),
        status: None,
    };
    let decoded = decode_as::<policy::PodDisruptionBudget>(&envelope(
        "policy/v1",
        "PodDisruptionBudget",
        &pdb,
    ));
    assert_eq!(
        decoded["spec"],
        json!({"minAvailable": "50%", "selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}})
    );

    let ingress = pb_networking::Ingress {
        metadata: Some(go_meta("web", "default")),
        spec: Some(pb_networking::IngressSpec {
            ingress_class_name: Some("nginx".into()),
            default_backend: None,
            tls: vec![],
            rules: vec![pb_networking::IngressRule {
                host: Some("example.com".into()),
                ingress_rule_value: Some(pb_networking::IngressRuleValue {
                    http: Some(pb_networking::HttpIngressRuleValue {
                        paths: vec![pb_networking::HttpIngressPath {
                            path: Some("/".into()),
                            path_type: Some("Prefix".into()),
                            backend: Some(pb_networking::IngressBackend {
                                service: Some(pb_networking::IngressServiceBackend {
                                    name: Some("web".into()),
                                    port: Some(pb_networking::ServiceBackendPort {
                                        name: Some("http".into()),
                                        number: Some(0),
                                    }),
                                }),
                                resource: None,
                            }),
                        }],
                    }),
                }),
            }],
        }),
        status: None,
    };
    let decoded =
        decode_as::<networking::Ingress>(&envelope("networking.k8s.io/v1", "Ingress", &ingress));
    // The rule's value is an embedded struct: "http" sits directly in the rule.
    assert_eq!(
        decoded["spec"],
        json!({
            "ingressClassName": "nginx",
            "rules": [{"host": "example.com", "http": {"paths": [{
                "path": "/",
                "pathType": "Prefix",
                "backend": {"service": {"name": "web", "port": {"name": "http"}}},
            }]}}],
        })
    );
}

#[test]
fn certificate_signing_request_with_bytes_and_extra() {
    let csr = pb_certs::CertificateSigningRequest {
        metadata: Some(go_meta("node-csr", "")),
        spec: Some(pb_certs::CertificateSigningRequestSpec {
            request: Some(b"-----BEGIN CERTIFICATE REQUEST-----".to_vec()),
            signer_name: Some("kubernetes.io/kube-apiserver-client".into()),
            expiration_seconds: Some(86_400),
            usages: vec!["client auth".into()],
            username: Some("alice".into()),
            uid: Some(String::new()),
            groups: vec!["system:authenticated".into()],
            extra: BTreeMap::from([(
                "scopes".into(),
                pb_certs::ExtraValue {
                    items: vec!["read".into(), "write".into()],
                },
            )]),
        }),
        status: None,
    };
    let body = envelope("certificates.k8s.io/v1", "CertificateSigningRequest", &csr);
    let decoded = decode_as::<certs::CertificateSigningRequest>(&body);
    assert_eq!(
        decoded["spec"],
        json!({
            "request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0=",
            "signerName": "kubernetes.io/kube-apiserver-client",
            "expirationSeconds": 86400,
            "usages": ["client auth"],
            "username": "alice",
            "groups": ["system:authenticated"],
            "extra": {"scopes": ["read", "write"]},
        })
    );
}
