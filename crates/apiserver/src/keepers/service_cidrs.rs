//! The ClusterIP allocator's objects, kept as Kubernetes 1.33 keeps them (its default
//! ServiceCIDR controller, the controller manager's `service-cidr-controller` and the
//! API server's `RepairIPAddress` loop, here in one keeper):
//!
//! - the default ServiceCIDR `kubernetes` exists with `--service-cluster-ip-range` and is
//!   `Ready` (recreated if deleted);
//! - every other ServiceCIDR gets the `networking.k8s.io/service-cidr-finalizer` and the
//!   `Ready` condition; one being deleted keeps its finalizer (and says why in `Ready=False`,
//!   reason `Terminating`) while an allocated address lies in it and in no other ServiceCIDR;
//! - IPAddresses the allocator manages whose Service is gone are deleted (released), and a
//!   Service's cluster IP without its IPAddress gets one.
//!
//! It follows the watch cache's change feed (services, ServiceCIDRs, IPAddresses) and
//! resynchronizes periodically. Fixes are made under the allocation lock on a fresh cache,
//! so an address claimed for a Service still being created never looks leaked.

use crate::engine::Engine;
use crate::rest::service_ips::{
    self, DEFAULT_SERVICE_CIDR, FINALIZER, GROUP, MANAGED_BY, MANAGED_BY_LABEL, ServiceCidr,
};
use crate::rest::{self, internal_call};
use kyb_api::Status;
use kyb_api::registry::Subresource;
use kyb_apimachinery::meta;
use kyb_serving::Verb;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

/// How often everything is checked even without changes.
const RESYNC: Duration = Duration::from_secs(60);
/// How long a burst of changes is gathered into one pass.
const GATHER: Duration = Duration::from_millis(100);

/// Keeps the allocator's objects for as long as the server runs.
pub async fn run(engine: Arc<Engine>) {
    let mut changes = engine.cache.changes();
    let mut resync = tokio::time::interval(RESYNC);
    loop {
        pass(&engine).await;
        loop {
            tokio::select! {
                change = changes.recv() => match change {
                    Ok(change) if relevant(&change.def.group, &change.def.plural) => break,
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => break,
                    Err(RecvError::Closed) => return,
                },
                _ = resync.tick() => break,
            }
        }
        tokio::time::sleep(GATHER).await;
        while changes.try_recv().is_ok() {}
    }
}

fn relevant(group: &str, plural: &str) -> bool {
    matches!(
        (group, plural),
        ("", "services") | (GROUP, "servicecidrs" | "ipaddresses")
    )
}

async fn pass(engine: &Arc<Engine>) {
    if let Err(status) = ensure_default(engine).await {
        tracing::warn!(error = %status.message, "cannot keep the default ServiceCIDR");
    }
    if let Err(status) = keep_service_cidrs(engine).await {
        tracing::warn!(error = %status.message, "cannot keep the ServiceCIDRs");
    }
    repair(engine).await;
}

/// The `Ready=True` condition, with the message Kubernetes gives it.
fn ready(message: &str) -> Value {
    json!({
        "type": "Ready",
        "status": "True",
        "reason": "",
        "message": message,
        "lastTransitionTime": crate::util::now(),
    })
}

/// Creates the default ServiceCIDR if it is missing and marks it Ready when it holds the
/// configured range (as the API server's default ServiceCIDR controller does).
pub async fn ensure_default(engine: &Arc<Engine>) -> Result<(), Status> {
    let def = service_ips::definition(engine, "servicecidrs")?;
    let (base, bits) = engine.services.service_cidr;
    let range = format!("{base}/{bits}");
    let current = match engine
        .cache
        .lookup(GROUP, "servicecidrs", None, DEFAULT_SERVICE_CIDR)
    {
        Some(current) => current,
        None => {
            let object = json!({
                "apiVersion": "networking.k8s.io/v1",
                "kind": "ServiceCIDR",
                "metadata": {"name": DEFAULT_SERVICE_CIDR},
                "spec": {"cidrs": [range]},
            });
            match rest::ensure(engine, &def, object, false).await {
                Ok(created) => created,
                Err(status) if status.code == 409 => return Ok(()),
                Err(status) => return Err(status),
            }
        }
    };
    let cidr = ServiceCidr::of(&current);
    let configured = current.pointer("/spec/cidrs") == Some(&json!([range]));
    if cidr.ready || cidr.deleting || !configured {
        return Ok(());
    }
    set_condition(
        engine,
        &def,
        DEFAULT_SERVICE_CIDR,
        ready("Kubernetes default Service CIDR is ready"),
    )
    .await
}

/// Replaces a ServiceCIDR's `Ready` condition.
async fn set_condition(
    engine: &Arc<Engine>,
    def: &Arc<kyb_api::Resource>,
    name: &str,
    condition: Value,
) -> Result<(), Status> {
    let call = internal_call(engine, def, Verb::Update, None, Some(Subresource::Status))?;
    rest::update_status(&call, name, None, json!({"conditions": [condition]}))
        .await
        .map(|_| ())
}

/// Finalizers and conditions of every ServiceCIDR.
async fn keep_service_cidrs(engine: &Arc<Engine>) -> Result<(), Status> {
    let def = service_ips::definition(engine, "servicecidrs")?;
    for object in engine.cache.objects(GROUP, "servicecidrs", None) {
        let cidr = ServiceCidr::of(&object);
        let finalized = meta::finalizers(&object).contains(&FINALIZER);
        if cidr.deleting {
            if finalized {
                release_service_cidr(engine, &def, &cidr).await?;
            }
            continue;
        }
        if !finalized {
            rest::modify(engine, &def, None, &cidr.name, |new| {
                let metadata = meta::metadata_mut(new);
                let finalizers = metadata.entry("finalizers").or_insert_with(|| json!([]));
                if let Some(list) = finalizers.as_array_mut() {
                    list.push(FINALIZER.into());
                }
            })
            .await?;
        }
        if !cidr.ready && cidr.name != DEFAULT_SERVICE_CIDR {
            set_condition(
                engine,
                &def,
                &cidr.name,
                ready("Kubernetes Service CIDR is ready"),
            )
            .await?;
        }
    }
    Ok(())
}

