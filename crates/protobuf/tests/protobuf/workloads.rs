//! Pods, Deployments, CronJobs, Services: what `kubectl run|create deployment|create
//! cronjob|create service` send.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::batch::v1 as batch;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString as OaIntOrString;
use k8s_pb::api::apps::v1 as pb_apps;
use k8s_pb::api::batch::v1 as pb_batch;
use k8s_pb::api::core::v1 as pb;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
use serde_json::json;

use crate::support::{decode_as, envelope, go_meta, int_port, named_port, quantity, time};

/// A container as Go writes it: plain fields present with zero values.
fn go_container(name: &str, image: &str) -> pb::Container {
    pb::Container {
        name: Some(name.into()),
        image: Some(image.into()),
        working_dir: Some(String::new()),
        resources: Some(pb::ResourceRequirements::default()),
        termination_message_path: Some(String::new()),
        termination_message_policy: Some(String::new()),
        image_pull_policy: Some(String::new()),
        stdin: Some(false),
        stdin_once: Some(false),
        tty: Some(false),
        ..pb::Container::default()
    }
}

#[test]
fn pod_with_probes_resources_affinity_and_status() {
    let mut container = go_container("web", "nginx:1.27");
    container.ports = vec![pb::ContainerPort {
        name: Some("http".into()),
        host_port: Some(0),
        container_port: Some(8080),
        protocol: Some("TCP".into()),
        host_ip: Some(String::new()),
    }];
    container.resources = Some(pb::ResourceRequirements {
        limits: BTreeMap::from([("memory".into(), quantity("128Mi"))]),
        requests: BTreeMap::from([
            ("cpu".into(), quantity("250m")),
            ("memory".into(), quantity("64Mi")),
        ]),
        claims: vec![],
    });
    container.env = vec![
        pb::EnvVar {
            name: Some("MODE".into()),
            value: Some("fast".into()),
            value_from: None,
        },
        pb::EnvVar {
            name: Some("NODE".into()),
            value: Some(String::new()),
            value_from: Some(pb::EnvVarSource {
                field_ref: Some(pb::ObjectFieldSelector {
                    api_version: Some("v1".into()),
                    field_path: Some("spec.nodeName".into()),
                }),
                ..pb::EnvVarSource::default()
            }),
        },
    ];
    container.liveness_probe = Some(pb::Probe {
        handler: Some(pb::ProbeHandler {
            http_get: Some(pb::HttpGetAction {
                path: Some("/healthz".into()),
                port: Some(int_port(8080)),
                host: Some(String::new()),
                scheme: Some("HTTP".into()),
                http_headers: vec![],
            }),
            ..pb::ProbeHandler::default()
        }),
        initial_delay_seconds: Some(5),
        timeout_seconds: Some(0),
        period_seconds: Some(10),
        success_threshold: Some(0),
        failure_threshold: Some(0),
        termination_grace_period_seconds: None,
    });
    container.readiness_probe = Some(pb::Probe {
        handler: Some(pb::ProbeHandler {
            tcp_socket: Some(pb::TcpSocketAction {
                port: Some(named_port("http")),
                host: Some(String::new()),
            }),
            ..pb::ProbeHandler::default()
        }),
        ..pb::Probe::default()
    });
    container.security_context = Some(pb::SecurityContext {
        run_as_user: Some(0),
        allow_privilege_escalation: Some(false),
        ..pb::SecurityContext::default()
    });
    let affinity = pb::Affinity {
        node_affinity: Some(pb::NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(pb::NodeSelector {
                node_selector_terms: vec![pb::NodeSelectorTerm {
                    match_expressions: vec![pb::NodeSelectorRequirement {
                        key: Some("kubernetes.io/os".into()),
                        operator: Some("In".into()),
                        values: vec!["linux".into()],
                    }],
                    match_fields: vec![],
                }],
            }),
            preferred_during_scheduling_ignored_during_execution: vec![],
        }),
        ..pb::Affinity::default()
    };
    let pod = pb::Pod {
        metadata: Some(pb_meta::ObjectMeta {
            labels: BTreeMap::from([("app".into(), "web".into())]),
            ..go_meta("web-0", "default")
        }),
        spec: Some(pb::PodSpec {
            containers: vec![container],
            restart_policy: Some("Always".into()),
            termination_grace_period_seconds: Some(0),
            dns_policy: Some(String::new()),
            service_account_name: Some(String::new()),
            host_network: Some(false),
            host_pid: Some(false),
            host_ipc: Some(false),
            affinity: Some(affinity),
            tolerations: vec![pb::Toleration {
                key: Some("node.kubernetes.io/not-ready".into()),
                operator: Some("Exists".into()),
                value: Some(String::new()),
                effect: Some("NoExecute".into()),
                toleration_seconds: Some(300),
            }],
            volumes: vec![pb::Volume {
                name: Some("cache".into()),
                volume_source: Some(pb::VolumeSource {
                    empty_dir: Some(pb::EmptyDirVolumeSource {
                        medium: Some(String::new()),
                        size_limit: Some(quantity("1Gi")),
                    }),
                    ..pb::VolumeSource::default()
                }),
            }],
            ..pb::PodSpec::default()
        }),
        status: Some(pb::PodStatus {
            phase: Some("Running".into()),
            pod_ip: Some("10.0.0.7".into()),
            pod_ips: vec![pb::PodIp {
                ip: Some("10.0.0.7".into()),
            }],
            start_time: Some(time(1_704_164_645)),
            conditions: vec![pb::PodCondition {
                r#type: Some("Ready".into()),
                status: Some("True".into()),
                last_probe_time: Some(pb_meta::Time::default()),
                last_transition_time: Some(time(1_704_164_700)),
                reason: Some(String::new()),
                message: Some(String::new()),
                observed_generation: Some(0),
            }],
            ..pb::PodStatus::default()
        }),
    };
    let decoded = decode_as::<core::Pod>(&envelope("v1", "Pod", &pod));
    assert_eq!(
        decoded,
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "containers": [{
                    "name": "web",
                    "image": "nginx:1.27",
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                    "env": [
                        {"name": "MODE", "value": "fast"},
                        {"name": "NODE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
                    ],
                    "resources": {
                        "limits": {"memory": "128Mi"},
                        "requests": {"cpu": "250m", "memory": "64Mi"},
                    },
                    "livenessProbe": {
                        "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                        "initialDelaySeconds": 5,
                        "periodSeconds": 10,
                    },
                    "readinessProbe": {"tcpSocket": {"port": "http"}},
                    "securityContext": {"runAsUser": 0, "allowPrivilegeEscalation": false},
                }],
                "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 0,
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                    ]}],
                }}},
                "tolerations": [{
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }],
                "volumes": [{"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}],
            },
            "status": {
                "phase": "Running",
                "podIP": "10.0.0.7",
                "podIPs": [{"ip": "10.0.0.7"}],
                "startTime": "2024-01-02T03:04:05Z",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-02T03:05:00Z"}],
            },
        })
    );
}

