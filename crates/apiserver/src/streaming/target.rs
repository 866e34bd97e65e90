//! Which container on which node a stream goes to (kube-apiserver's `streamLocation` and
//! `validateContainer`): the pod from the watch cache, the container defaulted when the pod
//! has one, checked otherwise, and the node the pod is bound to.

use crate::engine::Engine;
use kyb_api::Status;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub namespace: String,
    pub pod: String,
    /// `None` for port-forward.
    pub container: Option<String>,
    pub node: String,
}

/// Finds the pod and checks `container` against it (when `with_container`).
pub fn resolve(
    engine: &Engine,
    namespace: &str,
    name: &str,
    container: Option<&str>,
    with_container: bool,
) -> Result<Target, Status> {
    let pod = engine
        .cache
        .lookup_shared("", "pods", Some(namespace), name)
        .ok_or_else(|| Status::not_found("", "pods", name))?;
    let container = match with_container {
        true => Some(validate_container(&pod, name, container)?),
        false => None,
    };
    let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    if node.is_empty() {
        return Err(Status::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    Ok(Target {
        namespace: namespace.to_string(),
        pod: name.to_string(),
        container,
        node: node.to_string(),
    })
}

/// The container a request names, or the pod's only one.
pub fn validate_container(
    pod: &Value,
    name: &str,
    container: Option<&str>,
) -> Result<String, Status> {
    // Kubernetes visits init containers, containers, then ephemeral containers.
    let all: Vec<&str> = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|field| pod["spec"][*field].as_array().into_iter().flatten())
        .filter_map(|c| c["name"].as_str())
        .collect();
    match container {
        Some(container) if all.contains(&container) => Ok(container.to_string()),
        Some(container) => Err(Status::bad_request(format!(
            "container {container} is not valid for pod {name}"
        ))),
        None => {
            let containers = pod["spec"]["containers"].as_array();
            match containers.map(Vec::as_slice) {
                Some([only]) => Ok(only["name"].as_str().unwrap_or_default().to_string()),
                None | Some([]) => Err(Status::bad_request(format!(
                    "a container name must be specified for pod {name}"
                ))),
                Some(_) => Err(Status::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    all.join(" ")
                ))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn containers_are_defaulted_or_checked() {
        let one = json!({"spec": {"containers": [{"name": "app"}]}});
        assert_eq!(validate_container(&one, "p", None).unwrap(), "app");
        let two = json!({"spec": {
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "a"}, {"name": "b"}],
        }});
        assert_eq!(
            validate_container(&two, "p", None).unwrap_err().message,
            "a container name must be specified for pod p, choose one of: [init a b]"
        );
        assert_eq!(validate_container(&two, "p", Some("init")).unwrap(), "init");
        let error = validate_container(&two, "p", Some("c")).unwrap_err();
        assert_eq!(error.code, 400);
        assert_eq!(error.message, "container c is not valid for pod p");
    }
}
