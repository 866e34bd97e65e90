//! What a component is: a name and a `run` that starts it, reports readiness and returns
//! when asked to stop; and the [`Context`] a run gets from the supervisor.

use async_trait::async_trait;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// A part of the process the [`Supervisor`](crate::Supervisor) runs.
///
/// `run` starts the component, calls [`Context::ready`] once it does its job (the next
/// component in the start order waits for that), and returns `Ok` once
/// [`Context::cancelled`] resolves, after stopping what it started. Returning before
/// that — with an error, with `Ok`, or by panicking — is a failure: the supervisor restarts
/// the component (calling `run` again) or, for an essential one, stops the process.
#[async_trait]
pub trait Component: Send + Sync + 'static {
    /// The name in logs and health checks (`scheduler` is reported as
    /// `component/scheduler`).
    fn name(&self) -> &str;

    /// Runs the component until `ctx` is cancelled.
    async fn run(&self, ctx: Context) -> anyhow::Result<()>;
}

/// What one run of a component gets: its cancellation token and a way to report
/// readiness.
pub struct Context {
    token: CancellationToken,
    ready: Box<dyn Fn() + Send + Sync>,
    reported: AtomicBool,
}

impl Context {
    pub(crate) fn new(token: CancellationToken, ready: impl Fn() + Send + Sync + 'static) -> Self {
        Self {
            token,
            ready: Box::new(ready),
            reported: AtomicBool::new(false),
        }
    }

    /// Reports the component ready (once; later calls do nothing).
    pub fn ready(&self) {
        if !self.reported.swap(true, Ordering::AcqRel) {
            (self.ready)();
        }
    }

    /// Resolves once the component is asked to stop.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.token.cancelled()
    }

    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// The cancellation token, for handing to what the component starts.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }
}

/// A component whose `run` is a closure, called again on each restart.
pub struct FnComponent<F> {
    name: String,
    run: F,
}

/// A component from a closure that may be called many times (a restartable one).
pub fn from_fn<F, Fut>(name: impl Into<String>, run: F) -> FnComponent<F>
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    FnComponent {
        name: name.into(),
        run,
    }
}

#[async_trait]
impl<F, Fut> Component for FnComponent<F>
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    async fn run(&self, ctx: Context) -> anyhow::Result<()> {
        (self.run)(ctx).await
    }
}

/// A component that consumes what it runs with, so it runs once: a second run fails.
/// Meant for essential components (the API server owns its listener).
pub struct OnceComponent<F> {
    name: String,
    run: Mutex<Option<F>>,
}

/// A component from a closure called at most once (an essential one).
pub fn once<F, Fut>(name: impl Into<String>, run: F) -> OnceComponent<F>
where
    F: FnOnce(Context) -> Fut + Send + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    OnceComponent {
        name: name.into(),
        run: Mutex::new(Some(run)),
    }
}

#[async_trait]
impl<F, Fut> Component for OnceComponent<F>
where
    F: FnOnce(Context) -> Fut + Send + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    async fn run(&self, ctx: Context) -> anyhow::Result<()> {
        let run = self.run.lock().unwrap_or_else(|e| e.into_inner()).take();
        match run {
            Some(run) => run(ctx).await,
            None => anyhow::bail!("{} runs once and cannot be restarted", self.name),
        }
    }
}