#[test]
fn deployment_with_zero_replicas_matches_k8s_openapi() {
    let deployment = pb_apps::Deployment {
        metadata: Some(pb_meta::ObjectMeta {
            labels: BTreeMap::from([("app".into(), "web".into())]),
            ..go_meta("web", "default")
        }),
        spec: Some(pb_apps::DeploymentSpec {
            replicas: Some(0),
            selector: Some(pb_meta::LabelSelector {
                match_labels: BTreeMap::from([("app".into(), "web".into())]),
                match_expressions: vec![],
            }),
            template: Some(pb::PodTemplateSpec {
                metadata: Some(pb_meta::ObjectMeta {
                    labels: BTreeMap::from([("app".into(), "web".into())]),
                    ..go_meta("", "")
                }),
                spec: Some(pb::PodSpec {
                    containers: vec![go_container("nginx", "nginx")],
                    ..pb::PodSpec::default()
                }),
            }),
            strategy: Some(pb_apps::DeploymentStrategy {
                r#type: Some("RollingUpdate".into()),
                rolling_update: Some(pb_apps::RollingUpdateDeployment {
                    max_unavailable: Some(int_port(0)),
                    max_surge: Some(named_port("25%")),
                }),
            }),
            min_ready_seconds: Some(0),
            revision_history_limit: None,
            paused: Some(false),
            progress_deadline_seconds: None,
        }),
        status: Some(pb_apps::DeploymentStatus::default()),
    };
    let decoded = decode_as::<apps::Deployment>(&envelope("apps/v1", "Deployment", &deployment));

    let labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
    let expected = apps::Deployment {
        metadata: meta::ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            labels: Some(labels.clone()),
            ..Default::default()
        },
        spec: Some(apps::DeploymentSpec {
            replicas: Some(0),
            selector: meta::LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: core::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(core::PodSpec {
                    containers: vec![core::Container {
                        name: "nginx".into(),
                        image: Some("nginx".into()),
                        resources: Some(core::ResourceRequirements::default()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            strategy: Some(apps::DeploymentStrategy {
                type_: Some("RollingUpdate".into()),
                rolling_update: Some(apps::RollingUpdateDeployment {
                    max_unavailable: Some(OaIntOrString::Int(0)),
                    max_surge: Some(OaIntOrString::String("25%".into())),
                }),
            }),
            ..Default::default()
        }),
        status: Some(apps::DeploymentStatus::default()),
    };
    assert_eq!(decoded, serde_json::to_value(&expected).expect("serialize"));
    assert_eq!(decoded["spec"]["replicas"], json!(0));
}

#[test]
fn service_with_named_target_port() {
    let service = pb::Service {
        metadata: Some(go_meta("web", "default")),
        spec: Some(pb::ServiceSpec {
            ports: vec![pb::ServicePort {
                name: Some("http".into()),
                protocol: Some("TCP".into()),
                app_protocol: None,
                port: Some(80),
                target_port: Some(named_port("http")),
                node_port: Some(0),
            }],
            selector: BTreeMap::from([("app".into(), "web".into())]),
            cluster_ip: Some(String::new()),
            r#type: Some("ClusterIP".into()),
            session_affinity: Some(String::new()),
            load_balancer_ip: Some(String::new()),
            external_name: Some(String::new()),
            external_traffic_policy: Some(String::new()),
            health_check_node_port: Some(0),
            publish_not_ready_addresses: Some(false),
            ..pb::ServiceSpec::default()
        }),
        status: Some(pb::ServiceStatus {
            load_balancer: Some(pb::LoadBalancerStatus::default()),
            conditions: vec![],
        }),
    };
    let decoded = decode_as::<core::Service>(&envelope("v1", "Service", &service));
    assert_eq!(
        decoded,
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": "http"}],
                "selector": {"app": "web"},
                "type": "ClusterIP",
            },
            "status": {"loadBalancer": {}},
        })
    );
}

#[test]
fn cronjob_keeps_pointer_zeros() {
    let cronjob = pb_batch::CronJob {
        metadata: Some(go_meta("report", "jobs")),
        spec: Some(pb_batch::CronJobSpec {
            schedule: Some("*/5 * * * *".into()),
            time_zone: Some("Etc/UTC".into()),
            starting_deadline_seconds: None,
            concurrency_policy: Some(String::new()),
            suspend: Some(false),
            successful_jobs_history_limit: Some(0),
            failed_jobs_history_limit: None,
            job_template: Some(pb_batch::JobTemplateSpec {
                metadata: Some(go_meta("report", "")),
                spec: Some(pb_batch::JobSpec {
                    backoff_limit: Some(0),
                    template: Some(pb::PodTemplateSpec {
                        metadata: Some(go_meta("", "")),
                        spec: Some(pb::PodSpec {
                            containers: vec![go_container("report", "busybox")],
                            restart_policy: Some("OnFailure".into()),
                            ..pb::PodSpec::default()
                        }),
                    }),
                    ..pb_batch::JobSpec::default()
                }),
            }),
        }),
        status: Some(pb_batch::CronJobStatus {
            active: vec![],
            last_schedule_time: Some(pb_meta::Time::default()),
            last_successful_time: None,
        }),
    };
    let decoded = decode_as::<batch::CronJob>(&envelope("batch/v1", "CronJob", &cronjob));
    assert_eq!(
        decoded,
        json!({
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "report", "namespace": "jobs"},
            "spec": {
                "schedule": "*/5 * * * *",
                "timeZone": "Etc/UTC",
                "suspend": false,
                "successfulJobsHistoryLimit": 0,
                "jobTemplate": {
                    "metadata": {"name": "report"},
                    "spec": {
                        "backoffLimit": 0,
                        "template": {
                            "metadata": {},
                            "spec": {
                                "containers": [{"name": "report", "image": "busybox", "resources": {}}],
                                "restartPolicy": "OnFailure",
                            },
                        },
                    },
                },
            },
            "status": {},
        })
    );
}

#[test]
fn go_zero_time_is_absent() {
    // Go writes a zero time either as an empty message or, through Timestamp, as the
    // seconds of 0001-01-01T00:00:00Z; both mean "not set".
    let mut meta = go_meta("ns", "");
    meta.creation_timestamp = Some(pb_meta::Time {
        seconds: Some(-62_135_596_800),
        nanos: Some(0),
    });
    let namespace = pb::Namespace {
        metadata: Some(meta),
        spec: None,
        status: None,
    };
    let decoded = decode_as::<core::Namespace>(&envelope("v1", "Namespace", &namespace));
    assert_eq!(
        decoded,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    );
}
