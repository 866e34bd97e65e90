//! A container's environment, as Kubernetes' kubelet makes it
//! (`makeEnvironmentVariables`): `envFrom` ConfigMaps and Secrets (with their prefix),
//! then `env` in order — plain values with `$(VAR)` references expanded against the
//! variables before them and the service variables, or `valueFrom` a field of the pod
//! (`fieldRef`), a resource of a container (`resourceFieldRef`, limits defaulting to the
//! node's allocatable), a ConfigMap key or a Secret key (either `optional`) — then the
//! service environment variables not already set (`FOO_SERVICE_HOST`, `FOO_PORT_80_TCP`,
//! …; the `kubernetes` service of `default` always, the pod's namespace's services with
//! `enableServiceLinks`).
//!
//! Kubernetes keeps the variables in a map, so its order is arbitrary; here it is
//! deterministic: `envFrom` keys in source order, `env` entries where first set, then the
//! service variables sorted by service.

use super::PodContext;
use super::expansion::expand;
use super::resources::amount;
use crate::sources::{SourceError, Sources};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, ObjectFieldSelector, Pod, ResourceFieldSelector, Secret, Service,
};
use kyb_apimachinery::gofmt::quote;
use kyb_apimachinery::names::qualified_name_errors;
use kyb_apimachinery::quantity::Quantity;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Arc;

/// Variables in the order they were first set; setting one again replaces its value.
#[derive(Debug, Default)]
struct EnvList {
    vars: Vec<(String, String)>,
    index: HashMap<String, usize>,
}

impl EnvList {
    fn set(&mut self, name: String, value: String) {
        match self.index.get(&name) {
            Some(&i) => self.vars[i].1 = value,
            None => {
                self.index.insert(name.clone(), self.vars.len());
                self.vars.push((name, value));
            }
        }
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.index.get(name).map(|&i| self.vars[i].1.as_str())
    }

    fn into_vec(self) -> Vec<(String, String)> {
        self.vars
    }
}

/// The environment of `container`, in the order described in the module documentation.
/// The error is kubelet's message.
pub async fn environment(
    ctx: &PodContext<'_>,
    container: &Container,
    sources: &dyn Sources,
) -> Result<Vec<(String, String)>, String> {
    let pod = ctx.pod;
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let enable_service_links = pod
        .spec
        .as_ref()
        .and_then(|s| s.enable_service_links)
        .unwrap_or(true);
    let services = sources
        .services(namespace)
        .await
        .map_err(|_| "failed to list services when setting up env vars".to_string())?;
    let mut service_env = EnvList::default();
    for (name, value) in service_environment(&services, namespace, enable_service_links) {
        service_env.set(name, value);
    }

    let mut env = EnvList::default();
    let mut config_maps: HashMap<String, Arc<ConfigMap>> = HashMap::new();
    let mut secrets: HashMap<String, Arc<Secret>> = HashMap::new();
    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.as_deref().unwrap_or_default();
        if let Some(cm) = &from.config_map_ref {
            let optional = cm.optional.unwrap_or(false);
            let Some(map) = cached(&mut config_maps, &cm.name, optional, || {
                sources.config_map(namespace, &cm.name)
            })
            .await?
            else {
                continue;
            };
            for (key, value) in map.data.iter().flatten() {
                env.set(format!("{prefix}{key}"), value.clone());
            }
        } else if let Some(s) = &from.secret_ref {
            let optional = s.optional.unwrap_or(false);
            let Some(secret) = cached(&mut secrets, &s.name, optional, || {
                sources.secret(namespace, &s.name)
            })
            .await?
            else {
                continue;
            };
            for (key, value) in secret.data.iter().flatten() {
                env.set(
                    format!("{prefix}{key}"),
                    String::from_utf8_lossy(&value.0).into_owned(),
                );
            }
        }
    }

    for var in container.env.iter().flatten() {
        let value = match (var.value.as_deref(), var.value_from.as_ref()) {
            (Some(value), _) if !value.is_empty() => expand(value, |name| {
                env.get(name).or_else(|| service_env.get(name))
            }),
            (_, Some(from)) => {
                if let Some(field) = &from.field_ref {
                    field_value(ctx, field)?
                } else if let Some(resource) = &from.resource_field_ref {
                    resource_value(resource, pod, container, ctx.node_allocatable)?
                } else if let Some(key_ref) = &from.config_map_key_ref {
                    let optional = key_ref.optional.unwrap_or(false);
                    let name = &key_ref.name;
                    let Some(map) = cached(&mut config_maps, name, optional, || {
                        sources.config_map(namespace, name)
                    })
                    .await?
                    else {
                        continue;
                    };
                    match map.data.as_ref().and_then(|d| d.get(&key_ref.key)) {
                        Some(value) => value.clone(),
                        None if optional => continue,
                        None => {
                            return Err(format!(
                                "couldn't find key {} in ConfigMap {namespace}/{name}",
                                key_ref.key
                            ));
                        }
                    }
                } else if let Some(key_ref) = &from.secret_key_ref {
                    let optional = key_ref.optional.unwrap_or(false);
                    let name = &key_ref.name;
                    let Some(secret) = cached(&mut secrets, name, optional, || {
                        sources.secret(namespace, name)
                    })
                    .await?
                    else {
                        continue;
                    };
                    match secret.data.as_ref().and_then(|d| d.get(&key_ref.key)) {
                        Some(value) => String::from_utf8_lossy(&value.0).into_owned(),
                        None if optional => continue,
                        None => {
                            return Err(format!(
                                "couldn't find key {} in Secret {namespace}/{name}",
                                key_ref.key
                            ));
                        }
                    }
                } else {
                    String::new()
                }
            }
            _ => String::new(),
        };
        env.set(var.name.clone(), value);
    }

    for (name, value) in service_env.vars {
        if env.get(&name).is_none() {
            env.set(name, value);
        }
    }
    Ok(env.into_vec())
}

