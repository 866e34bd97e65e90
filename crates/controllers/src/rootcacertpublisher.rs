//! The root CA publisher: every active namespace has the ConfigMap `kube-root-ca.crt`
//! whose `ca.crt` is the cluster CA (what pods verify the API server with; projected into
//! their service-account volume), annotated `kubernetes.io/description` as Kubernetes
//! does. As Kubernetes' `root-ca-certificate-publisher-controller` does, it creates the
//! ConfigMap when missing (or deleted), and puts its data back when anyone changes it
//! (other keys, labels and annotations a user adds are kept; the data is exactly
//! `ca.crt`). Without a root CA (`Options::root_ca_pem`) the controller does not run.

use anyhow::Context as _;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::PostParams;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::informer::{Change, Informer, ObjectKey};
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::context::Context;

pub const NAME: &str = "root-ca-certificate-publisher-controller";
/// The service account (and `system:controller:` role) the controller acts as.
const IDENTITY: &str = "root-ca-cert-publisher";
/// The ConfigMap published in every namespace.
pub const CONFIG_MAP: &str = "kube-root-ca.crt";
const DATA_KEY: &str = "ca.crt";
const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

struct Publisher {
    namespaces: Arc<Informer<Namespace>>,
    config_maps: Arc<Informer<ConfigMap>>,
    client: kube::Client,
    ca: String,
}

/// The data the ConfigMap must hold.
fn wanted_data(ca: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(DATA_KEY.to_string(), ca.to_string())])
}

/// What `current` must become, or `None` when it is right as it is.
fn restored(current: &ConfigMap, ca: &str) -> Option<ConfigMap> {
    let data = wanted_data(ca);
    let described = current
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
        .is_some_and(|d| !d.is_empty());
    if current.data.as_ref() == Some(&data) && current.binary_data.is_none() && described {
        return None;
    }
    let mut fixed = current.clone();
    fixed.data = Some(data);
    fixed.binary_data = None;
    fixed
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(DESCRIPTION_ANNOTATION.to_string(), DESCRIPTION.to_string());
    Some(fixed)
}

impl Reconciler for Publisher {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let namespace = &key.name;
        let Some(ns) = self.namespaces.get("", namespace) else {
            return Ok(Action::Done);
        };
        if !crate::serviceaccount::is_active(&ns) {
            return Ok(Action::Done);
        }
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);
        let result = match self.config_maps.get(namespace, CONFIG_MAP) {
            None => {
                let config_map = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(CONFIG_MAP.to_string()),
                        namespace: Some(namespace.clone()),
                        annotations: Some(BTreeMap::from([(
                            DESCRIPTION_ANNOTATION.to_string(),
                            DESCRIPTION.to_string(),
                        )])),
                        ..ObjectMeta::default()
                    },
                    data: Some(wanted_data(&self.ca)),
                    ..ConfigMap::default()
                };
                api.create(&PostParams::default(), &config_map)
                    .await
                    .map(|_| ())
            }
            Some(current) => match restored(&current, &self.ca) {
                None => return Ok(Action::Done),
                Some(fixed) => api
                    .replace(CONFIG_MAP, &PostParams::default(), &fixed)
                    .await
                    .map(|_| ()),
            },
        };
        match result {
            Ok(()) => Ok(Action::Done),
            // The namespace is going away: nothing to publish there.
            Err(kube::Error::Api(s)) if s.code == 403 && s.reason == "Forbidden" => {
                tracing::debug!(%namespace, error = %s.message, "not published");
                Ok(Action::Done)
            }
            Err(error) => Err(error)
                .with_context(|| format!("publishing {CONFIG_MAP} in namespace {namespace}")),
        }
    }
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let Some(ca) = ctx.options.root_ca_pem.clone() else {
        tracing::info!("no root CA given: {NAME} does not run");
        return Ok(());
    };
    let namespaces = ctx.informers.get::<Namespace>();
    let config_maps = ctx.informers.get::<ConfigMap>();
    let client = ctx.client_for(IDENTITY).await?;
    let reconciler = Arc::new(Publisher {
        namespaces: namespaces.clone(),
        config_maps: config_maps.clone(),
        client,
        ca,
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    {
        let queue = queue.clone();
        namespaces.on_change(move |change| {
            if !matches!(change, Change::Deleted(_)) {
                queue.add(ObjectKey::of(change.object().as_ref()));
            }
        });
    }
    config_maps.on_change(move |change| {
        let config_map = change.object();
        if !matches!(change, Change::Added(_))
            && config_map.metadata.name.as_deref() == Some(CONFIG_MAP)
        {
            let namespace = config_map.metadata.namespace.clone().unwrap_or_default();
            queue.add(ObjectKey::new("", namespace));
        }
    });
    namespaces.wait_synced().await;
    config_maps.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn changed_data_is_restored_and_extra_metadata_kept() {
        let mut current = ConfigMap {
            metadata: ObjectMeta {
                name: Some(CONFIG_MAP.into()),
                labels: Some(BTreeMap::from([("mine".into(), "yes".into())])),
                annotations: Some(BTreeMap::from([(
                    DESCRIPTION_ANNOTATION.into(),
                    DESCRIPTION.into(),
                )])),
                ..ObjectMeta::default()
            },
            data: Some(wanted_data("CA")),
            ..ConfigMap::default()
        };
        assert!(restored(&current, "CA").is_none());
        current
            .data
            .as_mut()
            .unwrap()
            .insert("extra".into(), "x".into());
        let fixed = restored(&current, "CA").unwrap();
        assert_eq!(fixed.data, Some(wanted_data("CA")));
        assert_eq!(fixed.metadata.labels, current.metadata.labels);
        current.metadata.annotations = None;
        current.data = Some(wanted_data("CA"));
        let fixed = restored(&current, "CA").unwrap();
        assert_eq!(
            fixed.metadata.annotations.unwrap()[DESCRIPTION_ANNOTATION],
            DESCRIPTION
        );
        assert!(restored(&current, "other CA").is_some());
    }
}
