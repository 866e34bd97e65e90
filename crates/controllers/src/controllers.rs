//! Every controller the manager can run, by kube-controller-manager's name (with the short
//! aliases `--controllers` also accepts). Each entry's `start` registers its informer
//! handlers and runs the controller until the process ends.

use crate::context::Context;
use futures::future::BoxFuture;
use std::sync::Arc;

/// A controller the manager can run.
pub struct Descriptor {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub on_by_default: bool,
    pub start: fn(Arc<Context>) -> BoxFuture<'static, anyhow::Result<()>>,
}

/// Every controller, in name order.
pub fn all() -> Vec<Descriptor> {
    vec![
        // One entry per controller, sorted by name:
        // Descriptor { name: "deployment-controller", aliases: &["deployment"], on_by_default: true, start: |ctx| Box::pin(crate::deployment::run(ctx)) },
        Descriptor {
            name: crate::cronjob::NAME,
            aliases: &["cronjob"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::cronjob::run(ctx)),
        },
        Descriptor {
            name: crate::job::NAME,
            aliases: &["job"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::job::run(ctx)),
        },
        Descriptor {
            name: crate::ttlafterfinished::NAME,
            aliases: &["ttl-after-finished"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::ttlafterfinished::run(ctx)),
        },
    ]
}
