//! Built-in kube-apiserver admission plugins and the Node authorizer, as pure logic over
//! objects in their JSON form (`serde_json::Value`), with Kubernetes 1.33's behaviour and
//! message texts. The API server gathers the inputs from its watch cache and applies the
//! decisions; nothing here does I/O.
//!
//! Every plugin module has `applies(operation, group, resource, subresource) -> bool`, for
//! the server to skip it cheaply, and functions doing its work, which refuse with a
//! [`Denial`] (its variants say which status and which part of the message they carry;
//! [`Denial::status`] builds the whole `Status`).
//!
//! - [`service_account`] — [`service_account::admit`] (mutating) and
//!   [`service_account::validate`] for pod creation and `pods/ephemeralcontainers`; the caller
//!   looks up [`service_account::service_account_to_look_up`].
//! - [`default_toleration_seconds`] — [`default_toleration_seconds::admit`].
//! - [`taint_nodes_by_condition`] — [`taint_nodes_by_condition::admit`].
//! - [`priority`] — [`priority::admit_pod`], [`priority::validate_priority_class`],
//!   [`priority::system_priority_classes`].
//! - [`default_storage_class`] — [`default_storage_class::admit`].
//! - [`runtime_class`] — [`runtime_class::admit`] (mutating and validating at once: it
//!   runs at pod creation only).
//! - [`node_restriction`](mod@node_restriction) — [`node_restriction()`] for a [`NodeRequest`], reading objects
//!   through the caller's [`Lookup`].
//! - [`node_authorizer`] — [`NodeGraph`], fed watch events with [`NodeGraph::apply`] and
//!   [`NodeGraph::delete`], answering [`NodeGraph::authorize`] with a [`Decision`].
//!
//! Kubernetes' order for these in the admission chain: ServiceAccount, NodeRestriction,
//! TaintNodesByCondition, Priority, DefaultTolerationSeconds, DefaultStorageClass (all
//! mutating plugins run before all validating ones).
//!
//! Objects come from clients: missing or wrongly typed fields read as unset (Go's zero
//! values) and nothing panics on them.

pub mod default_storage_class;
pub mod default_toleration_seconds;
mod denial;
mod identity;
pub mod node_authorizer;
pub mod node_restriction;
mod pod_refs;
pub mod priority;
pub mod runtime_class;
pub mod service_account;
pub mod taint_nodes_by_condition;

pub use denial::{Denial, forbidden_message, object_name};
pub use identity::{NODE_USER_PREFIX, NODES_GROUP, node_identity};
pub use kyb_api::Operation;
pub use node_authorizer::{Decision, NodeGraph, RequestAttributes};
pub use node_restriction::{Lookup, NodeRequest, TokenAudienceCheck, node_restriction};
