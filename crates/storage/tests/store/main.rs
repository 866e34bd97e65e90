#![allow(clippy::unwrap_used)]

//! Storage tests against real backends: the embedded store on temporary directories and a
//! real etcd started per test.
//!
//! `conformance` is one suite run against both backends; `embedded` holds what only the
//! embedded store has (durability across SIGKILL, refusing damaged files).

mod conformance;
mod embedded;
mod harness;
