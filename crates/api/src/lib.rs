//! Shared Kubernetes API helpers, used by the API server and by every component that talks
//! to it: the resource registry (definitions, strategies, the live set the API server
//! serves), field selectors, and the `Status` error object. Quantities, names, label
//! selectors, object metadata, Go-style value printing, durations and timestamps are
//! `kyb-apimachinery`'s.

pub mod fields;
mod operation;
pub mod registry;
pub mod status;

pub use operation::Operation;
pub use registry::{Resource, ResourceDef, Subresource};
pub use status::Status;
