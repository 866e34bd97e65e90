//! The exact `metadata.managedFields` Kubernetes writes for what kubectl typically
//! does: `apply --server-side`, `create`, `run`, client-side `apply`, `label`,
//! `edit`, status writes of controllers, and the move from client-side to
//! server-side apply.

use crate::support::{
    CONFIG_MAP, DEPLOYMENT, Store, at, config_map, entry, fields, managers, nginx,
};
use kyb_apply::ApplyError;
use serde_json::{Value, json};

const POD: &str = "io.k8s.api.core.v1.Pod";
const SERVICE: &str = "io.k8s.api.core.v1.Service";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What `kubectl apply --server-side` records for the documentation's Deployment.
fn applied_nginx_fields() -> Value {
    json!({
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
                    ".": {},
                    "f:image": {},
                    "f:name": {},
                    "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                        ".": {},
                        "f:containerPort": {}
                    }}
                }}}
            }
        }
    })
}

/// `config` as kubectl stores it in the client-side apply annotation.
fn last_applied(config: &Value) -> String {
    format!("{}\n", serde_json::to_string(config).unwrap())
}

#[test]
fn apply_server_side_of_a_deployment() {
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    let obj = s.apply("kubectl", nginx(Some(3)), false).unwrap().clone();
    assert_eq!(
        obj["metadata"]["managedFields"],
        json!([{
            "apiVersion": "apps/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": applied_nginx_fields(),
            "manager": "kubectl",
            "operation": "Apply",
            "time": at(1)
        }])
    );
    assert_eq!(obj["spec"]["replicas"], 3);
    assert_eq!(
        obj["spec"]["selector"],
        json!({"matchLabels": {"app": "nginx"}})
    );
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"],
        json!([{"name": "nginx", "image": "nginx:1.14.2", "ports": [{"containerPort": 80}]}])
    );
}

#[test]
fn apply_server_side_of_a_service() {
    let mut s = Store::new(SERVICE, "v1");
    let config = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "my-service"},
        "spec": {
            "selector": {"app.kubernetes.io/name": "MyApp"},
            "ports": [{"protocol": "TCP", "port": 80, "targetPort": 9376}]
        }
    });
    let obj = s.apply("kubectl", config, false).unwrap();
    assert_eq!(
        fields(obj, "kubectl", "Apply"),
        json!({"f:spec": {
            "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {
                ".": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}
            }},
            "f:selector": {}
        }})
    );
}

#[test]
fn create_of_a_defaulted_deployment() {
    // `kubectl create deployment nginx --image=nginx`, as the API server has it after
    // defaulting, when the field manager records the create.
    let created = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default", "creationTimestamp": null, "labels": {"app": "nginx"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"creationTimestamp": null, "labels": {"app": "nginx"}},
                "spec": {
                    "containers": [{
                        "name": "nginx",
                        "image": "nginx",
                        "resources": {},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "imagePullPolicy": "Always"
                    }],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "securityContext": {},
                    "schedulerName": "default-scheduler"
                }
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600
        },
        "status": {}
    });
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    let obj = s
        .update("kubectl-create", None, &[], |o| *o = created.clone())
        .clone();
    assert_eq!(
        obj["metadata"]["managedFields"],
        json!([{
            "apiVersion": "apps/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:progressDeadlineSeconds": {},
                    "f:replicas": {},
                    "f:revisionHistoryLimit": {},
                    "f:selector": {},
                    "f:strategy": {
                        "f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}},
                        "f:type": {}
                    },
                    "f:template": {
                        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {
                            "f:containers": {"k:{\"name\":\"nginx\"}": {
                                ".": {},
                                "f:image": {},
                                "f:imagePullPolicy": {},
                                "f:name": {},
                                "f:resources": {},
                                "f:terminationMessagePath": {},
                                "f:terminationMessagePolicy": {}
                            }},
                            "f:dnsPolicy": {},
                            "f:restartPolicy": {},
                            "f:schedulerName": {},
                            "f:securityContext": {},
                            "f:terminationGracePeriodSeconds": {}
                        }
                    }
                }
            },
            "manager": "kubectl-create",
            "operation": "Update",
            "time": at(1)
        }])
    );
    // The object itself is left as it was written.
    let mut without = obj.clone();
    without["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    assert_eq!(without, created);
}

