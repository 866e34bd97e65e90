//! `PodSpec` and `PodTemplateSpec` validation (`ValidatePodSpec`,
//! `ValidatePodTemplateSpec`) and the pod-specific annotations (mirror pods, deletion cost,
//! seccomp and AppArmor, tolerations annotation).

use std::collections::HashSet;

use serde_json::Value;

use crate::core::containers::{
    PodContext, validate_containers, validate_ephemeral_containers, validate_init_containers,
};
use crate::core::resources::{validate_container_resource_name, validate_resource_requirements};
use crate::core::scheduling::{validate_affinity, validate_tolerations, validate_topology_spread};
use crate::core::security::validate_pod_security_context;
use crate::core::volumes::{VolumeOpts, validate_local_descending_path, validate_volumes};
use crate::meta::{validate_annotations, validate_labels, validate_qualified_name};
use crate::net::validate_ip;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, field};
use kyb_apimachinery::names;

/// Options of pod spec validation.
#[derive(Clone, Copy, Default)]
pub(crate) struct SpecOpts<'a> {
    /// The spec belongs to a Pod (not a template): stricter host port and image rules.
    pub(crate) is_pod: bool,
    /// The pod's name, for generic ephemeral volume claim names.
    pub(crate) pod_name: Option<&'a str>,
}

fn validate_dns_config(spec: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let cfg = field(spec, "dnsConfig");
    if spec.str("dnsPolicy") == "None" {
        if cfg.is_null() {
            return vec![FieldError::required(
                path,
                "must provide `dnsConfig` when `dnsPolicy` is None",
            )];
        }
        if cfg.arr("nameservers").is_empty() {
            return vec![FieldError::required(
                &path.child("nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            )];
        }
    }
    if cfg.is_null() {
        return errs;
    }
    let ns = cfg.arr("nameservers");
    if ns.len() > 3 {
        errs.push(FieldError::invalid(
            &path.child("nameservers"),
            Value::from(ns.to_vec()),
            "must not have more than 3 nameservers",
        ));
    }
    for (i, n) in ns.iter().enumerate() {
        errs.extend(validate_ip(
            &path.child("nameservers").index(i),
            n.as_str().unwrap_or_default(),
        ));
    }
    let searches = cfg.str_list("searches");
    if searches.len() > 32 {
        errs.push(FieldError::invalid(
            &path.child("searches"),
            Value::from(cfg.arr("searches").to_vec()),
            "must not have more than 32 search paths",
        ));
    }
    if searches.join(" ").len() > 2048 {
        errs.push(FieldError::invalid(
            &path.child("searches"),
            Value::from(cfg.arr("searches").to_vec()),
            "must not have more than 2048 characters (including spaces) in the search list",
        ));
    }
    for (i, s) in searches.iter().enumerate() {
        if *s != "." {
            let s = s.strip_suffix('.').unwrap_or(s);
            for m in names::dns1123_subdomain_with_underscore_errors(s) {
                errs.push(FieldError::invalid(&path.child("searches").index(i), s, m));
            }
        }
    }
    for (i, o) in cfg.arr("options").iter().enumerate() {
        if o.str("name").is_empty() {
            errs.push(FieldError::required(
                &path.child("options").index(i),
                "must not be empty",
            ));
        }
    }
    errs
}

fn validate_resource_claims(claims: &[Value], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for (i, c) in claims.iter().enumerate() {
        let p = path.index(i);
        let name = c.str("name");
        if name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        } else if seen.contains(&name) {
            errs.push(FieldError::duplicate(&p.child("name"), name));
        } else {
            for m in names::dns1123_label_errors(name) {
                errs.push(FieldError::invalid(&p.child("name"), name, m));
            }
            seen.insert(name);
        }
        let rc = c.opt_str("resourceClaimName");
        let rt = c.opt_str("resourceClaimTemplateName");
        if rc.is_some() && rt.is_some() {
            errs.push(FieldError::invalid(&p, c.clone(), "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"));
        }
        if rc.is_none() && rt.is_none() {
            errs.push(FieldError::invalid(
                &p,
                c.clone(),
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            ));
        }
        for (key, v) in [("resourceClaimName", rc), ("resourceClaimTemplateName", rt)] {
            if let Some(v) = v {
                for m in names::name_is_dns_subdomain(v, false) {
                    errs.push(FieldError::invalid(&p.child(key), v, m));
                }
            }
        }
    }
    errs
}

/// All containers of a spec with their paths.
fn all_containers<'a>(spec: &'a Value, path: &Path) -> Vec<(&'a Value, Path)> {
    let mut out = Vec::new();
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, c) in spec.arr(key).iter().enumerate() {
            out.push((c, path.child(key).index(i)));
        }
    }
    out
}

