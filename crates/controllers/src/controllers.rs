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
        Descriptor {
            name: crate::csrapproving::NAME,
            aliases: &["csrapproving"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::csrapproving::run(ctx)),
        },
        Descriptor {
            name: crate::csrcleaner::NAME,
            aliases: &["csrcleaner"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::csrcleaner::run(ctx)),
        },
        Descriptor {
            name: crate::csrsigning::NAME,
            aliases: &["csrsigning"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::csrsigning::run(ctx)),
        },
        Descriptor {
            name: crate::cronjob::NAME,
            aliases: &["cronjob"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::cronjob::run(ctx)),
        },
        Descriptor {
            name: crate::daemonset::NAME,
            aliases: &["daemonset"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::daemonset::run(ctx)),
        },
        Descriptor {
            name: "deployment-controller",
            aliases: &["deployment"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::deployment::run(ctx)),
        },
        Descriptor {
            name: crate::disruption::NAME,
            aliases: &["disruption"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::disruption::run(ctx)),
        },
        Descriptor {
            name: crate::endpoints::NAME,
            aliases: &["endpoint"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::endpoints::run(ctx)),
        },
        Descriptor {
            name: crate::endpointslice::NAME,
            aliases: &["endpointslice"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::endpointslice::run(ctx)),
        },
        Descriptor {
            name: crate::garbagecollector::NAME,
            aliases: &["garbagecollector"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::garbagecollector::run(ctx)),
        },
        Descriptor {
            name: crate::podautoscaler::NAME,
            aliases: &["horizontalpodautoscaling"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::podautoscaler::run(ctx)),
        },
        Descriptor {
            name: crate::job::NAME,
            aliases: &["job"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::job::run(ctx)),
        },
        Descriptor {
            name: crate::namespace::NAME,
            aliases: &["namespace"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::namespace::run(ctx)),
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
        Descriptor {
            name: crate::volume::persistentvolume::NAME,
            aliases: &["persistentvolume-binder"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::volume::persistentvolume::run(ctx)),
        },
        Descriptor {
            name: "replicaset-controller",
            aliases: &["replicaset"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::replicaset::run(ctx)),
        },
        Descriptor {
            name: "replicationcontroller-controller",
            aliases: &["replicationcontroller"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::replicaset::run_rc(ctx)),
        },
        Descriptor {
            name: crate::resourcequota::NAME,
            aliases: &["resourcequota"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::resourcequota::run(ctx)),
        },
        Descriptor {
            name: crate::rootcacertpublisher::NAME,
            aliases: &["root-ca-cert-publisher"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::rootcacertpublisher::run(ctx)),
        },
        Descriptor {
            name: crate::serviceaccount::NAME,
            aliases: &["serviceaccount"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::serviceaccount::run(ctx)),
        },
        Descriptor {
            name: crate::statefulset::NAME,
            aliases: &["statefulset"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::statefulset::run(ctx)),
        },
        Descriptor {
            name: crate::ttlafterfinished::NAME,
            aliases: &["ttl-after-finished"],
            on_by_default: true,
            start: |ctx| Box::pin(crate::ttlafterfinished::run(ctx)),
        },
    ]
}