#[test]
fn create_of_a_config_map() {
    // `kubectl create configmap test-cm --from-literal=key=value`.
    let mut s = Store::new(CONFIG_MAP, "v1");
    let obj = s
        .update("kubectl-create", None, &[], |o| {
            *o = json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "test-cm", "creationTimestamp": null},
                "data": {"key": "value"}
            });
        })
        .clone();
    assert_eq!(
        obj["metadata"]["managedFields"],
        json!([{
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:key": {}}},
            "manager": "kubectl-create",
            "operation": "Update",
            "time": at(1)
        }])
    );
}

#[test]
fn run_of_a_pod_and_the_kubelet_status() {
    // `kubectl run nginx --image=nginx`, defaulted.
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nginx", "namespace": "default", "creationTimestamp": null, "labels": {"run": "nginx"}},
        "spec": {
            "containers": [{
                "name": "nginx",
                "image": "nginx",
                "resources": {},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "Always"
            }],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "enableServiceLinks": true
        },
        "status": {}
    });
    let mut s = Store::new(POD, "v1");
    s.update("kubectl-run", None, &[], |o| *o = pod);
    let obj = s
        .update("kubelet", Some("status"), &["spec"], |o| {
            o["status"] = json!({
                "phase": "Running",
                "conditions": [{
                    "type": "Ready",
                    "status": "True",
                    "lastProbeTime": null,
                    "lastTransitionTime": "2025-01-01T00:00:02Z"
                }],
                "hostIP": "10.0.0.1",
                "podIP": "10.244.0.5",
                "podIPs": [{"ip": "10.244.0.5"}],
                "startTime": "2025-01-01T00:00:01Z",
                "containerStatuses": [{"name": "nginx", "ready": true, "restartCount": 0, "image": "nginx"}]
            });
        })
        .clone();
    assert_eq!(
        obj["metadata"]["managedFields"],
        json!([
            {
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {"f:labels": {".": {}, "f:run": {}}},
                    "f:spec": {
                        "f:containers": {"k:{\"name\":\"nginx\"}": {
                            ".": {},
                            "f:image": {},
                            "f:imagePullPolicy": {},
                            "f:name": {},
                            "f:resources": {},
                            "f:terminationMessagePath": {},
                            "f:terminationMessagePolicy": {}
                        }},
                        "f:dnsPolicy": {},
                        "f:enableServiceLinks": {},
                        "f:restartPolicy": {},
                        "f:schedulerName": {},
                        "f:securityContext": {},
                        "f:terminationGracePeriodSeconds": {}
                    }
                },
                "manager": "kubectl-run",
                "operation": "Update",
                "time": at(1)
            },
            {
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:status": {
                    "f:conditions": {".": {}, "k:{\"type\":\"Ready\"}": {
                        ".": {},
                        "f:lastProbeTime": {},
                        "f:lastTransitionTime": {},
                        "f:status": {},
                        "f:type": {}
                    }},
                    "f:containerStatuses": {},
                    "f:hostIP": {},
                    "f:phase": {},
                    "f:podIP": {},
                    "f:podIPs": {".": {}, "k:{\"ip\":\"10.244.0.5\"}": {".": {}, "f:ip": {}}},
                    "f:startTime": {}
                }},
                "manager": "kubelet",
                "operation": "Update",
                "subresource": "status",
                "time": at(2)
            }
        ])
    );
}