fn validate_os(spec: &Value, path: &Path) -> Vec<FieldError> {
    let os = field(spec, "os");
    if os.is_null() {
        return Vec::new();
    }
    let p = path.child("os");
    let name = os.str("name");
    if name.is_empty() {
        return vec![FieldError::required(&p.child("name"), "cannot be empty")];
    }
    if name != "linux" && name != "windows" {
        return vec![FieldError::not_supported(&p, name, &["linux", "windows"])];
    }
    let mut errs = Vec::new();
    let sc = field(spec, "securityContext");
    if name == "linux" {
        if sc.has("windowsOptions") {
            errs.push(FieldError::forbidden(
                &path.child("securityContext").child("windowsOptions"),
                "windows options cannot be set for a linux pod",
            ));
        }
        for (c, cp) in all_containers(spec, path) {
            if field(c, "securityContext").has("windowsOptions") {
                errs.push(FieldError::forbidden(
                    &cp.child("securityContext").child("windowsOptions"),
                    "windows options cannot be set for a linux pod",
                ));
            }
        }
        return errs;
    }
    const WIN: &str = "cannot be set for a windows pod";
    let sp = path.child("securityContext");
    for key in ["appArmorProfile", "seLinuxOptions"] {
        if sc.has(key) {
            errs.push(FieldError::forbidden(&sp.child(key), WIN));
        }
    }
    if sc.has("hostUsers") || spec.has("hostUsers") {
        errs.push(FieldError::forbidden(&path.child("hostUsers"), WIN));
    }
    for key in ["hostPID", "hostIPC"] {
        if spec.flag(key) {
            errs.push(FieldError::forbidden(&path.child(key), WIN));
        }
    }
    for key in ["seccompProfile", "fsGroup", "fsGroupChangePolicy"] {
        if sc.has(key) {
            errs.push(FieldError::forbidden(&sp.child(key), WIN));
        }
    }
    if !sc.arr("sysctls").is_empty() {
        errs.push(FieldError::forbidden(&sp.child("sysctls"), WIN));
    }
    if spec.has("shareProcessNamespace") {
        errs.push(FieldError::forbidden(
            &path.child("shareProcessNamespace"),
            WIN,
        ));
    }
    for key in [
        "runAsUser",
        "runAsGroup",
        "supplementalGroups",
        "supplementalGroupsPolicy",
        "seLinuxChangePolicy",
    ] {
        if sc.has(key) {
            errs.push(FieldError::forbidden(&sp.child(key), WIN));
        }
    }
    for (c, cp) in all_containers(spec, path) {
        let csc = field(c, "securityContext");
        let csp = cp.child("securityContext");
        for key in [
            "appArmorProfile",
            "seLinuxOptions",
            "seccompProfile",
            "capabilities",
            "readOnlyRootFilesystem",
            "privileged",
            "allowPrivilegeEscalation",
            "procMount",
            "runAsUser",
            "runAsGroup",
        ] {
            if csc.has(key) {
                errs.push(FieldError::forbidden(&csp.child(key), WIN));
            }
        }
    }
    errs
}

fn validate_windows_host_process(spec: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let pod_hp = field(field(spec, "securityContext"), "windowsOptions").opt_flag("hostProcess");
    let mut count = 0;
    let mut hp_count = 0;
    for (c, cp) in all_containers(spec, path) {
        count += 1;
        let c_hp = field(field(c, "securityContext"), "windowsOptions").opt_flag("hostProcess");
        if let (Some(p), Some(cv)) = (pod_hp, c_hp)
            && p != cv
        {
            errs.push(FieldError::invalid(
                &cp.child("securityContext")
                    .child("windowsOptions")
                    .child("hostProcess"),
                cv,
                format!("pod hostProcess value must be identical if both are specified, was {p}"),
            ));
        }
        if c_hp == Some(true) || (c_hp.is_none() && pod_hp == Some(true)) {
            hp_count += 1;
        }
    }
    if hp_count > 0 {
        if hp_count != count {
            errs.push(FieldError::invalid(path, "", "If pod contains any hostProcess containers then all containers must be HostProcess containers"));
        }
        if !spec.flag("hostNetwork") {
            errs.push(FieldError::invalid(
                &path.child("hostNetwork"),
                false,
                "hostNetwork must be true if pod contains any hostProcess containers",
            ));
        }
    }
    errs
}