/// The object `name` from `cache`, else from `fetch` (then cached): objects are read
/// once per container. None when it is missing and `optional`.
async fn cached<T, F>(
    cache: &mut HashMap<String, Arc<T>>,
    name: &str,
    optional: bool,
    fetch: impl FnOnce() -> F,
) -> Result<Option<Arc<T>>, String>
where
    F: std::future::Future<Output = Result<Arc<T>, SourceError>>,
{
    if let Some(object) = cache.get(name) {
        return Ok(Some(object.clone()));
    }
    match fetch().await {
        Ok(object) => {
            cache.insert(name.to_string(), object.clone());
            Ok(Some(object))
        }
        Err(SourceError::NotFound(_)) if optional => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// Whether a service has a cluster IP (not headless, not ExternalName).
fn has_cluster_ip(service: &Service) -> bool {
    let ip = service
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.as_deref())
        .unwrap_or_default();
    !ip.is_empty() && ip != "None"
}

/// The service environment variables of a pod in `namespace` (`getServiceEnvVarMap` and
/// `envvars.FromServices`): those of the `kubernetes` service of `default` always, and
/// with `enable_service_links` those of the namespace's services (which win over the
/// master service of the same name).
pub fn service_environment(
    services: &[Arc<Service>],
    namespace: &str,
    enable_service_links: bool,
) -> Vec<(String, String)> {
    let mut chosen: BTreeMap<&str, &Service> = BTreeMap::new();
    for service in services {
        if !has_cluster_ip(service) {
            continue;
        }
        let name = service.metadata.name.as_deref().unwrap_or_default();
        let ns = service.metadata.namespace.as_deref().unwrap_or_default();
        if ns == "default" && name == "kubernetes" {
            chosen.entry(name).or_insert(service);
        } else if ns == namespace && enable_service_links {
            chosen.insert(name, service);
        }
    }
    let mut env = EnvList::default();
    for (name, service) in chosen {
        let Some(spec) = service.spec.as_ref() else {
            continue;
        };
        let ip = spec.cluster_ip.clone().unwrap_or_default();
        let prefix = name.replace('-', "_").to_uppercase();
        let ports = spec.ports.as_deref().unwrap_or_default();
        env.set(format!("{prefix}_SERVICE_HOST"), ip.clone());
        let Some(first) = ports.first() else {
            continue;
        };
        env.set(format!("{prefix}_SERVICE_PORT"), first.port.to_string());
        for port in ports {
            if let Some(port_name) = port.name.as_deref().filter(|n| !n.is_empty()) {
                env.set(
                    format!(
                        "{prefix}_SERVICE_PORT_{}",
                        port_name.replace('-', "_").to_uppercase()
                    ),
                    port.port.to_string(),
                );
            }
        }
        // Docker-style link variables.
        let host = |port: i32| match ip.parse::<IpAddr>() {
            Ok(IpAddr::V6(_)) => format!("[{ip}]:{port}"),
            _ => format!("{ip}:{port}"),
        };
        for (i, port) in ports.iter().enumerate() {
            let protocol = port.protocol.as_deref().unwrap_or("TCP");
            let lower = protocol.to_lowercase();
            let url = format!("{lower}://{}", host(port.port));
            if i == 0 {
                env.set(format!("{prefix}_PORT"), url.clone());
            }
            let port_prefix = format!("{prefix}_PORT_{}_{}", port.port, protocol.to_uppercase());
            env.set(port_prefix.clone(), url);
            env.set(format!("{port_prefix}_PROTO"), lower);
            env.set(format!("{port_prefix}_PORT"), port.port.to_string());
            env.set(format!("{port_prefix}_ADDR"), ip.clone());
        }
    }
    env.into_vec()
}

/// `path` split as `metadata.labels['key']` into its path and subscript.
fn split_subscript(path: &str) -> Option<(&str, &str)> {
    let inner = path.strip_suffix("']")?;
    let (path, key) = inner.split_once("['")?;
    (!path.is_empty()).then_some((path, key))
}

/// A map as the downward API writes it: `key="value"` lines, sorted by key.
pub fn format_map(map: Option<&BTreeMap<String, String>>) -> String {
    map.into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The pod's IPs, the node's address family first, at most one of each family.
pub fn sort_pod_ips(pod_ips: &[String], host_ips: &[String]) -> Vec<String> {
    let family = |ip: &str| ip.parse::<IpAddr>().ok().map(|ip| ip.is_ipv6());
    let v6_first = host_ips.first().and_then(|ip| family(ip)) == Some(true);
    let mut ips = Vec::new();
    for want_v6 in [v6_first, !v6_first] {
        ips.extend(
            pod_ips
                .iter()
                .find(|ip| family(ip) == Some(want_v6))
                .cloned(),
        );
    }
    ips
}

/// The value of a `fieldRef` (`podFieldSelectorRuntimeValue`).
pub fn field_value(ctx: &PodContext<'_>, selector: &ObjectFieldSelector) -> Result<String, String> {
    let version = selector.api_version.as_deref().unwrap_or("v1");
    if version != "v1" {
        return Err(format!("unsupported pod version: {version}"));
    }
    let path = selector.field_path.as_str();
    let pod: &Pod = ctx.pod;
    let meta = &pod.metadata;
    if let Some((base, key)) = split_subscript(path) {
        return match base {
            "metadata.annotations" | "metadata.labels" => {
                let checked = if base == "metadata.annotations" {
                    key.to_lowercase()
                } else {
                    key.to_string()
                };
                let errors = qualified_name_errors(&checked);
                if !errors.is_empty() {
                    return Err(format!(
                        "invalid key subscript in {path}: {}",
                        errors.join(";")
                    ));
                }
                let map = if base == "metadata.annotations" {
                    meta.annotations.as_ref()
                } else {
                    meta.labels.as_ref()
                };
                Ok(map.and_then(|m| m.get(key)).cloned().unwrap_or_default())
            }
            _ => Err(format!("field label does not support subscript: {path}")),
        };
    }
    let spec = pod.spec.as_ref();
    let pod_ips = sort_pod_ips(ctx.pod_ips, ctx.host_ips);
    let host_ip = || {
        ctx.host_ips
            .first()
            .cloned()
            .ok_or_else(|| "the node's IP addresses are not known yet".to_string())
    };
    match path {
        "metadata.annotations" => Ok(format_map(meta.annotations.as_ref())),
        "metadata.labels" => Ok(format_map(meta.labels.as_ref())),
        "metadata.name" => Ok(meta.name.clone().unwrap_or_default()),
        "metadata.namespace" => Ok(meta.namespace.clone().unwrap_or_default()),
        "metadata.uid" => Ok(meta.uid.clone().unwrap_or_default()),
        "spec.nodeName" | "spec.host" => Ok(spec
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| ctx.node_name.to_string())),
        "spec.serviceAccountName" => Ok(spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default()),
        "status.hostIP" => host_ip(),
        "status.hostIPs" => {
            host_ip()?;
            Ok(ctx.host_ips.join(","))
        }
        "status.podIP" => Ok(pod_ips.first().cloned().unwrap_or_default()),
        "status.podIPs" => Ok(pod_ips.join(",")),
        "spec.restartPolicy" | "spec.schedulerName" | "status.phase" => {
            Err(format!("unsupported fieldPath: {path}"))
        }
        _ => Err(format!("field label not supported: {path}")),
    }
}

/// The value of a `resourceFieldRef` of `container` (or of the container it names):
/// the amount divided by the divisor (1 by default), rounded up; missing CPU and memory
/// limits read as the node's allocatable (`cpu millicores`, `memory bytes`).
pub fn resource_value(
    selector: &ResourceFieldSelector,
    pod: &Pod,
    container: &Container,
    allocatable: (i64, i64),
) -> Result<String, String> {
    let container = match selector.container_name.as_deref().filter(|n| !n.is_empty()) {
        None => container,
        Some(name) => pod
            .spec
            .as_ref()
            .and_then(|s| {
                s.containers
                    .iter()
                    .chain(s.init_containers.iter().flatten())
                    .find(|c| c.name == name)
            })
            .ok_or_else(|| format!("container {name} not found"))?,
    };
    let divisor = selector
        .divisor
        .as_ref()
        .and_then(|d| Quantity::parse(&d.0).ok())
        .filter(|d| !d.is_zero())
        .unwrap_or_else(|| Quantity::from_int(1));
    let resources = container.resources.as_ref();
    let requests = resources.and_then(|r| r.requests.as_ref());
    let limits = resources.and_then(|r| r.limits.as_ref());
    let resource = selector.resource.as_str();
    let (list, name, default) = if let Some(name) = resource.strip_prefix("limits.") {
        let default = match name {
            "cpu" => Some(Quantity::from_milli(allocatable.0)),
            "memory" => Some(Quantity::from_int(allocatable.1)),
            _ => None,
        };
        (limits, name, default)
    } else if let Some(name) = resource.strip_prefix("requests.") {
        (requests, name, None)
    } else {
        return Err(format!("unsupported container resource : {resource}"));
    };
    if !matches!(name, "cpu" | "memory" | "ephemeral-storage") && !name.starts_with("hugepages-") {
        return Err(format!("unsupported container resource : {resource}"));
    }
    let value = amount(list, name)
        .or(default)
        .unwrap_or_else(|| Quantity::from_int(0));
    let ceil_div = |a: i128, b: i128| {
        let b = b.max(1);
        if a <= 0 { a / b } else { (a + b - 1) / b }
    };
    let result = if name == "cpu" {
        ceil_div(value.milli_value(), divisor.milli_value())
    } else {
        ceil_div(i128::from(value.value()), i128::from(divisor.value()))
    };
    Ok(result.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::tests::labelled_pod as pod;
    use super::super::tests::{MapSources, context_for};
    use super::*;

    use serde_json::json;

    fn sources() -> MapSources {
        let mut s = MapSources::default();
        s.add_config_map(
            "prod",
            "cfg",
            json!({"A": "from-cfg", "B": "b", "KEY": "v"}),
        );
        s.add_secret("prod", "sec", json!({"PASSWORD": "s3cret"}));
        s.add_service(
            "default",
            "kubernetes",
            "10.96.0.1",
            json!([{"name": "https", "port": 443}]),
        );
        s.add_service(
            "prod",
            "redis-main",
            "10.96.0.20",
            json!([{"port": 6379}, {"name": "metrics", "port": 9121, "protocol": "TCP"}]),
        );
        s.add_service("prod", "headless", "None", json!([{"port": 80}]));
        s.add_service("other", "elsewhere", "10.96.0.30", json!([{"port": 80}]));
        s
    }

    async fn env_of(pod: &Pod, sources: &MapSources) -> Result<Vec<(String, String)>, String> {
        let ctx = context_for(pod);
        let container = &pod.spec.as_ref().unwrap().containers[0];
        environment(&ctx, container, sources).await
    }

    fn names(env: &[(String, String)]) -> Vec<&str> {
        env.iter().map(|(k, _)| k.as_str()).collect()
    }

    fn value<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
        env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    #[tokio::test]
    async fn order_expansion_and_overrides() {
        let p = pod(json!({"containers": [{"name": "c",
        "envFrom": [{"configMapRef": {"name": "cfg"}}, {"prefix": "S_", "secretRef": {"name": "sec"}}],
        "env": [
            {"name": "FIRST", "value": "1"},
            {"name": "A", "value": "override-$(B)"},
            {"name": "REF", "value": "$(FIRST)-$(LATER)-$$(FIRST)-$(REDIS_MAIN_SERVICE_HOST)"},
            {"name": "LATER", "value": "2"},
            {"name": "EMPTY"},
        ]}]}));
        let env = env_of(&p, &sources()).await.unwrap();
        let n = names(&env);
        assert_eq!(
            &n[..7],
            ["A", "B", "KEY", "S_PASSWORD", "FIRST", "REF", "LATER"]
        );
        assert_eq!(value(&env, "A"), Some("override-b"));
        assert_eq!(value(&env, "S_PASSWORD"), Some("s3cret"));
        // Only earlier variables and service variables expand.
        assert_eq!(value(&env, "REF"), Some("1-$(LATER)-$(FIRST)-10.96.0.20"));
        assert_eq!(value(&env, "EMPTY"), Some(""));
        // Service variables come last.
        assert_eq!(n[8], "KUBERNETES_SERVICE_HOST");
    }

    #[tokio::test]
    async fn service_variables() {
        let p = pod(json!({"containers": [{"name": "c"}]}));
        let env = env_of(&p, &sources()).await.unwrap();
        let expected = [
            ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
            ("KUBERNETES_SERVICE_PORT", "443"),
            ("KUBERNETES_SERVICE_PORT_HTTPS", "443"),
            ("KUBERNETES_PORT", "tcp://10.96.0.1:443"),
            ("KUBERNETES_PORT_443_TCP", "tcp://10.96.0.1:443"),
            ("KUBERNETES_PORT_443_TCP_PROTO", "tcp"),
            ("KUBERNETES_PORT_443_TCP_PORT", "443"),
            ("KUBERNETES_PORT_443_TCP_ADDR", "10.96.0.1"),
            ("REDIS_MAIN_SERVICE_HOST", "10.96.0.20"),
            ("REDIS_MAIN_SERVICE_PORT", "6379"),
            ("REDIS_MAIN_SERVICE_PORT_METRICS", "9121"),
            ("REDIS_MAIN_PORT", "tcp://10.96.0.20:6379"),
            ("REDIS_MAIN_PORT_6379_TCP", "tcp://10.96.0.20:6379"),
            ("REDIS_MAIN_PORT_6379_TCP_PROTO", "tcp"),
            ("REDIS_MAIN_PORT_6379_TCP_PORT", "6379"),
            ("REDIS_MAIN_PORT_6379_TCP_ADDR", "10.96.0.20"),
            ("REDIS_MAIN_PORT_9121_TCP", "tcp://10.96.0.20:9121"),
            ("REDIS_MAIN_PORT_9121_TCP_PROTO", "tcp"),
            ("REDIS_MAIN_PORT_9121_TCP_PORT", "9121"),
            ("REDIS_MAIN_PORT_9121_TCP_ADDR", "10.96.0.20"),
        ];
        let got: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(got, expected);
        // Without service links: only the master service.
        let p = pod(json!({"enableServiceLinks": false, "containers": [{"name": "c"}]}));
        let env = env_of(&p, &sources()).await.unwrap();
        assert_eq!(env.len(), 8);
        assert!(names(&env).iter().all(|n| n.starts_with("KUBERNETES_")));
        // An IPv6 service.
        let mut s = MapSources::default();
        s.add_service(
            "prod",
            "v6",
            "fd00::10",
            json!([{"port": 80, "protocol": "UDP"}]),
        );
        let p = pod(json!({"containers": [{"name": "c"}]}));
        let env = env_of(&p, &s).await.unwrap();
        assert_eq!(value(&env, "V6_PORT"), Some("udp://[fd00::10]:80"));
        assert_eq!(value(&env, "V6_PORT_80_UDP_ADDR"), Some("fd00::10"));
    }

    #[tokio::test]
    async fn missing_keys_and_objects() {
        let s = sources();
        let p = pod(json!({"containers": [{"name": "c", "env": [
            {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "x"}}}]}]}));
        assert_eq!(
            env_of(&p, &s).await.unwrap_err(),
            "couldn't find key x in ConfigMap prod/cfg"
        );
        let p = pod(json!({"containers": [{"name": "c", "env": [
            {"name": "X", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "x"}}}]}]}));
        assert_eq!(
            env_of(&p, &s).await.unwrap_err(),
            "couldn't find key x in Secret prod/sec"
        );
        let p = pod(json!({"containers": [{"name": "c", "env": [
            {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "x"}}}]}]}));
        assert_eq!(
            env_of(&p, &s).await.unwrap_err(),
            "configmap \"nope\" not found"
        );
        let p = pod(
            json!({"containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "nope"}}]}]}),
        );
        assert_eq!(
            env_of(&p, &s).await.unwrap_err(),
            "secret \"nope\" not found"
        );
        // Optional: skipped.
        let p = pod(
            json!({"enableServiceLinks": false, "containers": [{"name": "c",
            "envFrom": [{"configMapRef": {"name": "nope", "optional": true}}],
            "env": [
                {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "x", "optional": true}}},
                {"name": "Y", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "x", "optional": true}}},
                {"name": "Z", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "KEY"}}},
            ]}]}),
        );
        let env = env_of(&p, &s).await.unwrap();
        assert_eq!(names(&env)[0], "Z");
        assert_eq!(value(&env, "X"), None);
        // Any other failure of the sources is not optional.
        let mut failing = sources();
        failing.fail_config_maps = true;
        let p = pod(json!({"containers": [{"name": "c",
            "envFrom": [{"configMapRef": {"name": "cfg", "optional": true}}]}]}));
        assert_eq!(
            env_of(&p, &failing).await.unwrap_err(),
            "the API is unreachable"
        );
        failing.fail_services = true;
        assert_eq!(
            env_of(&p, &failing).await.unwrap_err(),
            "failed to list services when setting up env vars"
        );
    }

    #[tokio::test]
    async fn field_refs() {
        let p = pod(json!({"serviceAccountName": "robot", "nodeName": "node-1",
        "containers": [{"name": "c", "env": [
            {"name": "NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "NS", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
            {"name": "UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "NOTE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['note']"}}},
            {"name": "LABELS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels"}}},
            {"name": "ANNOTATIONS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations"}}},
            {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
            {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
            {"name": "HOST_IPS", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIPs"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "POD_IPS", "valueFrom": {"fieldRef": {"fieldPath": "status.podIPs"}}},
        ]}]}));
        let s = MapSources::default();
        let env = env_of(&p, &s).await.unwrap();
        let got: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            got,
            [
                ("NAME", "web"),
                ("NS", "prod"),
                ("UID", "u1"),
                ("APP", "web"),
                ("NOTE", "a \"quoted\"\nline"),
                ("LABELS", "app=\"web\"\ntier=\"front\""),
                ("ANNOTATIONS", "note=\"a \\\"quoted\\\"\\nline\""),
                ("NODE", "node-1"),
                ("SA", "robot"),
                ("HOST_IP", "192.168.1.10"),
                ("HOST_IPS", "192.168.1.10,fd00::1"),
                ("POD_IP", "10.244.0.5"),
                ("POD_IPS", "10.244.0.5,fd00:10:244::5"),
            ]
        );
        let bad = |path: &str| {
            pod(json!({"containers": [{"name": "c", "env": [
                {"name": "X", "valueFrom": {"fieldRef": {"fieldPath": path}}}]}]}))
        };
        assert_eq!(
            env_of(&bad("spec.containers"), &s).await.unwrap_err(),
            "field label not supported: spec.containers"
        );
        assert_eq!(
            env_of(&bad("spec.nodeName['x']"), &s).await.unwrap_err(),
            "field label does not support subscript: spec.nodeName['x']"
        );
        assert!(
            env_of(&bad("metadata.labels['bad key']"), &s)
                .await
                .unwrap_err()
                .starts_with("invalid key subscript in metadata.labels['bad key']: ")
        );
        let p = pod(json!({"containers": [{"name": "c", "env": [
            {"name": "X", "valueFrom": {"fieldRef": {"apiVersion": "v2", "fieldPath": "metadata.name"}}}]}]}));
        assert_eq!(
            env_of(&p, &s).await.unwrap_err(),
            "unsupported pod version: v2"
        );
    }

    #[tokio::test]
    async fn resource_field_refs() {
        let p = pod(json!({"containers": [{"name": "c",
            "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
            "env": [
                {"name": "CPU_REQ", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu"}}},
                {"name": "CPU_REQ_M", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}}},
                {"name": "MEM_LIM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
                {"name": "MEM_LIM_MI", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                {"name": "CPU_LIM", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                {"name": "OTHER", "valueFrom": {"resourceFieldRef": {"containerName": "side", "resource": "limits.memory", "divisor": "1Mi"}}},
                {"name": "EPH", "valueFrom": {"resourceFieldRef": {"resource": "requests.ephemeral-storage"}}},
            ]}],
            "initContainers": [{"name": "side"}]}));
        let env = env_of(&p, &MapSources::default()).await.unwrap();
        // Allocatable in the test context: 2 CPUs, 4 GiB.
        assert_eq!(value(&env, "CPU_REQ"), Some("1"));
        assert_eq!(value(&env, "CPU_REQ_M"), Some("250"));
        assert_eq!(value(&env, "MEM_LIM"), Some("134217728"));
        assert_eq!(value(&env, "MEM_LIM_MI"), Some("128"));
        assert_eq!(value(&env, "CPU_LIM"), Some("2"));
        assert_eq!(value(&env, "OTHER"), Some("4096"));
        assert_eq!(value(&env, "EPH"), Some("0"));
        let p = pod(json!({"containers": [{"name": "c", "env": [
            {"name": "X", "valueFrom": {"resourceFieldRef": {"containerName": "nope", "resource": "limits.cpu"}}}]}]}));
        assert_eq!(
            env_of(&p, &MapSources::default()).await.unwrap_err(),
            "container nope not found"
        );
        let p = pod(json!({"containers": [{"name": "c", "env": [
            {"name": "X", "valueFrom": {"resourceFieldRef": {"resource": "limits.gpu"}}}]}]}));
        assert_eq!(
            env_of(&p, &MapSources::default()).await.unwrap_err(),
            "unsupported container resource : limits.gpu"
        );
    }

    #[test]
    fn pod_ips_follow_the_node_family() {
        let pod_ips = [
            "fd00::5".to_string(),
            "10.0.0.5".to_string(),
            "10.0.0.6".to_string(),
        ];
        assert_eq!(
            sort_pod_ips(&pod_ips, &["10.1.1.1".into()]),
            ["10.0.0.5", "fd00::5"]
        );
        assert_eq!(
            sort_pod_ips(&pod_ips, &["fd00::1".into()]),
            ["fd00::5", "10.0.0.5"]
        );
        assert_eq!(sort_pod_ips(&pod_ips[1..], &[]), ["10.0.0.5"]);
    }
}
