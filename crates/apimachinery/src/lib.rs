//! Kubernetes' API machinery, the rules every component applies to API values, in the
//! spirit of `k8s.io/apimachinery`: one implementation of each, so that the API server,
//! the scheduler, the controllers and the node's components agree.
//!
//! - [`quantity`]: resource quantities — parsing, exact arithmetic, canonical text.
//! - [`names`]: DNS labels and subdomains, qualified names, label values and the other
//!   string formats, with Kubernetes' messages.
//! - [`labels`]: label selectors (query syntax, `LabelSelector`, map selectors).
//! - [`field`]: field paths and field errors (`field.Error`).
//! - [`equality`]: semantic equality (`equality.Semantic.DeepEqual`) and a differ.
//! - [`json`]: the one tolerant reader of objects in JSON form (`null` and wrong types
//!   read as absent), and defaulting writers; [`meta`]: object metadata on top of it.
//! - [`duration`]: Go durations; [`time`]: RFC 3339 timestamps and calendar arithmetic.
//! - [`gofmt`]: JSON values printed as Go prints them in Kubernetes' messages.
//! - [`base64`]: Go's `[]byte` in JSON and PEM (standard base64 as Go decodes it).
//!
//! Components must use these rather than copy them: where two copies drifted, Kubernetes'
//! behaviour was chosen here (each module says which).

pub mod base64;
pub mod duration;
pub mod equality;
pub mod field;
pub mod gofmt;
pub mod json;
pub mod labels;
pub mod meta;
pub mod names;
pub mod quantity;
pub mod time;
