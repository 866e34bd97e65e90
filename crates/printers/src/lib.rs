//! Server-side table output for the built-in kinds: the columns and cells `kubectl get`
//! prints.
//!
//! When kubectl lists objects it asks the API server for a `meta.k8s.io/v1` `Table`
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) and prints the columns it gets
//! back: those of priority 0, plus priority 1 with `-o wide`. This crate gives, for each
//! built-in kind, the same columns Kubernetes 1.33 defines (names, types, formats,
//! priorities, in order) and computes each row's cells from the object's JSON the same way,
//! so `kubectl get` prints identically. Kinds without a printer of their own get the generic
//! table: Name and Created At.
//!
//! - [`printer`] — a kind's table layout, looked up once ([`Printer::columns`],
//!   [`Printer::cells`]);
//! - [`columns`] — the column definitions of a kind;
//! - [`cells`] — one row's cells for an object, wide columns included (the client hides
//!   them); `now` anchors the ages ("5m", "2d3h");
//! - helpers for other tables: [`human_duration`], [`age_since`], [`canonical_quantity`].
//!
//! Objects are expected as Kubernetes serves them, i.e. defaulted: a field Kubernetes always
//! defaults (a Deployment's `replicas`, an HPA's `minReplicas`) is read as zero or unset
//! when missing, not as its default.
//!
//! Inputs are untrusted objects: missing or mistyped fields print what Kubernetes prints for
//! an unset field (`<none>`, `<unknown>`, `0`, an empty string) and never panic.

mod duration;
mod fields;
mod kinds;
mod quantity;
mod selectors;
mod timestamp;

pub use duration::human_duration;

/// How long ago a timestamp (an RFC 3339 string, as objects carry it) was, the way the Age
/// column shows it (`"5m"`, `"2d3h"`); `<unknown>` when it is missing, zero or unparsable.
/// Useful for custom-resource columns of type `date`.
pub fn age_since(timestamp: Option<&Value>, now: Timestamp) -> String {
    timestamp::since_value(timestamp, now)
}

/// The text Kubernetes writes a resource quantity back as (`"1000m"` → `"1"`,
/// `"1024Mi"` → `"1Gi"`); unparsable text is returned as it is.
pub fn canonical_quantity(text: &str) -> String {
    quantity::canonical(text)
}

use jiff::Timestamp;
use kinds::{admission, autoscaling, batch, certificates, cluster, config, events};
use kinds::{flowcontrol, generic, networking, pod, rbac, storage, workloads};
use serde_json::Value;

/// One column of a table, as in `metav1.TableColumnDefinition`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// The column's title, as Kubernetes spells it ("Name", "Nominated Node"); kubectl
    /// upper-cases it.
    pub name: &'static str,
    /// The cell type: `"string"`, `"integer"`, `"number"`, `"boolean"` or `"date"`.
    pub type_: &'static str,
    /// `"name"` for the column holding the object's name, otherwise empty.
    pub format: &'static str,
    /// What the column shows.
    pub description: &'static str,
    /// 0: always shown; 1: shown with `-o wide`.
    pub priority: i32,
}

pub use kinds::Printer;

impl Printer {
    /// The column definitions.
    pub fn columns(&self) -> &'static [Column] {
        self.columns
    }

    /// The cells of one row, one per column, for an object (its JSON form, as served);
    /// `now` is used for ages.
    pub fn cells(&self, object: &Value, now: Timestamp) -> Vec<Value> {
        (self.cells)(object, now)
    }
}

