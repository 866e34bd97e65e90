//! The built-in plugins whose rules are `kyb-admission`'s: ServiceAccount,
//! NodeRestriction, TaintNodesByCondition, Priority, DefaultTolerationSeconds and
//! DefaultStorageClass. Each gathers its inputs from the cache and applies the decision.

use super::{Attributes, Context, Operation, Plugin};
use async_trait::async_trait;
use kyb_admission::Denial;
use kyb_api::Status;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

fn refuse(attributes: &Attributes<'_>, object: Option<&Value>, denial: &Denial) -> Status {
    denial.status(
        &attributes.resource.group,
        &attributes.resource.plural,
        kyb_admission::object_name(attributes.name, object),
    )
}

fn applies(
    attributes: &Attributes<'_>,
    applies: fn(kyb_admission::Operation, &str, &str, &str) -> bool,
) -> bool {
    applies(
        attributes.operation,
        &attributes.resource.group,
        &attributes.resource.plural,
        attributes.subresource,
    )
}

/// ServiceAccount: pods run as a service account that exists (`default` unless named),
/// with its API token mounted unless automounting is off.
pub struct ServiceAccount;

/// How long a pod waits for its namespace's `default` service account, which is created
/// just after the namespace (Kubernetes retries a live lookup the same way).
const ACCOUNT_WAIT: Duration = Duration::from_secs(2);

impl ServiceAccount {
    async fn account(
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        pod: &Value,
    ) -> Option<Arc<Value>> {
        let name = kyb_admission::service_account::service_account_to_look_up(
            attributes.operation,
            attributes.subresource,
            pod,
        )?;
        let cache = &context.engine.cache;
        let namespace = attributes.namespace;
        if let Some(account) = cache.lookup_shared("", "serviceaccounts", Some(namespace), name) {
            return Some(account);
        }
        context.engine.fresh().await;
        let deadline = tokio::time::Instant::now() + ACCOUNT_WAIT;
        loop {
            if let Some(account) = cache.lookup_shared("", "serviceaccounts", Some(namespace), name)
            {
                return Some(account);
            }
            if name != kyb_admission::service_account::DEFAULT_SERVICE_ACCOUNT_NAME
                || tokio::time::Instant::now() >= deadline
            {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

#[async_trait]
impl Plugin for ServiceAccount {
    fn name(&self) -> &'static str {
        "ServiceAccount"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        applies(attributes, kyb_admission::service_account::applies)
    }

    async fn admit(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
    ) -> Result<(), Status> {
        let Some(pod) = object else { return Ok(()) };
        if attributes.operation != Operation::Create {
            return Ok(());
        }
        let account = Self::account(context, attributes, pod).await;
        kyb_admission::service_account::admit(
            pod,
            attributes.namespace,
            account.as_deref(),
            &kyb_admission::service_account::Config::default(),
            kyb_admission::service_account::random_suffix,
        )
        .map_err(|denial| refuse(attributes, None, &denial))
    }

    async fn validate(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), Status> {
        let Some(pod) = object else { return Ok(()) };
        let account = Self::account(context, attributes, pod).await;
        kyb_admission::service_account::validate(
            attributes.operation,
            attributes.subresource,
            pod,
            attributes.namespace,
            account.as_deref(),
            &kyb_admission::service_account::Config::default(),
        )
        .map_err(|denial| refuse(attributes, Some(pod), &denial))
    }
}

/// NodeRestriction: kubelets may only change their own Node, Lease and CSINode, the
/// status of their own pods, and create mirror pods bound to themselves.
pub struct NodeRestriction;

struct CacheLookup<'a> {
    context: &'a Context<'a>,
}

impl CacheLookup<'_> {
    fn get(
        &self,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Cow<'_, Value>> {
        self.context
            .engine
            .cache
            .lookup(group, plural, namespace, name)
            .map(Cow::Owned)
    }
}

impl kyb_admission::Lookup for CacheLookup<'_> {
    fn pod(&self, namespace: &str, name: &str) -> Option<Cow<'_, Value>> {
        self.get("", "pods", Some(namespace), name)
    }

    fn node(&self, name: &str) -> Option<Cow<'_, Value>> {
        self.get("", "nodes", None, name)
    }

    fn persistent_volume_claim(&self, namespace: &str, name: &str) -> Option<Cow<'_, Value>> {
        self.get("", "persistentvolumeclaims", Some(namespace), name)
    }

    fn persistent_volume(&self, name: &str) -> Option<Cow<'_, Value>> {
        self.get("", "persistentvolumes", None, name)
    }

    fn csi_driver(&self, name: &str) -> Option<Cow<'_, Value>> {
        self.get("storage.k8s.io", "csidrivers", None, name)
    }

    fn authorize_token_audience(&self, check: &kyb_admission::TokenAudienceCheck<'_>) -> bool {
        self.context
            .engine
            .authorizer
            .decide(&check.attributes())
            .is_allowed()
    }
}

