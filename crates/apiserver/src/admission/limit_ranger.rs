//! LimitRanger: the LimitRanges of a namespace give its pods' containers default requests
//! and limits (mutating) and bound what pods and PersistentVolumeClaims may ask for
//! (validating). The rules are `kyb-quota`'s; this plugin reads the LimitRanges from the
//! cache.

use super::{Attributes, Context, Plugin};
use async_trait::async_trait;
use kyb_api::Status;
use serde_json::Value;

pub struct LimitRanger;

impl LimitRanger {
    fn limit_ranges(context: &Context<'_>, attributes: &Attributes<'_>) -> Vec<Value> {
        context
            .engine
            .cache
            .objects("", "limitranges", Some(attributes.namespace))
    }

    fn refuse(attributes: &Attributes<'_>, error: &kyb_quota::LimitError) -> Status {
        Status::forbidden(error.forbidden_message(
            attributes.resource.group,
            attributes.resource.plural,
            attributes.name,
        ))
        .with_details(
            attributes.resource.group,
            attributes.resource.plural,
            attributes.name,
        )
    }
}

#[async_trait]
impl Plugin for LimitRanger {
    fn name(&self) -> &'static str {
        "LimitRanger"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        kyb_quota::applies(
            attributes.operation,
            attributes.resource.group,
            attributes.resource.plural,
            attributes.subresource,
        ) && !attributes
            .old_object
            .is_some_and(kyb_quota::skips_update_of)
    }

    async fn admit(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
    ) -> Result<(), Status> {
        if !attributes.is("", "pods") {
            return Ok(());
        }
        let Some(pod) = object else { return Ok(()) };
        let ranges = Self::limit_ranges(context, attributes);
        if !ranges.is_empty() {
            kyb_quota::mutate_pod(pod, &ranges);
        }
        Ok(())
    }

    async fn validate(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), Status> {
        let Some(object) = object else { return Ok(()) };
        let ranges = Self::limit_ranges(context, attributes);
        if ranges.is_empty() {
            return Ok(());
        }
        let result = if attributes.is("", "pods") {
            kyb_quota::validate_pod(object, &ranges)
        } else {
            kyb_quota::admit_pvc(object, &ranges)
        };
        result.map_err(|error| Self::refuse(attributes, &error))
    }
}
