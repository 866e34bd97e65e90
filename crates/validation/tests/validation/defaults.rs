//! Defaulting and create-time preparation of minimal objects, compared with what a
//! Kubernetes 1.33 API server stores (`kubectl get -o json`, minus server-set metadata and
//! fields that admission plugins or allocators add).

use crate::fixtures::{UID, admit};
use serde_json::{Value, json};

fn admitted(group: &str, version: &str, kind: &str, object: Value) -> Value {
    let mut o = object;
    admit(group, version, kind, &mut o);
    o
}

/// The defaulted form of a single `nginx`-style container.
fn defaulted_container(image: &str, pull: &str) -> Value {
    json!({
        "image": image,
        "imagePullPolicy": pull,
        "name": "c",
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File"
    })
}

/// The defaulted pod spec of a template (no `enableServiceLinks`: that is a Pod default).
fn defaulted_template_spec(container: Value, restart: &str) -> Value {
    json!({
        "containers": [container],
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": restart,
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30
    })
}

#[test]
fn minimal_pod_matches_a_real_cluster() {
    let pod = admitted(
        "",
        "v1",
        "Pod",
        json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}),
    );
    let expected = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [defaulted_container("nginx", "Always")],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": true,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30
        },
        "status": {"phase": "Pending", "qosClass": "BestEffort"}
    });
    assert_eq!(pod, expected);
}

#[test]
fn image_pull_policy_follows_the_tag() {
    for (image, pull) in [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        ("registry.example.com:5000/team/app", "Always"),
        ("registry.example.com:5000/team/app:v2", "IfNotPresent"),
        (
            "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "IfNotPresent",
        ),
    ] {
        let pod = admitted(
            "",
            "v1",
            "Pod",
            json!({"metadata":{"name":"p","namespace":"default"},"spec":{"containers":[{"name":"c","image":image}]}}),
        );
        assert_eq!(
            pod["spec"]["containers"][0]["imagePullPolicy"], pull,
            "{image}"
        );
    }
}