/// `ValidatePodSpec`.
pub(crate) fn validate_pod_spec(spec: &Value, opts: SpecOpts<'_>, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let grace = spec.int("terminationGracePeriodSeconds");
    if grace.is_none() {
        errs.push(FieldError::required(
            &path.child("terminationGracePeriodSeconds"),
            "",
        ));
    }
    let sc = field(spec, "securityContext");
    let host_users = sc.opt_flag("hostUsers").or(spec.opt_flag("hostUsers")) != Some(false);
    let vopts = VolumeOpts {
        pod_name: opts.pod_name,
        is_pod: opts.is_pod,
        allow_non_local_token_path: false,
    };
    let (vols, verrs) = validate_volumes(spec.arr("volumes"), vopts, &path.child("volumes"));
    errs.extend(verrs);
    let claims: Vec<String> = spec
        .arr("resourceClaims")
        .iter()
        .map(|c| c.str("name").to_string())
        .filter(|n| !n.is_empty())
        .collect();
    errs.extend(validate_resource_claims(
        spec.arr("resourceClaims"),
        &path.child("resourceClaims"),
    ));
    let ctx = PodContext {
        volumes: &vols,
        claims: &claims,
        grace_period: grace,
        restart_policy: spec.str("restartPolicy"),
        host_users,
    };
    let containers = spec.arr("containers");
    let init = spec.arr("initContainers");
    errs.extend(validate_containers(
        containers,
        ctx,
        &path.child("containers"),
    ));
    errs.extend(validate_init_containers(
        init,
        containers,
        ctx,
        &path.child("initContainers"),
    ));
    errs.extend(validate_ephemeral_containers(
        spec.arr("ephemeralContainers"),
        containers,
        init,
        ctx,
        &path.child("ephemeralContainers"),
    ));
    if spec.flag("hostNetwork") {
        for (i, c) in containers.iter().enumerate() {
            for (j, port) in c.arr("ports").iter().enumerate() {
                let hp = port.int("hostPort").unwrap_or(0);
                let cp = port.int("containerPort").unwrap_or(0);
                if (opts.is_pod || hp != 0) && hp != cp {
                    errs.push(FieldError::invalid(
                        &path
                            .child("containers")
                            .index(i)
                            .child("ports")
                            .index(j)
                            .child("hostPort"),
                        hp,
                        "must match `containerPort` when `hostNetwork` is true",
                    ));
                }
            }
        }
    }
    match spec.str("restartPolicy") {
        "Always" | "OnFailure" | "Never" => {}
        "" => errs.push(FieldError::required(&path.child("restartPolicy"), "")),
        other => errs.push(FieldError::not_supported(
            &path.child("restartPolicy"),
            other,
            &["Always", "OnFailure", "Never"],
        )),
    }
    match spec.str("dnsPolicy") {
        "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None" => {}
        "" => errs.push(FieldError::required(&path.child("dnsPolicy"), "")),
        other => errs.push(FieldError::not_supported(
            &path.child("dnsPolicy"),
            other,
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        )),
    }
    errs.extend(validate_labels(
        field(spec, "nodeSelector"),
        &path.child("nodeSelector"),
    ));
    errs.extend(validate_pod_security_context(sc, spec, path));
    for (i, s) in spec.arr("imagePullSecrets").iter().enumerate() {
        if s.as_object().is_some_and(|m| m.keys().any(|k| k != "name")) {
            errs.push(FieldError::invalid(
                &path.child("imagePullSecrets").index(i),
                s.clone(),
                "only name may be set",
            ));
        }
    }
    errs.extend(validate_affinity(
        field(spec, "affinity"),
        &path.child("affinity"),
    ));
    errs.extend(validate_dns_config(spec, &path.child("dnsConfig")));
    for (i, g) in spec.arr("readinessGates").iter().enumerate() {
        errs.extend(validate_qualified_name(
            g.str("conditionType"),
            &path.child("readinessGates").index(i).child("conditionType"),
        ));
    }
    let mut gates: HashSet<&str> = HashSet::new();
    for (i, g) in spec.arr("schedulingGates").iter().enumerate() {
        let name = g.str("name");
        let p = path.child("schedulingGates").index(i);
        errs.extend(validate_qualified_name(name, &p));
        if !gates.insert(name) {
            errs.push(FieldError::duplicate(&p, name));
        }
    }
    errs.extend(validate_topology_spread(
        spec.arr("topologySpreadConstraints"),
        &path.child("topologySpreadConstraints"),
    ));
    errs.extend(validate_windows_host_process(spec, path));
    if !host_users {
        if spec.flag("hostNetwork") {
            errs.push(FieldError::forbidden(
                &path.child("hostNetwork"),
                "when `pod.Spec.HostUsers` is false",
            ));
        }
        if spec.flag("hostPID") {
            errs.push(FieldError::forbidden(
                &path.child("HostPID"),
                "when `pod.Spec.HostUsers` is false",
            ));
        }
        if spec.flag("hostIPC") {
            errs.push(FieldError::forbidden(
                &path.child("HostIPC"),
                "when `pod.Spec.HostUsers` is false",
            ));
        }
    }
    for key in ["serviceAccountName", "nodeName", "priorityClassName"] {
        let v = spec.str(key);
        if !v.is_empty() {
            for m in names::name_is_dns_subdomain(v, false) {
                errs.push(FieldError::invalid(&path.child(key), v, m));
            }
        }
    }
    if let Some(ads) = spec.int("activeDeadlineSeconds")
        && !(1..=i64::from(i32::MAX)).contains(&ads)
    {
        errs.push(FieldError::invalid(
            &path.child("activeDeadlineSeconds"),
            ads,
            names::inclusive_range_error(1, i64::from(i32::MAX)),
        ));
    }
    for key in ["hostname", "subdomain"] {
        let v = spec.str(key);
        if !v.is_empty() {
            for m in names::dns1123_label_errors(v) {
                errs.push(FieldError::invalid(&path.child(key), v, m));
            }
        }
    }
    errs.extend(validate_tolerations(
        spec.arr("tolerations"),
        &path.child("tolerations"),
    ));
    for (i, ha) in spec.arr("hostAliases").iter().enumerate() {
        let p = path.child("hostAliases").index(i);
        errs.extend(validate_ip(&p.child("ip"), ha.str("ip")));
        for (j, h) in ha.str_list("hostnames").iter().enumerate() {
            for m in names::dns1123_subdomain_errors(h) {
                errs.push(FieldError::invalid(&p.child("hostnames").index(j), *h, m));
            }
        }
    }
    if let Some(rc) = spec.opt_str("runtimeClassName") {
        for m in names::name_is_dns_subdomain(rc, false) {
            errs.push(FieldError::invalid(&path.child("runtimeClassName"), rc, m));
        }
    }
    if let Some(pp) = spec.opt_str("preemptionPolicy") {
        match pp {
            "PreemptLowerPriority" | "Never" => {}
            "" => errs.push(FieldError::required(&path.child("preemptionPolicy"), "")),
            other => errs.push(FieldError::not_supported(
                &path.child("preemptionPolicy"),
                other,
                &["PreemptLowerPriority", "Never"],
            )),
        }
    }
    let overhead = field(spec, "overhead");
    if !overhead.is_null() {
        let req = serde_json::json!({ "limits": overhead });
        errs.extend(validate_resource_requirements(
            &req,
            validate_container_resource_name,
            &[],
            &path.child("overhead"),
        ));
    }
    errs.extend(validate_os(spec, path));
    errs
}

