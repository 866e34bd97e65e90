//! Shared Kubernetes API helpers, used by the API server and by every component that talks
//! to it: the registry of built-in resources, label and field selectors, the `Status` error
//! object, and small accessors for objects in their JSON form.

pub mod fields;
pub mod labels;
pub mod meta;
pub mod registry;
pub mod status;

pub use registry::{ResourceDef, Subresource};
pub use status::Status;
