//! The supervisor: runs components in order, keeps their health checks current, restarts
//! failed ones, and stops them in reverse order.
//!
//! - **Start order.** Components start in the order they were added; each starts once the
//!   one before it is ready, or has failed (a restartable one then keeps restarting on its
//!   own, so one broken component does not hold back the rest).
//! - **Failure.** A run that ends before it was asked to stop — an error, `Ok`, a panic — is
//!   a failure. A restartable component is started again after a delay ([`Backoff`]: 1 s
//!   doubling to 30 s, back to 1 s once a run had been ready for a minute); an essential one
//!   stops every other component (in reverse order) and [`Supervisor::run`] returns the
//!   failure.
//! - **Health.** Each component has a `component/<name>` check: not ready while starting,
//!   failed or stopping; not live while failed (until its restart). A `shutdown` readiness
//!   check fails once shutdown begins, as kube-apiserver's does.
//! - **Shutdown.** When the shutdown future resolves, components are cancelled one at a
//!   time, last started first; each gets the stop deadline to return before it is aborted.

use crate::component::{Component, Context};
use crate::health::{Health, Probe, State};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The readiness check that fails once shutdown begins.
pub const SHUTDOWN_CHECK: &str = "shutdown";

/// The health check reporting the component `name`: `component/<name>`.
pub fn check_name(name: &str) -> String {
    format!("component/{name}")
}

/// How long a restartable component waits before each restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The first delay, and the delay again after a healthy run.
    pub initial: Duration,
    /// Delays double up to this.
    pub max: Duration,
    /// A run that was ready at least this long counts as healthy: the next delay is
    /// `initial` again.
    pub reset_after: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(30),
            reset_after: Duration::from_secs(60),
        }
    }
}

impl Backoff {
    /// The delay after a failure, given the previous delay and how long the failed run had
    /// been ready.
    fn next(&self, previous: Option<Duration>, ready_for: Option<Duration>) -> Duration {
        match previous {
            Some(previous) if ready_for.is_none_or(|ready| ready < self.reset_after) => {
                previous.saturating_mul(2).min(self.max)
            }
            _ => self.initial,
        }
    }
}

/// Why the supervisor stopped the process.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An essential component failed; every other one was stopped.
    #[error("{component} failed")]
    Failed {
        component: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

struct Member {
    component: Arc<dyn Component>,
    essential: bool,
}

/// Runs components: see the module documentation for the policy.
pub struct Supervisor {
    health: Health,
    members: Vec<Member>,
    backoff: Backoff,
    stop_timeout: Duration,
}

impl Supervisor {
    /// A supervisor keeping `health` current; a 1 s to 30 s backoff, 10 s to stop each
    /// component.
    pub fn new(health: Health) -> Supervisor {
        Supervisor {
            health,
            members: vec![],
            backoff: Backoff::default(),
            stop_timeout: Duration::from_secs(10),
        }
    }

    pub fn backoff(mut self, backoff: Backoff) -> Supervisor {
        self.backoff = backoff;
        self
    }

    /// How long each component gets to return once cancelled before it is aborted.
    pub fn stop_timeout(mut self, timeout: Duration) -> Supervisor {
        self.stop_timeout = timeout;
        self
    }

    /// Adds a component whose failure stops the process.
    pub fn essential(&mut self, component: impl Component) -> &mut Supervisor {
        self.add(Arc::new(component), true)
    }

    /// Adds a component restarted with backoff when it fails.
    pub fn restartable(&mut self, component: impl Component) -> &mut Supervisor {
        self.add(Arc::new(component), false)
    }

    fn add(&mut self, component: Arc<dyn Component>, essential: bool) -> &mut Supervisor {
        self.members.push(Member {
            component,
            essential,
        });
        self
    }

    /// Runs the components until `shutdown` resolves (`Ok`) or an essential component
    /// fails (its error); either way every started component has been stopped, in reverse
    /// order, when this returns.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), Error> {
        let (events, mut received) = mpsc::unbounded_channel();
        let mut run = Run {
            slots: self
                .members
                .into_iter()
                .map(|member| Slot {
                    check: check_name(member.component.name()),
                    component: member.component,
                    essential: member.essential,
                    generation: 0,
                    token: CancellationToken::new(),
                    running: None,
                    ready_since: None,
                    settled: false,
                    restart_at: None,
                    delay: None,
                })
                .collect(),
            health: self.health,
            backoff: self.backoff,
            events,
        };
        for slot in &run.slots {
            run.health
                .set(&slot.check, Probe::Ready, State::failed("not started"));
            run.health.set(&slot.check, Probe::Live, State::Ok);
        }
        run.health.set(SHUTDOWN_CHECK, Probe::Ready, State::Ok);

        tokio::pin!(shutdown);
        let mut started = 0;
        let mut failure = None;
        loop {
            while started < run.slots.len() && (started == 0 || run.slots[started - 1].settled) {
                run.start(started);
                started += 1;
            }
            let restart = run.slots.iter().filter_map(|slot| slot.restart_at).min();
            tokio::select! {
                () = &mut shutdown => {
                    tracing::info!("shutting down: stopping components");
                    break;
                }
                Some(event) = received.recv() => {
                    if let Some(error) = run.handle(event) {
                        failure = Some(error);
                        break;
                    }
                }
                () = tokio::time::sleep_until(restart.unwrap_or_else(Instant::now)), if restart.is_some() => {
                    run.restart_due();
                }
            }
        }

        run.health
            .set(SHUTDOWN_CHECK, Probe::Ready, State::failed("shutting down"));
        for index in (0..started).rev() {
            run.stop(index, &mut received, self.stop_timeout).await;
        }
        failure.map_or(Ok(()), Err)
    }
}

