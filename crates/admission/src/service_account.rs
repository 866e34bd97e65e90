//! The ServiceAccount admission plugin: on pod creation, default `spec.serviceAccountName`
//! to `default`, require the service account to exist, mount its API token (the projected
//! `kube-api-access-<suffix>` volume) into every container, copy its image pull secrets,
//! enforce `kubernetes.io/enforce-mountable-secrets`, and keep mirror pods free of service
//! accounts and secrets. On updates of `pods/ephemeralcontainers` it checks the secrets the
//! ephemeral containers use.
//!
//! The caller looks the service account up ([`service_account_to_look_up`]) and passes it
//! in; Kubernetes retries a missing `default` service account for about a second, since the
//! service-account controller creates it right after the namespace.

use serde_json::{Map, Value, json};

use crate::denial::Denial;
use crate::pod_refs;
use kyb_api::Operation;
use kyb_apimachinery::json;

/// The service account pods get when they name none.
pub const DEFAULT_SERVICE_ACCOUNT_NAME: &str = "default";
/// A service-account annotation: `"true"` makes the plugin refuse pods that use secrets the
/// service account does not list.
pub const ENFORCE_MOUNTABLE_SECRETS_ANNOTATION: &str = "kubernetes.io/enforce-mountable-secrets";
/// The name prefix of the token volume.
pub const SERVICE_ACCOUNT_VOLUME_PREFIX: &str = "kube-api-access-";
/// Where the token volume is mounted.
pub const DEFAULT_API_TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The annotation that marks a mirror pod (a kubelet's static pod).
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// The token lifetime the projected volume asks for (Kubernetes'
/// `WarnOnlyBoundTokenExpirationSeconds`: one hour and seven seconds).
pub const TOKEN_EXPIRATION_SECONDS: i64 = 3607;

/// The characters of generated name suffixes (Kubernetes' `utilrand` alphabet: no vowels,
/// no `0`, `1`, `3`, so suffixes never spell words).
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The plugin's settings (Kubernetes' defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Mount the API token into pods (true).
    pub mount_service_account_token: bool,
    /// Enforce mountable secrets for every service account, not only annotated ones (false).
    pub limit_secret_references: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            mount_service_account_token: true,
            limit_secret_references: false,
        }
    }
}

/// Whether the plugin looks at a request: creating a pod, or updating
/// `pods/ephemeralcontainers`.
pub fn applies(operation: Operation, group: &str, resource: &str, subresource: &str) -> bool {
    group.is_empty()
        && resource == "pods"
        && match subresource {
            "" => operation == Operation::Create,
            "ephemeralcontainers" => operation == Operation::Update,
            _ => false,
        }
}

/// The service account the caller must look up (in the request's namespace) before calling
/// [`admit`] or [`validate`]: the pod's `spec.serviceAccountName`, `default` when unset;
/// `None` when no lookup is needed (mirror pods, and requests the plugin ignores).
pub fn service_account_to_look_up<'a>(
    operation: Operation,
    subresource: &str,
    pod: &'a Value,
) -> Option<&'a str> {
    let ephemeral = operation == Operation::Update && subresource == "ephemeralcontainers";
    let create = operation == Operation::Create && subresource.is_empty();
    if !(ephemeral || create) || (create && is_mirror_pod(pod)) {
        return None;
    }
    let name = json::str_at(pod, &["spec", "serviceAccountName"]);
    if name.is_empty() {
        // Validation of an ephemeral-containers update refuses a pod without one.
        return (!ephemeral).then_some(DEFAULT_SERVICE_ACCOUNT_NAME);
    }
    Some(name)
}

/// Whether a pod is a mirror pod (has the `kubernetes.io/config.mirror` annotation).
pub fn is_mirror_pod(pod: &Value) -> bool {
    kyb_apimachinery::meta::has_annotation(pod, MIRROR_POD_ANNOTATION)
}

/// Five random characters for the token volume's name, from Kubernetes' alphabet.
pub fn random_suffix() -> String {
    (0..5)
        .map(|_| char::from(SUFFIX_ALPHABET[fastrand::usize(..SUFFIX_ALPHABET.len())]))
        .collect()
}

