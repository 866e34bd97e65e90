//! Typical mistakes, and the errors Kubernetes reports for them: field path, kind and the
//! exact `field.Error` text.

use crate::fixtures::{admit, template, texts};
use kyb_validation::{ErrorKind, validate_create};
use serde_json::{Value, json};

/// Defaults, prepares and validates `object` as a create.
fn create_errors(
    group: &str,
    version: &str,
    kind: &str,
    namespaced: bool,
    object: Value,
) -> Vec<String> {
    let mut o = object;
    admit(group, version, kind, &mut o);
    texts(&validate_create(group, version, kind, namespaced, &o))
}

fn pod(spec: Value) -> Value {
    json!({"metadata": {"name": "p", "namespace": "default"}, "spec": spec})
}

fn pod_errors(spec: Value) -> Vec<String> {
    create_errors("", "v1", "Pod", true, pod(spec))
}

const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

#[test]
fn pod_mistakes() {
    let cases: Vec<(Value, Vec<String>)> = vec![
        (json!({"containers": []}), vec!["spec.containers: Required value".into()]),
        (json!({"containers": [{"name": "c"}]}), vec!["spec.containers[0].image: Required value".into()]),
        (
            json!({"containers": [{"name": "Web", "image": "nginx"}]}),
            vec![format!("spec.containers[0].name: Invalid value: \"Web\": {LABEL_MSG}")],
        ),
        (
            json!({"containers": [{"name": "c", "image": "nginx"}], "initContainers": [{"name": "c", "image": "busybox"}]}),
            vec!["spec.initContainers[0].name: Duplicate value: \"c\"".into()],
        ),
        (
            json!({"containers": [{"name": "c", "image": "nginx"}], "restartPolicy": "Sometimes"}),
            vec!["spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"".into()],
        ),
        (
            json!({"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 70000}]}]}),
            vec!["spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive".into()],
        ),
        (
            json!({"containers": [{"name": "c", "image": "nginx", "volumeMounts": [{"name": "missing", "mountPath": "/m"}]}]}),
            vec!["spec.containers[0].volumeMounts[0].name: Not found: \"missing\"".into()],
        ),
        (
            json!({"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]}),
            vec!["spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1".into()],
        ),
        (
            json!({"containers": [{"name": "c", "image": "nginx"}], "volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]}),
            vec!["spec.volumes[1].name: Duplicate value: \"v\"".into()],
        ),
        (
            json!({"containers": [{"name": "c", "image": "nginx", "env": [{"name": "", "value": "x"}]}]}),
            vec!["spec.containers[0].env[0].name: Required value".into()],
        ),
        (
            json!({"containers": [{"name": "c", "image": "nginx"}], "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}),
            vec!["spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'".into()],
        ),
        (
            json!({"containers": [{"name": "c", "image": "nginx"}], "dnsPolicy": "Sometimes"}),
            vec!["spec.dnsPolicy: Unsupported value: \"Sometimes\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"".into()],
        ),
        (
            json!({"containers": [{"name": "c", "image": "nginx", "livenessProbe": {"exec": {"command": ["true"]}, "successThreshold": 2}}]}),
            vec!["spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1".into()],
        ),
        (
            json!({"containers": [{"name": "c", "image": "nginx", "ports": [{"name": "http", "containerPort": 80}, {"name": "http", "containerPort": 81}]}]}),
            vec!["spec.containers[0].ports[1].name: Duplicate value: \"http\"".into()],
        ),
    ];
    for (spec, expected) in cases {
        assert_eq!(pod_errors(spec.clone()), expected, "{spec}");
    }
}

#[test]
fn metadata_mistakes() {
    let c = json!({"containers": [{"name": "c", "image": "nginx"}]});
    let cases: Vec<(Value, Vec<String>)> = vec![
        (
            json!({"name": "Bad_Name", "namespace": "default"}),
            vec![format!("metadata.name: Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}")],
        ),
        (json!({"namespace": "default"}), vec!["metadata.name: Required value: name or generateName is required".into()]),
        (json!({"name": "p"}), vec!["metadata.namespace: Required value".into()]),
        (
            json!({"name": "p", "namespace": "default", "labels": {"app": "-bad"}}),
            vec!["metadata.labels: Invalid value: \"-bad\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into()],
        ),
        (
            json!({"name": "p", "namespace": "default", "finalizers": ["no-slash"]}),
            vec!["metadata.finalizers[0]: Invalid value: \"no-slash\": name is neither a standard finalizer name nor is it fully qualified".into()],
        ),
        (
            json!({"name": "p", "namespace": "default", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": ""}]}),
            vec!["metadata.ownerReferences.uid: Invalid value: \"\": must not be empty".into()],
        ),
    ];
    for (meta, expected) in cases {
        let errs = create_errors("", "v1", "Pod", true, json!({"metadata": meta, "spec": c}));
        assert_eq!(errs, expected, "{meta}");
    }
    // The engine generates the name from generateName before validation; the prefix is
    // validated with its trailing dash allowed.
    let errs = create_errors(
        "",
        "v1",
        "Pod",
        true,
        json!({"metadata": {"generateName": "web-", "name": "web-x7k2p", "namespace": "default"}, "spec": c}),
    );
    assert_eq!(errs, Vec::<String>::new());
    let errs = create_errors(
        "",
        "v1",
        "Pod",
        true,
        json!({"metadata": {"generateName": "Web-", "name": "web-x7k2p", "namespace": "default"}, "spec": c}),
    );
    assert_eq!(
        errs,
        vec![format!(
            "metadata.generateName: Invalid value: \"Web-\": {SUBDOMAIN_MSG}"
        )]
    );
    // Namespaces are DNS labels; a valid subdomain that is not a label is told so.
    let errs = create_errors(
        "",
        "v1",
        "Namespace",
        false,
        json!({"metadata": {"name": "a.b"}}),
    );
    assert_eq!(
        errs,
        vec!["metadata.name: Invalid value: \"a.b\": must not contain dots"]
    );
    let errs = create_errors(
        "",
        "v1",
        "Namespace",
        false,
        json!({"metadata": {"name": "A"}}),
    );
    assert_eq!(
        errs,
        vec![format!("metadata.name: Invalid value: \"A\": {LABEL_MSG}")]
    );
    // Services are DNS-1035 labels: no leading digit.
    let errs = create_errors(
        "",
        "v1",
        "Service",
        true,
        json!({"metadata": {"name": "1web", "namespace": "default"}, "spec": {"ports": [{"port": 80}]}}),
    );
    assert_eq!(
        errs,
        vec![
            "metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
        ]
    );
}

#[test]
fn error_kinds_and_values() {
    let mut o =
        pod(json!({"containers": [{"name": "c", "image": "nginx"}], "restartPolicy": "Sometimes"}));
    admit("", "v1", "Pod", &mut o);
    let errs = validate_create("", "v1", "Pod", true, &o);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].kind, ErrorKind::NotSupported);
    assert_eq!(errs[0].kind.reason(), "FieldValueNotSupported");
    assert_eq!(errs[0].field, "spec.restartPolicy");
    assert_eq!(errs[0].value, Some(json!("Sometimes")));
}

fn service_errors(spec: Value) -> Vec<String> {
    create_errors(
        "",
        "v1",
        "Service",
        true,
        json!({"metadata": {"name": "s", "namespace": "default"}, "spec": spec}),
    )
}

#[test]
fn service_mistakes() {
    let cases: Vec<(Value, Vec<String>)> = vec![
        (json!({"selector": {"app": "a"}}), vec!["spec.ports: Required value".into()]),
        (
            json!({"ports": [{"port": 80}, {"port": 81}]}),
            vec!["spec.ports[0].name: Required value".into(), "spec.ports[1].name: Required value".into()],
        ),
        (
            json!({"ports": [{"name": "a", "port": 80}, {"name": "a", "port": 81}]}),
            vec!["spec.ports[1].name: Duplicate value: \"a\"".into()],
        ),
        (
            json!({"ports": [{"port": 0}]}),
            vec![
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive".into(),
                // targetPort defaults to port, so it is out of range too.
                "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive".into(),
            ],
        ),
        (
            json!({"type": "Magic", "ports": [{"port": 80}]}),
            vec!["spec.type: Unsupported value: \"Magic\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"".into()],
        ),
        (json!({"clusterIP": "None", "selector": {"app": "a"}}), vec![]),
        (json!({"type": "ExternalName", "externalName": "db.example.com"}), vec![]),
        (
            json!({"type": "ExternalName"}),
            vec!["spec.externalName: Required value".into()],
        ),
    ];
    for (spec, expected) in cases {
        assert_eq!(service_errors(spec.clone()), expected, "{spec}");
    }
}

fn deployment(spec: Value) -> Value {
    json!({"metadata": {"name": "d", "namespace": "default"}, "spec": spec})
}

#[test]
fn workload_mistakes() {
    let errs = create_errors(
        "apps",
        "v1",
        "Deployment",
        true,
        deployment(json!({"selector": {"matchLabels": {"app": "a"}}, "template": template("b")})),
    );
    assert_eq!(
        errs,
        vec![
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"b\"}: `selector` does not match template `labels`"
        ]
    );
    let errs = create_errors(
        "apps",
        "v1",
        "Deployment",
        true,
        deployment(
            json!({"replicas": -1, "selector": {"matchLabels": {"app": "a"}}, "template": template("a")}),
        ),
    );
    assert_eq!(
        errs,
        vec!["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]
    );
    let errs = create_errors(
        "apps",
        "v1",
        "Deployment",
        true,
        deployment(json!({"template": template("a")})),
    );
    assert_eq!(errs[0], "spec.selector: Required value");

    let cron = |schedule: &str, tz: Option<&str>| {
        let mut spec = json!({"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}});
        if let Some(tz) = tz {
            spec["timeZone"] = tz.into();
        }
        create_errors(
            "batch",
            "v1",
            "CronJob",
            true,
            json!({"metadata": {"name": "cj", "namespace": "default"}, "spec": spec}),
        )
    };
    assert_eq!(cron("@hourly", None), Vec::<String>::new());
    assert_eq!(
        cron("0 */2 * * MON-FRI", Some("Europe/Paris")),
        Vec::<String>::new()
    );
    assert_eq!(
        cron("bad", None),
        vec!["spec.schedule: Invalid value: \"bad\": expected exactly 5 fields, found 1: [bad]"]
    );
    assert_eq!(
        cron("61 * * * *", None),
        vec![
            "spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61"
        ]
    );
    assert_eq!(
        cron("@hourly", Some("Mars/Base")),
        vec!["spec.timeZone: Invalid value: \"Mars/Base\": unknown time zone Mars/Base"]
    );

    let job = |spec: Value| {
        create_errors(
            "batch",
            "v1",
            "Job",
            true,
            json!({"metadata": {"name": "j", "namespace": "default", "uid": crate::fixtures::UID}, "spec": spec}),
        )
    };
    let errs =
        job(json!({"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}));
    assert_eq!(
        errs,
        vec![
            "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
        ]
    );
    let errs = job(
        json!({"parallelism": -1, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}),
    );
    assert_eq!(
        errs,
        vec!["spec.parallelism: Invalid value: -1: must be greater than or equal to 0"]
    );
}

#[test]
fn config_and_secret_mistakes() {
    let errs = create_errors(
        "",
        "v1",
        "ConfigMap",
        true,
        json!({"metadata": {"name": "cm", "namespace": "default"}, "data": {"a b": "x"}}),
    );
    assert_eq!(
        errs,
        vec![
            "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
        ]
    );
    let errs = create_errors(
        "",
        "v1",
        "Secret",
        true,
        json!({"metadata": {"name": "tls", "namespace": "default"}, "type": "kubernetes.io/tls", "data": {"tls.key": "eA=="}}),
    );
    assert_eq!(errs, vec!["data[tls.crt]: Required value"]);
    let errs = create_errors(
        "",
        "v1",
        "Secret",
        true,
        json!({"metadata": {"name": "sa", "namespace": "default"}, "type": "kubernetes.io/service-account-token"}),
    );
    assert_eq!(
        errs,
        vec!["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
    );
    let big = "x".repeat(1024 * 1024 + 1);
    let errs = create_errors(
        "",
        "v1",
        "ConfigMap",
        true,
        json!({"metadata": {"name": "cm", "namespace": "default"}, "data": {"big": big}}),
    );
    assert_eq!(errs.len(), 1);
    // The whole object is too big: Kubernetes reports it at the empty path.
    assert_eq!(errs, vec![": Too long: may not be more than 1048576 bytes"]);
}

#[test]
fn rbac_and_cluster_kinds() {
    let errs = create_errors(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        true,
        json!({"metadata": {"name": "r", "namespace": "default"}, "rules": [{"apiGroups": [""], "resources": ["pods"]}]}),
    );
    assert_eq!(
        errs,
        vec!["rules[0].verbs: Required value: verbs must contain at least one value"]
    );
    let errs = create_errors(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        false,
        json!({"metadata": {"name": "too-high"}, "value": 2_000_000_000}),
    );
    assert_eq!(
        errs,
        vec!["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
    );
    let mut o = json!({"metadata": {"name": "pdb", "namespace": "default"}, "spec": {"minAvailable": 1, "maxUnavailable": 1}});
    admit("policy", "v1", "PodDisruptionBudget", &mut o);
    let errs = validate_create("policy", "v1", "PodDisruptionBudget", true, &o);
    assert_eq!(errs.len(), 1);
    assert_eq!(
        (errs[0].kind, errs[0].field.as_str()),
        (ErrorKind::Invalid, "spec")
    );
    assert_eq!(
        errs[0].detail,
        "minAvailable and maxUnavailable cannot be both set"
    );
    let errs = create_errors(
        "policy",
        "v1",
        "PodDisruptionBudget",
        true,
        json!({"metadata": {"name": "pdb", "namespace": "default"}, "spec": {"minAvailable": "150%"}}),
    );
    assert_eq!(
        errs,
        vec!["spec.minAvailable: Invalid value: \"150%\": must not be greater than 100%"]
    );
}
