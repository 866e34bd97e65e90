//! Containers of a pod (regular, init and ephemeral): names, images, ports, environment,
//! volume mounts and devices, probes and lifecycle hooks, pull policy, resources, resize
//! policy and security context.

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

use crate::core::downward::{
    ENV_FIELD_PATHS, validate_object_field_selector, validate_resource_field_selector,
};
use crate::core::resources::{validate_container_resource_name, validate_resource_requirements};
use crate::core::security::validate_security_context;
use crate::core::volumes::{Volumes, validate_local_descending_path, validate_no_backsteps};
use crate::meta::IS_NEGATIVE_MSG;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, as_int, field};
use kyb_apimachinery::names;

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

/// What container validation needs to know of the pod.
#[derive(Clone, Copy)]
pub(crate) struct PodContext<'a> {
    pub(crate) volumes: &'a Volumes,
    pub(crate) claims: &'a [String],
    pub(crate) grace_period: Option<i64>,
    pub(crate) restart_policy: &'a str,
    pub(crate) host_users: bool,
}

/// `validatePullPolicy`.
pub(crate) fn validate_pull_policy(policy: &str, path: &Path) -> Vec<FieldError> {
    match policy {
        "Always" | "IfNotPresent" | "Never" => Vec::new(),
        "" => vec![FieldError::required(path, "")],
        p => vec![FieldError::not_supported(
            path,
            p,
            &["Always", "IfNotPresent", "Never"],
        )],
    }
}

/// A port given as a number or a name (`intstr.IntOrString`).
pub(crate) fn validate_port_num_or_name(port: &Value, path: &Path) -> Vec<FieldError> {
    match port {
        Value::String(s) => names::port_name_errors(s)
            .into_iter()
            .map(|m| FieldError::invalid(path, s.as_str(), m))
            .collect(),
        v => {
            let n = as_int(v).unwrap_or(0);
            names::port_number_errors(n)
                .into_iter()
                .map(|m| FieldError::invalid(path, n, m))
                .collect()
        }
    }
}

fn validate_ports(ports: &[Value], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = path.index(i);
        let name = port.str("name");
        if !name.is_empty() {
            let msgs = names::port_name_errors(name);
            if !msgs.is_empty() {
                for m in msgs {
                    errs.push(FieldError::invalid(&p.child("name"), name, m));
                }
            } else if !seen.insert(name) {
                errs.push(FieldError::duplicate(&p.child("name"), name));
            }
        }
        let cp = port.int("containerPort").unwrap_or(0);
        if cp == 0 {
            errs.push(FieldError::required(&p.child("containerPort"), ""));
        } else {
            for m in names::port_number_errors(cp) {
                errs.push(FieldError::invalid(&p.child("containerPort"), cp, m));
            }
        }
        let hp = port.int("hostPort").unwrap_or(0);
        if hp != 0 {
            for m in names::port_number_errors(hp) {
                errs.push(FieldError::invalid(&p.child("hostPort"), hp, m));
            }
        }
        let proto = port.str("protocol");
        if proto.is_empty() {
            errs.push(FieldError::required(&p.child("protocol"), ""));
        } else if !PROTOCOLS.contains(&proto) {
            errs.push(FieldError::not_supported(
                &p.child("protocol"),
                proto,
                PROTOCOLS,
            ));
        }
    }
    errs
}

fn validate_key_selector(s: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = s.str("name");
    for m in names::name_is_dns_subdomain(name, false) {
        errs.push(FieldError::invalid(&path.child("name"), name, m));
    }
    let key = s.str("key");
    if key.is_empty() {
        errs.push(FieldError::required(&path.child("key"), ""));
    } else {
        for m in names::config_map_key_errors(key) {
            errs.push(FieldError::invalid(&path.child("key"), key, m));
        }
    }
    errs
}

