//! The API server's own filter layers, beside the generic ones of `kyb-serving`:
//! [`RequestLogLayer`] (audit ID, received time, the debug log line), [`AuditLayer`] (the
//! audit record of each request) and [`ImpersonationLayer`] (`Impersonate-*` headers).
//! `server::stack` puts them together with the generic layers in Kubernetes' order.

mod audit;
mod impersonation;
mod request_log;

pub use audit::{AuditAnnotations, AuditLayer, AuditedBody};
pub use impersonation::{Impersonated, ImpersonationLayer};
pub use request_log::{Received, RequestLogLayer};
