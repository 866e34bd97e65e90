//! The controller manager: kube-controller-manager's controllers as level-driven
//! reconcilers over shared informers (see `kyb_runtime`). Each controller watches the
//! objects it cares about and moves the cluster toward their desired state; controllers
//! never call each other and cooperate only through API objects.
//!
//! - [`manager`]: which controllers run, leader election, the metrics endpoint
//!   ([`manager::run`]); [`options::Options`] holds kube-controller-manager's flags.
//! - [`context::Context`]: what every controller gets — the client, the shared informers,
//!   metrics, event recorders and the clock.
//! - [`controllers`]: the list of controllers by name.
//! - [`credentials`]: each controller's own service-account identity.
//! - [`ownership`]: controller references, adoption and orphaning by selector.
//! - One module per controller (below).

pub mod clock;
pub mod context;
pub mod controllers;
pub mod credentials;
pub mod cronjob;
pub mod csrapproving;
pub mod csrcleaner;
pub mod csrsigning;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod endpoints;
pub mod endpointslice;
pub mod garbagecollector;
pub mod history;
pub mod job;
pub mod manager;
pub mod namespace;
pub mod nodeipam;
pub mod nodelifecycle;
pub mod options;
pub mod ownership;
pub mod pod_creation;
pub mod podautoscaler;
pub mod replicaset;
pub mod resourcequota;
pub mod rootcacertpublisher;
pub mod selector;
pub mod serviceaccount;
pub mod statefulset;
pub mod ttlafterfinished;
pub mod volume;
