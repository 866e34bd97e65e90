//! Shared Kubernetes API helpers, used by the API server and by every component that talks
//! to it: the resource registry (definitions, strategies, the live set the API server
//! serves), label and field selectors, the `Status` error
//! object, small accessors for objects in their JSON form, JSON values printed the way Go
//! prints them in Kubernetes' messages (`gofmt`), and calendar-date arithmetic (`time`).

pub mod fields;
pub mod gofmt;
pub mod labels;
pub mod meta;
mod operation;
pub mod registry;
pub mod status;
pub mod time;

pub use operation::Operation;
pub use registry::{Resource, ResourceDef, Subresource};
pub use status::Status;
