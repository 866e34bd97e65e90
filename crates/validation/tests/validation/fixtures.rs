//! Minimal valid objects for every built-in kind we serve, and helpers to run them
//! through the public API the way the API server's REST engine does.

use serde_json::{Value, json};

/// One served kind with a minimal object that Kubernetes accepts.
pub struct Fixture {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub object: Value,
}

fn fx(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    namespaced: bool,
    object: Value,
) -> Fixture {
    Fixture {
        group,
        version,
        kind,
        namespaced,
        object,
    }
}

/// A metadata block for a namespaced object.
fn nmeta(name: &str) -> Value {
    json!({"name": name, "namespace": "default"})
}

/// A metadata block for a cluster-scoped object.
fn cmeta(name: &str) -> Value {
    json!({"name": name})
}

/// A pod template labelled `app: <app>`.
pub fn template(app: &str) -> Value {
    json!({"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}})
}

/// A minimal pod spec for Job templates.
fn job_template() -> Value {
    json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}})
}

/// The UID given to objects whose create-time preparation needs one (Jobs).
pub const UID: &str = "0b5ad3d4-1f7e-4d1e-9bf8-5d2f1b4bb3c2";

/// Every served kind with a minimal valid object.
pub fn all() -> Vec<Fixture> {
    let sel = json!({"matchLabels": {"app": "a"}});
    vec![
        fx(
            "",
            "v1",
            "Namespace",
            false,
            json!({"metadata": cmeta("ns")}),
        ),
        fx(
            "",
            "v1",
            "Pod",
            true,
            json!({"metadata": nmeta("p"), "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
        ),
        fx(
            "",
            "v1",
            "Service",
            true,
            json!({"metadata": nmeta("s"), "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}}),
        ),
        fx(
            "",
            "v1",
            "Endpoints",
            true,
            json!({"metadata": nmeta("s"), "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}),
        ),
        fx(
            "",
            "v1",
            "ConfigMap",
            true,
            json!({"metadata": nmeta("cm"), "data": {"a.txt": "x"}}),
        ),
        fx(
            "",
            "v1",
            "Secret",
            true,
            json!({"metadata": nmeta("sec"), "data": {"k": "dmFsdWU="}}),
        ),
        fx(
            "",
            "v1",
            "ServiceAccount",
            true,
            json!({"metadata": nmeta("sa")}),
        ),
        fx(
            "",
            "v1",
            "Node",
            false,
            json!({"metadata": cmeta("node-1"), "spec": {"podCIDR": "10.244.0.0/24"}}),
        ),
        fx(
            "",
            "v1",
            "Event",
            true,
            json!({"metadata": nmeta("p.1"), "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "Started", "message": "m", "type": "Normal", "source": {"component": "kubelet"}}),
        ),
        fx(
            "",
            "v1",
            "LimitRange",
            true,
            json!({"metadata": nmeta("lr"), "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "100m"}}]}}),
        ),
        fx(
            "",
            "v1",
            "ResourceQuota",
            true,
            json!({"metadata": nmeta("rq"), "spec": {"hard": {"pods": "10", "requests.cpu": "4"}}}),
        ),
        fx(
            "",
            "v1",
            "PersistentVolume",
            false,
            json!({"metadata": cmeta("pv"), "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}}),
        ),
        fx(
            "",
            "v1",
            "PersistentVolumeClaim",
            true,
            json!({"metadata": nmeta("pvc"), "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
        ),
        fx(
            "",
            "v1",
            "PodTemplate",
            true,
            json!({"metadata": nmeta("pt"), "template": template("a")}),
        ),
        fx(
            "",
            "v1",
            "ReplicationController",
            true,
            json!({"metadata": nmeta("rc"), "spec": {"selector": {"app": "a"}, "template": template("a")}}),
        ),
        fx(
            "apps",
            "v1",
            "Deployment",
            true,
            json!({"metadata": nmeta("d"), "spec": {"selector": sel, "template": template("a")}}),
        ),
        fx(
            "apps",
            "v1",
            "ReplicaSet",
            true,
            json!({"metadata": nmeta("rs"), "spec": {"selector": sel, "template": template("a")}}),
        ),
        fx(
            "apps",
            "v1",
            "StatefulSet",
            true,
            json!({"metadata": nmeta("ss"), "spec": {"selector": sel, "serviceName": "ss", "template": template("a")}}),
        ),
        fx(
            "apps",
            "v1",
            "DaemonSet",
            true,
            json!({"metadata": nmeta("ds"), "spec": {"selector": sel, "template": template("a")}}),
        ),
        fx(
            "apps",
            "v1",
            "ControllerRevision",
            true,
            json!({"metadata": nmeta("cr"), "revision": 1, "data": {"spec": {}}}),
        ),
        fx(
            "batch",
            "v1",
            "Job",
            true,
            json!({"metadata": {"name": "j", "namespace": "default", "uid": UID}, "spec": {"template": job_template()}}),
        ),
        fx(
            "batch",
            "v1",
            "CronJob",
            true,
            json!({"metadata": nmeta("cj"), "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": job_template()}}}}),
        ),
        fx(
            "coordination.k8s.io",
            "v1",
            "Lease",
            true,
            json!({"metadata": nmeta("l"), "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}}),
        ),
        fx(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            true,
            json!({"metadata": nmeta("s-abc"), "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"name": "http", "port": 80}]}),
        ),
        fx(
            "events.k8s.io",
            "v1",
            "Event",
            true,
            json!({"metadata": nmeta("e.1"), "eventTime": "2025-01-01T00:00:00.000000Z", "reportingController": "kubelet", "reportingInstance": "node-1", "action": "Started", "reason": "Started", "type": "Normal", "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}}),
        ),
        fx(
            "policy",
            "v1",
            "PodDisruptionBudget",
            true,
            json!({"metadata": nmeta("pdb"), "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "a"}}}}),
        ),
        fx(
            "autoscaling",
            "v1",
            "HorizontalPodAutoscaler",
            true,
            json!({"metadata": nmeta("h"), "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 5}}),
        ),
        fx(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            true,
            json!({"metadata": nmeta("h"), "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 5}}),
        ),
        fx(
            "networking.k8s.io",
            "v1",
            "Ingress",
            true,
            json!({"metadata": nmeta("i"), "spec": {"rules": [{"host": "example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "s", "port": {"number": 80}}}}]}}]}}),
        ),
        fx(
            "networking.k8s.io",
            "v1",
            "IngressClass",
            false,
            json!({"metadata": cmeta("nginx"), "spec": {"controller": "k8s.io/ingress-nginx"}}),
        ),
        fx(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            true,
            json!({"metadata": nmeta("np"), "spec": {"podSelector": {}}}),
        ),
        fx(
            "storage.k8s.io",
            "v1",
            "StorageClass",
            false,
            json!({"metadata": cmeta("standard"), "provisioner": "rancher.io/local-path"}),
        ),
        fx(
            "storage.k8s.io",
            "v1",
            "CSIDriver",
            false,
            json!({"metadata": cmeta("csi.example.com"), "spec": {}}),
        ),
        fx(
            "storage.k8s.io",
            "v1",
            "CSINode",
            false,
            json!({"metadata": cmeta("node-1"), "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "node-1"}]}}),
        ),
        fx(
            "storage.k8s.io",
            "v1",
            "VolumeAttachment",
            false,
            json!({"metadata": cmeta("va"), "spec": {"attacher": "csi.example.com", "nodeName": "node-1", "source": {"persistentVolumeName": "pv"}}}),
        ),
        fx(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            false,
            json!({"metadata": cmeta("high"), "value": 1000}),
        ),
        fx(
            "node.k8s.io",
            "v1",
            "RuntimeClass",
            false,
            json!({"metadata": cmeta("gvisor"), "handler": "runsc"}),
        ),
        fx(
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            true,
            json!({"metadata": nmeta("r"), "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
        ),
        fx(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            true,
            json!({"metadata": nmeta("rb"), "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}, "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "default"}]}),
        ),
        fx(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            false,
            json!({"metadata": cmeta("system:reader"), "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]}),
        ),
        fx(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            false,
            json!({"metadata": cmeta("crb"), "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:reader"}, "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]}),
        ),
        fx(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            false,
            json!({"metadata": cmeta("vwc"), "webhooks": [{"name": "v.example.com", "clientConfig": {"url": "https://example.com/validate"}, "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}),
        ),
        fx(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            false,
            json!({"metadata": cmeta("mwc"), "webhooks": [{"name": "m.example.com", "clientConfig": {"service": {"namespace": "default", "name": "hook"}}, "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}),
        ),
        fx(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            false,
            json!({"metadata": cmeta("vap"), "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]}, "validations": [{"expression": "object.spec.replicas <= 5"}]}}),
        ),
        fx(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            false,
            json!({"metadata": cmeta("vapb"), "spec": {"policyName": "vap", "validationActions": ["Deny"]}}),
        ),
        fx(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            false,
            json!({"metadata": cmeta("widgets.example.com"), "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"}, "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}}),
        ),
        fx(
            "apiregistration.k8s.io",
            "v1",
            "APIService",
            false,
            json!({"metadata": cmeta("v1beta1.metrics.k8s.io"), "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100, "service": {"namespace": "kube-system", "name": "metrics-server"}}}),
        ),
    ]
}

/// Runs an object through defaulting and create-time preparation, as the engine does on
/// create.
pub fn admit(group: &str, version: &str, kind: &str, object: &mut Value) {
    kyb_validation::default_object(group, version, kind, object);
    kyb_validation::prepare_for_create(group, version, kind, object);
}

/// The `Display` text of each error, for compact assertions.
pub fn texts(errs: &[kyb_validation::FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

/// Objects using many optional fields, all valid: they guard against false positives and
/// give the garbage tests more fields to break.
pub fn rich() -> Vec<Fixture> {
    let pod_spec = json!({
        "initContainers": [{"name": "init", "image": "busybox", "command": ["sh", "-c", "true"],
            "resources": {"requests": {"cpu": "10m"}}}],
        "containers": [{
            "name": "app", "image": "registry.example.com/app:v1",
            "command": ["/app"], "args": ["--port=8080"], "workingDir": "/srv",
            "ports": [{"name": "http", "containerPort": 8080}, {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
            "env": [
                {"name": "A", "value": "1"},
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}},
                {"name": "PASS", "valueFrom": {"secretKeyRef": {"name": "s", "key": "password", "optional": true}}},
                {"name": "CONF", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "conf"}}}
            ],
            "envFrom": [{"configMapRef": {"name": "c"}}, {"prefix": "S_", "secretRef": {"name": "s"}}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "256Mi"}},
            "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "conf", "mountPath": "/etc/conf", "readOnly": true},
                {"name": "tok", "mountPath": "/var/run/tok"}],
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "httpHeaders": [{"name": "X-Probe", "value": "1"}]}, "initialDelaySeconds": 5},
            "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 5},
            "startupProbe": {"exec": {"command": ["cat", "/tmp/ready"]}, "failureThreshold": 30},
            "lifecycle": {"preStop": {"exec": {"command": ["sleep", "5"]}}, "postStart": {"httpGet": {"port": 8080, "path": "/started"}}},
            "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "allowPrivilegeEscalation": false,
                "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
                "seccompProfile": {"type": "RuntimeDefault"}}
        }, {
            "name": "sidecar", "image": "envoy:1.30", "stdin": true, "tty": true,
            "resources": {"limits": {"memory": "128Mi", "ephemeral-storage": "1Gi"}}
        }],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "conf", "configMap": {"name": "c", "items": [{"key": "conf", "path": "app.conf", "mode": 256}]}},
            {"name": "tok", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token", "audience": "api", "expirationSeconds": 7200}},
                {"configMap": {"name": "ca", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                {"secret": {"name": "s", "optional": true}}
            ]}},
            {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
            {"name": "host", "hostPath": {"path": "/var/log", "type": "Directory"}},
            {"name": "ephemeral", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}},
            {"name": "csi", "csi": {"driver": "secrets-store.csi.k8s.io", "readOnly": true, "volumeAttributes": {"class": "x"}}}
        ],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}}]}
        },
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"},
            {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "a"}}}],
        "securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000, "supplementalGroups": [4000],
            "sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65535"}]},
        "serviceAccountName": "app",
        "hostAliases": [{"ip": "10.1.2.3", "hostnames": ["db.local"]}],
        "dnsPolicy": "None",
        "dnsConfig": {"nameservers": ["1.1.1.1"], "searches": ["svc.cluster.local"], "options": [{"name": "ndots", "value": "2"}]},
        "readinessGates": [{"conditionType": "example.com/ready"}],
        "priorityClassName": "high",
        "hostname": "web-0",
        "subdomain": "web",
        "imagePullSecrets": [{"name": "regcred"}],
        "os": {"name": "linux"}
    });
    let template = json!({"metadata": {"labels": {"app": "a"}}, "spec": pod_spec.clone()});
    let mut job_pod = pod_spec.clone();
    job_pod["restartPolicy"] = "Never".into();
    vec![
        fx(
            "",
            "v1",
            "Pod",
            true,
            json!({"metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "a"},
            "annotations": {"example.com/note": "x"}, "finalizers": ["example.com/cleanup"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": UID, "controller": true}]},
            "spec": pod_spec}),
        ),
        fx(
            "",
            "v1",
            "Service",
            true,
            json!({"metadata": {"name": "lb", "namespace": "default"}, "spec": {
            "type": "LoadBalancer", "selector": {"app": "a"},
            "ports": [{"name": "http", "port": 80, "targetPort": "http"}, {"name": "dns", "port": 53, "protocol": "UDP", "nodePort": 30053}],
            "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 600}},
            "externalIPs": ["192.0.2.10"], "loadBalancerSourceRanges": ["203.0.113.0/24"],
            "externalTrafficPolicy": "Local", "healthCheckNodePort": 31000, "ipFamilyPolicy": "PreferDualStack", "ipFamilies": ["IPv4", "IPv6"],
            "publishNotReadyAddresses": true}}),
        ),
        fx(
            "apps",
            "v1",
            "StatefulSet",
            true,
            json!({"metadata": {"name": "web", "namespace": "default"}, "spec": {
            "selector": {"matchLabels": {"app": "a"}}, "serviceName": "web", "replicas": 3, "template": template.clone(),
            "podManagementPolicy": "Parallel", "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1, "maxUnavailable": 1}},
            "ordinals": {"start": 5}, "minReadySeconds": 10,
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                "resources": {"requests": {"storage": "10Gi"}}}}]}}),
        ),
        fx(
            "apps",
            "v1",
            "Deployment",
            true,
            json!({"metadata": {"name": "web", "namespace": "default"}, "spec": {
            "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a"]}]}, "template": template.clone(),
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "10%"}},
            "minReadySeconds": 5, "paused": true, "progressDeadlineSeconds": 120}}),
        ),
        fx(
            "apps",
            "v1",
            "DaemonSet",
            true,
            json!({"metadata": {"name": "agent", "namespace": "default"}, "spec": {
            "selector": {"matchLabels": {"app": "a"}}, "template": template,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "10%"}}}}),
        ),
        fx(
            "batch",
            "v1",
            "Job",
            true,
            json!({"metadata": {"name": "work", "namespace": "default", "uid": UID}, "spec": {
            "completions": 10, "parallelism": 3, "completionMode": "Indexed", "backoffLimitPerIndex": 2, "maxFailedIndexes": 5,
            "activeDeadlineSeconds": 3600, "ttlSecondsAfterFinished": 100,
            "podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"containerName": "app", "operator": "In", "values": [42]}},
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
            "successPolicy": {"rules": [{"succeededIndexes": "0-2", "succeededCount": 2}]},
            "template": {"spec": job_pod}}}),
        ),
        fx(
            "batch",
            "v1",
            "CronJob",
            true,
            json!({"metadata": {"name": "nightly", "namespace": "default"}, "spec": {
            "schedule": "30 2 * * 1-5", "timeZone": "UTC", "concurrencyPolicy": "Forbid", "startingDeadlineSeconds": 200,
            "jobTemplate": {"metadata": {"labels": {"team": "x"}}, "spec": {"backoffLimit": 1,
                "template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
        ),
        fx(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            true,
            json!({"metadata": {"name": "web", "namespace": "default"}, "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 10,
            "metrics": [
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "100"}}},
                {"type": "Object", "object": {"metric": {"name": "hits"}, "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
                    "target": {"type": "Value", "value": "2k"}}},
                {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "jobs"}}}, "target": {"type": "Value", "value": "30"}}},
                {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app", "target": {"type": "Utilization", "averageUtilization": 60}}}
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Min",
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}}}),
        ),
        fx(
            "networking.k8s.io",
            "v1",
            "Ingress",
            true,
            json!({"metadata": {"name": "main", "namespace": "default"}, "spec": {
            "ingressClassName": "nginx", "defaultBackend": {"service": {"name": "web", "port": {"name": "http"}}},
            "tls": [{"hosts": ["example.com"], "secretName": "tls"}],
            "rules": [{"host": "*.example.com", "http": {"paths": [
                {"path": "/api", "pathType": "Exact", "backend": {"service": {"name": "api", "port": {"number": 8080}}}},
                {"pathType": "ImplementationSpecific", "backend": {"resource": {"apiGroup": "example.com", "kind": "Bucket", "name": "static"}}}]}}]}}),
        ),
        fx(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            true,
            json!({"metadata": {"name": "np", "namespace": "default"}, "spec": {
            "podSelector": {"matchLabels": {"app": "a"}}, "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "fe"}}}, {"namespaceSelector": {}},
                {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}], "ports": [{"port": 8080}, {"protocol": "UDP", "port": "dns", "endPort": null}]}],
            "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 443, "endPort": 8443}]}]}}),
        ),
        fx(
            "",
            "v1",
            "PersistentVolume",
            false,
            json!({"metadata": {"name": "pv-csi"}, "spec": {
            "capacity": {"storage": "100Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"], "storageClassName": "fast",
            "persistentVolumeReclaimPolicy": "Delete", "mountOptions": ["noatime"], "volumeMode": "Block",
            "claimRef": {"namespace": "default", "name": "data"},
            "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-123", "fsType": "ext4", "volumeAttributes": {"a": "b"}},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}),
        ),
        fx(
            "",
            "v1",
            "PersistentVolumeClaim",
            true,
            json!({"metadata": {"name": "restore", "namespace": "default"}, "spec": {
            "accessModes": ["ReadWriteOncePod"], "storageClassName": "fast", "volumeMode": "Block",
            "resources": {"requests": {"storage": "5Gi"}, "limits": {"storage": "10Gi"}},
            "selector": {"matchLabels": {"tier": "gold"}},
            "dataSourceRef": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"}}}),
        ),
        fx(
            "",
            "v1",
            "Node",
            false,
            json!({"metadata": {"name": "worker-1", "labels": {"kubernetes.io/hostname": "worker-1"}}, "spec": {
            "podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24", "fd00:1::/64"], "providerID": "kind://worker-1",
            "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}], "unschedulable": true},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}, "allocatable": {"cpu": "3800m", "memory": "7Gi", "pods": "110"},
                "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}, {"type": "Hostname", "address": "worker-1"}],
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}]}}),
        ),
        fx(
            "",
            "v1",
            "ResourceQuota",
            true,
            json!({"metadata": {"name": "rq", "namespace": "default"}, "spec": {
            "hard": {"requests.cpu": "10", "limits.memory": "20Gi", "count/deployments.apps": "5", "pods": "20"},
            "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}}),
        ),
        fx(
            "",
            "v1",
            "LimitRange",
            true,
            json!({"metadata": {"name": "lr", "namespace": "default"}, "spec": {"limits": [
            {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "10m"}, "maxLimitRequestRatio": {"cpu": "10"}},
            {"type": "Pod", "max": {"memory": "2Gi"}},
            {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "100Gi"}}]}}),
        ),
        fx(
            "",
            "v1",
            "Secret",
            true,
            json!({"metadata": {"name": "tls", "namespace": "default"}, "type": "kubernetes.io/tls",
            "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5"}, "immutable": true}),
        ),
        fx(
            "",
            "v1",
            "Secret",
            true,
            json!({"metadata": {"name": "reg", "namespace": "default"}, "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": "eyJhdXRocyI6e319"}}),
        ),
        fx(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            true,
            json!({"metadata": {"name": "web-xyz", "namespace": "default",
            "labels": {"kubernetes.io/service-name": "web"}}, "addressType": "IPv6",
            "endpoints": [{"addresses": ["fd00::1"], "conditions": {"ready": true, "serving": true, "terminating": false},
                "hostname": "web-0", "nodeName": "worker-1", "zone": "a", "hints": {"forZones": [{"name": "a"}]},
                "targetRef": {"kind": "Pod", "name": "web-0", "namespace": "default"}}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP", "appProtocol": "kubernetes.io/h2c"}]}),
        ),
        fx(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            false,
            json!({"metadata": {"name": "aggregate"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate": "true"}}]},
            "rules": [{"apiGroups": ["apps", ""], "resources": ["deployments", "deployments/scale", "pods"], "resourceNames": ["web"], "verbs": ["*"]}]}),
        ),
        fx(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            false,
            json!({"metadata": {"name": "policy"},
            "webhooks": [{"name": "pods.policy.example.com", "clientConfig": {"service": {"namespace": "policy", "name": "webhook", "path": "/validate", "port": 8443}, "caBundle": "Y2E="},
                "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods", "pods/status"], "scope": "Namespaced"}],
                "failurePolicy": "Ignore", "matchPolicy": "Exact", "sideEffects": "NoneOnDryRun", "timeoutSeconds": 5,
                "admissionReviewVersions": ["v1", "v1beta1"],
                "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]},
                "matchConditions": [{"name": "not-system", "expression": "!request.userInfo.username.startsWith('system:')"}]}]}),
        ),
        fx(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            false,
            json!({"metadata": {"name": "crontabs.stable.example.com"}, "spec": {
            "group": "stable.example.com", "scope": "Cluster",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"], "categories": ["all"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"cronSpec": {"type": "string"}, "replicas": {"type": "integer", "minimum": 1}}}}}},
                    "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                    "additionalPrinterColumns": [{"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"}]},
                {"name": "v1beta1", "served": true, "storage": false, "deprecated": true, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
            ]}}),
        ),
        fx(
            "events.k8s.io",
            "v1",
            "Event",
            true,
            json!({"metadata": {"name": "web.17", "namespace": "default"},
            "eventTime": "2025-01-01T00:00:00.000000Z", "series": {"count": 2, "lastObservedTime": "2025-01-01T00:01:00.000000Z"},
            "reportingController": "example.com/controller", "reportingInstance": "controller-1", "action": "Scaling", "reason": "Scaled",
            "type": "Warning", "note": "scaled up", "regarding": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "default"}}),
        ),
    ]
}
