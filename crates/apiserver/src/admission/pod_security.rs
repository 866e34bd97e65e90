//! PodSecurity: the Pod Security Standards of each namespace's
//! `pod-security.kubernetes.io/*` labels, enforced on pods (refused), warned about and
//! audited for pods and workloads with pod templates; label changes on namespaces are
//! validated and checked against the pods already running. The rules are
//! `kyb-podsecurity`'s; this plugin gathers the namespace and pods from the cache.

use super::{Attributes, Context, Operation, Plugin};
use async_trait::async_trait;
use kyb_api::Status;
use kyb_podsecurity::{Exemptions, NamespacePolicy, PodCheckLimits, ResourceClass};
use serde_json::Value;

#[derive(Default)]
pub struct PodSecurity {
    pub exemptions: Exemptions,
    pub defaults: NamespacePolicy,
}

#[async_trait]
impl Plugin for PodSecurity {
    fn name(&self) -> &'static str {
        "PodSecurity"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        matches!(attributes.operation, Operation::Create | Operation::Update)
            && kyb_podsecurity::classify(attributes.resource.group, attributes.resource.plural)
                != ResourceClass::Other
    }

    async fn validate(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), Status> {
        let resource = attributes.resource;
        let is_namespace = resource.group.is_empty() && resource.plural == "namespaces";
        let namespace_object = if is_namespace {
            None
        } else {
            context
                .engine
                .cache
                .lookup_shared("", "namespaces", None, attributes.namespace)
        };
        let namespace_labels = namespace_object
            .as_deref()
            .and_then(kyb_apimachinery::meta::labels);
        let name = object
            .and_then(kyb_apimachinery::meta::name)
            .unwrap_or(attributes.name);
        // Kubernetes' request info names a namespace only on its updates.
        let request_namespace = match (is_namespace, attributes.operation) {
            (true, Operation::Update) => attributes.name,
            (true, _) => "",
            (false, _) => attributes.namespace,
        };
        let lookup_error = (!is_namespace && namespace_object.is_none())
            .then(|| format!("namespaces {:?} not found", attributes.namespace));
        let request = kyb_podsecurity::Request {
            operation: attributes.operation,
            group: resource.group,
            resource: resource.plural,
            subresource: (!attributes.subresource.is_empty()).then_some(attributes.subresource),
            kind: attributes.kind.2,
            name,
            namespace: request_namespace,
            namespace_labels,
            namespace_lookup_error: lookup_error.as_deref(),
            object,
            old_object: attributes.old_object,
            username: &attributes.user.name,
            groups: &attributes.user.groups,
            exemptions: &self.exemptions,
            defaults: self.defaults,
        };
        let decision = kyb_podsecurity::admit(&request);
        for warning in &decision.warnings {
            context.warn(warning.clone());
        }
        for (key, value) in &decision.audit_annotations {
            context.call.annotate(key.clone(), value.clone());
        }
        if let Some(status) = decision.status(&request) {
            return Err(status);
        }
        if let Some(level) = decision.check_existing_pods {
            let pods = context
                .engine
                .cache
                .objects("", "pods", Some(attributes.name));
            for warning in kyb_podsecurity::check_namespace_pods(
                attributes.name,
                level,
                pods.iter(),
                &self.exemptions,
                &PodCheckLimits::default(),
            ) {
                context.warn(warning);
            }
        }
        Ok(())
    }
}
