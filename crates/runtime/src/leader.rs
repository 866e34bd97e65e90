//! Leader election through a `coordination.k8s.io/v1` Lease (`kube-system/kube-scheduler` by
//! default), as Kubernetes' client-go does it: the holder renews the lease every retry
//! period; a candidate takes it over when its renew time is older than the lease duration;
//! every write is a compare-and-swap on the lease's resourceVersion, so two candidates never
//! both win. A leader that cannot renew within the renew deadline steps down.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::PostParams;
use std::time::Duration;
use tokio::sync::watch;

/// Who competes for what, and how fast.
#[derive(Clone, Debug)]
pub struct Election {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

enum Outcome {
    Leading,
    Following,
    Failed(String),
}

fn now() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

impl Election {
    /// Competes for the lease forever, publishing whether this candidate leads.
    pub async fn run(self, client: kube::Client, leading: watch::Sender<bool>) {
        let api: Api<Lease> = Api::namespaced(client, &self.namespace);
        let mut last_renewal = tokio::time::Instant::now();
        loop {
            match self.try_acquire_or_renew(&api).await {
                Outcome::Leading => {
                    last_renewal = tokio::time::Instant::now();
                    if !*leading.borrow() {
                        tracing::info!(lease = %self.name, identity = %self.identity, "became the leader");
                        let _ = leading.send(true);
                    }
                }
                Outcome::Following => {
                    if *leading.borrow() {
                        tracing::warn!(lease = %self.name, "lost the lease to another candidate");
                        let _ = leading.send(false);
                    }
                }
                Outcome::Failed(error) => {
                    tracing::debug!(%error, lease = %self.name, "leader election");
                    if *leading.borrow() && last_renewal.elapsed() > self.renew_deadline {
                        tracing::warn!(lease = %self.name, "could not renew the lease in time; stepping down");
                        let _ = leading.send(false);
                    }
                }
            }
            tokio::time::sleep(self.retry_period).await;
        }
    }

    async fn try_acquire_or_renew(&self, api: &Api<Lease>) -> Outcome {
        let duration_seconds = i32::try_from(self.lease_duration.as_secs()).unwrap_or(15);
        let existing = match api.get_opt(&self.name).await {
            Ok(existing) => existing,
            Err(error) => return Outcome::Failed(error.to_string()),
        };
        let Some(mut lease) = existing else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: Some(self.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(duration_seconds),
                    acquire_time: Some(now()),
                    renew_time: Some(now()),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match api.create(&PostParams::default(), &lease).await {
                Ok(_) => Outcome::Leading,
                Err(kube::Error::Api(status)) if status.code == 409 => Outcome::Following,
                Err(error) => Outcome::Failed(error.to_string()),
            };
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let held_for = spec
            .lease_duration_seconds
            .map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)))
            .unwrap_or(self.lease_duration);
        let expired = spec.renew_time.as_ref().is_none_or(|renewed| {
            let age = k8s_openapi::jiff::Timestamp::now().duration_since(renewed.0);
            age.as_secs_f64() > held_for.as_secs_f64()
        });
        if holder != self.identity && !holder.is_empty() && !expired {
            return Outcome::Following;
        }
        if holder != self.identity {
            spec.acquire_time = Some(now());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            spec.holder_identity = Some(self.identity.clone());
        }
        spec.renew_time = Some(now());
        spec.lease_duration_seconds = Some(duration_seconds);
        // The resourceVersion read makes this a compare-and-swap.
        match api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Outcome::Leading,
            Err(kube::Error::Api(status)) if status.code == 409 => Outcome::Following,
            Err(error) => Outcome::Failed(error.to_string()),
        }
    }
}