/// Lets a ServiceCIDR being deleted go once no allocated address depends on it alone.
async fn release_service_cidr(
    engine: &Arc<Engine>,
    def: &Arc<kyb_api::Resource>,
    cidr: &ServiceCidr,
) -> Result<(), Status> {
    let _allocating = engine.services.allocation.lock().await;
    engine.fresh().await;
    let others: Vec<ServiceCidr> = service_ips::service_cidrs(engine)
        .into_iter()
        .filter(|other| other.name != cidr.name && !other.deleting)
        .collect();
    let orphaned = managed_addresses(engine).into_iter().any(|(ip, _)| {
        cidr.ranges.iter().any(|r| service_ips::contains(*r, ip))
            && !others
                .iter()
                .flat_map(|o| &o.ranges)
                .any(|r| service_ips::contains(*r, ip))
    });
    if orphaned {
        let object = engine
            .cache
            .lookup(GROUP, "servicecidrs", None, &cidr.name)
            .unwrap_or_default();
        let terminating = object
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["reason"] == "Terminating");
        if terminating {
            return Ok(());
        }
        let condition = json!({
            "type": "Ready",
            "status": "False",
            "reason": "Terminating",
            "message": "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR",
            "lastTransitionTime": crate::util::now(),
        });
        return set_condition(engine, def, &cidr.name, condition).await;
    }
    match rest::modify(engine, def, None, &cidr.name, |new| {
        if let Some(list) = new
            .pointer_mut("/metadata/finalizers")
            .and_then(Value::as_array_mut)
        {
            list.retain(|f| f != FINALIZER);
        }
    })
    .await
    {
        Err(status) if status.code != 404 => Err(status),
        _ => Ok(()),
    }
}

/// The addresses of the IPAddresses the allocator manages, each with its parent
/// (`namespace/name` of a Service).
fn managed_addresses(engine: &Engine) -> Vec<(Ipv4Addr, Option<String>)> {
    engine
        .cache
        .objects_shared(GROUP, "ipaddresses", None)
        .iter()
        .filter(|a| {
            meta::labels(a)
                .and_then(|l| l.get(MANAGED_BY_LABEL))
                .and_then(Value::as_str)
                == Some(MANAGED_BY)
        })
        .filter_map(|a| {
            let ip = meta::name(a)?.parse().ok()?;
            let parent = a.pointer("/spec/parentRef")?;
            let service = (parent["group"].as_str().unwrap_or_default().is_empty()
                && parent["resource"] == "services")
                .then(|| {
                    format!(
                        "{}/{}",
                        parent["namespace"].as_str().unwrap_or_default(),
                        parent["name"].as_str().unwrap_or_default()
                    )
                });
            Some((ip, service))
        })
        .collect()
}

/// What the repair fixes: addresses to release, and Services' addresses to claim.
#[derive(Default, PartialEq, Debug)]
struct Drift {
    leaked: Vec<Ipv4Addr>,
    missing: Vec<(Ipv4Addr, String, String)>,
}

fn drift(engine: &Engine) -> Drift {
    let mut held: HashMap<Ipv4Addr, (String, String)> = HashMap::new();
    for service in engine.cache.objects_shared("", "services", None) {
        let namespace = meta::namespace(&service).unwrap_or_default();
        let name = meta::name(&service).unwrap_or_default();
        for ip in service
            .pointer("/spec/clusterIPs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|ip| ip.as_str()?.parse::<Ipv4Addr>().ok())
        {
            held.insert(ip, (namespace.to_string(), name.to_string()));
        }
    }
    let present: HashSet<Ipv4Addr> = service_ips::allocated(engine);
    let mut drift = Drift::default();
    for (ip, parent) in managed_addresses(engine) {
        if !held.contains_key(&ip) {
            drift.leaked.push(ip);
        } else if parent.is_none() {
            tracing::debug!(%ip, "a managed IPAddress has a parent other than a Service");
        }
    }
    let mut ranges: Vec<_> = service_ips::service_cidrs(engine)
        .into_iter()
        .flat_map(|c| c.ranges)
        .collect();
    if ranges.is_empty() {
        ranges.push(engine.services.service_cidr);
    }
    for (ip, (namespace, name)) in held {
        if !present.contains(&ip) && ranges.iter().any(|r| service_ips::contains(*r, ip)) {
            drift.missing.push((ip, namespace, name));
        }
    }
    drift
}

/// Releases leaked addresses and claims missing ones (Kubernetes' `RepairIPAddress`).
async fn repair(engine: &Arc<Engine>) {
    if drift(engine) == Drift::default() {
        return;
    }
    let _allocating = engine.services.allocation.lock().await;
    engine.fresh().await;
    let drift = drift(engine);
    for ip in drift.leaked {
        tracing::info!(%ip, "releasing a cluster IP whose Service is gone");
        service_ips::release(engine, ip).await;
    }
    for (ip, namespace, name) in drift.missing {
        tracing::info!(%ip, service = %format!("{namespace}/{name}"), "claiming a Service's cluster IP without an IPAddress");
        if let Err(status) = service_ips::claim(engine, ip, &namespace, &name).await {
            tracing::warn!(%ip, error = %status.message, "cannot repair a cluster IP's IPAddress");
        }
    }
}