/// The mutating step for a pod being created in `namespace` (call it only when
/// [`applies`] and for `CREATE`): defaults the service account name, mounts the token
/// volume (named `kube-api-access-` + `volume_suffix()`, see [`random_suffix`]), copies the
/// service account's image pull secrets, then runs [`validate`]. `service_account` is the
/// object named by [`service_account_to_look_up`], `None` when it does not exist.
///
/// Errors are [`Denial::Forbidden`] (text after `pods "<name>" is forbidden: `).
pub fn admit(
    pod: &mut Value,
    namespace: &str,
    service_account: Option<&Value>,
    config: &Config,
    volume_suffix: impl FnOnce() -> String,
) -> Result<(), Denial> {
    if !is_mirror_pod(pod) {
        let Some(spec) = json::spec_mut(pod) else {
            return Ok(());
        };
        let name = match spec.get("serviceAccountName").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => name.to_string(),
            _ => {
                spec.insert(
                    "serviceAccountName".into(),
                    DEFAULT_SERVICE_ACCOUNT_NAME.into(),
                );
                DEFAULT_SERVICE_ACCOUNT_NAME.to_string()
            }
        };
        let Some(service_account) = service_account else {
            return Err(not_found(namespace, &name));
        };
        if config.mount_service_account_token && should_automount(service_account, spec) {
            mount_token(spec, volume_suffix);
        }
        copy_image_pull_secrets(service_account, spec);
    }
    validate(
        Operation::Create,
        "",
        pod,
        namespace,
        service_account,
        config,
    )
}

/// The validating step: for a pod being created, the mirror-pod rules, the service account's
/// existence and mountable secrets; for an update of `pods/ephemeralcontainers`, the
/// secrets the ephemeral containers use. Other requests pass.
///
/// Errors are [`Denial::Forbidden`], except that a refused ephemeral-container secret is a
/// [`Denial::Internal`] (Kubernetes returns that error unwrapped: a 500 whose whole message
/// is the text).
pub fn validate(
    operation: Operation,
    subresource: &str,
    pod: &Value,
    namespace: &str,
    service_account: Option<&Value>,
    config: &Config,
) -> Result<(), Denial> {
    let spec = json::at(pod, &["spec"]).unwrap_or(&Value::Null);
    if operation == Operation::Update && subresource == "ephemeralcontainers" {
        let sa_name = json::str_at(spec, &["serviceAccountName"]);
        if sa_name.is_empty() {
            return Err(no_service_account(namespace, pod));
        }
        let Some(service_account) = service_account else {
            return Err(not_found(namespace, sa_name));
        };
        if !enforce_mountable_secrets(service_account, config) {
            return Ok(());
        }
        return limit_ephemeral_secret_references(service_account, spec).map_err(Denial::Internal);
    }
    if operation != Operation::Create || !subresource.is_empty() {
        return Ok(());
    }
    if is_mirror_pod(pod) {
        return validate_mirror_pod(spec);
    }
    let sa_name = json::str_at(spec, &["serviceAccountName"]);
    if sa_name.is_empty() {
        return Err(no_service_account(namespace, pod));
    }
    let Some(service_account) = service_account else {
        return Err(not_found(namespace, sa_name));
    };
    if enforce_mountable_secrets(service_account, config) {
        limit_secret_references(service_account, spec).map_err(Denial::Forbidden)?;
    }
    Ok(())
}

fn validate_mirror_pod(spec: &Value) -> Result<(), Denial> {
    if !json::str_at(spec, &["serviceAccountName"]).is_empty() {
        return Err(Denial::forbidden(
            "a mirror pod may not reference service accounts",
        ));
    }
    if pod_refs::references_secrets(spec) {
        return Err(Denial::forbidden("a mirror pod may not reference secrets"));
    }
    let uses_token = json::items(spec, &["volumes"]).iter().any(|volume| {
        json::items(volume, &["projected", "sources"])
            .iter()
            .any(|source| {
                source
                    .get("serviceAccountToken")
                    .is_some_and(Value::is_object)
            })
    });
    if uses_token {
        return Err(Denial::forbidden(
            "a mirror pod may not use ServiceAccountToken volume projections",
        ));
    }
    Ok(())
}

fn not_found(namespace: &str, name: &str) -> Denial {
    Denial::Forbidden(format!(
        "error looking up service account {namespace}/{name}: serviceaccount \"{name}\" not found"
    ))
}

fn no_service_account(namespace: &str, pod: &Value) -> Denial {
    Denial::Forbidden(format!(
        "no service account specified for pod {namespace}/{}",
        json::str_at(pod, &["metadata", "name"])
    ))
}