#[test]
fn pod_nested_defaults() {
    let pod = admitted(
        "",
        "v1",
        "Pod",
        json!({"metadata":{"name":"p","namespace":"default"},"spec":{
            "containers":[{"name":"c","image":"nginx:1.27","ports":[{"containerPort":80}],
                "resources":{"limits":{"cpu":"0.5","memory":"128Mi"}},
                "livenessProbe":{"httpGet":{"port":80}},
                "startupProbe":{"grpc":{"port":9000}},
                "env":[{"name":"N","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}]}],
            "volumes":[
                {"name":"s","secret":{"secretName":"x"}},
                {"name":"h","hostPath":{"path":"/x"}},
                {"name":"pr","projected":{"sources":[{"serviceAccountToken":{"path":"t"}}]}}]}}),
    );
    let c = &pod["spec"]["containers"][0];
    assert_eq!(
        c["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}])
    );
    assert_eq!(
        c["resources"],
        json!({"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "500m", "memory": "128Mi"}})
    );
    assert_eq!(
        c["livenessProbe"],
        json!({"httpGet": {"path": "/", "port": 80, "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(
        c["startupProbe"]["grpc"],
        json!({"port": 9000, "service": ""})
    );
    assert_eq!(
        c["env"][0]["valueFrom"]["fieldRef"],
        json!({"apiVersion": "v1", "fieldPath": "metadata.name"})
    );
    let v = &pod["spec"]["volumes"];
    assert_eq!(
        v[0]["secret"],
        json!({"secretName": "x", "defaultMode": 420})
    );
    assert_eq!(v[1]["hostPath"], json!({"path": "/x", "type": ""}));
    assert_eq!(
        v[2]["projected"],
        json!({"defaultMode": 420, "sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}]})
    );
    assert_eq!(pod["status"]["qosClass"], "Guaranteed");
}

#[test]
fn qos_class_is_computed_as_kubernetes_does() {
    let cases = [
        (json!({}), "BestEffort"),
        (json!({"requests": {"cpu": "100m"}}), "Burstable"),
        (
            json!({"limits": {"cpu": "1", "memory": "1Gi"}}),
            "Guaranteed",
        ),
        (json!({"limits": {"cpu": "1"}}), "Burstable"),
        (
            json!({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}),
            "Burstable",
        ),
        (
            json!({"requests": {"ephemeral-storage": "1Gi"}}),
            "BestEffort",
        ),
    ];
    for (resources, class) in cases {
        let pod = admitted(
            "",
            "v1",
            "Pod",
            json!({"metadata":{"name":"p","namespace":"default"},"spec":{"containers":[{"name":"c","image":"nginx","resources":resources}]}}),
        );
        assert_eq!(pod["status"]["qosClass"], class, "{resources}");
    }
}

#[test]
fn pod_status_is_reset_on_create() {
    let pod = admitted(
        "",
        "v1",
        "Pod",
        json!({"metadata":{"name":"p","namespace":"default"},"spec":{"containers":[{"name":"c","image":"nginx"}]},"status":{"phase":"Running","podIP":"10.0.0.9"}}),
    );
    assert_eq!(
        pod["status"],
        json!({"phase": "Pending", "qosClass": "BestEffort"})
    );
}

#[test]
fn minimal_deployment() {
    let d = admitted(
        "apps",
        "v1",
        "Deployment",
        json!({"metadata":{"name":"d","namespace":"default"},"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}},"status":{"replicas":3}}),
    );
    let expected = json!({
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {
            "progressDeadlineSeconds": 600,
            "replicas": 1,
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": "d"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": defaulted_template_spec(defaulted_container("nginx:1.27", "IfNotPresent"), "Always")
            }
        },
        "status": {}
    });
    assert_eq!(d, expected);
}

#[test]
fn minimal_service() {
    let s = admitted(
        "",
        "v1",
        "Service",
        json!({"metadata":{"name":"s","namespace":"default"},"spec":{"selector":{"app":"d"},"ports":[{"port":80}]}}),
    );
    let expected = json!({
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {
            "internalTrafficPolicy": "Cluster",
            "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
            "selector": {"app": "d"},
            "sessionAffinity": "None",
            "type": "ClusterIP"
        },
        "status": {"loadBalancer": {}}
    });
    assert_eq!(s, expected);
}

#[test]
fn node_port_and_load_balancer_services() {
    let s = admitted(
        "",
        "v1",
        "Service",
        json!({"metadata":{"name":"s","namespace":"default"},"spec":{"type":"LoadBalancer","selector":{"app":"d"},"ports":[{"port":443,"targetPort":"https"}]}}),
    );
    assert_eq!(s["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(s["spec"]["allocateLoadBalancerNodePorts"], true);
    assert_eq!(s["spec"]["ports"][0]["targetPort"], "https");
    let s = admitted(
        "",
        "v1",
        "Service",
        json!({"metadata":{"name":"s","namespace":"default"},"spec":{"type":"ExternalName","externalName":"example.com"}}),
    );
    assert_eq!(s["spec"].get("internalTrafficPolicy"), None);
    assert_eq!(s["spec"].get("externalTrafficPolicy"), None);
}

#[test]
fn minimal_job_gets_generated_selector_and_labels() {
    let j = admitted(
        "batch",
        "v1",
        "Job",
        json!({"metadata":{"name":"j","namespace":"default","uid":UID},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}),
    );
    let labels = json!({
        "batch.kubernetes.io/controller-uid": UID,
        "batch.kubernetes.io/job-name": "j",
        "controller-uid": UID,
        "job-name": "j"
    });
    let expected = json!({
        "metadata": {"name": "j", "namespace": "default", "uid": UID, "labels": labels},
        "spec": {
            "backoffLimit": 6,
            "completionMode": "NonIndexed",
            "completions": 1,
            "parallelism": 1,
            "podReplacementPolicy": "TerminatingOrFailed",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}},
            "suspend": false,
            "template": {
                "metadata": {"labels": labels},
                "spec": defaulted_template_spec(defaulted_container("busybox", "Always"), "Never")
            }
        },
        "status": {}
    });
    assert_eq!(j, expected);
}

#[test]
fn cronjob_defaults() {
    let cj = admitted(
        "batch",
        "v1",
        "CronJob",
        json!({"metadata":{"name":"cj","namespace":"default"},"spec":{"schedule":"@hourly","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}}}),
    );
    let spec = &cj["spec"];
    assert_eq!(spec["concurrencyPolicy"], "Allow");
    assert_eq!(spec["suspend"], false);
    assert_eq!(spec["successfulJobsHistoryLimit"], 3);
    assert_eq!(spec["failedJobsHistoryLimit"], 1);
    assert_eq!(
        spec["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"],
        "ClusterFirst"
    );
    assert_eq!(cj["status"], json!({}));
}

#[test]
fn statefulset_and_daemonset_defaults() {
    let ss = admitted(
        "apps",
        "v1",
        "StatefulSet",
        json!({"metadata":{"name":"s","namespace":"default"},"spec":{"selector":{"matchLabels":{"app":"s"}},"template":{"metadata":{"labels":{"app":"s"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}},
            "volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}}),
    );
    let spec = &ss["spec"];
    assert_eq!(spec["podManagementPolicy"], "OrderedReady");
    assert_eq!(
        spec["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    );
    assert_eq!(
        spec["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
    );
    assert_eq!(spec["replicas"], 1);
    assert_eq!(spec["revisionHistoryLimit"], 10);
    let claim = &spec["volumeClaimTemplates"][0];
    assert_eq!(claim["apiVersion"], "v1");
    assert_eq!(claim["kind"], "PersistentVolumeClaim");
    assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
    assert_eq!(ss["status"], json!({"replicas": 0, "availableReplicas": 0}));

    let ds = admitted(
        "apps",
        "v1",
        "DaemonSet",
        json!({"metadata":{"name":"s","namespace":"default"},"spec":{"selector":{"matchLabels":{"app":"s"}},"template":{"metadata":{"labels":{"app":"s"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}),
    );
    assert_eq!(
        ds["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}})
    );
    assert_eq!(ds["spec"]["revisionHistoryLimit"], 10);
}

#[test]
fn namespace_preparation() {
    let ns = admitted("", "v1", "Namespace", json!({"metadata":{"name":"team-a"}}));
    assert_eq!(
        ns,
        json!({
            "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"}
        })
    );
}

#[test]
fn persistent_volume_claim_and_volume() {
    let pvc = admitted(
        "",
        "v1",
        "PersistentVolumeClaim",
        json!({"metadata":{"name":"c","namespace":"default"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}),
    );
    assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pvc["status"], json!({"phase": "Pending"}));
    let pv = admitted(
        "",
        "v1",
        "PersistentVolume",
        json!({"metadata":{"name":"pv"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/data"}}}),
    );
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pv["status"]["phase"], "Pending");
    assert!(pv["status"]["lastPhaseTransitionTime"].is_string());
}

#[test]
fn horizontal_pod_autoscalers() {
    let target = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"});
    let v2 = admitted(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        json!({"metadata":{"name":"h","namespace":"default"},"spec":{"scaleTargetRef":target,"maxReplicas":5}}),
    );
    assert_eq!(v2["spec"]["minReplicas"], 1);
    assert_eq!(
        v2["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
    let v1 = admitted(
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        json!({"metadata":{"name":"h","namespace":"default"},"spec":{"scaleTargetRef":target,"maxReplicas":5}}),
    );
    assert_eq!(v1["spec"]["minReplicas"], 1);
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 80);

    let with_behavior = admitted(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        json!({"metadata":{"name":"h","namespace":"default"},"spec":{"scaleTargetRef":target,"maxReplicas":5,"behavior":{"scaleUp":{}}}}),
    );
    assert_eq!(
        with_behavior["spec"]["behavior"]["scaleUp"],
        json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}
        ]})
    );
    assert_eq!(
        with_behavior["spec"]["behavior"]["scaleDown"],
        json!({"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]})
    );
}

#[test]
fn cluster_scoped_configuration_kinds() {
    let sc = admitted(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        json!({"metadata":{"name":"sc"},"provisioner":"x.io/y"}),
    );
    assert_eq!(sc["reclaimPolicy"], "Delete");
    assert_eq!(sc["volumeBindingMode"], "Immediate");
    let pc = admitted(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        json!({"metadata":{"name":"high"},"value":1000}),
    );
    assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority");
    let csi = admitted(
        "storage.k8s.io",
        "v1",
        "CSIDriver",
        json!({"metadata":{"name":"csi.example.com"},"spec":{}}),
    );
    assert_eq!(
        csi["spec"],
        json!({"attachRequired": true, "podInfoOnMount": false, "storageCapacity": false, "fsGroupPolicy": "ReadWriteOnceWithFSType",
               "volumeLifecycleModes": ["Persistent"], "requiresRepublish": false, "seLinuxMount": false})
    );
    let np = admitted(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        json!({"metadata":{"name":"n","namespace":"default"},"spec":{"podSelector":{},"egress":[{}]}}),
    );
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    let hook = admitted(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        json!({"metadata":{"name":"m"},"webhooks":[{"name":"m.example.com","clientConfig":{"service":{"namespace":"default","name":"hook"}},"sideEffects":"None","admissionReviewVersions":["v1"],"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}]}]}),
    );
    let w = &hook["webhooks"][0];
    assert_eq!(w["failurePolicy"], "Fail");
    assert_eq!(w["matchPolicy"], "Equivalent");
    assert_eq!(w["reinvocationPolicy"], "Never");
    assert_eq!(w["timeoutSeconds"], 10);
    assert_eq!(w["namespaceSelector"], json!({}));
    assert_eq!(w["objectSelector"], json!({}));
    assert_eq!(w["clientConfig"]["service"]["port"], 443);
    assert_eq!(w["rules"][0]["scope"], "*");
}

#[test]
fn secrets_and_replication_controllers() {
    let s = admitted(
        "",
        "v1",
        "Secret",
        json!({"metadata":{"name":"s","namespace":"default"},"stringData":{"password":"hunter2"},"data":{"user":"YWRtaW4="}}),
    );
    assert_eq!(s["type"], "Opaque");
    assert_eq!(
        s["data"],
        json!({"user": "YWRtaW4=", "password": "aHVudGVyMg=="})
    );
    assert_eq!(s.get("stringData"), None);

    let rc = admitted(
        "",
        "v1",
        "ReplicationController",
        json!({"metadata":{"name":"rc","namespace":"default"},"spec":{"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}),
    );
    assert_eq!(rc["spec"]["selector"], json!({"app": "a"}));
    assert_eq!(rc["metadata"]["labels"], json!({"app": "a"}));
    assert_eq!(rc["spec"]["replicas"], 1);
}

#[test]
fn limit_range_defaults_follow_max_and_default() {
    let lr = admitted(
        "",
        "v1",
        "LimitRange",
        json!({"metadata":{"name":"lr","namespace":"default"},"spec":{"limits":[{"type":"Container","max":{"cpu":"2"}}]}}),
    );
    let item = &lr["spec"]["limits"][0];
    assert_eq!(item["default"], json!({"cpu": "2"}));
    assert_eq!(item["defaultRequest"], json!({"cpu": "2"}));
}
