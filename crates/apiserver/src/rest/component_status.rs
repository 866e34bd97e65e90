//! `componentstatuses` (core/v1; deprecated since 1.19 and still served): the health of
//! the store (`etcd-0`), the scheduler and the controller manager, computed on each
//! request as a k3s server reports the components it runs in its own process — from the
//! store and from the process's health registry (`component/scheduler`,
//! `component/controller-manager`). Never stored; get and list only, each answered with
//! Kubernetes' deprecation warning.

use super::{Call, present};
use crate::response::Response;
use http::StatusCode;
use kyb_api::Status;
use kyb_component::{Probe, State};
use kyb_serving::Verb;
use serde_json::{Value, json};

/// The warning Kubernetes sends with every ComponentStatus response.
const DEPRECATED: &str = "v1 ComponentStatus is deprecated in v1.19+";

/// The components, in the order Kubernetes lists them.
const COMPONENTS: [&str; 3] = ["scheduler", "controller-manager", "etcd-0"];

/// Serves a get or list of `componentstatuses`.
pub async fn serve(call: &Call<'_>) -> Result<Response, Status> {
    let statuses = match call.verb {
        Verb::Get | Verb::List => statuses(call).await,
        _ => {
            return Err(Status::method_not_allowed(format!(
                "{} is not supported on {}",
                call.verb.as_str(),
                call.def.plural
            )));
        }
    };
    call.warn(DEPRECATED);
    if call.verb == Verb::Get {
        let name = call.name()?;
        let status = statuses
            .into_iter()
            .find(|s| s["metadata"]["name"] == name)
            .ok_or_else(|| call.not_found(name))?;
        return Ok(present::value_response(call, &status, StatusCode::OK));
    }
    Ok(present::computed_list(
        call,
        "ComponentStatusList",
        statuses,
    ))
}

/// Every component's status now.
async fn statuses(call: &Call<'_>) -> Vec<Value> {
    let store = match call.engine.store.current_revision().await {
        Ok(_) => State::Ok,
        Err(error) => State::failed(error.to_string()),
    };
    COMPONENTS
        .iter()
        .map(|name| {
            let (state, healthy_message) = match *name {
                "etcd-0" => (store.clone(), r#"{"health":"true","reason":""}"#),
                component => (
                    call.engine
                        .health
                        .get(&format!("component/{component}"), Probe::Ready)
                        .unwrap_or_else(|| {
                            State::failed(format!("{component} is not run by this server"))
                        }),
                    "ok",
                ),
            };
            component_status(name, &state, healthy_message)
        })
        .collect()
}

/// A ComponentStatus with its `Healthy` condition.
fn component_status(name: &str, state: &State, healthy_message: &str) -> Value {
    let condition = match state {
        State::Ok => json!({"type": "Healthy", "status": "True", "message": healthy_message}),
        State::Failed(reason) => json!({"type": "Healthy", "status": "False", "error": reason}),
    };
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "conditions": [condition],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_say_healthy_or_why_not() {
        let ok = component_status("scheduler", &State::Ok, "ok");
        assert_eq!(
            ok["conditions"][0],
            json!({"type": "Healthy", "status": "True", "message": "ok"})
        );
        let failed = component_status("etcd-0", &State::failed("closed"), "");
        assert_eq!(failed["conditions"][0]["status"], "False");
        assert_eq!(failed["conditions"][0]["error"], "closed");
    }
}