#[test]
fn client_side_apply_records_the_annotation() {
    let config = {
        let mut cm = config_map(json!({"key": "some value"}));
        cm["metadata"]["labels"] = json!({"test-label": "test"});
        cm
    };
    let mut object = config.clone();
    object["metadata"]["annotations"] = json!({ LAST_APPLIED: last_applied(&config) });
    let mut s = Store::new(CONFIG_MAP, "v1");
    let obj = s
        .update("kubectl-client-side-apply", None, &[], |o| *o = object)
        .clone();
    assert_eq!(
        obj["metadata"]["managedFields"],
        json!([{
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:data": {".": {}, "f:key": {}},
                "f:metadata": {
                    "f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}},
                    "f:labels": {".": {}, "f:test-label": {}}
                }
            },
            "manager": "kubectl-client-side-apply",
            "operation": "Update",
            "time": at(1)
        }])
    );
}

#[test]
fn label_and_annotate_after_a_server_side_apply() {
    let mut s = Store::new(CONFIG_MAP, "v1");
    let mut config = config_map(json!({"key": "v"}));
    config["metadata"]["labels"] = json!({"app": "demo"});
    s.apply("kubectl", config, false).unwrap();
    s.update("kubectl-label", None, &[], |o| {
        o["metadata"]["labels"]["extra"] = json!("yes")
    });
    let obj = s
        .update("kubectl-annotate", None, &[], |o| {
            o["metadata"]["annotations"] = json!({"note": "hi"})
        })
        .clone();
    assert_eq!(
        managers(&obj),
        [
            ("kubectl".to_owned(), "Apply".to_owned()),
            ("kubectl-label".to_owned(), "Update".to_owned()),
            ("kubectl-annotate".to_owned(), "Update".to_owned())
        ]
    );
    assert_eq!(
        fields(&obj, "kubectl-label", "Update"),
        json!({"f:metadata": {"f:labels": {"f:extra": {}}}})
    );
    assert_eq!(
        fields(&obj, "kubectl-annotate", "Update"),
        json!({"f:metadata": {"f:annotations": {".": {}, "f:note": {}}}})
    );
    // The label added by hand survives the next apply, which does not own it.
    let mut config = config_map(json!({"key": "v2"}));
    config["metadata"]["labels"] = json!({"app": "demo"});
    let obj = s.apply("kubectl", config, false).unwrap();
    assert_eq!(
        obj["metadata"]["labels"],
        json!({"app": "demo", "extra": "yes"})
    );
}

#[test]
fn edit_then_apply_server_side_conflicts() {
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    s.apply("kubectl", nginx(Some(3)), false).unwrap();
    let obj = s
        .update("kubectl-edit", None, &[], |o| {
            o["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.16.1");
        })
        .clone();
    assert_eq!(
        entry(&obj, "kubectl-edit", "Update").unwrap(),
        json!({
            "apiVersion": "apps/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"nginx\"}": {"f:image": {}}
            }}}}},
            "manager": "kubectl-edit",
            "operation": "Update",
            "time": at(2)
        })
    );
    let mut expected = applied_nginx_fields();
    expected["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"nginx\"}"]
        .as_object_mut()
        .unwrap()
        .remove("f:image");
    assert_eq!(fields(&obj, "kubectl", "Apply"), expected);
    let err = s.apply("kubectl", nginx(Some(3)), false).unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.template.spec.containers[name="nginx"].image"#
    );
    // `--force-conflicts` takes the image back.
    let obj = s.apply("kubectl", nginx(Some(3)), true).unwrap();
    assert_eq!(fields(obj, "kubectl", "Apply"), applied_nginx_fields());
    assert_eq!(managers(obj), [("kubectl".to_owned(), "Apply".to_owned())]);
}

/// A Deployment created by client-side `kubectl apply` of `nginx(Some(3))`.
fn client_side_applied() -> Store {
    let config = nginx(Some(3));
    let mut object = config.clone();
    object["metadata"]["annotations"] = json!({ LAST_APPLIED: last_applied(&config) });
    let mut s = Store::new(DEPLOYMENT, "apps/v1");
    s.update("kubectl-client-side-apply", None, &[], |o| *o = object);
    s
}