/// The printer of a built-in kind (`group` is `""` for the core group): what the API
/// server's strategy for the kind prints with. Kinds without a printer of their own get
/// Kubernetes' default: Name, Created At.
pub fn printer(group: &str, kind: &str) -> &'static Printer {
    match (group, kind) {
        ("", "Pod") => &pod::POD,
        ("", "PodTemplate") => &workloads::POD_TEMPLATE,
        ("", "ReplicationController") => &workloads::REPLICATION_CONTROLLER,
        ("", "Service") => &networking::SERVICE,
        ("", "Endpoints") => &networking::ENDPOINTS,
        ("", "Namespace") => &cluster::NAMESPACE,
        ("", "Node") => &cluster::NODE,
        ("", "Event") => &events::CORE_EVENT,
        ("", "Secret") => &config::SECRET,
        ("", "ConfigMap") => &config::CONFIG_MAP,
        ("", "ServiceAccount") => &config::SERVICE_ACCOUNT,
        ("", "ResourceQuota") => &config::RESOURCE_QUOTA,
        ("", "PersistentVolume") => &storage::PERSISTENT_VOLUME,
        ("", "PersistentVolumeClaim") => &storage::PERSISTENT_VOLUME_CLAIM,
        ("apps", "ReplicaSet") => &workloads::REPLICA_SET,
        ("apps", "Deployment") => &workloads::DEPLOYMENT,
        ("apps", "StatefulSet") => &workloads::STATEFUL_SET,
        ("apps", "DaemonSet") => &workloads::DAEMON_SET,
        ("apps", "ControllerRevision") => &workloads::CONTROLLER_REVISION,
        ("batch", "Job") => &batch::JOB,
        ("batch", "CronJob") => &batch::CRON_JOB,
        ("coordination.k8s.io", "Lease") => &cluster::LEASE,
        ("discovery.k8s.io", "EndpointSlice") => &networking::ENDPOINT_SLICE,
        ("events.k8s.io", "Event") => &events::EVENTS_V1_EVENT,
        ("policy", "PodDisruptionBudget") => &workloads::POD_DISRUPTION_BUDGET,
        ("autoscaling", "HorizontalPodAutoscaler") => &autoscaling::HORIZONTAL_POD_AUTOSCALER,
        ("autoscaling", "Scale") => &autoscaling::SCALE,
        ("networking.k8s.io", "Ingress") => &networking::INGRESS,
        ("networking.k8s.io", "IngressClass") => &networking::INGRESS_CLASS,
        ("networking.k8s.io", "NetworkPolicy") => &networking::NETWORK_POLICY,
        ("storage.k8s.io", "StorageClass") => &storage::STORAGE_CLASS,
        ("storage.k8s.io", "CSIDriver") => &storage::CSI_DRIVER,
        ("storage.k8s.io", "CSINode") => &storage::CSI_NODE,
        ("storage.k8s.io", "VolumeAttachment") => &storage::VOLUME_ATTACHMENT,
        ("scheduling.k8s.io", "PriorityClass") => &cluster::PRIORITY_CLASS,
        ("node.k8s.io", "RuntimeClass") => &cluster::RUNTIME_CLASS,
        ("rbac.authorization.k8s.io", "RoleBinding") => &rbac::ROLE_BINDING,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => &rbac::CLUSTER_ROLE_BINDING,
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            &admission::MUTATING_WEBHOOK_CONFIGURATION
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            &admission::VALIDATING_WEBHOOK_CONFIGURATION
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            &admission::VALIDATING_ADMISSION_POLICY
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            &admission::VALIDATING_ADMISSION_POLICY_BINDING
        }
        ("apiregistration.k8s.io", "APIService") => &cluster::API_SERVICE,
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            &certificates::CERTIFICATE_SIGNING_REQUEST
        }
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => &flowcontrol::FLOW_SCHEMA,
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            &flowcontrol::PRIORITY_LEVEL_CONFIGURATION
        }
        ("", "ComponentStatus") => &cluster::COMPONENT_STATUS,
        ("storage.k8s.io", "CSIStorageCapacity") => &storage::CSI_STORAGE_CAPACITY,
        ("networking.k8s.io", "ServiceCIDR") => &networking::SERVICE_CIDR,
        ("networking.k8s.io", "IPAddress") => &networking::IP_ADDRESS,
        ("metrics.k8s.io", "NodeMetrics") => &kinds::metrics::NODE_METRICS,
        ("metrics.k8s.io", "PodMetrics") => &kinds::metrics::POD_METRICS,
        _ => &generic::DEFAULT,
    }
}

/// The columns for a kind (group `""` for core). Kinds without a printer get Kubernetes'
/// default: Name, Created At.
pub fn columns(group: &str, kind: &str) -> &'static [Column] {
    printer(group, kind).columns
}

