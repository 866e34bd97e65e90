//! Server-side apply and managed fields, end to end through the public API: the
//! scenarios of Kubernetes' server-side apply documentation, the exact `fieldsV1`
//! Kubernetes writes for typical objects, and hostile input.

#![allow(clippy::unwrap_used)]

mod kubectl;
mod robustness;
mod scenarios;
mod support;