fn newer_nginx() -> Value {
    let mut config = nginx(Some(5));
    config["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.16.1");
    config
}

#[test]
fn client_side_apply_upgrades_to_server_side_without_conflicts() {
    let mut s = client_side_applied();
    let csa = fields(s.get(), "kubectl-client-side-apply", "Update");
    assert_eq!(csa["f:spec"]["f:replicas"], json!({}));
    assert_eq!(
        csa["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"nginx\"}"]["f:ports"],
        json!({".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}})
    );

    let obj = s.apply("kubectl", newer_nginx(), false).unwrap().clone();
    assert_eq!(obj["spec"]["replicas"], 5);
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.16.1"
    );
    assert_eq!(fields(&obj, "kubectl", "Apply"), applied_nginx_fields());
    let csa = fields(&obj, "kubectl-client-side-apply", "Update");
    assert!(csa["f:spec"].get("f:replicas").is_none(), "{csa}");
    assert!(
        csa["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"nginx\"}"]
            .get("f:image")
            .is_none()
    );
    assert_eq!(
        csa["f:metadata"]["f:annotations"],
        json!({".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}})
    );
    // The annotation follows the server-side configuration, so that a later
    // client-side apply (a downgrade) starts from it.
    assert_eq!(
        obj["metadata"]["annotations"][LAST_APPLIED],
        last_applied(&newer_nginx())
    );
}

#[test]
fn only_the_kubectl_manager_upgrades_from_client_side_apply() {
    let mut s = client_side_applied();
    let before = s.get().clone();
    let err = s.apply("my-manager", newer_nginx(), false).unwrap_err();
    assert_eq!(
        err.message(),
        "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using apps/v1:\n\
         - .spec.replicas\n- .spec.template.spec.containers[name=\"nginx\"].image"
    );
    // Forced, it goes through but leaves the annotation alone.
    let obj = s.apply("my-manager", newer_nginx(), true).unwrap();
    assert_eq!(
        obj["metadata"]["annotations"][LAST_APPLIED],
        before["metadata"]["annotations"][LAST_APPLIED]
    );
}

#[test]
fn fields_changed_since_the_client_side_apply_still_conflict() {
    // The documentation's caution: scaling after a client-side apply makes replicas
    // someone else's, and the annotation no longer describes them.
    let mut s = client_side_applied();
    s.update("kube-controller-manager", Some("scale"), &[], |o| {
        o["spec"]["replicas"] = json!(5)
    });
    // The image still matches the annotation: only replicas are reported.
    let mut config = newer_nginx();
    config["spec"]["replicas"] = json!(3);
    let err = s.apply("kubectl", config, false).unwrap_err();
    assert!(matches!(err, ApplyError::Conflicts(_)));
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "kube-controller-manager" with subresource "scale" using apps/v1: .spec.replicas"#
    );
    // Without replicas, the upgrade succeeds and replicas stay the scaler's.
    let mut config = newer_nginx();
    config["spec"].as_object_mut().unwrap().remove("replicas");
    let obj = s.apply("kubectl", config, false).unwrap();
    assert_eq!(obj["spec"]["replicas"], 5);
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.16.1"
    );
    assert_eq!(
        fields(obj, "kube-controller-manager", "Update"),
        json!({"f:spec": {"f:replicas": {}}})
    );
}

#[test]
fn an_unusable_annotation_excuses_nothing() {
    for annotation in [
        "",
        "not json",
        r#"{"apiVersion":"apps/v1beta1","kind":"Deployment","spec":{"replicas":3}}"#,
    ] {
        let mut s = client_side_applied();
        if let Some(obj) = s.object.as_mut() {
            obj["metadata"]["annotations"][LAST_APPLIED] = json!(annotation);
        }
        let err = s.apply("kubectl", newer_nginx(), false).unwrap_err();
        assert_eq!(
            match &err {
                ApplyError::Conflicts(c) => c.len(),
                _ => 0,
            },
            2,
            "{annotation}: {err:?}"
        );
    }
}
