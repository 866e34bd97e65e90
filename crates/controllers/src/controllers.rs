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
            name: crate::disruption::NAME,
            aliases: &["disruption"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::disruption::run(ctx)),
        },
        Descriptor {
            name: crate::nodeipam::NAME,
            aliases: &["nodeipam"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::nodeipam::run(ctx)),
        },
        Descriptor {
            name: crate::nodelifecycle::NAME,
            aliases: &["nodelifecycle"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::nodelifecycle::run(ctx)),
        },
    ]
}
