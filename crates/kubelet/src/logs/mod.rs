//! Containers' logs on the node: the CRI log format containerd writes
//! (`<root>/logs/<ns>_<pod>_<uid>/<container>/<restart>.log`), read and followed as
//! kubelet's `/containerLogs` serves them, and rotated as kubelet's container log manager
//! rotates them.
//!
//! - [`cri_format`]: one log line (`<timestamp> <stream> <P|F> <text>`).
//! - [`options`]: the query options (`follow`, `previous`, `tailLines`, `sinceSeconds`,
//!   `sinceTime`, `timestamps`, `limitBytes`).
//! - [`reader`]: reading and following a log, across its rotated files.
//! - [`rotation`]: `--container-log-max-size` and `--container-log-max-files`.

pub mod cri_format;
pub mod options;
pub mod reader;
pub mod rotation;

pub use options::{LogOptions, OptionsError};
pub use rotation::LogRotation;
