//! Deleting everything in a namespace: every namespaced resource discovery lists with the
//! `delete` verb is emptied (`deletecollection` where served, else list and delete each
//! object, in the background), then listed again to see what remains and which finalizers
//! hold it.

use super::conditions::Outcome;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams};
use kube::core::PartialObjectMeta;
use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope, verbs};

/// One pass: deletes what it can in `namespace`; returns what it found and how many
/// seconds the slowest graceful deletion still has (pods).
pub async fn delete_all(client: &kube::Client, namespace: &str) -> (Outcome, i64) {
    let mut outcome = Outcome::default();
    let mut estimate = 0;
    let discovery = match Discovery::new(client.clone()).run().await {
        Ok(discovery) => discovery,
        Err(error) => {
            outcome.discovery_failure = Some(format!("Discovery failed for some groups: {error}"));
            return (outcome, estimate);
        }
    };
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            if !deletable(&caps) {
                continue;
            }
            match empty(client, namespace, &resource, &caps, &mut outcome).await {
                Ok(grace) => estimate = estimate.max(grace),
                Err(error) => outcome
                    .content_failures
                    .push(format!("{}.{}: {error}", resource.plural, resource.group)),
            }
        }
    }
    (outcome, estimate)
}

fn deletable(caps: &ApiCapabilities) -> bool {
    matches!(caps.scope, Scope::Namespaced)
        && caps.supports_operation(verbs::DELETE)
        && caps.supports_operation(verbs::LIST)
}

/// Deletes the objects of one resource, then counts what remains.
async fn empty(
    client: &kube::Client,
    namespace: &str,
    resource: &ApiResource,
    caps: &ApiCapabilities,
    outcome: &mut Outcome,
) -> Result<i64, kube::Error> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, resource);
    let metadata: Api<PartialObjectMeta<DynamicObject>> =
        Api::namespaced_with(client.clone(), namespace, resource);
    let mut collected = false;
    if caps.supports_operation(verbs::DELETE_COLLECTION) {
        match api
            .delete_collection(&DeleteParams::background(), &ListParams::default())
            .await
        {
            Ok(_) => collected = true,
            Err(kube::Error::Api(status)) if status.code == 404 || status.code == 405 => {}
            Err(error) => return Err(error),
        }
    }
    if !collected {
        for object in metadata.list(&ListParams::default()).await?.items {
            if object.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let Some(name) = object.metadata.name.as_deref() else {
                continue;
            };
            match api.delete(name, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
                Err(error) => return Err(error),
            }
        }
    }
    let remaining = metadata.list(&ListParams::default()).await?.items;
    if remaining.is_empty() {
        return Ok(0);
    }
    let mut grace = 0;
    for object in &remaining {
        for finalizer in object.metadata.finalizers.as_deref().unwrap_or_default() {
            *outcome.finalizers.entry(finalizer.clone()).or_default() += 1;
        }
        if let Some(seconds) = object.metadata.deletion_grace_period_seconds {
            grace = grace.max(seconds);
        }
    }
    outcome.remaining.insert(
        format!("{}.{}", resource.plural, resource.group),
        remaining.len(),
    );
    Ok(grace)
}
