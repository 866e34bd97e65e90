//! Pod defaulting, as Kubernetes' `SetObjectDefaults_Pod` (for Pods) and the pod-spec part
//! of it applied to every pod template: restart and DNS policy, scheduler, grace period,
//! security context, container pull policy from the image tag, termination message,
//! protocols, probes, volume sources and modes, and resource quantities (requests copied
//! from limits for Pods, all rounded up to milli precision and written canonically).

use serde_json::{Map, Value, json};

use kyb_apimachinery::json::{
    child_object, default_nonzero, default_str, default_value, each_obj, obj_mut,
};
use kyb_apimachinery::quantity::{canonicalize_list, canonicalize_value};

/// Volume source keys; a volume with none of them becomes an `emptyDir`.
const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

/// The tag of an image reference as Kubernetes' `parsers.ParseImageName` sees it: the
/// explicit tag, `latest` when there is neither tag nor digest, `""` for a digest-only
/// reference; `None` when the reference does not parse.
pub(crate) fn image_tag(image: &str) -> Option<String> {
    if image.is_empty() || image.len() > 4096 {
        return None;
    }
    let (name_part, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    if let Some(d) = digest {
        let (algo, hex) = d.split_once(':')?;
        let algo_ok = algo.starts_with(|c: char| c.is_ascii_alphabetic())
            && algo
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_+.".contains(c));
        if !algo_ok || hex.len() < 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
    }
    let last_slash = name_part.rfind('/');
    let (name, tag) = match name_part.rfind(':') {
        Some(i) if last_slash.is_none_or(|s| i > s) => {
            (name_part.get(..i)?, Some(name_part.get(i + 1..)?))
        }
        _ => (name_part, None),
    };
    if let Some(t) = tag {
        let ok = !t.is_empty()
            && t.len() <= 128
            && t.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        if !ok {
            return None;
        }
    }
    if name.is_empty() || name.len() > 255 {
        return None;
    }
    let remainder = match name.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.to_lowercase() != first =>
        {
            let host = first.split(':').next().unwrap_or_default();
            if host.is_empty()
                || !host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-[]".contains(c))
            {
                return None;
            }
            rest
        }
        _ => name,
    };
    if !remainder.split('/').all(valid_path_component) {
        return None;
    }
    Some(match (tag, digest) {
        (Some(t), _) => t.to_string(),
        (None, Some(_)) => String::new(),
        (None, None) => "latest".to_string(),
    })
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`
fn valid_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty()
        || !b.first().copied().is_some_and(alnum)
        || !b.last().copied().is_some_and(alnum)
    {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        let x = b.get(i).copied().unwrap_or(0);
        if alnum(x) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !b.get(i).copied().is_some_and(alnum) {
            i += 1;
        }
        let sep = c.get(start..i).unwrap_or_default();
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|s| s == b'-')) {
            return false;
        }
    }
    true
}

/// The pull policy Kubernetes picks for an image without one.
pub(crate) fn default_pull_policy(image: &str) -> &'static str {
    if image_tag(image).as_deref() == Some("latest") {
        "Always"
    } else {
        "IfNotPresent"
    }
}

fn default_field_ref(m: &mut Map<String, Value>) {
    if let Some(fr) = obj_mut(m, "fieldRef") {
        default_str(fr, "apiVersion", "v1");
    }
    if let Some(rf) = obj_mut(m, "resourceFieldRef") {
        default_value(rf, "divisor", json!("0"));
        if let Some(d) = rf.get_mut("divisor") {
            canonicalize_value(d, false);
        }
    }
}

fn default_http_get(handler: &mut Map<String, Value>) {
    if let Some(h) = obj_mut(handler, "httpGet") {
        default_str(h, "path", "/");
        default_str(h, "scheme", "HTTP");
    }
}

fn default_probe(c: &mut Map<String, Value>, key: &str) {
    if let Some(p) = obj_mut(c, key) {
        default_nonzero(p, "timeoutSeconds", 1);
        default_nonzero(p, "periodSeconds", 10);
        default_nonzero(p, "successThreshold", 1);
        default_nonzero(p, "failureThreshold", 3);
        default_http_get(p);
        if let Some(g) = obj_mut(p, "grpc") {
            default_value(g, "service", json!(""));
        }
    }
}

/// `SetDefaults_Container` plus the defaults of its nested fields.
pub(crate) fn default_container(c: &mut Map<String, Value>) {
    let image = c
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    default_str(c, "imagePullPolicy", default_pull_policy(&image));
    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    each_obj(c, "ports", |p| default_str(p, "protocol", "TCP"));
    each_obj(c, "env", |e| {
        if let Some(vf) = obj_mut(e, "valueFrom") {
            default_field_ref(vf);
        }
    });
    if let Some(r) = child_object(c, "resources") {
        canonicalize_list(r.get_mut("limits"));
        canonicalize_list(r.get_mut("requests"));
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        default_probe(c, probe);
    }
    if let Some(lc) = obj_mut(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = obj_mut(lc, hook) {
                default_http_get(h);
            }
        }
    }
}

/// Defaults of one volume (`SetDefaults_Volume` and its sources').
pub(crate) fn default_volume(v: &mut Map<String, Value>) {
    if !VOLUME_SOURCES
        .iter()
        .any(|k| v.get(*k).is_some_and(|s| !s.is_null()))
    {
        v.insert("emptyDir".to_string(), json!({}));
    }
    if let Some(e) = obj_mut(v, "emptyDir")
        && let Some(sl) = e.get_mut("sizeLimit")
    {
        canonicalize_value(sl, false);
    }
    if let Some(h) = obj_mut(v, "hostPath") {
        default_value(h, "type", json!(""));
    }
    for key in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = obj_mut(v, key) {
            default_value(s, "defaultMode", json!(420));
        }
    }
    if let Some(d) = obj_mut(v, "downwardAPI") {
        each_obj(d, "items", default_field_ref);
    }
    if let Some(p) = obj_mut(v, "projected") {
        each_obj(p, "sources", |s| {
            if let Some(d) = obj_mut(s, "downwardAPI") {
                each_obj(d, "items", default_field_ref);
            }
            if let Some(t) = obj_mut(s, "serviceAccountToken") {
                default_value(t, "expirationSeconds", json!(3600));
            }
        });
    }
    if let Some(i) = obj_mut(v, "iscsi") {
        default_str(i, "iscsiInterface", "default");
    }
    if let Some(r) = obj_mut(v, "rbd") {
        default_str(r, "pool", "rbd");
        default_str(r, "user", "admin");
        default_str(r, "keyring", "/etc/ceph/keyring");
    }
    if let Some(a) = obj_mut(v, "azureDisk") {
        default_value(a, "cachingMode", json!("ReadWrite"));
        default_value(a, "fsType", json!("ext4"));
        default_value(a, "readOnly", json!(false));
        default_value(a, "kind", json!("Shared"));
    }
    if let Some(s) = obj_mut(v, "scaleIO") {
        default_str(s, "storageMode", "ThinProvisioned");
        default_str(s, "fsType", "xfs");
    }
    if let Some(e) = obj_mut(v, "ephemeral")
        && let Some(t) = obj_mut(e, "volumeClaimTemplate")
        && let Some(spec) = obj_mut(t, "spec")
    {
        crate::core::storage::default_pvc_spec(spec);
    }
}

/// `SetDefaults_PodSpec` and the nested defaults every pod template gets.
pub(crate) fn default_pod_spec(spec: &mut Map<String, Value>) {
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    default_value(spec, "securityContext", json!({}));
    default_value(spec, "terminationGracePeriodSeconds", json!(30));
    default_str(spec, "schedulerName", "default-scheduler");
    each_obj(spec, "volumes", default_volume);
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        each_obj(spec, key, default_container);
    }
    canonicalize_list(spec.get_mut("overhead"));
}

/// Copies limits to missing requests, as `SetDefaults_Pod` does for Pods only.
fn requests_from_limits(c: &mut Map<String, Value>) {
    let Some(res) = obj_mut(c, "resources") else {
        return;
    };
    let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    if let Some(requests) = child_object(res, "requests") {
        for (k, v) in limits {
            requests.entry(k).or_insert(v);
        }
    }
}

/// `SetObjectDefaults_Pod` on a Pod object.
pub(crate) fn default_pod(pod: &mut Value) {
    let Some(obj) = pod.as_object_mut() else {
        return;
    };
    let Some(spec) = child_object(obj, "spec") else {
        return;
    };
    for key in ["containers", "initContainers"] {
        each_obj(spec, key, requests_from_limits);
    }
    default_value(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        for key in ["containers", "initContainers"] {
            each_obj(spec, key, |c| {
                each_obj(c, "ports", |p| {
                    let cp = p.get("containerPort").cloned().unwrap_or(Value::Null);
                    if p.get("hostPort")
                        .and_then(kyb_apimachinery::json::as_int)
                        .unwrap_or(0)
                        == 0
                        && !cp.is_null()
                    {
                        p.insert("hostPort".to_string(), cp);
                    }
                });
            });
        }
    }
    default_pod_spec(spec);
}

/// Defaults of a `PodTemplateSpec` (`{metadata, spec}`) embedded in another object.
pub(crate) fn default_pod_template(tmpl: &mut Value) {
    if let Some(t) = tmpl.as_object_mut()
        && let Some(spec) = child_object(t, "spec")
    {
        default_pod_spec(spec);
    }
}

/// Defaults of the template at `path` (object keys) inside `obj`, if there is one.
pub(crate) fn default_template_at(obj: &mut Value, path: &[&str]) {
    let mut cur = obj;
    for key in path {
        match cur.get_mut(*key) {
            Some(next) if next.is_object() => cur = next,
            _ => return,
        }
    }
    default_pod_template(cur);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn image_tags() {
        assert_eq!(image_tag("nginx").as_deref(), Some("latest"));
        assert_eq!(image_tag("nginx:1.25").as_deref(), Some("1.25"));
        assert_eq!(image_tag("nginx:latest").as_deref(), Some("latest"));
        assert_eq!(image_tag("localhost:5000/app").as_deref(), Some("latest"));
        assert_eq!(
            image_tag("registry.k8s.io/pause:3.9").as_deref(),
            Some("3.9")
        );
        assert_eq!(
            image_tag(
                "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
            )
            .as_deref(),
            Some("")
        );
        assert_eq!(image_tag("NGINX"), None);
        assert_eq!(image_tag("a b"), None);
        assert_eq!(image_tag(""), None);
        assert_eq!(default_pull_policy("nginx"), "Always");
        assert_eq!(default_pull_policy("nginx:1"), "IfNotPresent");
        assert_eq!(default_pull_policy("Bad Image"), "IfNotPresent");
    }

    #[test]
    fn minimal_pod() {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        default_pod(&mut pod);
        assert_eq!(
            pod["spec"],
            json!({
                "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always", "resources": {},
                    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
                "dnsPolicy": "ClusterFirst",
                "enableServiceLinks": true,
                "restartPolicy": "Always",
                "schedulerName": "default-scheduler",
                "securityContext": {},
                "terminationGracePeriodSeconds": 30
            })
        );
    }

    #[test]
    fn resources_and_probes() {
        let mut pod = json!({"spec": {"hostNetwork": true, "containers": [{"name": "c", "image": "x:1",
            "ports": [{"containerPort": 80}],
            "resources": {"limits": {"cpu": "0.5", "memory": "1024Mi"}, "requests": {"cpu": "100m"}},
            "livenessProbe": {"httpGet": {"port": 80}},
            "readinessProbe": {"grpc": {"port": 9000}, "periodSeconds": 5}}],
            "volumes": [{"name": "v"}, {"name": "s", "secret": {"secretName": "x"}}]}});
        default_pod(&mut pod);
        let c = &pod["spec"]["containers"][0];
        assert_eq!(
            c["resources"],
            json!({"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "1Gi"}})
        );
        assert_eq!(
            c["ports"][0],
            json!({"containerPort": 80, "hostPort": 80, "protocol": "TCP"})
        );
        assert_eq!(
            c["livenessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
            "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(
            c["readinessProbe"]["grpc"],
            json!({"port": 9000, "service": ""})
        );
        assert_eq!(c["readinessProbe"]["periodSeconds"], json!(5));
        assert_eq!(
            pod["spec"]["volumes"][0],
            json!({"name": "v", "emptyDir": {}})
        );
        assert_eq!(
            pod["spec"]["volumes"][1]["secret"]["defaultMode"],
            json!(420)
        );
    }
}