/// The pod's `automountServiceAccountToken`, else the service account's, else true.
fn should_automount(service_account: &Value, spec: &Map<String, Value>) -> bool {
    spec.get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| json::opt_bool(service_account, &["automountServiceAccountToken"]))
        .unwrap_or(true)
}

/// Whether mountable secrets are enforced: globally, or by the service account's
/// annotation (parsed as Go's `strconv.ParseBool`; anything else means no).
fn enforce_mountable_secrets(service_account: &Value, config: &Config) -> bool {
    config.limit_secret_references
        || kyb_apimachinery::meta::annotation(service_account, ENFORCE_MOUNTABLE_SECRETS_ANNOTATION)
            .and_then(json::parse_go_bool)
            .unwrap_or(false)
}

fn mountable_secrets(service_account: &Value) -> Vec<&str> {
    json::items(service_account, &["secrets"])
        .iter()
        .map(|s| json::str_at(s, &["name"]))
        .collect()
}

fn limit_secret_references(service_account: &Value, spec: &Value) -> Result<(), String> {
    let sa = json::str_at(service_account, &["metadata", "name"]);
    let mountable = mountable_secrets(service_account);
    for volume in json::items(spec, &["volumes"]) {
        let Some(secret) = volume.get("secret").filter(|s| s.is_object()) else {
            continue;
        };
        let name = json::str_at(secret, &["secretName"]);
        if !mountable.contains(&name) {
            return Err(format!(
                "volume with secret.secretName=\"{name}\" is not allowed because service account {sa} does not reference that secret"
            ));
        }
    }
    for (key, label) in [
        ("initContainers", "init container"),
        ("containers", "container"),
    ] {
        for container in json::items(spec, &[key]) {
            check_container_secrets(container, label, sa, &mountable)?;
        }
    }
    let pull_secrets: Vec<&str> = json::items(service_account, &["imagePullSecrets"])
        .iter()
        .map(|s| json::str_at(s, &["name"]))
        .collect();
    for (i, reference) in json::items(spec, &["imagePullSecrets"]).iter().enumerate() {
        let name = json::str_at(reference, &["name"]);
        if !pull_secrets.contains(&name) {
            return Err(format!(
                "imagePullSecrets[{i}].name=\"{name}\" is not allowed because service account {sa} does not reference that imagePullSecret"
            ));
        }
    }
    Ok(())
}

fn limit_ephemeral_secret_references(service_account: &Value, spec: &Value) -> Result<(), String> {
    let sa = json::str_at(service_account, &["metadata", "name"]);
    let mountable = mountable_secrets(service_account);
    for container in json::items(spec, &["ephemeralContainers"]) {
        check_container_secrets(container, "ephemeral container", sa, &mountable)?;
    }
    Ok(())
}

/// The env and envFrom secret references of one container must be mountable.
fn check_container_secrets(
    container: &Value,
    label: &str,
    sa: &str,
    mountable: &[&str],
) -> Result<(), String> {
    let container_name = json::str_at(container, &["name"]);
    for env in json::items(container, &["env"]) {
        if let Some(secret) = json::map_at(env, &["valueFrom", "secretKeyRef"]) {
            let name = secret.get("name").and_then(Value::as_str).unwrap_or("");
            if !mountable.contains(&name) {
                return Err(format!(
                    "{label} {container_name} with envVar {} referencing secret.secretName=\"{name}\" is not allowed because service account {sa} does not reference that secret",
                    json::str_at(env, &["name"])
                ));
            }
        }
    }
    for env_from in json::items(container, &["envFrom"]) {
        if let Some(secret) = json::map_at(env_from, &["secretRef"]) {
            let name = secret.get("name").and_then(Value::as_str).unwrap_or("");
            if !mountable.contains(&name) {
                return Err(format!(
                    "{label} {container_name} with envFrom referencing secret.secretName=\"{name}\" is not allowed because service account {sa} does not reference that secret"
                ));
            }
        }
    }
    Ok(())
}

