//! The API server's own filters, beside the generic ones of `kyb-serving` (each a
//! `kyb_serving::filters::Filter`, made a layer by `filters::filter`): [`RequestLog`]
//! (audit ID, received time, the debug log line), [`Audit`] (the audit record of each
//! request) and [`Impersonation`] (`Impersonate-*` headers).
//! `server::stack` puts them together with the generic layers in Kubernetes' order.

mod audit;
mod impersonation;
mod request_log;

pub use audit::{Audit, AuditAnnotations, AuditedBody};
pub use impersonation::{Impersonated, Impersonation};
pub use request_log::{Received, RequestLog};