fn validate_env(env: &[Value], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, ev) in env.iter().enumerate() {
        let p = path.index(i);
        let name = ev.str("name");
        if name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        } else {
            for m in names::relaxed_env_var_name_errors(name) {
                errs.push(FieldError::invalid(&p.child("name"), name, m));
            }
        }
        let vf = field(ev, "valueFrom");
        if vf.is_null() {
            continue;
        }
        let vp = p.child("valueFrom");
        let mut count = 0;
        if vf.has("fieldRef") {
            count += 1;
            errs.extend(validate_object_field_selector(
                field(vf, "fieldRef"),
                ENV_FIELD_PATHS,
                &vp.child("fieldRef"),
            ));
        }
        if vf.has("resourceFieldRef") {
            count += 1;
            errs.extend(validate_resource_field_selector(
                field(vf, "resourceFieldRef"),
                false,
                &vp.child("resourceFieldRef"),
            ));
        }
        if vf.has("configMapKeyRef") {
            count += 1;
            errs.extend(validate_key_selector(
                field(vf, "configMapKeyRef"),
                &vp.child("configMapKeyRef"),
            ));
        }
        if vf.has("secretKeyRef") {
            count += 1;
            errs.extend(validate_key_selector(
                field(vf, "secretKeyRef"),
                &vp.child("secretKeyRef"),
            ));
        }
        if count == 0 {
            errs.push(FieldError::invalid(
                &vp,
                "",
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            ));
        } else if !ev.str("value").is_empty() {
            errs.push(FieldError::invalid(
                &vp,
                "",
                "may not be specified when `value` is not empty",
            ));
        } else if count > 1 {
            errs.push(FieldError::invalid(
                &vp,
                "",
                "may not have more than one field specified at a time",
            ));
        }
    }
    errs
}

