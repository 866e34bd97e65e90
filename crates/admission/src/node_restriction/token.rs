//! NodeRestriction for `serviceaccounts/token`: a node may request a token only bound to a
//! pod (by name and UID) that runs on it, and (ServiceAccountNodeAudienceRestriction, on by
//! default in 1.33) only for one audience that the pod uses: in a projected
//! `serviceAccountToken` source, or in the `tokenRequests` of the CSIDriver of one of its CSI
//! volumes (inline, through a PVC, or through a generic ephemeral volume), unless the
//! authorizer allows the node `request-serviceaccounts-token-audience` on that audience.

use serde_json::Value;

use super::{Lookup, NodeRequest, object, quote};
use crate::denial::Denial;
use crate::pod_refs;
use kyb_api::Operation;
use kyb_apimachinery::json;

/// The verb of the authorization check that lets a node request other audiences.
pub const REQUEST_TOKEN_AUDIENCE_VERB: &str = "request-serviceaccounts-token-audience";

/// In-tree volume sources Kubernetes migrates to CSI, with the CSI driver that serves them.
const MIGRATED_DRIVERS: &[(&str, &str)] = &[
    ("awsElasticBlockStore", "ebs.csi.aws.com"),
    ("gcePersistentDisk", "pd.csi.storage.gke.io"),
    ("azureDisk", "disk.csi.azure.com"),
    ("azureFile", "file.csi.azure.com"),
    ("cinder", "cinder.csi.openstack.org"),
    ("vsphereVolume", "csi.vsphere.vmware.com"),
    ("portworxVolume", "pxd.portworx.com"),
];

/// The authorization question NodeRestriction asks when a node requests a token for an
/// audience its pod does not use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenAudienceCheck<'a> {
    pub user: &'a str,
    pub groups: &'a [String],
    /// The request's namespace (the service account's).
    pub namespace: &'a str,
    /// The service account's name.
    pub service_account: &'a str,
    /// The requested audience ("" for the API server's own).
    pub audience: &'a str,
}

impl<'a> TokenAudienceCheck<'a> {
    /// The request to authorize: verb `request-serviceaccounts-token-audience` on resource
    /// `<audience>` in the core group, named for the service account, in its namespace.
    pub fn attributes(&self) -> kyb_rbac::Attributes<'a> {
        kyb_rbac::Attributes::resource(
            self.user,
            self.groups,
            REQUEST_TOKEN_AUDIENCE_VERB,
            "",
            self.audience,
            self.namespace,
        )
        .with_name(self.service_account)
    }
}

