//! Supervised components: the parts `kyb` runs in one process (the API server, the
//! scheduler, the controller manager, and next the node's components), each started,
//! watched and stopped the same way.
//!
//! - [`Component`]: a named unit with one `run(ctx)` that starts it, says when it is ready
//!   ([`Context::ready`]) and returns once its cancellation token is cancelled
//!   ([`Context::cancelled`]); [`from_fn`] and [`once`] make one from a closure.
//! - [`Supervisor`]: starts components in order (each after the one before it is ready),
//!   restarts a failed one with exponential backoff ([`Backoff`]) or, for an essential one,
//!   stops everything and reports the failure ([`Error`]); on shutdown cancels them in
//!   reverse order, waiting for each up to a deadline.
//! - [`Health`]: named checks with their current [`State`] for each [`Probe`] (`/readyz`,
//!   `/livez`); the supervisor keeps `component/<name>` and `shutdown` current, the API
//!   server reports them.

mod component;
mod health;
mod supervisor;

pub use component::{Component, Context, FnComponent, OnceComponent, from_fn, once};
pub use health::{Health, Probe, State};
pub use supervisor::{Backoff, Error, SHUTDOWN_CHECK, Supervisor, check_name};