fn validate_env_from(env_from: &[Value], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, ev) in env_from.iter().enumerate() {
        let p = path.index(i);
        let prefix = ev.str("prefix");
        if !prefix.is_empty() {
            for m in names::relaxed_env_var_name_errors(prefix) {
                errs.push(FieldError::invalid(&p.child("prefix"), prefix, m));
            }
        }
        let mut count = 0;
        for key in ["configMapRef", "secretRef"] {
            let r = field(ev, key);
            if r.is_null() {
                continue;
            }
            count += 1;
            let name = r.str("name");
            if name.is_empty() {
                errs.push(FieldError::required(&p.child(key).child("name"), ""));
            } else {
                for m in names::name_is_dns_subdomain(name, true) {
                    errs.push(FieldError::invalid(&p.child(key).child("name"), name, m));
                }
            }
        }
        if count == 0 {
            errs.push(FieldError::invalid(
                path,
                "",
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if count > 1 {
            errs.push(FieldError::invalid(
                path,
                "",
                "may not have more than one field specified at a time",
            ));
        }
    }
    errs
}

fn validate_mounts(ctr: &Value, volumes: &Volumes, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let devices = ctr.arr("volumeDevices");
    let device_names: HashSet<&str> = devices.iter().map(|d| d.str("name")).collect();
    let device_paths: HashSet<&str> = devices.iter().map(|d| d.str("devicePath")).collect();
    let privileged = field(ctr, "securityContext").flag("privileged");
    let mut mount_points: HashSet<&str> = HashSet::new();
    for (i, m) in ctr.arr("volumeMounts").iter().enumerate() {
        let p = path.index(i);
        let name = m.str("name");
        let mount_path = m.str("mountPath");
        if name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        }
        if !volumes.contains_key(name) {
            errs.push(FieldError::not_found(&p.child("name"), name));
        }
        if mount_path.is_empty() {
            errs.push(FieldError::required(&p.child("mountPath"), ""));
        }
        if !mount_points.insert(mount_path) {
            errs.push(FieldError::invalid(
                &p.child("mountPath"),
                mount_path,
                "must be unique",
            ));
        }
        if device_names.contains(name) {
            errs.push(FieldError::invalid(
                &p.child("name"),
                name,
                "must not already exist in volumeDevices",
            ));
        }
        if device_paths.contains(mount_path) {
            errs.push(FieldError::invalid(
                &p.child("mountPath"),
                mount_path,
                "must not already exist as a path in volumeDevices",
            ));
        }
        let sub = m.str("subPath");
        let sub_expr = m.str("subPathExpr");
        if volumes.get(name).is_some_and(|v| v.is_image) {
            if !sub.is_empty() {
                errs.push(FieldError::invalid(
                    &p.child("subPath"),
                    sub,
                    "not allowed in image volume sources",
                ));
            }
            if !sub_expr.is_empty() {
                errs.push(FieldError::invalid(
                    &p.child("subPathExpr"),
                    sub_expr,
                    "not allowed in image volume sources",
                ));
            }
        }
        if !sub.is_empty() {
            errs.extend(validate_local_descending_path(sub, &path.child("subPath")));
        }
        if !sub_expr.is_empty() {
            if !sub.is_empty() {
                errs.push(FieldError::invalid(
                    &p.child("subPathExpr"),
                    sub_expr,
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            errs.extend(validate_local_descending_path(
                sub_expr,
                &path.child("subPathExpr"),
            ));
        }
        let prop = m.opt_str("mountPropagation");
        if let Some(prop) = prop {
            let pp = path.child("mountPropagation");
            if !["Bidirectional", "HostToContainer", "None"].contains(&prop) {
                errs.push(FieldError::not_supported(
                    &pp,
                    prop,
                    &["Bidirectional", "HostToContainer", "None"],
                ));
            }
            if prop == "Bidirectional" && !privileged {
                errs.push(FieldError::forbidden(
                    &pp,
                    "Bidirectional mount propagation is available only to privileged containers",
                ));
            }
        }
        if let Some(rro) = m.opt_str("recursiveReadOnly") {
            let rp = path.child("recursiveReadOnly");
            match rro {
                "Disabled" => {}
                "Enabled" | "IfPossible" => {
                    if !m.flag("readOnly") {
                        errs.push(FieldError::forbidden(
                            &rp,
                            "may only be specified when readOnly is true",
                        ));
                    }
                    if prop.is_some_and(|p| p != "None") {
                        errs.push(FieldError::forbidden(
                            &rp,
                            "may only be specified when mountPropagation is None or not specified",
                        ));
                    }
                }
                other => errs.push(FieldError::not_supported(
                    &rp,
                    other,
                    &["Disabled", "Enabled", "IfPossible"],
                )),
            }
        }
    }
    errs
}

fn validate_devices(ctr: &Value, volumes: &Volumes, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mounts = ctr.arr("volumeMounts");
    let mount_names: HashSet<&str> = mounts.iter().map(|m| m.str("name")).collect();
    let mount_paths: HashSet<&str> = mounts.iter().map(|m| m.str("mountPath")).collect();
    let mut paths: HashSet<&str> = HashSet::new();
    let mut seen_names: HashSet<&str> = HashSet::new();
    for (i, d) in ctr.arr("volumeDevices").iter().enumerate() {
        let p = path.index(i);
        let name = d.str("name");
        let dev_path = d.str("devicePath");
        let vol = volumes.get(name);
        if name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        }
        if seen_names.contains(name) {
            errs.push(FieldError::invalid(
                &p.child("name"),
                name,
                "must be unique",
            ));
        }
        match vol {
            Some(v) if !v.is_claim => errs.push(FieldError::invalid(
                &p.child("name"),
                name,
                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
            )),
            Some(_) => {}
            None => errs.push(FieldError::not_found(&p.child("name"), name)),
        }
        if dev_path.is_empty() {
            errs.push(FieldError::required(&p.child("devicePath"), ""));
        }
        if paths.contains(dev_path) {
            errs.push(FieldError::invalid(
                &p.child("devicePath"),
                dev_path,
                "must be unique",
            ));
        }
        if !dev_path.is_empty() && !validate_no_backsteps(dev_path, &p).is_empty() {
            errs.push(FieldError::invalid(
                &p.child("devicePath"),
                dev_path,
                "can not contain backsteps ('..')",
            ));
        } else {
            paths.insert(dev_path);
        }
        if mount_names.contains(name) {
            errs.push(FieldError::invalid(
                &p.child("name"),
                name,
                "must not already exist in volumeMounts",
            ));
        }
        if mount_paths.contains(dev_path) {
            errs.push(FieldError::invalid(
                &p.child("devicePath"),
                dev_path,
                "must not already exist as a path in volumeMounts",
            ));
        }
        if !name.is_empty() {
            seen_names.insert(name);
        }
    }
    errs
}

fn validate_resize_policy(
    policies: &[Value],
    restart_policy: &str,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, p) in policies.iter().enumerate() {
        let res = p.str("resourceName");
        if seen.contains(&res) {
            errs.push(FieldError::duplicate(&path.index(i), res));
        }
        seen.push(res);
        match res {
            "cpu" | "memory" => {}
            "" => errs.push(FieldError::required(path, "")),
            other => errs.push(FieldError::not_supported(path, other, &["cpu", "memory"])),
        }
        let rp = p.str("restartPolicy");
        match rp {
            "NotRequired" | "RestartContainer" => {}
            "" => errs.push(FieldError::required(path, "")),
            other => errs.push(FieldError::not_supported(
                path,
                other,
                &["NotRequired", "RestartContainer"],
            )),
        }
        if restart_policy == "Never" && rp != "NotRequired" {
            errs.push(FieldError::invalid(
                path,
                rp,
                "must be 'NotRequired' when `restartPolicy` is 'Never'",
            ));
        }
    }
    errs
}

/// `validateContainerCommon`.
fn validate_common(ctr: &Value, ctx: PodContext<'_>, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = ctr.str("name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else {
        for m in names::dns1123_label_errors(name) {
            errs.push(FieldError::invalid(&path.child("name"), name, m));
        }
    }
    if ctr.str("image").is_empty() {
        errs.push(FieldError::required(&path.child("image"), ""));
    }
    match ctr.str("terminationMessagePolicy") {
        "File" | "FallbackToLogsOnError" => {}
        "" => errs.push(FieldError::required(
            &path.child("terminationMessagePolicy"),
            "",
        )),
        other => errs.push(FieldError::not_supported(
            &path.child("terminationMessagePolicy"),
            other,
            &["File", "FallbackToLogsOnError"],
        )),
    }
    errs.extend(validate_ports(ctr.arr("ports"), &path.child("ports")));
    errs.extend(validate_env(ctr.arr("env"), &path.child("env")));
    errs.extend(validate_env_from(
        ctr.arr("envFrom"),
        &path.child("envFrom"),
    ));
    errs.extend(validate_mounts(
        ctr,
        ctx.volumes,
        &path.child("volumeMounts"),
    ));
    errs.extend(validate_devices(
        ctr,
        ctx.volumes,
        &path.child("volumeDevices"),
    ));
    errs.extend(validate_pull_policy(
        ctr.str("imagePullPolicy"),
        &path.child("imagePullPolicy"),
    ));
    errs.extend(validate_resource_requirements(
        field(ctr, "resources"),
        validate_container_resource_name,
        ctx.claims,
        &path.child("resources"),
    ));
    errs.extend(validate_resize_policy(
        ctr.arr("resizePolicy"),
        ctx.restart_policy,
        &path.child("resizePolicy"),
    ));
    errs.extend(validate_security_context(
        field(ctr, "securityContext"),
        ctx.host_users,
        &path.child("securityContext"),
    ));
    errs
}

fn validate_handler(h: &Value, probe: bool, grace: Option<i64>, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut count = 0;
    let kinds: &[&str] = if probe {
        &["exec", "httpGet", "tcpSocket", "grpc"]
    } else {
        &["exec", "httpGet", "tcpSocket", "sleep"]
    };
    for kind in kinds {
        let v = field(h, kind);
        if v.is_null() {
            continue;
        }
        let p = path.child(kind);
        if count > 0 {
            errs.push(FieldError::forbidden(
                &p,
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        count += 1;
        match *kind {
            "exec" if v.arr("command").is_empty() => {
                errs.push(FieldError::required(&p.child("command"), ""));
            }
            "httpGet" => {
                if v.str("path").is_empty() {
                    errs.push(FieldError::required(&p.child("path"), ""));
                }
                errs.extend(validate_port_num_or_name(
                    field(v, "port"),
                    &p.child("port"),
                ));
                let scheme = v.str("scheme");
                if scheme != "HTTP" && scheme != "HTTPS" {
                    errs.push(FieldError::not_supported(
                        &p.child("scheme"),
                        scheme,
                        &["HTTP", "HTTPS"],
                    ));
                }
                for hdr in v.arr("httpHeaders") {
                    let n = hdr.str("name");
                    for m in names::http_header_name_errors(n) {
                        errs.push(FieldError::invalid(&p.child("httpHeaders"), n, m));
                    }
                }
            }
            "tcpSocket" => errs.extend(validate_port_num_or_name(
                field(v, "port"),
                &p.child("port"),
            )),
            "grpc" => {
                let port = v.int("port").unwrap_or(0);
                errs.extend(validate_port_num_or_name(
                    &Value::from(port),
                    &p.child("port"),
                ));
            }
            "sleep" => {
                let secs = v.int("seconds").unwrap_or(0);
                if let Some(g) = grace
                    && (secs < 0 || secs > g)
                {
                    errs.push(FieldError::invalid(
                        &p,
                        secs,
                        format!(
                            "must be non-negative and less than terminationGracePeriodSeconds ({g})"
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    if count == 0 {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
    errs
}

fn validate_probe(probe: &Value, grace: Option<i64>, path: &Path) -> Vec<FieldError> {
    let mut errs = validate_handler(probe, true, grace, path);
    for key in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        if let Some(v) = probe.int(key)
            && v < 0
        {
            errs.push(FieldError::invalid(&path.child(key), v, IS_NEGATIVE_MSG));
        }
    }
    if let Some(t) = probe.int("terminationGracePeriodSeconds")
        && t <= 0
    {
        errs.push(FieldError::invalid(
            &path.child("terminationGracePeriodSeconds"),
            t,
            "must be greater than 0",
        ));
    }
    errs
}

fn validate_probes(ctr: &Value, grace: Option<i64>, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let probe = field(ctr, key);
        if probe.is_null() {
            continue;
        }
        let p = path.child(key);
        errs.extend(validate_probe(probe, grace, &p));
        if key != "readinessProbe" {
            let st = probe.int("successThreshold").unwrap_or(0);
            if st != 1 {
                errs.push(FieldError::invalid(
                    &p.child("successThreshold"),
                    st,
                    "must be 1",
                ));
            }
        } else if let Some(t) = probe.get_field("terminationGracePeriodSeconds") {
            errs.push(FieldError::invalid(
                &p.child("terminationGracePeriodSeconds"),
                t.clone(),
                "must not be set for readinessProbes",
            ));
        }
    }
    errs
}

fn validate_lifecycle(lc: &Value, grace: Option<i64>, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for key in ["postStart", "preStop"] {
        let h = field(lc, key);
        if !h.is_null() {
            errs.extend(validate_handler(h, false, grace, &path.child(key)));
        }
    }
    errs
}

/// Host ports must not collide (per protocol and host IP).
fn host_port_conflicts(containers: &[&Value], path: &Path, indexes: &[usize]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for (ctr, ci) in containers.iter().zip(indexes) {
        for (pi, port) in ctr.arr("ports").iter().enumerate() {
            let hp = port.int("hostPort").unwrap_or(0);
            if hp == 0 {
                continue;
            }
            let key = format!("{}/{}/{hp}", port.str("protocol"), port.str("hostIP"));
            if seen.contains(&key) {
                errs.push(FieldError::duplicate(
                    &path.index(*ci).child("ports").index(pi).child("hostPort"),
                    key.as_str(),
                ));
            } else {
                seen.insert(key);
            }
        }
    }
    errs
}

/// `validateContainers` for `spec.containers`.
pub(crate) fn validate_containers(
    containers: &[Value],
    ctx: PodContext<'_>,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if containers.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let mut names_seen: HashSet<&str> = HashSet::new();
    for (i, ctr) in containers.iter().enumerate() {
        let p = path.index(i);
        errs.extend(validate_common(ctr, ctx, &p));
        let name = ctr.str("name");
        if !names_seen.insert(name) {
            errs.push(FieldError::duplicate(&p.child("name"), name));
        }
        let lc = field(ctr, "lifecycle");
        if !lc.is_null() {
            errs.extend(validate_lifecycle(
                lc,
                ctx.grace_period,
                &p.child("lifecycle"),
            ));
        }
        errs.extend(validate_probes(ctr, ctx.grace_period, &p));
        if ctr.has("restartPolicy") {
            errs.push(FieldError::forbidden(
                &p.child("restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    let all: Vec<&Value> = containers.iter().collect();
    let idx: Vec<usize> = (0..containers.len()).collect();
    errs.extend(host_port_conflicts(&all, path, &idx));
    errs
}

/// `validateInitContainers` for `spec.initContainers`.
pub(crate) fn validate_init_containers(
    init: &[Value],
    regular: &[Value],
    ctx: PodContext<'_>,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names_seen: HashSet<&str> = regular.iter().map(|c| c.str("name")).collect();
    for (i, ctr) in init.iter().enumerate() {
        let p = path.index(i);
        errs.extend(validate_common(ctr, ctx, &p));
        let mut restart_always = false;
        if let Some(rp) = ctr.opt_str("restartPolicy") {
            if rp != "Always" {
                errs.push(FieldError::not_supported(
                    &p.child("restartPolicy"),
                    rp,
                    &["Always"],
                ));
            }
            restart_always = rp == "Always";
        }
        let name = ctr.str("name");
        if names_seen.contains(name) {
            errs.push(FieldError::duplicate(&p.child("name"), name));
        } else if !name.is_empty() {
            names_seen.insert(name);
        }
        errs.extend(host_port_conflicts(&[ctr], path, &[i]));
        if restart_always {
            let lc = field(ctr, "lifecycle");
            if !lc.is_null() {
                errs.extend(validate_lifecycle(
                    lc,
                    ctx.grace_period,
                    &p.child("lifecycle"),
                ));
            }
            errs.extend(validate_probes(ctr, ctx.grace_period, &p));
        } else {
            for key in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if ctr.has(key) {
                    errs.push(FieldError::forbidden(
                        &p.child(key),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
    errs
}

/// Fields an ephemeral container may not set.
const EPHEMERAL_FORBIDDEN: &[&str] = &[
    "ports",
    "resources",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "resizePolicy",
    "restartPolicy",
];

/// `validateEphemeralContainers`.
pub(crate) fn validate_ephemeral_containers(
    eph: &[Value],
    regular: &[Value],
    init: &[Value],
    ctx: PodContext<'_>,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if eph.is_empty() {
        return errs;
    }
    let others: HashSet<&str> = regular.iter().chain(init).map(|c| c.str("name")).collect();
    let mut all = others.clone();
    for (i, ec) in eph.iter().enumerate() {
        let p = path.index(i);
        errs.extend(validate_common(ec, ctx, &p));
        errs.extend(validate_image_whitespace(ec, &p));
        let name = ec.str("name");
        if !all.insert(name) {
            errs.push(FieldError::duplicate(&p.child("name"), name));
        }
        let target = ec.str("targetContainerName");
        if !target.is_empty() && !others.contains(target) {
            errs.push(FieldError::not_found(
                &p.child("targetContainerName"),
                target,
            ));
        }
        for key in EPHEMERAL_FORBIDDEN {
            if ec
                .get_field(key)
                .is_some_and(|v| !kyb_apimachinery::json::is_zero(v))
            {
                errs.push(FieldError::forbidden(
                    &p.child(key),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
        for (j, vm) in ec.arr("volumeMounts").iter().enumerate() {
            let vp = p.child("volumeMounts").index(j);
            if !vm.str("subPath").is_empty() {
                errs.push(FieldError::forbidden(
                    &vp.child("subPath"),
                    "cannot be set for an Ephemeral Container",
                ));
            }
            if !vm.str("subPathExpr").is_empty() {
                errs.push(FieldError::forbidden(
                    &vp.child("subPathExpr"),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
    }
    errs
}

/// Pods (not templates) may not have images with surrounding whitespace.
pub(crate) fn validate_image_whitespace(ctr: &Value, path: &Path) -> Vec<FieldError> {
    let image = ctr.str("image");
    if image.trim() != image {
        vec![FieldError::invalid(
            &path.child("image"),
            image,
            "must not have leading or trailing whitespace",
        )]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx(vols: &Volumes) -> PodContext<'_> {
        PodContext {
            volumes: vols,
            claims: &[],
            grace_period: Some(30),
            restart_policy: "Always",
            host_users: true,
        }
    }

    fn check(containers: Value) -> Vec<String> {
        let vols = Volumes::new();
        let list = containers.as_array().cloned().unwrap_or_default();
        validate_containers(&list, ctx(&vols), &Path::new("spec.containers"))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn base() -> Value {
        json!({"name": "c", "image": "nginx", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"})
    }

    #[test]
    fn valid_container() {
        assert!(check(json!([base()])).is_empty());
    }

    #[test]
    fn missing_image_and_bad_name() {
        let mut c = base();
        c["image"] = json!("");
        c["name"] = json!("Bad_Name");
        let errs = check(json!([c]));
        assert_eq!(errs.len(), 2);
        assert!(errs[0].starts_with(
            r#"spec.containers[0].name: Invalid value: "Bad_Name": a lowercase RFC 1123 label"#
        ));
        assert_eq!(errs[1], "spec.containers[0].image: Required value");
    }

    #[test]
    fn duplicate_names_and_ports() {
        let mut c = base();
        c["ports"] = json!([
            {"name": "http", "containerPort": 80, "protocol": "TCP"},
            {"name": "http", "containerPort": 70000, "protocol": "ICMP"},
            {"containerPort": 0, "protocol": "TCP"}
        ]);
        let errs = check(json!([c, base()]));
        assert_eq!(
            errs,
            vec![
                r#"spec.containers[0].ports[1].name: Duplicate value: "http""#,
                "spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                r#"spec.containers[0].ports[1].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP""#,
                "spec.containers[0].ports[2].containerPort: Required value",
                r#"spec.containers[1].name: Duplicate value: "c""#,
            ]
        );
    }

    #[test]
    fn env_and_mounts() {
        let mut c = base();
        c["env"] = json!([{"name": ""}, {"name": "A=B"}, {"name": "X", "valueFrom": {}}]);
        c["volumeMounts"] = json!([{"name": "missing", "mountPath": "/data"}]);
        let errs = check(json!([c]));
        assert_eq!(errs[0], "spec.containers[0].env[0].name: Required value");
        assert!(errs[1].starts_with(r#"spec.containers[0].env[1].name: Invalid value: "A=B""#));
        assert_eq!(
            errs[2],
            r#"spec.containers[0].env[2].valueFrom: Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"#
        );
        assert_eq!(
            errs[3],
            r#"spec.containers[0].volumeMounts[0].name: Not found: "missing""#
        );
    }

    #[test]
    fn probes() {
        let mut c = base();
        c["livenessProbe"] = json!({"httpGet": {"path": "/", "port": "80", "scheme": "HTTP"}, "successThreshold": 2});
        c["readinessProbe"] = json!({});
        let errs = check(json!([c]));
        assert_eq!(
            errs,
            vec![
                r#"spec.containers[0].livenessProbe.httpGet.port: Invalid value: "80": must contain at least one letter (a-z)"#,
                "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
                "spec.containers[0].readinessProbe: Required value: must specify a handler type",
            ]
        );
    }

    #[test]
    fn init_containers() {
        let vols = Volumes::new();
        let mut i = base();
        i["livenessProbe"] = json!({"exec": {"command": ["x"]}});
        let errs = validate_init_containers(
            &[i],
            &[base()],
            ctx(&vols),
            &Path::new("spec.initContainers"),
        );
        let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            vec![
                r#"spec.initContainers[0].name: Duplicate value: "c""#,
                "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
            ]
        );
    }
}
