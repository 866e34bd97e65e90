#![allow(clippy::unwrap_used)]

//! Storage tests against real backends: the embedded store on temporary directories and a
//! real etcd started per test.
//!
//! `conformance` is one suite run against both backends; `embedded` holds what only the
//! embedded store has (durability across SIGKILL, refusing damaged files); `etcd` what only
//! the etcd backend has (its data is plain etcd data).

mod conformance;
mod embedded;
mod etcd;
mod harness;