/// The cells of one row, one per column of [`columns`], for the object (its JSON form, as
/// served). `now` is used for ages.
pub fn cells(group: &str, kind: &str, object: &Value, now: Timestamp) -> Vec<Value> {
    (printer(group, kind).cells)(object, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KINDS: &[(&str, &str)] = &[
        ("", "ComponentStatus"),
        ("storage.k8s.io", "CSIStorageCapacity"),
        ("networking.k8s.io", "ServiceCIDR"),
        ("networking.k8s.io", "IPAddress"),
        ("", "Pod"),
        ("", "PodTemplate"),
        ("", "ReplicationController"),
        ("", "Service"),
        ("", "Endpoints"),
        ("", "Namespace"),
        ("", "Node"),
        ("", "Event"),
        ("", "Secret"),
        ("", "ConfigMap"),
        ("", "ServiceAccount"),
        ("", "ResourceQuota"),
        ("", "LimitRange"),
        ("", "PersistentVolume"),
        ("", "PersistentVolumeClaim"),
        ("apps", "ReplicaSet"),
        ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("apps", "ControllerRevision"),
        ("batch", "Job"),
        ("batch", "CronJob"),
        ("coordination.k8s.io", "Lease"),
        ("discovery.k8s.io", "EndpointSlice"),
        ("events.k8s.io", "Event"),
        ("policy", "PodDisruptionBudget"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("autoscaling", "Scale"),
        ("networking.k8s.io", "Ingress"),
        ("networking.k8s.io", "IngressClass"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
        ),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicyBinding",
        ),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("example.com", "Widget"),
    ];

    fn now() -> Timestamp {
        Timestamp::constant(1_714_564_800, 0)
    }

    #[test]
    fn every_kind_has_one_cell_per_column_even_for_junk() {
        let junk = [
            json!({}),
            json!(null),
            json!([1, 2]),
            json!("text"),
            json!({"metadata": 5, "spec": [], "status": "x"}),
            json!({"metadata": {"name": 3, "creationTimestamp": {}}, "spec": {"containers": {}}}),
        ];
        for (group, kind) in KINDS {
            let columns = columns(group, kind);
            for object in &junk {
                assert_eq!(
                    cells(group, kind, object, now()).len(),
                    columns.len(),
                    "{group}/{kind} {object}"
                );
            }
        }
    }

    #[test]
    fn column_definitions_are_well_formed() {
        for (group, kind) in KINDS {
            let columns = columns(group, kind);
            assert!(!columns.is_empty());
            let is_event = *kind == "Event";
            for column in columns {
                assert!(
                    ["string", "integer", "number", "boolean", "date"].contains(&column.type_),
                    "{kind}.{}",
                    column.name
                );
                assert!(column.priority == 0 || column.priority == 1);
                assert!(!column.description.is_empty());
            }
            // The name comes first, except in events where LAST SEEN leads and the name is wide.
            let first = columns.first().map(|c| c.name);
            if is_event {
                assert_eq!(first, Some("Last Seen"));
            } else {
                assert_eq!(first, Some("Name"), "{kind}");
            }
        }
    }

    #[test]
    fn kinds_without_a_printer_get_the_default_table() {
        for (group, kind) in [
            ("rbac.authorization.k8s.io", "Role"),
            ("", "LimitRange"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("authentication.k8s.io", "TokenReview"),
        ] {
            let names: Vec<&str> = columns(group, kind).iter().map(|c| c.name).collect();
            assert_eq!(names, ["Name", "Created At"]);
            assert_eq!(columns(group, kind).get(1).map(|c| c.type_), Some("date"));
        }
    }

    fn headers(group: &str, kind: &str, wide: bool) -> Vec<String> {
        columns(group, kind)
            .iter()
            .filter(|c| wide || c.priority == 0)
            .map(|c| c.name.to_uppercase())
            .collect()
    }

    #[test]
    fn headers_match_kubectl() {
        assert_eq!(
            headers("", "Pod", false),
            ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        );
        assert_eq!(
            headers("", "Pod", true),
            [
                "NAME",
                "READY",
                "STATUS",
                "RESTARTS",
                "AGE",
                "IP",
                "NODE",
                "NOMINATED NODE",
                "READINESS GATES"
            ]
        );
        assert_eq!(
            headers("apps", "Deployment", false),
            ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
        );
        assert_eq!(
            headers("apps", "Deployment", true),
            [
                "NAME",
                "READY",
                "UP-TO-DATE",
                "AVAILABLE",
                "AGE",
                "CONTAINERS",
                "IMAGES",
                "SELECTOR"
            ]
        );
        assert_eq!(
            headers("", "Service", false),
            [
                "NAME",
                "TYPE",
                "CLUSTER-IP",
                "EXTERNAL-IP",
                "PORT(S)",
                "AGE"
            ]
        );
        assert_eq!(
            headers("", "Node", false),
            ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
        );
        assert_eq!(
            headers("", "Node", true),
            [
                "NAME",
                "STATUS",
                "ROLES",
                "AGE",
                "VERSION",
                "INTERNAL-IP",
                "EXTERNAL-IP",
                "OS-IMAGE",
                "KERNEL-VERSION",
                "CONTAINER-RUNTIME"
            ]
        );
        assert_eq!(
            headers("", "Event", false),
            ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
        );
        assert_eq!(
            headers("events.k8s.io", "Event", false),
            headers("", "Event", false)
        );
        assert_eq!(
            headers("batch", "Job", false),
            ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
        );
        assert_eq!(
            headers("batch", "CronJob", false),
            [
                "NAME",
                "SCHEDULE",
                "TIMEZONE",
                "SUSPEND",
                "ACTIVE",
                "LAST SCHEDULE",
                "AGE"
            ]
        );
        assert_eq!(
            headers("", "Secret", false),
            ["NAME", "TYPE", "DATA", "AGE"]
        );
        assert_eq!(headers("", "Namespace", false), ["NAME", "STATUS", "AGE"]);
        assert_eq!(
            headers("", "ResourceQuota", false),
            ["NAME", "REQUEST", "LIMIT", "AGE"]
        );
        assert_eq!(
            headers("", "PersistentVolume", false),
            [
                "NAME",
                "CAPACITY",
                "ACCESS MODES",
                "RECLAIM POLICY",
                "STATUS",
                "CLAIM",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "REASON",
                "AGE"
            ]
        );
        assert_eq!(
            headers("", "PersistentVolumeClaim", false),
            [
                "NAME",
                "STATUS",
                "VOLUME",
                "CAPACITY",
                "ACCESS MODES",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "AGE"
            ]
        );
        assert_eq!(
            headers("autoscaling", "HorizontalPodAutoscaler", false),
            [
                "NAME",
                "REFERENCE",
                "TARGETS",
                "MINPODS",
                "MAXPODS",
                "REPLICAS",
                "AGE"
            ]
        );
        assert_eq!(
            headers("storage.k8s.io", "CSIDriver", false),
            [
                "NAME",
                "ATTACHREQUIRED",
                "PODINFOONMOUNT",
                "STORAGECAPACITY",
                "TOKENREQUESTS",
                "REQUIRESREPUBLISH",
                "MODES",
                "AGE"
            ]
        );
        assert_eq!(
            headers("certificates.k8s.io", "CertificateSigningRequest", false),
            [
                "NAME",
                "AGE",
                "SIGNERNAME",
                "REQUESTOR",
                "REQUESTEDDURATION",
                "CONDITION"
            ]
        );
        assert_eq!(
            headers("scheduling.k8s.io", "PriorityClass", false),
            ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
        );
    }

    #[test]
    fn resources_of_issue_16_print_as_kubernetes() {
        let cs = json!({"metadata": {"name": "etcd-0"}, "conditions": [
            {"type": "Healthy", "status": "True", "message": "ok"}]});
        assert_eq!(
            cells("", "ComponentStatus", &cs, now()),
            vec![json!("etcd-0"), json!("Healthy"), json!("ok"), json!("")]
        );
        let ip = json!({"metadata": {"name": "10.0.0.5"}, "spec": {"parentRef":
            {"group": "", "resource": "services", "namespace": "default", "name": "web"}}});
        assert_eq!(
            cells("networking.k8s.io", "IPAddress", &ip, now()),
            vec![json!("10.0.0.5"), json!("services/default/web")]
        );
        let cidr =
            json!({"metadata": {"name": "k"}, "spec": {"cidrs": ["10.0.0.0/24", "fd00::/64"]}});
        assert_eq!(
            cells("networking.k8s.io", "ServiceCIDR", &cidr, now())[1],
            json!("10.0.0.0/24,fd00::/64")
        );
        let capacity =
            json!({"metadata": {"name": "c"}, "storageClassName": "fast", "capacity": "1024Mi"});
        assert_eq!(
            cells("storage.k8s.io", "CSIStorageCapacity", &capacity, now()),
            vec![json!("c"), json!("fast"), json!("1Gi")]
        );
    }

    #[test]
    fn cells_dispatch_on_group() {
        let pod = json!({"metadata": {"name": "p"}, "status": {"phase": "Running"}});
        assert_eq!(
            cells("", "Pod", &pod, now()).get(2),
            Some(&json!("Running"))
        );
        // The same kind name in another group is not a pod.
        assert_eq!(
            cells("example.com", "Pod", &pod, now()),
            [json!("p"), json!("0001-01-01T00:00:00Z")]
        );
    }

    #[test]
    fn public_helpers() {
        assert_eq!(human_duration(3_723_000_000_000), "62m");
        assert_eq!(
            age_since(Some(&json!("2024-05-01T11:00:00Z")), now()),
            "60m"
        );
        assert_eq!(age_since(None, now()), "<unknown>");
        assert_eq!(canonical_quantity("2048Mi"), "2Gi");
    }
}