/// What a component's run reports to the supervisor.
enum Event {
    Ready {
        index: usize,
        generation: u64,
    },
    Exited {
        index: usize,
        generation: u64,
        outcome: anyhow::Result<()>,
    },
}

/// One component as the supervisor tracks it.
struct Slot {
    component: Arc<dyn Component>,
    essential: bool,
    check: String,
    /// Counts runs, so that reports from an earlier run are told apart.
    generation: u64,
    token: CancellationToken,
    /// The current run's task, while there is one.
    running: Option<AbortHandle>,
    ready_since: Option<Instant>,
    /// Ready once, or failed once: the next component may start.
    settled: bool,
    restart_at: Option<Instant>,
    /// The delay before the last restart.
    delay: Option<Duration>,
}

/// The state of one [`Supervisor::run`].
struct Run {
    slots: Vec<Slot>,
    health: Health,
    backoff: Backoff,
    events: mpsc::UnboundedSender<Event>,
}

impl Run {
    fn start(&mut self, index: usize) {
        let slot = &mut self.slots[index];
        slot.generation += 1;
        slot.token = CancellationToken::new();
        slot.ready_since = None;
        let generation = slot.generation;
        let name = slot.component.name().to_string();
        self.health
            .set(&slot.check, Probe::Ready, State::failed("starting"));
        self.health.set(&slot.check, Probe::Live, State::Ok);
        tracing::debug!(component = %name, "starting");

        let ready = {
            let events = self.events.clone();
            move || {
                let _ = events.send(Event::Ready { index, generation });
            }
        };
        let ctx = Context::new(slot.token.clone(), ready);
        let component = slot.component.clone();
        let task = tokio::spawn(async move { component.run(ctx).await });
        slot.running = Some(task.abort_handle());
        let events = self.events.clone();
        tokio::spawn(async move {
            let outcome = match task.await {
                Ok(result) => result,
                Err(error) if error.is_panic() => Err(anyhow::anyhow!(
                    "panicked: {}",
                    panic_message(error.into_panic())
                )),
                Err(_) => Err(anyhow::anyhow!("aborted")),
            };
            let _ = events.send(Event::Exited {
                index,
                generation,
                outcome,
            });
        });
    }

