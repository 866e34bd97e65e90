//! Images on the node: pulling a container's image as kubelet does (`imagePullPolicy`,
//! `imagePullSecrets`, back-off, its reasons and events), and the project's own images
//! (the sandbox "pause" image and busybox) built as reproducible OCI archives.
//!
//! - [`pull`]: [`ImagePuller`], kubelet's `EnsureImageExists` over CRI.
//! - [`reference`]: image names (validation, default tag, registry, default pull policy).
//! - [`keyring`]: registry credentials from docker-config secrets.
//! - [`build`]: OCI image archives from a list of files; the pause and busybox images.
//! - [`tar`]: the reproducible tar writer the archives are made with.

pub mod build;
pub mod keyring;
pub mod pull;
pub mod reference;
pub mod tar;

pub use pull::{EnsuredImage, EventType, ImageEvent, ImagePuller, PullError};

/// The sandbox image, built from `images/pause/pause.c` (`kyb image build pause`).
pub const PAUSE_IMAGE: &str = "kyb.local/pause:1.0";

/// The busybox image, from Debian's `busybox-static` (`kyb image build busybox`).
pub const BUSYBOX_IMAGE: &str = "kyb.local/busybox:1.35.0";
