//! The built-in resources of the Kubernetes 1.33 API this server serves: the static table
//! the registry starts from (adding a built-in resource is one row here, plus its strategy
//! in the API server).

use super::{ResourceDef, Subresource};
use std::borrow::Cow;

const fn s(text: &'static str) -> Cow<'static, str> {
    Cow::Borrowed(text)
}

/// Every verb of a namespaced or cluster-scoped resource with collection deletes.
pub const ALL_VERBS: &[Cow<'static, str>] = &[
    s("create"),
    s("delete"),
    s("deletecollection"),
    s("get"),
    s("list"),
    s("patch"),
    s("update"),
    s("watch"),
];
/// Resources that are only ever created: reviews answered on the spot, never stored.
const CREATE_ONLY: &[Cow<'static, str>] = &[s("create")];
/// Resources only read: computed on each request, never stored.
const GET_LIST: &[Cow<'static, str>] = &[s("get"), s("list")];
/// Resources without `deletecollection`.
const NO_COLLECTION_DELETE: &[Cow<'static, str>] = &[
    s("create"),
    s("delete"),
    s("get"),
    s("list"),
    s("patch"),
    s("update"),
    s("watch"),
];

use Subresource::{Approval, Binding, Eviction, Finalize, Scale, Status, Token};

macro_rules! resources {
    ($( $group:literal $version:literal $kind:literal $plural:literal $singular:literal
        [$($short:literal),*] [$($cat:literal),*] $namespaced:literal $verbs:ident
        [$($sub:ident),*] $prefix:literal $storage_version:literal $returns:literal; )*) => {
        /// The built-in resources, preferred versions first within each group.
        pub static BUILTIN: &[ResourceDef] = &[$(
            ResourceDef {
                group: s($group),
                version: s($version),
                kind: s($kind),
                plural: s($plural),
                singular: s($singular),
                short_names: Cow::Borrowed(&[$(s($short)),*]),
                categories: Cow::Borrowed(&[$(s($cat)),*]),
                namespaced: $namespaced,
                verbs: Cow::Borrowed($verbs),
                subresources: Cow::Borrowed(&[$($sub),*]),
                storage_prefix: s($prefix),
                storage_version: s($storage_version),
                returns_deleted_object: $returns,
            },
        )*];
    };
}

// group version kind plural singular [short names] [categories] namespaced verbs [subresources]
//   storage-prefix storage-version returns-deleted-object
resources! {
    "" "v1" "Namespace" "namespaces" "namespace" ["ns"] [] false NO_COLLECTION_DELETE [Status, Finalize] "/registry/namespaces" "v1" true;
    "" "v1" "Pod" "pods" "pod" ["po"] ["all"] true ALL_VERBS [Status, Binding, Eviction] "/registry/pods" "v1" true;
    "" "v1" "Service" "services" "service" ["svc"] ["all"] true ALL_VERBS [Status] "/registry/services/specs" "v1" true;
    "" "v1" "Endpoints" "endpoints" "endpoints" ["ep"] [] true ALL_VERBS [] "/registry/services/endpoints" "v1" false;
    "" "v1" "ConfigMap" "configmaps" "configmap" ["cm"] [] true ALL_VERBS [] "/registry/configmaps" "v1" false;
    "" "v1" "Secret" "secrets" "secret" [] [] true ALL_VERBS [] "/registry/secrets" "v1" false;
    "" "v1" "ServiceAccount" "serviceaccounts" "serviceaccount" ["sa"] [] true ALL_VERBS [Token] "/registry/serviceaccounts" "v1" true;
    "" "v1" "Node" "nodes" "node" ["no"] [] false ALL_VERBS [Status] "/registry/minions" "v1" false;
    "" "v1" "Event" "events" "event" ["ev"] [] true ALL_VERBS [] "/registry/events" "v1" false;
    "" "v1" "LimitRange" "limitranges" "limitrange" ["limits"] [] true ALL_VERBS [] "/registry/limitranges" "v1" false;
    "" "v1" "ResourceQuota" "resourcequotas" "resourcequota" ["quota"] [] true ALL_VERBS [Status] "/registry/resourcequotas" "v1" true;
    "" "v1" "PersistentVolume" "persistentvolumes" "persistentvolume" ["pv"] [] false ALL_VERBS [Status] "/registry/persistentvolumes" "v1" true;
    "" "v1" "PersistentVolumeClaim" "persistentvolumeclaims" "persistentvolumeclaim" ["pvc"] [] true ALL_VERBS [Status] "/registry/persistentvolumeclaims" "v1" true;
    "" "v1" "PodTemplate" "podtemplates" "podtemplate" [] [] true ALL_VERBS [] "/registry/podtemplates" "v1" false;
    "" "v1" "ReplicationController" "replicationcontrollers" "replicationcontroller" ["rc"] ["all"] true ALL_VERBS [Status, Scale] "/registry/controllers" "v1" true;
    "apps" "v1" "Deployment" "deployments" "deployment" ["deploy"] ["all"] true ALL_VERBS [Status, Scale] "/registry/deployments" "v1" true;
    "apps" "v1" "ReplicaSet" "replicasets" "replicaset" ["rs"] ["all"] true ALL_VERBS [Status, Scale] "/registry/replicasets" "v1" true;
    "apps" "v1" "StatefulSet" "statefulsets" "statefulset" ["sts"] ["all"] true ALL_VERBS [Status, Scale] "/registry/statefulsets" "v1" true;
    "apps" "v1" "DaemonSet" "daemonsets" "daemonset" ["ds"] ["all"] true ALL_VERBS [Status] "/registry/daemonsets" "v1" true;
    "apps" "v1" "ControllerRevision" "controllerrevisions" "controllerrevision" [] [] true ALL_VERBS [] "/registry/controllerrevisions" "v1" false;
    "batch" "v1" "Job" "jobs" "job" [] ["all"] true ALL_VERBS [Status] "/registry/jobs" "v1" true;
    "batch" "v1" "CronJob" "cronjobs" "cronjob" ["cj"] ["all"] true ALL_VERBS [Status] "/registry/cronjobs" "v1" true;
    "coordination.k8s.io" "v1" "Lease" "leases" "lease" [] [] true ALL_VERBS [] "/registry/leases" "v1" false;
    "discovery.k8s.io" "v1" "EndpointSlice" "endpointslices" "endpointslice" [] [] true ALL_VERBS [] "/registry/endpointslices" "v1" false;
    "events.k8s.io" "v1" "Event" "events" "event" ["ev"] [] true ALL_VERBS [] "/registry/events" "v1" false;
    "policy" "v1" "PodDisruptionBudget" "poddisruptionbudgets" "poddisruptionbudget" ["pdb"] [] true ALL_VERBS [Status] "/registry/poddisruptionbudgets" "v1" true;
    "autoscaling" "v2" "HorizontalPodAutoscaler" "horizontalpodautoscalers" "horizontalpodautoscaler" ["hpa"] ["all"] true ALL_VERBS [Status] "/registry/horizontalpodautoscalers" "v2" true;
    "autoscaling" "v1" "HorizontalPodAutoscaler" "horizontalpodautoscalers" "horizontalpodautoscaler" ["hpa"] ["all"] true ALL_VERBS [Status] "/registry/horizontalpodautoscalers" "v2" true;
    "networking.k8s.io" "v1" "Ingress" "ingresses" "ingress" ["ing"] [] true ALL_VERBS [Status] "/registry/ingress" "v1" true;
    "networking.k8s.io" "v1" "IngressClass" "ingressclasses" "ingressclass" [] [] false ALL_VERBS [] "/registry/ingressclasses" "v1" false;
    "networking.k8s.io" "v1" "NetworkPolicy" "networkpolicies" "networkpolicy" ["netpol"] [] true ALL_VERBS [] "/registry/networkpolicies" "v1" false;
    "storage.k8s.io" "v1" "StorageClass" "storageclasses" "storageclass" ["sc"] [] false ALL_VERBS [] "/registry/storageclasses" "v1" false;
    "storage.k8s.io" "v1" "CSIDriver" "csidrivers" "csidriver" [] [] false ALL_VERBS [] "/registry/csidrivers" "v1" false;
    "storage.k8s.io" "v1" "CSINode" "csinodes" "csinode" [] [] false ALL_VERBS [] "/registry/csinodes" "v1" false;
    "storage.k8s.io" "v1" "VolumeAttachment" "volumeattachments" "volumeattachment" [] [] false ALL_VERBS [Status] "/registry/volumeattachments" "v1" true;
    "scheduling.k8s.io" "v1" "PriorityClass" "priorityclasses" "priorityclass" ["pc"] [] false ALL_VERBS [] "/registry/priorityclasses" "v1" false;
    "node.k8s.io" "v1" "RuntimeClass" "runtimeclasses" "runtimeclass" [] [] false ALL_VERBS [] "/registry/runtimeclasses" "v1" false;
    "flowcontrol.apiserver.k8s.io" "v1" "FlowSchema" "flowschemas" "flowschema" [] [] false ALL_VERBS [Status] "/registry/flowschemas" "v1" false;
    "flowcontrol.apiserver.k8s.io" "v1" "PriorityLevelConfiguration" "prioritylevelconfigurations" "prioritylevelconfiguration" [] [] false ALL_VERBS [Status] "/registry/prioritylevelconfigurations" "v1" false;
    "rbac.authorization.k8s.io" "v1" "Role" "roles" "role" [] [] true ALL_VERBS [] "/registry/roles" "v1" false;
    "rbac.authorization.k8s.io" "v1" "RoleBinding" "rolebindings" "rolebinding" [] [] true ALL_VERBS [] "/registry/rolebindings" "v1" false;
    "rbac.authorization.k8s.io" "v1" "ClusterRole" "clusterroles" "clusterrole" [] [] false ALL_VERBS [] "/registry/clusterroles" "v1" false;
    "rbac.authorization.k8s.io" "v1" "ClusterRoleBinding" "clusterrolebindings" "clusterrolebinding" [] [] false ALL_VERBS [] "/registry/clusterrolebindings" "v1" false;
    "admissionregistration.k8s.io" "v1" "MutatingWebhookConfiguration" "mutatingwebhookconfigurations" "mutatingwebhookconfiguration" [] ["api-extensions"] false ALL_VERBS [] "/registry/mutatingwebhookconfigurations" "v1" false;
    "admissionregistration.k8s.io" "v1" "ValidatingWebhookConfiguration" "validatingwebhookconfigurations" "validatingwebhookconfiguration" [] ["api-extensions"] false ALL_VERBS [] "/registry/validatingwebhookconfigurations" "v1" false;
    "admissionregistration.k8s.io" "v1" "ValidatingAdmissionPolicy" "validatingadmissionpolicies" "validatingadmissionpolicy" [] ["api-extensions"] false ALL_VERBS [Status] "/registry/validatingadmissionpolicies" "v1" true;
    "admissionregistration.k8s.io" "v1" "ValidatingAdmissionPolicyBinding" "validatingadmissionpolicybindings" "validatingadmissionpolicybinding" [] ["api-extensions"] false ALL_VERBS [] "/registry/validatingadmissionpolicybindings" "v1" false;
    "apiextensions.k8s.io" "v1" "CustomResourceDefinition" "customresourcedefinitions" "customresourcedefinition" ["crd", "crds"] ["api-extensions"] false ALL_VERBS [Status] "/registry/apiextensions.k8s.io/customresourcedefinitions" "v1" true;
    "apiregistration.k8s.io" "v1" "APIService" "apiservices" "apiservice" [] ["api-extensions"] false ALL_VERBS [Status] "/registry/apiregistration.k8s.io/apiservices" "v1" true;
    "scheduling.x-k8s.io" "v1alpha1" "PodGroup" "podgroups" "podgroup" ["pg", "pgs"] [] true ALL_VERBS [Status] "/registry/scheduling.x-k8s.io/podgroups" "v1alpha1" true;
    "scheduling.x-k8s.io" "v1alpha1" "ElasticQuota" "elasticquotas" "elasticquota" ["eq", "eqs"] [] true ALL_VERBS [Status] "/registry/scheduling.x-k8s.io/elasticquotas" "v1alpha1" true;
    "certificates.k8s.io" "v1" "CertificateSigningRequest" "certificatesigningrequests" "certificatesigningrequest" ["csr"] [] false ALL_VERBS [Status, Approval] "/registry/certificatesigningrequests" "v1" false;
    "authentication.k8s.io" "v1" "TokenReview" "tokenreviews" "tokenreview" [] [] false CREATE_ONLY [] "" "v1" false;
    "authentication.k8s.io" "v1" "SelfSubjectReview" "selfsubjectreviews" "selfsubjectreview" [] [] false CREATE_ONLY [] "" "v1" false;
    "authorization.k8s.io" "v1" "SubjectAccessReview" "subjectaccessreviews" "subjectaccessreview" [] [] false CREATE_ONLY [] "" "v1" false;
    "authorization.k8s.io" "v1" "SelfSubjectAccessReview" "selfsubjectaccessreviews" "selfsubjectaccessreview" [] [] false CREATE_ONLY [] "" "v1" false;
    "authorization.k8s.io" "v1" "SelfSubjectRulesReview" "selfsubjectrulesreviews" "selfsubjectrulesreview" [] [] false CREATE_ONLY [] "" "v1" false;
    "authorization.k8s.io" "v1" "LocalSubjectAccessReview" "localsubjectaccessreviews" "localsubjectaccessreview" [] [] true CREATE_ONLY [] "" "v1" false;
    "" "v1" "Binding" "bindings" "binding" [] [] true CREATE_ONLY [] "" "v1" false;
    "" "v1" "ComponentStatus" "componentstatuses" "componentstatus" ["cs"] [] false GET_LIST [] "" "v1" false;
    "storage.k8s.io" "v1" "CSIStorageCapacity" "csistoragecapacities" "csistoragecapacity" [] [] true ALL_VERBS [] "/registry/csistoragecapacities" "v1" false;
    "networking.k8s.io" "v1" "ServiceCIDR" "servicecidrs" "servicecidr" [] [] false ALL_VERBS [Status] "/registry/servicecidrs" "v1" true;
    "networking.k8s.io" "v1" "IPAddress" "ipaddresses" "ipaddress" ["ip"] [] false ALL_VERBS [] "/registry/ipaddresses" "v1" false;
    "metrics.k8s.io" "v1beta1" "NodeMetrics" "nodes" "" [] [] false GET_LIST [] "" "v1beta1" false;
    "metrics.k8s.io" "v1beta1" "PodMetrics" "pods" "" [] [] true GET_LIST [] "" "v1beta1" false;
}

/// The OpenAPI definition name of a built-in kind's type, as k8s-openapi names them.
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let package = match group {
        "" => "io.k8s.api.core",
        "apiextensions.k8s.io" => "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
        "apiregistration.k8s.io" => "io.k8s.kube-aggregator.pkg.apis.apiregistration",
        "meta.k8s.io" => "io.k8s.apimachinery.pkg.apis.meta",
        other => {
            // `rbac.authorization.k8s.io` → `io.k8s.api.rbac`, `apps` → `io.k8s.api.apps`.
            let short = other.strip_suffix(".k8s.io").unwrap_or(other);
            let short = short.split('.').next().unwrap_or(short);
            return format!("io.k8s.api.{short}.{version}.{kind}");
        }
    };
    format!("{package}.{version}.{kind}")
}