/// Mounts the token volume at the default path in every init and regular container that has
/// nothing mounted there, adding the volume when some container needed it and the pod has
/// no `kube-api-access-*` volume yet.
fn mount_token(spec: &mut Map<String, Value>, volume_suffix: impl FnOnce() -> String) {
    let existing = json::Obj::arr(spec, "volumes").iter().find_map(|v| {
        v.get("name")
            .and_then(Value::as_str)
            .filter(|n| n.starts_with(SERVICE_ACCOUNT_VOLUME_PREFIX))
            .map(str::to_string)
    });
    let has_volume = existing.is_some();
    let volume_name =
        existing.unwrap_or_else(|| format!("{SERVICE_ACCOUNT_VOLUME_PREFIX}{}", volume_suffix()));
    let mut needs_volume = false;
    for key in ["initContainers", "containers"] {
        let Some(Value::Array(containers)) = spec.get_mut(key) else {
            continue;
        };
        for container in containers.iter_mut() {
            let Some(container) = container.as_object_mut() else {
                continue;
            };
            let Some(mounts) = json::child_array(container, "volumeMounts") else {
                continue;
            };
            let mounted = mounts.iter().any(|m| {
                m.get("mountPath").and_then(Value::as_str) == Some(DEFAULT_API_TOKEN_MOUNT_PATH)
            });
            if !mounted {
                mounts.push(json!({
                    "name": volume_name,
                    "readOnly": true,
                    "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH,
                }));
                needs_volume = true;
            }
        }
    }
    if needs_volume
        && !has_volume
        && let Some(volumes) = json::child_array(spec, "volumes")
    {
        volumes.push(token_volume(&volume_name));
    }
}

/// The projected token volume Kubernetes adds (with `defaultMode: 420` set explicitly).
pub fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{
                    "path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}
                }]}}
            ]
        }
    })
}