#[async_trait]
impl Plugin for NodeRestriction {
    fn name(&self) -> &'static str {
        "NodeRestriction"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        kyb_admission::node_identity(&attributes.user.name, &attributes.user.groups).is_some()
            && applies(attributes, kyb_admission::node_restriction::applies)
    }

    async fn validate(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), Status> {
        let name = kyb_admission::object_name(attributes.name, object);
        let request = kyb_admission::NodeRequest {
            user: &attributes.user.name,
            groups: &attributes.user.groups,
            operation: attributes.operation,
            group: &attributes.resource.group,
            resource: &attributes.resource.plural,
            subresource: attributes.subresource,
            namespace: attributes.namespace,
            name,
            object,
            old_object: attributes.old_object,
        };
        kyb_admission::node_restriction(&request, &CacheLookup { context })
            .map_err(|denial| refuse(attributes, object, &denial))
    }
}

/// TaintNodesByCondition: new nodes are not ready until their kubelet says so.
pub struct TaintNodesByCondition;

#[async_trait]
impl Plugin for TaintNodesByCondition {
    fn name(&self) -> &'static str {
        "TaintNodesByCondition"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        applies(attributes, kyb_admission::taint_nodes_by_condition::applies)
    }

    async fn admit(
        &self,
        _context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
    ) -> Result<(), Status> {
        let Some(node) = object else { return Ok(()) };
        kyb_admission::taint_nodes_by_condition::admit(node)
            .map_err(|denial| refuse(attributes, None, &denial))
    }
}

/// Priority: a pod's priority from its PriorityClass (or the default class), and the
/// rules of PriorityClasses themselves.
pub struct Priority;

#[async_trait]
impl Plugin for Priority {
    fn name(&self) -> &'static str {
        "Priority"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        applies(attributes, kyb_admission::priority::applies)
    }

    async fn admit(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
    ) -> Result<(), Status> {
        let Some(pod) = object else { return Ok(()) };
        if !attributes.is("", "pods") {
            return Ok(());
        }
        let classes =
            context
                .engine
                .cache
                .objects_shared("scheduling.k8s.io", "priorityclasses", None);
        kyb_admission::priority::admit_pod(
            attributes.operation,
            pod,
            attributes.old_object,
            classes.iter().map(|c| &**c),
        )
        .map_err(|denial| refuse(attributes, None, &denial))
    }

    async fn validate(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), Status> {
        let Some(class) = object else { return Ok(()) };
        if !attributes.is("scheduling.k8s.io", "priorityclasses") {
            return Ok(());
        }
        let classes = context
            .engine
            .cache
            .objects("scheduling.k8s.io", "priorityclasses", None);
        kyb_admission::priority::validate_priority_class(attributes.operation, class, &classes)
            .map_err(|denial| refuse(attributes, Some(class), &denial))
    }
}

/// RuntimeClass: a pod's `runtimeClassName` names a RuntimeClass that exists, whose
/// overhead and scheduling constraints the pod gets.
pub struct RuntimeClass;

#[async_trait]
impl Plugin for RuntimeClass {
    fn name(&self) -> &'static str {
        "RuntimeClass"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        applies(attributes, kyb_admission::runtime_class::applies)
    }

    async fn admit(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
    ) -> Result<(), Status> {
        let Some(pod) = object else { return Ok(()) };
        let class = kyb_admission::runtime_class::class_name(pod).and_then(|name| {
            context
                .engine
                .cache
                .objects_shared("node.k8s.io", "runtimeclasses", None)
                .into_iter()
                .find(|c| c.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
        });
        let named = serde_json::json!({"metadata": {"name": pod.pointer("/metadata/name")}});
        kyb_admission::runtime_class::admit(pod, class.as_deref())
            .map_err(|denial| refuse(attributes, Some(&named), &denial))
    }
}

/// DefaultTolerationSeconds: pods tolerate a not-ready or unreachable node for 300 s.
pub struct DefaultTolerationSeconds;

#[async_trait]
impl Plugin for DefaultTolerationSeconds {
    fn name(&self) -> &'static str {
        "DefaultTolerationSeconds"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        applies(
            attributes,
            kyb_admission::default_toleration_seconds::applies,
        )
    }

    async fn admit(
        &self,
        _context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
    ) -> Result<(), Status> {
        let Some(pod) = object else { return Ok(()) };
        kyb_admission::default_toleration_seconds::admit(
            pod,
            &kyb_admission::default_toleration_seconds::Config::default(),
        )
        .map_err(|denial| refuse(attributes, None, &denial))
    }
}

/// DefaultStorageClass: claims without a class get the default StorageClass.
pub struct DefaultStorageClass;

#[async_trait]
impl Plugin for DefaultStorageClass {
    fn name(&self) -> &'static str {
        "DefaultStorageClass"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        applies(attributes, kyb_admission::default_storage_class::applies)
    }

    async fn admit(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
    ) -> Result<(), Status> {
        let Some(claim) = object else { return Ok(()) };
        let classes = context
            .engine
            .cache
            .objects("storage.k8s.io", "storageclasses", None);
        kyb_admission::default_storage_class::admit(claim, &classes)
            .map_err(|denial| refuse(attributes, None, &denial))
    }
}
