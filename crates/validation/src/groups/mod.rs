//! The named API groups other than core.

pub(crate) mod admissionregistration;
pub(crate) mod apiextensions;
pub(crate) mod apiregistration;
pub(crate) mod apps;
pub(crate) mod autoscaling;
pub(crate) mod batch;
pub(crate) mod coordination;
pub(crate) mod discovery;
pub(crate) mod events;
pub mod flowcontrol;
pub(crate) mod misc;
pub(crate) mod networking;
pub(crate) mod node;
pub(crate) mod policy;
pub(crate) mod rbac;
pub(crate) mod scheduling;
pub(crate) mod service_ips;
pub(crate) mod storage;
pub(crate) mod storage_capacity;