    /// Takes in a report; returns the error that ends the supervision, if any.
    fn handle(&mut self, event: Event) -> Option<Error> {
        match event {
            Event::Ready { index, generation } => {
                let slot = &mut self.slots[index];
                if slot.generation != generation || slot.running.is_none() {
                    return None;
                }
                slot.ready_since = Some(Instant::now());
                slot.settled = true;
                self.health.set(&slot.check, Probe::Ready, State::Ok);
                self.health.set(&slot.check, Probe::Live, State::Ok);
                tracing::debug!(component = %slot.component.name(), "ready");
                None
            }
            Event::Exited {
                index,
                generation,
                outcome,
            } => {
                let slot = &mut self.slots[index];
                if slot.generation != generation || slot.running.is_none() {
                    return None;
                }
                slot.running = None;
                slot.settled = true;
                let error = match outcome {
                    Ok(()) => anyhow::anyhow!("stopped without being asked to"),
                    Err(error) => error,
                };
                let name = slot.component.name().to_string();
                let reason = format!("{error:#}");
                self.health
                    .set(&slot.check, Probe::Ready, State::failed(reason.clone()));
                self.health
                    .set(&slot.check, Probe::Live, State::failed(reason.clone()));
                if slot.essential {
                    tracing::error!(component = %name, error = %reason, "essential component failed; stopping");
                    return Some(Error::Failed {
                        component: name,
                        source: error.into(),
                    });
                }
                let now = Instant::now();
                let delay = self.backoff.next(
                    slot.delay,
                    slot.ready_since.map(|since| now.duration_since(since)),
                );
                slot.delay = Some(delay);
                slot.restart_at = Some(now + delay);
                slot.ready_since = None;
                tracing::error!(component = %name, error = %reason, restart_in = ?delay, "component failed");
                None
            }
        }
    }

    /// Starts again every failed component whose delay has passed.
    fn restart_due(&mut self) {
        let now = Instant::now();
        for index in 0..self.slots.len() {
            let slot = &mut self.slots[index];
            if slot.restart_at.is_some_and(|at| at <= now) {
                slot.restart_at = None;
                tracing::info!(component = %slot.component.name(), "restarting");
                self.start(index);
            }
        }
    }

    /// Cancels one component and waits for its run to return, aborting it after `timeout`.
    async fn stop(
        &mut self,
        index: usize,
        received: &mut mpsc::UnboundedReceiver<Event>,
        timeout: Duration,
    ) {
        let slot = &mut self.slots[index];
        slot.restart_at = None;
        let name = slot.component.name().to_string();
        let check = slot.check.clone();
        let Some(abort) = slot.running.clone() else {
            return;
        };
        let generation = slot.generation;
        self.health
            .set(&check, Probe::Ready, State::failed("stopping"));
        slot.token.cancel();
        tracing::debug!(component = %name, "stopping");
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                Some(event) = received.recv() => {
                    let Event::Exited { index: exited, generation: run, outcome } = event else {
                        continue;
                    };
                    let slot = &mut self.slots[exited];
                    if slot.generation != run || slot.running.is_none() {
                        continue;
                    }
                    slot.running = None;
                    let stopped = exited == index && run == generation;
                    match outcome {
                        Ok(()) if stopped => tracing::debug!(component = %name, "stopped"),
                        Ok(()) => tracing::warn!(component = %slot.component.name(), "stopped while another component was stopping"),
                        Err(error) => tracing::warn!(component = %slot.component.name(), error = %format!("{error:#}"), "failed while stopping"),
                    }
                    if stopped {
                        break;
                    }
                }
                () = &mut deadline => {
                    tracing::warn!(component = %name, ?timeout, "did not stop in time; aborting it");
                    abort.abort();
                    self.slots[index].running = None;
                    break;
                }
            }
        }
        self.health
            .set(&check, Probe::Ready, State::failed("stopped"));
    }
}

/// The message a panic was raised with.
fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "(no message)".to_string()
    }
}

#[cfg(test)]
mod tests;
