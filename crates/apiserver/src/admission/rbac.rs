//! Escalation prevention for RBAC writes (in Kubernetes, a rule of the RBAC storage):
//! nobody creates or updates a Role or ClusterRole granting more than they hold, unless
//! allowed to `escalate`; nobody binds a role whose permissions they do not hold, unless
//! allowed to `bind` it. The rules are `kyb-rbac`'s, asked of the live policy.

use super::{Attributes, Context, Operation, Plugin};
use async_trait::async_trait;
use kyb_api::Status;
use serde_json::Value;

pub struct RbacEscalation;

#[async_trait]
impl Plugin for RbacEscalation {
    fn name(&self) -> &'static str {
        "RBACEscalationCheck"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        attributes.resource.group == kyb_rbac::RBAC_GROUP
            && attributes.subresource.is_empty()
            && matches!(attributes.operation, Operation::Create | Operation::Update)
            && !attributes.user.in_group("system:masters")
    }

    async fn validate(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), Status> {
        let Some(object) = object else { return Ok(()) };
        // The check reads the kind from the object: make sure it is the request's.
        let mut object = object.clone();
        object["kind"] = attributes.resource.kind.into();
        let user = attributes.user;
        let decision = context.engine.authorizer.rbac.with_policy(|policy| {
            policy.check_write(&user.name, &user.groups, &object, attributes.old_object)
        });
        match decision {
            Some(Ok(())) => Ok(()),
            Some(Err(refusal)) => {
                let name = kyb_apimachinery::meta::name(&object).unwrap_or(attributes.name);
                Err(
                    Status::forbidden(refusal.status_message(attributes.resource.plural, name))
                        .with_details(kyb_rbac::RBAC_GROUP, attributes.resource.plural, name),
                )
            }
            None => Err(Status::internal("the RBAC policy is unavailable")),
        }
    }
}
