//! Shared Kubernetes API helpers, used by the API server and by every component that talks
//! to it: the registry of built-in resources, field selectors, and the `Status` error
//! object. Quantities, names, label selectors, object metadata, Go-style value printing,
//! durations and timestamps are `kyb-apimachinery`'s.

pub mod fields;
mod operation;
pub mod registry;
pub mod status;

pub use operation::Operation;
pub use registry::{ResourceDef, Subresource};
pub use status::Status;
