//! Making sure a container's image is on the node before the container is created:
//! kubelet's `EnsureImageExists`. It honours `imagePullPolicy` (`Always`, `IfNotPresent`,
//! `Never`, defaulted from the tag), pulls through CRI with the credentials of the pod's
//! `imagePullSecrets`, one pull at a time (kubelet's serialized pulls), and backs off per
//! pod and image after a failure (10 s doubling to 300 s), giving kubelet's reasons
//! (`ErrImagePull`, `ImagePullBackOff`, `ErrImageNeverPull`, `InvalidImageName`) and
//! the events it records, with its exact wording.

use super::keyring::Keyring;
use super::reference;
use crate::cri::Cri;
use k8s_cri::v1::{ImageSpec, ImageStatusRequest, PullImageRequest};
use k8s_openapi::api::core::v1::{Container, Pod, Secret};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Reasons a container waits with (`containerStatuses[].state.waiting.reason`).
pub const ERR_IMAGE_PULL: &str = "ErrImagePull";
pub const IMAGE_PULL_BACK_OFF: &str = "ImagePullBackOff";
pub const ERR_IMAGE_NEVER_PULL: &str = "ErrImageNeverPull";
pub const INVALID_IMAGE_NAME: &str = "InvalidImageName";
pub const IMAGE_INSPECT_ERROR: &str = "ImageInspectError";

/// kubelet's image back-off: 10 s, doubling to 300 s.
pub const BACK_OFF_INITIAL: Duration = Duration::from_secs(10);
pub const BACK_OFF_MAX: Duration = Duration::from_secs(300);

/// An event's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    /// `Normal` or `Warning`, as an Event's `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// An event kubelet records about the container (the caller records it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageEvent {
    pub event_type: EventType,
    /// `Pulling`, `Pulled`, `Failed`, `BackOff`, `ErrImageNeverPull`, `InspectFailed`.
    pub reason: &'static str,
    pub message: String,
}

impl ImageEvent {
    fn normal(reason: &'static str, message: String) -> ImageEvent {
        ImageEvent {
            event_type: EventType::Normal,
            reason,
            message,
        }
    }

    fn warning(reason: &'static str, message: String) -> ImageEvent {
        ImageEvent {
            event_type: EventType::Warning,
            reason,
            message,
        }
    }
}

/// The image is there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnsuredImage {
    /// What to create the container from: the image ID (or digest) the runtime gave.
    pub image_ref: String,
    pub events: Vec<ImageEvent>,
}

/// The image is not there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}: {message}")]
pub struct PullError {
    /// The container's waiting reason ([`ERR_IMAGE_PULL`], …).
    pub reason: &'static str,
    /// Its waiting message.
    pub message: String,
    pub events: Vec<ImageEvent>,
}

/// Per-key exponential back-off, as client-go's `flowcontrol.Backoff`.
#[derive(Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    entries: HashMap<String, (Duration, Instant)>,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max,
            entries: HashMap::new(),
        }
    }

    /// An entry not updated for twice the maximum is forgotten.
    fn expired(&self, now: Instant, last_update: Instant) -> bool {
        now.saturating_duration_since(last_update) > self.max * 2
    }

    /// Whether `key` is still backing off from its last failure.
    pub fn is_in_back_off(&self, key: &str, now: Instant) -> bool {
        match self.entries.get(key) {
            Some(&(delay, last_update)) => {
                !self.expired(now, last_update)
                    && now.saturating_duration_since(last_update) < delay
            }
            None => false,
        }
    }

    /// Records a failure of `key`: the delay starts at the initial one and doubles up
    /// to the maximum.
    pub fn next(&mut self, key: &str, now: Instant) {
        let delay = match self.entries.get(key) {
            Some(&(delay, last_update)) if !self.expired(now, last_update) => {
                (delay * 2).min(self.max)
            }
            _ => self.initial,
        };
        self.entries.insert(key.to_string(), (delay, now));
    }

    /// The current delay of `key`.
    pub fn delay(&self, key: &str) -> Option<Duration> {
        self.entries.get(key).map(|&(delay, _)| delay)
    }

    /// Forgets the expired entries.
    pub fn gc(&mut self, now: Instant) {
        let max = self.max;
        self.entries
            .retain(|_, (_, last_update)| now.saturating_duration_since(*last_update) <= max * 2);
    }
}

/// A duration as Go's `time.Duration` prints it once truncated to milliseconds
/// (`523ms`, `1.2s`, `2m3.004s`).
pub fn go_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis == 0 {
        return "0s".into();
    }
    if millis < 1000 {
        return format!("{millis}ms");
    }
    let hours = millis / 3_600_000;
    let minutes = millis / 60_000 % 60;
    let seconds = millis / 1000 % 60;
    let fraction = millis % 1000;
    let mut text = String::new();
    if hours > 0 {
        text.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        text.push_str(&format!("{minutes}m"));
    }
    if fraction == 0 {
        text.push_str(&format!("{seconds}s"));
    } else {
        let fraction = format!("{fraction:03}");
        text.push_str(&format!("{seconds}.{}s", fraction.trim_end_matches('0')));
    }
    text
}