/// Gives a pod without image pull secrets those of its service account (names only).
fn copy_image_pull_secrets(service_account: &Value, spec: &mut Map<String, Value>) {
    let has_own = spec
        .get("imagePullSecrets")
        .is_some_and(|v| !json::is_zero(v));
    let from_sa = json::items(service_account, &["imagePullSecrets"]);
    if has_own || from_sa.is_empty() {
        return;
    }
    let copied = from_sa
        .iter()
        .map(|s| match json::str_at(s, &["name"]) {
            "" => json!({}),
            name => json!({ "name": name }),
        })
        .collect();
    spec.insert("imagePullSecrets".into(), Value::Array(copied));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sa() -> Value {
        json!({"metadata": {"name": "default", "namespace": "ns"}})
    }

    fn admit_default(pod: &mut Value, sa: Option<&Value>) -> Result<(), Denial> {
        admit(pod, "ns", sa, &Config::default(), || "x2b4c".into())
    }

    #[test]
    fn applies_to_pod_creates_and_ephemeral_container_updates() {
        assert!(applies(Operation::Create, "", "pods", ""));
        assert!(applies(
            Operation::Update,
            "",
            "pods",
            "ephemeralcontainers"
        ));
        assert!(!applies(Operation::Update, "", "pods", ""));
        assert!(!applies(Operation::Create, "", "pods", "binding"));
        assert!(!applies(Operation::Create, "apps", "pods", ""));
    }

    #[test]
    fn defaults_service_account_and_mounts_token() {
        let mut pod = json!({
            "metadata": {"name": "web"},
            "spec": {
                "initContainers": [{"name": "init"}],
                "containers": [{"name": "a"}, {"name": "b", "volumeMounts": [
                    {"name": "mine", "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH}
                ]}]
            }
        });
        admit_default(&mut pod, Some(&sa())).unwrap();
        let spec = &pod["spec"];
        assert_eq!(spec["serviceAccountName"], "default");
        let mount = json!({"name": "kube-api-access-x2b4c", "readOnly": true,
                           "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"});
        assert_eq!(spec["initContainers"][0]["volumeMounts"], json!([mount]));
        assert_eq!(spec["containers"][0]["volumeMounts"], json!([mount]));
        assert_eq!(
            spec["containers"][1]["volumeMounts"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            spec["volumes"],
            json!([{
                "name": "kube-api-access-x2b4c",
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
                    ]
                }
            }])
        );
        assert!(spec.get("imagePullSecrets").is_none());
    }

    #[test]
    fn reuses_an_existing_token_volume() {
        let mut pod = json!({"spec": {
            "volumes": [{"name": "kube-api-access-abcde", "projected": {"sources": []}}],
            "containers": [{"name": "a"}]
        }});
        admit(
            &mut pod,
            "ns",
            Some(&sa()),
            &Config::default(),
            || unreachable!(),
        )
        .unwrap();
        assert_eq!(pod["spec"]["volumes"].as_array().unwrap().len(), 1);
        assert_eq!(
            pod["spec"]["containers"][0]["volumeMounts"][0]["name"],
            "kube-api-access-abcde"
        );
    }

    #[test]
    fn automount_pod_setting_wins_over_service_account() {
        let mut off_sa = sa();
        off_sa["automountServiceAccountToken"] = json!(false);
        let mut pod = json!({"spec": {"containers": [{"name": "a"}]}});
        admit_default(&mut pod, Some(&off_sa)).unwrap();
        assert!(pod["spec"].get("volumes").is_none());

        let mut pod =
            json!({"spec": {"automountServiceAccountToken": true, "containers": [{"name": "a"}]}});
        admit_default(&mut pod, Some(&off_sa)).unwrap();
        assert_eq!(pod["spec"]["volumes"].as_array().unwrap().len(), 1);

        let mut pod =
            json!({"spec": {"automountServiceAccountToken": false, "containers": [{"name": "a"}]}});
        admit_default(&mut pod, Some(&sa())).unwrap();
        assert!(pod["spec"].get("volumes").is_none());
    }

    #[test]
    fn missing_service_account_is_forbidden() {
        let mut pod = json!({"spec": {"serviceAccountName": "robot", "containers": []}});
        let err = admit_default(&mut pod, None).unwrap_err();
        assert_eq!(
            err.message("", "pods", "web"),
            r#"pods "web" is forbidden: error looking up service account ns/robot: serviceaccount "robot" not found"#
        );
        let mut pod = json!({});
        let err = admit_default(&mut pod, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"error looking up service account ns/default: serviceaccount "default" not found"#
        );
    }

    #[test]
    fn copies_image_pull_secrets_only_when_pod_has_none() {
        let mut with_pull = sa();
        with_pull["imagePullSecrets"] = json!([{"name": "reg"}, {"name": "reg2"}]);
        let mut pod = json!({"spec": {"containers": []}});
        admit_default(&mut pod, Some(&with_pull)).unwrap();
        assert_eq!(
            pod["spec"]["imagePullSecrets"],
            json!([{"name": "reg"}, {"name": "reg2"}])
        );

        let mut pod = json!({"spec": {"imagePullSecrets": [{"name": "own"}], "containers": []}});
        admit_default(&mut pod, Some(&with_pull)).unwrap();
        assert_eq!(pod["spec"]["imagePullSecrets"], json!([{"name": "own"}]));
    }

    #[test]
    fn mirror_pods_are_left_alone_and_restricted() {
        let annotations = json!({MIRROR_POD_ANNOTATION: "hash"});
        let mut pod = json!({"metadata": {"annotations": annotations}, "spec": {"containers": [{"name": "a"}]}});
        admit_default(&mut pod, None).unwrap();
        assert!(pod["spec"].get("serviceAccountName").is_none());
        assert!(pod["spec"].get("volumes").is_none());
        assert_eq!(
            service_account_to_look_up(Operation::Create, "", &pod),
            None
        );

        let cases = [
            (
                json!({"serviceAccountName": "x"}),
                "a mirror pod may not reference service accounts",
            ),
            (
                json!({"volumes": [{"name": "s", "secret": {"secretName": "s"}}]}),
                "a mirror pod may not reference secrets",
            ),
            (
                json!({"containers": [{"envFrom": [{"secretRef": {"name": "s"}}]}]}),
                "a mirror pod may not reference secrets",
            ),
            (
                json!({"volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]}),
                "a mirror pod may not use ServiceAccountToken volume projections",
            ),
        ];
        for (spec, message) in cases {
            let mut pod = json!({"metadata": {"annotations": annotations}, "spec": spec});
            assert_eq!(
                admit_default(&mut pod, None).unwrap_err(),
                Denial::forbidden(message)
            );
        }
    }

    #[test]
    fn enforce_mountable_secrets() {
        let mut strict = json!({
            "metadata": {"name": "robot", "annotations": {ENFORCE_MOUNTABLE_SECRETS_ANNOTATION: "true"}},
            "secrets": [{"name": "ok"}],
            "imagePullSecrets": [{"name": "pull"}]
        });
        let check = |spec: Value, sa: &Value| {
            let pod = json!({"metadata": {"name": "p"}, "spec": spec});
            validate(
                Operation::Create,
                "",
                &pod,
                "ns",
                Some(sa),
                &Config::default(),
            )
        };
        let base = json!({"serviceAccountName": "robot"});
        assert!(check(base.clone(), &strict).is_ok());
        let cases = [
            (
                json!({"serviceAccountName": "robot", "volumes": [{"name": "v", "secret": {"secretName": "bad"}}]}),
                r#"volume with secret.secretName="bad" is not allowed because service account robot does not reference that secret"#,
            ),
            (
                json!({"serviceAccountName": "robot", "initContainers": [{"name": "i", "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "bad", "key": "k"}}}]}]}),
                r#"init container i with envVar E referencing secret.secretName="bad" is not allowed because service account robot does not reference that secret"#,
            ),
            (
                json!({"serviceAccountName": "robot", "containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "bad"}}]}]}),
                r#"container c with envFrom referencing secret.secretName="bad" is not allowed because service account robot does not reference that secret"#,
            ),
            (
                json!({"serviceAccountName": "robot", "imagePullSecrets": [{"name": "pull"}, {"name": "other"}]}),
                r#"imagePullSecrets[1].name="other" is not allowed because service account robot does not reference that imagePullSecret"#,
            ),
        ];
        for (spec, message) in cases {
            assert_eq!(
                check(spec, &strict).unwrap_err(),
                Denial::forbidden(message)
            );
        }
        // Projected secrets are not checked; an unparsable annotation means "not enforced".
        assert!(check(json!({"serviceAccountName": "robot", "volumes": [{"name": "v", "projected": {"sources": [{"secret": {"name": "bad"}}]}}]}), &strict).is_ok());
        strict["metadata"]["annotations"][ENFORCE_MOUNTABLE_SECRETS_ANNOTATION] = json!("yes");
        assert!(check(json!({"serviceAccountName": "robot", "volumes": [{"name": "v", "secret": {"secretName": "bad"}}]}), &strict).is_ok());
    }

    #[test]
    fn ephemeral_containers_are_checked_on_their_subresource() {
        let strict = json!({
            "metadata": {"name": "robot", "annotations": {ENFORCE_MOUNTABLE_SECRETS_ANNOTATION: "1"}},
            "secrets": [{"name": "ok"}]
        });
        let pod = json!({"metadata": {"name": "p"}, "spec": {"serviceAccountName": "robot",
            "ephemeralContainers": [{"name": "debug", "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "bad"}}}]}]}});
        assert_eq!(
            service_account_to_look_up(Operation::Update, "ephemeralcontainers", &pod),
            Some("robot")
        );
        let err = validate(
            Operation::Update,
            "ephemeralcontainers",
            &pod,
            "ns",
            Some(&strict),
            &Config::default(),
        )
        .unwrap_err();
        assert_eq!(
            err,
            Denial::Internal(r#"ephemeral container debug with envVar E referencing secret.secretName="bad" is not allowed because service account robot does not reference that secret"#.into())
        );
        let no_sa = json!({"metadata": {"name": "p"}, "spec": {}});
        assert_eq!(
            validate(
                Operation::Update,
                "ephemeralcontainers",
                &no_sa,
                "ns",
                None,
                &Config::default()
            )
            .unwrap_err(),
            Denial::forbidden("no service account specified for pod ns/p")
        );
        // Plain updates pass.
        assert!(validate(Operation::Update, "", &pod, "ns", None, &Config::default()).is_ok());
    }

    #[test]
    fn random_suffixes_use_the_kubernetes_alphabet() {
        for _ in 0..20 {
            let s = random_suffix();
            assert_eq!(s.len(), 5);
            assert!(s.bytes().all(|b| SUFFIX_ALPHABET.contains(&b)));
        }
    }

    #[test]
    fn hostile_pods_never_panic() {
        for mut pod in [
            json!(null),
            json!([1]),
            json!({"spec": 3}),
            json!({"spec": {"containers": "x", "initContainers": [1, null, {"volumeMounts": 3}]}}),
            json!({"spec": {"volumes": {"a": 1}, "containers": [{}]}}),
            json!({"metadata": {"annotations": [1]}, "spec": {"serviceAccountName": 5}}),
        ] {
            let _ = admit_default(
                &mut pod,
                Some(&json!({"imagePullSecrets": "x", "secrets": 1})),
            );
            let _ = validate(
                Operation::Create,
                "",
                &pod,
                "ns",
                Some(&json!(1)),
                &Config {
                    limit_secret_references: true,
                    ..Config::default()
                },
            );
            let _ = service_account_to_look_up(Operation::Create, "", &pod);
        }
    }
}
