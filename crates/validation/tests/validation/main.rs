//! Integration tests of `kyb-validation` through its public API only: defaulting of
//! minimal objects as a Kubernetes 1.33 API server stores them, validation errors worded
//! as Kubernetes words them, update rules, and robustness against garbage input.

#![allow(clippy::unwrap_used)]

mod defaults;
mod errors;
mod fixtures;
mod kinds;
mod robustness;
mod updates;
