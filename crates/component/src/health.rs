//! The health registry: named checks, each with its current state for readiness
//! (`/readyz`) and liveness (`/livez`, `/healthz`), listed in the order they were first set.
//!
//! Kubernetes' meaning is kept: a check fails readiness while what it watches is starting,
//! failed or shutting down (traffic should go elsewhere), and fails liveness only for real
//! breakage (restarting the process might help). A check takes part only in the probes it
//! has been set for (`shutdown` is a readiness check only).

use std::sync::{Arc, Mutex};

/// Which endpoint a check answers for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// `/readyz`: should this process get traffic now?
    Ready,
    /// `/livez` (and `/healthz`): is this process working at all?
    Live,
}

/// A check's current state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    Ok,
    /// Failing, and why (logged and kept for operators; the HTTP answer withholds it).
    Failed(String),
}

impl State {
    pub fn failed(reason: impl Into<String>) -> State {
        State::Failed(reason.into())
    }

    pub fn is_ok(&self) -> bool {
        matches!(self, State::Ok)
    }
}

#[derive(Debug)]
struct Check {
    name: String,
    ready: Option<State>,
    live: Option<State>,
}

/// The checks of one process, shared by whoever sets and whoever reports them.
#[derive(Clone, Debug, Default)]
pub struct Health {
    checks: Arc<Mutex<Vec<Check>>>,
}

impl Health {
    pub fn new() -> Health {
        Health::default()
    }

    /// Sets `name`'s state for `probe`, adding the check if it is new.
    pub fn set(&self, name: &str, probe: Probe, state: State) {
        let mut checks = self.checks.lock().unwrap_or_else(|e| e.into_inner());
        let index = match checks.iter().position(|c| c.name == name) {
            Some(index) => index,
            None => {
                checks.push(Check {
                    name: name.to_string(),
                    ready: None,
                    live: None,
                });
                checks.len() - 1
            }
        };
        let check = &mut checks[index];
        match probe {
            Probe::Ready => check.ready = Some(state),
            Probe::Live => check.live = Some(state),
        }
    }

    /// The checks taking part in `probe`, in order, with their states.
    pub fn checks(&self, probe: Probe) -> Vec<(String, State)> {
        let checks = self.checks.lock().unwrap_or_else(|e| e.into_inner());
        checks
            .iter()
            .filter_map(|check| {
                let state = match probe {
                    Probe::Ready => check.ready.as_ref(),
                    Probe::Live => check.live.as_ref(),
                };
                state.map(|state| (check.name.clone(), state.clone()))
            })
            .collect()
    }

    /// One check's state for `probe`, if it takes part in it.
    pub fn get(&self, name: &str, probe: Probe) -> Option<State> {
        self.checks(probe)
            .into_iter()
            .find_map(|(n, state)| (n == name).then_some(state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_keep_their_order_and_take_part_only_where_set() {
        let health = Health::new();
        health.set("component/a", Probe::Ready, State::failed("starting"));
        health.set("component/a", Probe::Live, State::Ok);
        health.set("shutdown", Probe::Ready, State::Ok);
        health.set("component/a", Probe::Ready, State::Ok);
        assert_eq!(
            health.checks(Probe::Ready),
            vec![
                ("component/a".to_string(), State::Ok),
                ("shutdown".to_string(), State::Ok)
            ]
        );
        assert_eq!(
            health.checks(Probe::Live),
            vec![("component/a".to_string(), State::Ok)]
        );
        assert_eq!(health.get("shutdown", Probe::Live), None);
        assert!(
            health
                .clone()
                .get("component/a", Probe::Ready)
                .is_some_and(|s| s.is_ok())
        );
    }
}