fn validate_seccomp_annotation(value: &str, path: &Path) -> Vec<FieldError> {
    if matches!(value, "runtime/default" | "docker/default" | "unconfined") {
        return Vec::new();
    }
    if let Some(p) = value.strip_prefix("localhost/") {
        return validate_local_descending_path(p, path);
    }
    vec![FieldError::invalid(
        path,
        value,
        "must be a valid seccomp profile",
    )]
}

/// `ValidatePodSpecificAnnotations`.
pub(crate) fn validate_pod_annotations(meta: &Value, spec: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let annotations = meta.str_map("annotations");
    let container_names: HashSet<&str> = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| spec.arr(k).iter().map(|c| c.str("name")))
        .collect();
    for (k, v) in &annotations {
        match *k {
            "kubernetes.io/config.mirror" if spec.str("nodeName").is_empty() => {
                errs.push(FieldError::invalid(
                    &path.key(k),
                    *v,
                    "must set spec.nodeName if mirror pod annotation is set",
                ));
            }
            "scheduler.alpha.kubernetes.io/tolerations" if !v.is_empty() => {
                match serde_json::from_str::<Value>(v) {
                    Ok(Value::Array(list)) => {
                        errs.extend(validate_tolerations(&list, &path.child(k)))
                    }
                    Ok(_) => errs.push(FieldError::invalid(
                        path,
                        *k,
                        "json: cannot unmarshal object into Go value of type []core.Toleration",
                    )),
                    Err(e) => errs.push(FieldError::invalid(path, *k, e.to_string())),
                }
            }
            "controller.kubernetes.io/pod-deletion-cost" => {
                let ok = v.parse::<i32>().is_ok() && !v.starts_with('+');
                if !ok {
                    errs.push(FieldError::invalid(
                        &path.key(k),
                        *v,
                        "must be a 32bit integer",
                    ));
                }
            }
            "seccomp.security.alpha.kubernetes.io/pod" => {
                errs.extend(validate_seccomp_annotation(v, &path.child(k)))
            }
            _ => {}
        }
        if k.starts_with("container.seccomp.security.alpha.kubernetes.io/") {
            errs.extend(validate_seccomp_annotation(v, &path.child(k)));
        }
        if let Some(c) = k.strip_prefix("container.apparmor.security.beta.kubernetes.io/") {
            if !container_names.contains(c) {
                errs.push(FieldError::invalid(&path.key(k), c, "container not found"));
            }
            let ok = v.is_empty()
                || *v == "runtime/default"
                || *v == "unconfined"
                || v.starts_with("localhost/");
            if !ok {
                errs.push(FieldError::invalid(
                    &path.key(k),
                    *v,
                    format!(
                        "invalid AppArmor profile name: {}",
                        kyb_apimachinery::gofmt::quote(v)
                    ),
                ));
            }
        }
    }
    errs
}