/// A gRPC status as Go's `status.Error` prints it (what kubelet shows of a runtime
/// error): `rpc error: code = NotFound desc = …`.
pub fn grpc_error_text(status: &tonic::Status) -> String {
    use tonic::Code;
    let code = match status.code() {
        Code::Ok => "OK",
        Code::Cancelled => "Canceled",
        Code::Unknown => "Unknown",
        Code::InvalidArgument => "InvalidArgument",
        Code::DeadlineExceeded => "DeadlineExceeded",
        Code::NotFound => "NotFound",
        Code::AlreadyExists => "AlreadyExists",
        Code::PermissionDenied => "PermissionDenied",
        Code::ResourceExhausted => "ResourceExhausted",
        Code::FailedPrecondition => "FailedPrecondition",
        Code::Aborted => "Aborted",
        Code::OutOfRange => "OutOfRange",
        Code::Unimplemented => "Unimplemented",
        Code::Internal => "Internal",
        Code::Unavailable => "Unavailable",
        Code::DataLoss => "DataLoss",
        Code::Unauthenticated => "Unauthenticated",
    };
    format!("rpc error: code = {code} desc = {}", status.message())
}

/// Pulls images for containers (kubelet's image manager).
#[derive(Debug)]
pub struct ImagePuller {
    cri: Cri,
    backoff: Mutex<Backoff>,
    /// One pull at a time.
    serial: tokio::sync::Mutex<()>,
}

impl ImagePuller {
    /// A puller with kubelet's back-off (10 s doubling to 300 s).
    pub fn new(cri: Cri) -> ImagePuller {
        ImagePuller::with_backoff(cri, BACK_OFF_INITIAL, BACK_OFF_MAX)
    }

    /// A puller with another back-off (tests).
    pub fn with_backoff(cri: Cri, initial: Duration, max: Duration) -> ImagePuller {
        ImagePuller {
            cri,
            backoff: Mutex::new(Backoff::new(initial, max)),
            serial: tokio::sync::Mutex::new(()),
        }
    }

    /// The image ID of `image` if the runtime has it.
    pub async fn image_ref(&self, image: &str) -> Result<Option<(String, u64)>, tonic::Status> {
        let response = self
            .cri
            .images
            .clone()
            .image_status(ImageStatusRequest {
                image: Some(ImageSpec {
                    image: image.to_string(),
                    ..ImageSpec::default()
                }),
                verbose: false,
            })
            .await?
            .into_inner();
        Ok(response
            .image
            .filter(|image| !image.id.is_empty())
            .map(|image| (image.id, image.size)))
    }

