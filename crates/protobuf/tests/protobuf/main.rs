//! Integration tests: bodies built with k8s-pb and prost the way kubectl builds them,
//! decoded by this crate and compared with k8s-openapi's JSON; malformed input; encoding.

mod config_and_access;
mod encoding;
mod fixtures;
mod malformed;
mod special_forms;
mod support;
mod workloads;