pub(super) fn admit_service_account(
    node: &str,
    request: &NodeRequest<'_>,
    lookup: &dyn Lookup,
) -> Result<(), Denial> {
    if request.operation != Operation::Create || request.subresource != "token" {
        return Ok(());
    }
    let token_request = object(request.object)?;
    let bound = json::map_at(token_request, &["spec", "boundObjectRef"]);
    let field = |key: &str| {
        bound
            .and_then(|b| b.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    if bound.is_none()
        || field("apiVersion") != "v1"
        || field("kind") != "Pod"
        || field("name").is_empty()
    {
        return Err(Denial::forbidden("node requested token not bound to a pod"));
    }
    let uid = field("uid");
    if uid.is_empty() {
        return Err(Denial::forbidden(
            "node requested token with a pod binding without a uid",
        ));
    }
    let pod_name = field("name");
    let pod = lookup
        .pod(request.namespace, pod_name)
        .ok_or_else(|| Denial::NotFound {
            group: "",
            resource: "pod",
            name: pod_name.to_string(),
        })?;
    if uid != json::str_at(&pod, &["metadata", "uid"]) {
        return Err(Denial::Forbidden(format!(
            "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
        )));
    }
    if json::str_at(&pod, &["spec", "nodeName"]) != node {
        return Err(Denial::forbidden(
            "node requested token bound to a pod scheduled on a different node",
        ));
    }
    validate_audience(node, request, token_request, &pod, lookup)
}

fn validate_audience(
    node: &str,
    request: &NodeRequest<'_>,
    token_request: &Value,
    pod: &Value,
    lookup: &dyn Lookup,
) -> Result<(), Denial> {
    let audience = match json::items(token_request, &["spec", "audiences"]) {
        [] => "",
        [one] => one.as_str().unwrap_or(""),
        _ => return Err(Denial::forbidden("node may only request 0 or 1 audiences")),
    };
    match pod_references_audience(pod, audience, lookup) {
        Ok(true) => return Ok(()),
        Ok(false) => {}
        Err(error) => {
            return Err(Denial::Forbidden(format!(
                "error validating audience {}: {error}",
                quote(audience)
            )));
        }
    }
    let check = TokenAudienceCheck {
        user: request.user,
        groups: request.groups,
        namespace: request.namespace,
        service_account: request.name,
        audience,
    };
    if lookup.authorize_token_audience(&check) {
        return Ok(());
    }
    Err(Denial::Forbidden(format!(
        "audience {} not found in pod spec volume, system:node:{node} is not authorized to request tokens for this audience",
        quote(audience)
    )))
}

/// Whether some volume of the pod uses `audience`. Lookup failures of volumes that do not
/// use it are returned (joined as Kubernetes' error aggregates print) when none does.
fn pod_references_audience(
    pod: &Value,
    audience: &str,
    lookup: &dyn Lookup,
) -> Result<bool, String> {
    let namespace = json::str_at(pod, &["metadata", "namespace"]);
    let pod_name = json::str_at(pod, &["metadata", "name"]);
    let mut errors = Vec::new();
    for volume in json::items(pod, &["spec", "volumes"]) {
        let projected = json::items(volume, &["projected", "sources"])
            .iter()
            .any(|s| {
                json::map_at(s, &["serviceAccountToken"]).is_some_and(|t| {
                    t.get("audience").and_then(Value::as_str).unwrap_or("") == audience
                })
            });
        if projected {
            return Ok(true);
        }
        let driver = if json::map_at(volume, &["ephemeral", "volumeClaimTemplate"]).is_some()
            || json::map_at(volume, &["persistentVolumeClaim"]).is_some()
        {
            let claim = pod_refs::volume_claim_name(pod_name, volume).unwrap_or_default();
            driver_from_claim(namespace, &claim, lookup)
        } else if let Some(csi) = json::map_at(volume, &["csi"]) {
            Ok(csi
                .get("driver")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string())
        } else {
            Ok(migrated_driver(volume).unwrap_or_default().to_string())
        };
        let driver = match driver {
            Ok(driver) if driver.is_empty() => continue,
            Ok(driver) => driver,
            Err(error) => {
                errors.push(error);
                continue;
            }
        };
        match lookup.csi_driver(&driver) {
            None => errors.push(format!(
                "csidriver.storage.k8s.io {} not found",
                quote(&driver)
            )),
            Some(csi_driver) => {
                let requested = json::items(&csi_driver, &["spec", "tokenRequests"])
                    .iter()
                    .any(|t| json::str_at(t, &["audience"]) == audience);
                if requested {
                    return Ok(true);
                }
            }
        }
    }
    match errors.len() {
        0 => Ok(false),
        1 => Err(errors.swap_remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// The CSI driver of the PV bound to a claim ("" when unbound or not CSI).
fn driver_from_claim(namespace: &str, claim: &str, lookup: &dyn Lookup) -> Result<String, String> {
    let pvc = lookup
        .persistent_volume_claim(namespace, claim)
        .ok_or_else(|| format!("persistentvolumeclaim {} not found", quote(claim)))?;
    let volume_name = json::str_at(&pvc, &["spec", "volumeName"]);
    if volume_name.is_empty() {
        return Ok(String::new());
    }
    let pv = lookup
        .persistent_volume(volume_name)
        .ok_or_else(|| format!("persistentvolume {} not found", quote(volume_name)))?;
    let spec = json::at(&pv, &["spec"]).unwrap_or(&Value::Null);
    if let Some(driver) = json::opt_str(spec, &["csi", "driver"]) {
        return Ok(driver.to_string());
    }
    Ok(migrated_driver(spec).unwrap_or_default().to_string())
}

/// The CSI driver an in-tree volume source (of a pod volume or a PV spec) migrates to.
fn migrated_driver(source: &Value) -> Option<&'static str> {
    MIGRATED_DRIVERS
        .iter()
        .find(|(key, _)| json::map_at(source, &[key]).is_some())
        .map(|(_, driver)| *driver)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::super::node_restriction;
    use super::super::test_support::*;
    use super::*;

    fn cache_with(volumes: Value) -> Cache {
        let mut cache = Cache::default();
        cache.pods.insert(
            ("ns".into(), "web".into()),
            json!({"metadata": {"name": "web", "namespace": "ns", "uid": "u1"},
                   "spec": {"nodeName": "n1", "serviceAccountName": "sa", "volumes": volumes}}),
        );
        cache
    }

    fn token_request(pod: &str, uid: &str, audiences: Value) -> Value {
        json!({"spec": {"audiences": audiences,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid}}})
    }

    fn run(cache: &Cache, tr: &Value) -> Result<(), Denial> {
        let groups = groups();
        let r = request(
            &groups,
            Operation::Create,
            "serviceaccounts",
            "token",
            "sa",
            Some(tr),
            None,
        );
        node_restriction(&r, cache)
    }

    fn projected(audience: Option<&str>) -> Value {
        let mut token = json!({"path": "token"});
        if let Some(a) = audience {
            token["audience"] = json!(a);
        }
        json!([{"name": "t", "projected": {"sources": [{"serviceAccountToken": token}]}}])
    }

    #[test]
    fn binding_rules() {
        let cache = cache_with(projected(None));
        run(&cache, &token_request("web", "u1", json!([]))).unwrap();
        let unbound = json!({"spec": {}});
        assert_eq!(
            run(&cache, &unbound)
                .unwrap_err()
                .message("", "serviceaccounts", "sa"),
            r#"serviceaccounts "sa" is forbidden: node requested token not bound to a pod"#
        );
        let mut secret_bound = token_request("web", "u1", json!([]));
        secret_bound["spec"]["boundObjectRef"]["kind"] = json!("Secret");
        assert_eq!(
            run(&cache, &secret_bound).unwrap_err(),
            Denial::forbidden("node requested token not bound to a pod")
        );
        assert_eq!(
            run(&cache, &token_request("web", "", json!([]))).unwrap_err(),
            Denial::forbidden("node requested token with a pod binding without a uid")
        );
        assert_eq!(
            run(&cache, &token_request("web", "u0", json!([]))).unwrap_err(),
            Denial::forbidden(
                "the UID in the bound object reference (u0) does not match the UID in record. The object might have been deleted and then recreated"
            )
        );
        assert_eq!(
            run(&cache, &token_request("gone", "u1", json!([])))
                .unwrap_err()
                .to_string(),
            r#"pod "gone" not found"#
        );
        let mut elsewhere = cache_with(projected(None));
        elsewhere
            .pods
            .get_mut(&("ns".to_string(), "web".to_string()))
            .unwrap()["spec"]["nodeName"] = json!("n2");
        assert_eq!(
            run(&elsewhere, &token_request("web", "u1", json!([]))).unwrap_err(),
            Denial::forbidden("node requested token bound to a pod scheduled on a different node")
        );
        // Other operations and subresources of service accounts pass.
        let groups = groups();
        let r = request(
            &groups,
            Operation::Update,
            "serviceaccounts",
            "",
            "sa",
            Some(&unbound),
            None,
        );
        node_restriction(&r, &cache).unwrap();
    }

    #[test]
    fn audiences_must_be_used_by_the_pod() {
        let cache = cache_with(projected(Some("vault")));
        run(&cache, &token_request("web", "u1", json!(["vault"]))).unwrap();
        assert_eq!(
            run(&cache, &token_request("web", "u1", json!(["other"]))).unwrap_err(),
            Denial::forbidden(
                r#"audience "other" not found in pod spec volume, system:node:n1 is not authorized to request tokens for this audience"#
            )
        );
        // The API server audience ("") needs a projected source without audience.
        assert!(run(&cache, &token_request("web", "u1", json!([]))).is_err());
        assert_eq!(
            run(&cache, &token_request("web", "u1", json!(["a", "b"]))).unwrap_err(),
            Denial::forbidden("node may only request 0 or 1 audiences")
        );
        let mut authorized = cache_with(projected(Some("vault")));
        authorized
            .allowed_audiences
            .push(("other".into(), "sa".into()));
        run(&authorized, &token_request("web", "u1", json!(["other"]))).unwrap();
    }

    #[test]
    fn csi_audiences() {
        let volumes = json!([
            {"name": "inline", "csi": {"driver": "inline.csi"}},
            {"name": "claim", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
            {"name": "azure", "azureFile": {"shareName": "s", "secretName": "x"}}
        ]);
        let mut cache = cache_with(volumes);
        for (driver, audience) in [
            ("inline.csi", "a-inline"),
            ("pv.csi", "a-pv"),
            ("eph.csi", "a-eph"),
            ("file.csi.azure.com", "a-azure"),
        ] {
            cache.drivers.insert(
                driver.into(),
                json!({"spec": {"tokenRequests": [{"audience": audience}]}}),
            );
        }
        cache.pvcs.insert(
            ("ns".into(), "data".into()),
            json!({"spec": {"volumeName": "pv1"}}),
        );
        cache.pvs.insert(
            "pv1".into(),
            json!({"spec": {"csi": {"driver": "pv.csi", "volumeHandle": "h"}}}),
        );
        cache.pvcs.insert(
            ("ns".into(), "web-scratch".into()),
            json!({"spec": {"volumeName": "pv2"}}),
        );
        cache.pvs.insert(
            "pv2".into(),
            json!({"spec": {"csi": {"driver": "eph.csi"}}}),
        );
        for audience in ["a-inline", "a-pv", "a-eph", "a-azure"] {
            run(&cache, &token_request("web", "u1", json!([audience]))).unwrap();
        }
        assert_eq!(
            run(&cache, &token_request("web", "u1", json!(["nope"]))).unwrap_err(),
            Denial::forbidden(
                r#"audience "nope" not found in pod spec volume, system:node:n1 is not authorized to request tokens for this audience"#
            )
        );
        // Lookup failures are reported when no volume matches.
        cache.drivers.remove("inline.csi");
        assert_eq!(
            run(&cache, &token_request("web", "u1", json!(["nope"]))).unwrap_err(),
            Denial::forbidden(
                r#"error validating audience "nope": csidriver.storage.k8s.io "inline.csi" not found"#
            )
        );
        cache.pvcs.remove(&("ns".to_string(), "data".to_string()));
        assert_eq!(
            run(&cache, &token_request("web", "u1", json!(["nope"]))).unwrap_err(),
            Denial::forbidden(
                r#"error validating audience "nope": [csidriver.storage.k8s.io "inline.csi" not found, persistentvolumeclaim "data" not found]"#
            )
        );
        // ... but a later match still wins.
        run(&cache, &token_request("web", "u1", json!(["a-eph"]))).unwrap();
    }

    #[test]
    fn audience_check_attributes() {
        let groups = groups();
        let check = TokenAudienceCheck {
            user: "system:node:n1",
            groups: &groups,
            namespace: "ns",
            service_account: "sa",
            audience: "vault",
        };
        let attributes = check.attributes();
        assert_eq!(attributes.verb, REQUEST_TOKEN_AUDIENCE_VERB);
        assert_eq!(
            (
                attributes.api_group,
                attributes.resource,
                attributes.name,
                attributes.namespace
            ),
            ("", "vault", "sa", "ns")
        );
        assert!(attributes.resource_request);
    }

    #[test]
    fn hostile_token_requests() {
        let cache = cache_with(json!("not a list"));
        for tr in [
            json!(null),
            json!({"spec": {"boundObjectRef": "x"}}),
            json!({"spec": {"audiences": "x", "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "u1"}}}),
        ] {
            let _ = run(&cache, &tr);
        }
        assert!(run(&cache, &token_request("web", "u1", json!([5]))).is_err());
    }
}
