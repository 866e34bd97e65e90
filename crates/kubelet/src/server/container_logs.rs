//! `/containerLogs/{namespace}/{pod}/{container}`: a container's log as kubelet serves it,
//! the current instance's or (`previous`) the one before, streamed as it is read, with
//! kubelet's answers when the pod, the container or its log is not there.

use super::Host;
use super::body::{self, Response};
use crate::logs::{LogOptions, OptionsError, reader};
use crate::pods::runtime::{self, Instance, State};
use http::StatusCode;
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::Pod;
use kyb_serving::Query;
use std::path::PathBuf;

/// Whether the pod has a container (init, regular or ephemeral) named `name`.
fn has_container(pod: &Pod, name: &str) -> bool {
    let Some(spec) = &pod.spec else { return false };
    spec.containers.iter().any(|c| c.name == name)
        || spec
            .init_containers
            .iter()
            .flatten()
            .any(|c| c.name == name)
        || spec
            .ephemeral_containers
            .iter()
            .flatten()
            .any(|c| c.name == name)
}

/// Why there is no current instance to read, from the pod's status as kubelet words it.
fn not_available(pod: &Pod, container: &str, pod_name: &str) -> String {
    let status = pod.status.as_ref().and_then(|status| {
        [
            &status.container_statuses,
            &status.init_container_statuses,
            &status.ephemeral_container_statuses,
        ]
        .into_iter()
        .flatten()
        .flatten()
        .find(|s| s.name == container)
    });
    let waiting = status
        .and_then(|s| s.state.as_ref())
        .and_then(|s| s.waiting.as_ref())
        .and_then(|w| w.reason.clone());
    match waiting.as_deref() {
        Some("ErrImagePull") => format!(
            "container {container:?} in pod {pod_name:?} is waiting to start: image can't be pulled"
        ),
        Some("ImagePullBackOff") => format!(
            "container {container:?} in pod {pod_name:?} is waiting to start: trying and failing to pull image"
        ),
        Some(reason) => {
            format!("container {container:?} in pod {pod_name:?} is waiting to start: {reason}")
        }
        None => format!("container {container:?} in pod {pod_name:?} is not available"),
    }
}

/// The log file of an instance: the runtime's path, under the pod's log directory when
/// relative.
fn log_file(host: &Host, pod: &Pod, instance: &Instance) -> PathBuf {
    let path = PathBuf::from(&instance.log_path);
    if path.is_absolute() {
        path
    } else {
        host.shared
            .logs_dir
            .join(crate::pods::log_dir_name(pod))
            .join(path)
    }
}

pub async fn serve(host: &Host, segments: &[String], query: Query) -> Response {
    let [namespace, pod_name, container] = segments else {
        return body::not_found();
    };
    if pod_name.is_empty() {
        return body::text(StatusCode::BAD_REQUEST, r#"{"message": "Missing podID."}"#);
    }
    if container.is_empty() {
        return body::text(
            StatusCode::BAD_REQUEST,
            r#"{"message": "Missing container name."}"#,
        );
    }
    let options = match LogOptions::from_query(&query, jiff::Timestamp::now()) {
        Ok(options) => options,
        Err(OptionsError::Decode(error)) => {
            tracing::debug!(%error, "decoding log options");
            return body::text(
                StatusCode::BAD_REQUEST,
                r#"{"message": "Unable to decode query."}"#,
            );
        }
        Err(OptionsError::Invalid(error)) => {
            tracing::debug!(%error, "invalid log options");
            return body::text(
                StatusCode::UNPROCESSABLE_ENTITY,
                r#"{"message": "Invalid request."}"#,
            );
        }
    };
    let Some(pod) = host.shared.pods.get(namespace, pod_name) else {
        return body::error(
            StatusCode::NOT_FOUND,
            format!("pod {pod_name:?} does not exist"),
        );
    };
    if !has_container(&pod, container) {
        return body::error(
            StatusCode::NOT_FOUND,
            format!("container {container:?} not found in pod {pod_name:?}"),
        );
    }
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let observed = match runtime::observe(&host.shared.cri, &uid, &mut Default::default()).await {
        Ok(observed) => observed,
        Err(error) => return body::error(StatusCode::BAD_REQUEST, format!("{error:#}")),
    };
    let instance = if options.previous {
        match observed.previous(container) {
            Some(instance) => instance,
            None => {
                return body::error(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "previous terminated container {container:?} in pod {pod_name:?} not found"
                    ),
                );
            }
        }
    } else {
        match observed.latest(container) {
            Some(instance) => instance,
            None => {
                return body::error(
                    StatusCode::BAD_REQUEST,
                    not_available(&pod, container, pod_name),
                );
            }
        }
    };
    let path = log_file(host, &pod, instance);
    let running = instance.state == State::Running && !options.previous;
    let container_id = instance.id.clone();
    let cri = host.shared.cri.clone();
    let (tx, response) = body::stream("text/plain; charset=utf-8");
    tokio::spawn(async move {
        let is_running = move || {
            let mut runtime = cri.runtime.clone();
            let id = container_id.clone();
            async move {
                running
                    && runtime
                        .container_status(cri::ContainerStatusRequest {
                            container_id: id,
                            verbose: false,
                        })
                        .await
                        .ok()
                        .and_then(|r| r.into_inner().status)
                        .is_some_and(|s| s.state == cri::ContainerState::ContainerRunning as i32)
            }
        };
        if let Err(error) = reader::read(&path, &options, tx, is_running).await {
            tracing::warn!(path = %path.display(), %error, "reading a container log");
        }
    });
    response
}