/// `ValidatePodTemplateSpec` for a template embedded in another object.
pub(crate) fn validate_pod_template_spec(tmpl: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let meta = field(tmpl, "metadata");
    let spec = field(tmpl, "spec");
    let meta_path = path.child("metadata");
    errs.extend(validate_labels(
        field(meta, "labels"),
        &meta_path.child("labels"),
    ));
    errs.extend(validate_annotations(
        field(meta, "annotations"),
        &meta_path.child("annotations"),
    ));
    errs.extend(validate_pod_annotations(
        meta,
        spec,
        &meta_path.child("annotations"),
    ));
    errs.extend(validate_pod_spec(
        spec,
        SpecOpts::default(),
        &path.child("spec"),
    ));
    if !spec.arr("ephemeralContainers").is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("spec").child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> Value {
        json!({"containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30, "securityContext": {}})
    }

    fn check(spec: &Value) -> Vec<String> {
        validate_pod_spec(
            spec,
            SpecOpts {
                is_pod: true,
                pod_name: Some("p"),
            },
            &Path::new("spec"),
        )
        .iter()
        .map(ToString::to_string)
        .collect()
    }

    #[test]
    fn valid_spec() {
        assert!(check(&spec()).is_empty());
    }

    #[test]
    fn policies() {
        let mut s = spec();
        s["restartPolicy"] = json!("Sometimes");
        s["dnsPolicy"] = json!("None");
        assert_eq!(
            check(&s),
            vec![
                r#"spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never""#,
                "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None",
            ]
        );
    }

    #[test]
    fn node_selector_and_names() {
        let mut s = spec();
        s["nodeSelector"] = json!({"bad key!": "v"});
        s["nodeName"] = json!("Node_1");
        s["activeDeadlineSeconds"] = json!(0);
        let errs = check(&s);
        assert_eq!(errs.len(), 3);
        assert!(errs[0].starts_with(
            r#"spec.nodeSelector: Invalid value: "bad key!": name part must consist of"#
        ));
        assert!(errs[1].starts_with(r#"spec.nodeName: Invalid value: "Node_1""#));
        assert_eq!(
            errs[2],
            "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"
        );
    }

    #[test]
    fn host_network_ports() {
        let mut s = spec();
        s["hostNetwork"] = json!(true);
        s["containers"][0]["ports"] =
            json!([{"containerPort": 80, "hostPort": 81, "protocol": "TCP"}]);
        assert_eq!(
            check(&s),
            vec![
                "spec.containers[0].ports[0].hostPort: Invalid value: 81: must match `containerPort` when `hostNetwork` is true"
            ]
        );
    }

    #[test]
    fn annotations() {
        let meta = json!({"annotations": {"controller.kubernetes.io/pod-deletion-cost": "x", "kubernetes.io/config.mirror": "m"}});
        let errs = validate_pod_annotations(&meta, &spec(), &Path::new("metadata.annotations"));
        assert_eq!(errs.len(), 2);
    }
}
