//! `events.k8s.io/v1`: Events, validated with the strict rules of the new Events API.

use crate::core::event::{validate_events_api, validate_events_api_update};
use crate::kinds::Kind;
use kyb_apimachinery::names;

/// The rules of an `events.k8s.io/v1` kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    match kind {
        "Event" => Some(
            Kind::new(names::name_is_dns_subdomain)
                .validate(validate_events_api)
                .update(validate_events_api_update),
        ),
        _ => None,
    }
}