    fn with_backoff_state<T>(&self, f: impl FnOnce(&mut Backoff) -> T) -> T {
        match self.backoff.lock() {
            Ok(mut backoff) => f(&mut backoff),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// Makes sure `container`'s image is present, pulling it as its `imagePullPolicy`
    /// says, with the credentials of `pull_secrets`.
    pub async fn ensure(
        &self,
        pod: &Pod,
        container: &Container,
        pull_secrets: &[Secret],
    ) -> Result<EnsuredImage, PullError> {
        let name = container.image.as_deref().unwrap_or_default();
        let mut events = Vec::new();
        let fail = |reason, message: String, events: Vec<ImageEvent>| PullError {
            reason,
            message,
            events,
        };
        let image = match reference::apply_default_tag(name) {
            Ok(image) => image,
            Err(error) => {
                let message = format!("Failed to apply default image tag {name:?}: {error}");
                events.push(ImageEvent::warning("InspectFailed", message.clone()));
                return Err(fail(INVALID_IMAGE_NAME, message, events));
            }
        };
        let present = match self.image_ref(&image).await {
            Ok(found) => found,
            Err(status) => {
                let message = format!(
                    "Failed to inspect image {name:?}: {}",
                    grpc_error_text(&status)
                );
                events.push(ImageEvent::warning("InspectFailed", message.clone()));
                return Err(fail(IMAGE_INSPECT_ERROR, message, events));
            }
        };
        let policy = container
            .image_pull_policy
            .as_deref()
            .filter(|policy| !policy.is_empty())
            .unwrap_or_else(|| reference::default_pull_policy(name));
        let should_pull = match policy {
            "Never" => false,
            "IfNotPresent" => present.is_none(),
            _ => true,
        };
        if !should_pull {
            return match present {
                Some((image_ref, _)) => {
                    events.push(ImageEvent::normal(
                        "Pulled",
                        format!("Container image {name:?} already present on machine"),
                    ));
                    Ok(EnsuredImage { image_ref, events })
                }
                None => {
                    let message = format!(
                        "Container image {name:?} is not present with pull policy of Never"
                    );
                    events.push(ImageEvent::warning("ErrImageNeverPull", message.clone()));
                    Err(fail(ERR_IMAGE_NEVER_PULL, message, events))
                }
            };
        }
        let pod_uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let backoff_key = format!("{pod_uid}_{name}");
        if self.with_backoff_state(|b| b.is_in_back_off(&backoff_key, Instant::now())) {
            let message = format!("Back-off pulling image {name:?}");
            events.push(ImageEvent::normal("BackOff", message.clone()));
            return Err(fail(IMAGE_PULL_BACK_OFF, message, events));
        }
        events.push(ImageEvent::normal(
            "Pulling",
            format!("Pulling image {name:?}"),
        ));
        let started = Instant::now();
        let pulled = {
            let _turn = self.serial.lock().await;
            let pull_started = Instant::now();
            self.pull(&image, pull_secrets)
                .await
                .map(|image_ref| (image_ref, pull_started.elapsed()))
        };
        match pulled {
            Ok((image_ref, pull_duration)) => {
                let size = match self.image_ref(&image_ref).await {
                    Ok(Some((_, size))) => size,
                    _ => 0,
                };
                events.push(ImageEvent::normal(
                    "Pulled",
                    format!(
                        "Successfully pulled image {name:?} in {} ({} including waiting). Image size: {size} bytes.",
                        go_duration(pull_duration),
                        go_duration(started.elapsed()),
                    ),
                ));
                self.with_backoff_state(|b| b.gc(Instant::now()));
                Ok(EnsuredImage { image_ref, events })
            }
            Err(error) => {
                events.push(ImageEvent::warning(
                    "Failed",
                    format!("Failed to pull image {name:?}: {error}"),
                ));
                self.with_backoff_state(|b| b.next(&backoff_key, Instant::now()));
                Err(fail(ERR_IMAGE_PULL, error, events))
            }
        }
    }

    /// Pulls `image` with each matching credential in turn (none when none matches);
    /// the error joins the failures as Go's aggregate error does.
    async fn pull(&self, image: &str, pull_secrets: &[Secret]) -> Result<String, String> {
        let credentials = match reference::parse_normalized(image) {
            Ok(reference) => Keyring::from_secrets(pull_secrets).lookup(&reference.repository()),
            Err(_) => Vec::new(),
        };
        let attempts: Vec<Option<k8s_cri::v1::AuthConfig>> = if credentials.is_empty() {
            vec![None]
        } else {
            credentials.into_iter().map(Some).collect()
        };
        let mut errors = Vec::new();
        for auth in attempts {
            let request = PullImageRequest {
                image: Some(ImageSpec {
                    image: image.to_string(),
                    ..ImageSpec::default()
                }),
                auth,
                sandbox_config: None,
            };
            match self.cri.images.clone().pull_image(request).await {
                Ok(response) => return Ok(response.into_inner().image_ref),
                // As kubelet's CRI client: an Unknown code adds nothing, only its message.
                Err(status) if status.code() == tonic::Code::Unknown => {
                    errors.push(status.message().to_string());
                }
                Err(status) => errors.push(grpc_error_text(&status)),
            }
        }
        Err(match errors.len() {
            1 => errors.remove(0),
            _ => format!("[{}]", errors.join(", ")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_off_doubles_to_its_maximum_and_expires() {
        let mut backoff = Backoff::new(Duration::from_secs(10), Duration::from_secs(300));
        let start = Instant::now();
        assert!(!backoff.is_in_back_off("k", start));
        backoff.next("k", start);
        assert!(backoff.is_in_back_off("k", start + Duration::from_secs(9)));
        assert!(!backoff.is_in_back_off("k", start + Duration::from_secs(10)));
        assert!(!backoff.is_in_back_off("other", start));
        let mut now = start;
        for expected in [20, 40, 80, 160, 300, 300] {
            now += Duration::from_secs(11);
            backoff.next("k", now);
            assert_eq!(backoff.delay("k"), Some(Duration::from_secs(expected)));
        }
        // Untouched for more than twice the maximum: starts over.
        now += Duration::from_secs(601);
        assert!(!backoff.is_in_back_off("k", now));
        backoff.next("k", now);
        assert_eq!(backoff.delay("k"), Some(Duration::from_secs(10)));
        backoff.gc(now + Duration::from_secs(601));
        assert_eq!(backoff.delay("k"), None);
    }

    #[test]
    fn durations_print_as_go_prints_them() {
        assert_eq!(go_duration(Duration::from_micros(523_900)), "523ms");
        assert_eq!(go_duration(Duration::from_millis(1200)), "1.2s");
        assert_eq!(go_duration(Duration::from_millis(1234)), "1.234s");
        assert_eq!(go_duration(Duration::from_secs(2)), "2s");
        assert_eq!(go_duration(Duration::from_millis(123_004)), "2m3.004s");
        assert_eq!(go_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(go_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn runtime_errors_read_as_kubelet_shows_them() {
        let status = tonic::Status::not_found("failed to pull and unpack image");
        assert_eq!(
            grpc_error_text(&status),
            "rpc error: code = NotFound desc = failed to pull and unpack image"
        );
        assert!(grpc_error_text(&tonic::Status::cancelled("x")).contains("Canceled"));
    }
}
