//! Services: defaults (type, session affinity, protocols, target ports, traffic
//! policies), the `clusterIP`/`clusterIPs` bookkeeping of the service registry, validation
//! of ports, types, IPs and policies, the dual-stack upgrade/downgrade rules on update,
//! and load balancer status.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::Ctx;
use crate::core::containers::validate_port_num_or_name;
use crate::core::reset_status;
use crate::meta::{validate_labels, validate_qualified_name};
use crate::net::{
    is_dual_stack, is_ipv6, parse_ip, validate_cidr, validate_ip, validate_non_special_ip,
};
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{
    Obj, as_int, child_object, default_str, default_value, each_obj, field, field_at, obj_mut,
};
use kyb_apimachinery::names;

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const LB_ONLY: &str = "may only be used when `type` is 'LoadBalancer'";

fn externally_accessible(spec: &Value) -> bool {
    match spec.str("type") {
        "LoadBalancer" | "NodePort" => true,
        "ClusterIP" => !spec.arr("externalIPs").is_empty(),
        _ => false,
    }
}

fn needs_health_check(spec: &Value) -> bool {
    spec.str("type") == "LoadBalancer" && spec.str("externalTrafficPolicy") == "Local"
}

fn is_headless(spec: &Value) -> bool {
    let ips = spec.str_list("clusterIPs");
    ips.len() == 1 && ips.first() == Some(&"None")
}

/// `SetDefaults_Service`.
pub(crate) fn default_service(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    let Some(spec) = child_object(o, "spec") else {
        return;
    };
    default_str(spec, "sessionAffinity", "None");
    match spec.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let has_timeout = spec
                .get("sessionAffinityConfig")
                .map(|c| field_at(c, &["clientIP", "timeoutSeconds"]))
                .is_some_and(|t| !t.is_null());
            if !has_timeout {
                spec.insert(
                    "sessionAffinityConfig".to_string(),
                    json!({"clientIP": {"timeoutSeconds": 10800}}),
                );
            }
        }
        _ => {}
    }
    default_str(spec, "type", "ClusterIP");
    each_obj(spec, "ports", |p| {
        default_str(p, "protocol", "TCP");
        let empty = match p.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.is_empty(),
            Some(v) => as_int(v) == Some(0),
        };
        if empty && let Some(port) = p.get("port").cloned() {
            p.insert("targetPort".to_string(), port);
        }
    });
    let view = Value::Object(spec.clone());
    let svc_type = view.str("type").to_string();
    if externally_accessible(&view) {
        default_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(svc_type.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP") {
        default_value(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if svc_type == "LoadBalancer" {
        default_value(spec, "allocateLoadBalancerNodePorts", json!(true));
        if let Some(status) = obj_mut(o, "status")
            && let Some(lb) = obj_mut(status, "loadBalancer")
        {
            each_obj(lb, "ingress", |ing| {
                let has_ip = ing
                    .get("ip")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty());
                if has_ip {
                    default_value(ing, "ipMode", json!("VIP"));
                }
            });
        }
    }
}

/// Create: empty status, and `clusterIPs` initialised from a lone `clusterIP`.
pub(crate) fn prepare(obj: &mut Value) {
    reset_status(obj, json!({"loadBalancer": {}}));
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let ip = spec
            .get("clusterIP")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let ips_empty = spec
            .get("clusterIPs")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if !ip.is_empty() && ips_empty {
            spec.insert("clusterIPs".to_string(), json!([ip]));
        }
    }
}

fn same_cluster_ips(a: &Value, b: &Value) -> bool {
    a.str_list("clusterIPs") == b.str_list("clusterIPs")
}

fn needs_node_port(spec: &Value) -> bool {
    match spec.str("type") {
        "NodePort" => true,
        "LoadBalancer" => spec.opt_flag("allocateLoadBalancerNodePorts") != Some(false),
        _ => false,
    }
}

fn copy_from(dst: &mut Map<String, Value>, src: &Value, key: &str) {
    if let Some(v) = src.get_field(key) {
        dst.insert(key.to_string(), v.clone());
    }
}

/// Update: keep allocated values the request left out (`patchAllocatedValues`), then keep
/// `clusterIP` and `clusterIPs` in step (`normalizeClusterIPs`).
pub(crate) fn prepare_update(new: &mut Value, old: &Value) {
    let old_spec = field(old, "spec").clone();
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let view = Value::Object(spec.clone());
    if old_spec.str("type") != "ExternalName" && view.str("type") != "ExternalName" {
        if view.str("clusterIP").is_empty() {
            copy_from(spec, &old_spec, "clusterIP");
        }
        if view.arr("clusterIPs").is_empty() {
            copy_from(spec, &old_spec, "clusterIPs");
        }
        if !view.has("ipFamilies") {
            copy_from(spec, &old_spec, "ipFamilies");
        }
        if !view.has("ipFamilyPolicy") {
            copy_from(spec, &old_spec, "ipFamilyPolicy");
        }
    }
    if needs_node_port(&old_spec) && needs_node_port(&view) {
        let used = |s: &Value| -> Vec<i64> {
            s.arr("ports")
                .iter()
                .filter_map(|p| p.int("nodePort"))
                .filter(|n| *n != 0)
                .collect()
        };
        let old_used = used(&old_spec);
        let new_used = used(&view);
        let both: Vec<i64> = old_used
            .into_iter()
            .filter(|p| new_used.contains(p))
            .collect();
        let by_name: Vec<(String, i64)> = old_spec
            .arr("ports")
            .iter()
            .map(|p| (p.str("name").to_string(), p.int("nodePort").unwrap_or(0)))
            .collect();
        each_obj(spec, "ports", |p| {
            if p.get("nodePort").and_then(as_int).unwrap_or(0) == 0 {
                let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
                if let Some((_, np)) = by_name.iter().rev().find(|(n, _)| n == name)
                    && *np != 0
                    && !both.contains(np)
                {
                    p.insert("nodePort".to_string(), json!(np));
                }
            }
        });
    }
    if needs_health_check(&old_spec)
        && needs_health_check(&view)
        && view.int("healthCheckNodePort").unwrap_or(0) == 0
    {
        copy_from(spec, &old_spec, "healthCheckNodePort");
    }
    // normalizeClusterIPs
    let view = Value::Object(spec.clone());
    if !old_spec.arr("clusterIPs").is_empty()
        && view.arr("clusterIPs").is_empty()
        && old_spec.str("clusterIP") == view.str("clusterIP")
    {
        copy_from(spec, &old_spec, "clusterIPs");
    }
    let view = Value::Object(spec.clone());
    if old_spec.str("clusterIP") != view.str("clusterIP") {
        if !old_spec.str("clusterIP").is_empty() && view.str("clusterIP").is_empty() {
            if same_cluster_ips(&old_spec, &view) {
                spec.remove("clusterIPs");
            }
        } else if same_cluster_ips(&old_spec, &view) {
            spec.insert("clusterIPs".to_string(), json!([view.str("clusterIP")]));
        }
    }
}

fn validate_port(
    p: &Value,
    require_name: bool,
    seen: &mut HashSet<String>,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = p.str("name");
    if require_name && name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else if !name.is_empty() {
        for m in names::dns1123_label_errors(name) {
            errs.push(FieldError::invalid(&path.child("name"), name, m));
        }
        if !seen.insert(name.to_string()) {
            errs.push(FieldError::duplicate(&path.child("name"), name));
        }
    }
    let port = p.int("port").unwrap_or(0);
    for m in names::port_number_errors(port) {
        errs.push(FieldError::invalid(&path.child("port"), port, m));
    }
    let proto = p.str("protocol");
    if proto.is_empty() {
        errs.push(FieldError::required(&path.child("protocol"), ""));
    } else if !PROTOCOLS.contains(&proto) {
        errs.push(FieldError::not_supported(
            &path.child("protocol"),
            proto,
            PROTOCOLS,
        ));
    }
    errs.extend(validate_port_num_or_name(
        field(p, "targetPort"),
        &path.child("targetPort"),
    ));
    if let Some(ap) = p.opt_str("appProtocol") {
        errs.extend(validate_qualified_name(ap, &path.child("appProtocol")));
    }
    errs
}

/// `ValidateServiceClusterIPsRelatedFields`.
fn validate_cluster_ips(spec: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if spec.str("type") == "ExternalName" {
        return errs;
    }
    let ips_path = path.child("clusterIPs");
    let ips = spec.str_list("clusterIPs");
    let ips_value = Value::from(spec.arr("clusterIPs").to_vec());
    let ip = spec.str("clusterIP");
    if !ip.is_empty() {
        match ips.first() {
            None => errs.push(FieldError::required(&ips_path, "")),
            Some(first) if *first != ip => errs.push(FieldError::invalid(
                &ips_path,
                ips_value.clone(),
                "first value must match `clusterIP`",
            )),
            _ => {}
        }
    } else if !ips.is_empty() {
        errs.push(FieldError::invalid(
            &ips_path,
            ips_value.clone(),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    let families = spec.str_list("ipFamilies");
    let mut seen: Vec<&str> = Vec::new();
    for (i, f) in families.iter().enumerate() {
        if *f != "IPv4" && *f != "IPv6" {
            errs.push(FieldError::not_supported(
                &path.child("ipFamilies").index(i),
                *f,
                &["IPv4", "IPv6"],
            ));
        }
        if seen.contains(f) {
            errs.push(FieldError::duplicate(
                &path.child("ipFamilies").index(i),
                *f,
            ));
        }
        seen.push(f);
    }
    if let Some(p) = spec.opt_str("ipFamilyPolicy")
        && !["PreferDualStack", "RequireDualStack", "SingleStack"].contains(&p)
    {
        errs.push(FieldError::not_supported(
            &path.child("ipFamilyPolicy"),
            p,
            &["PreferDualStack", "RequireDualStack", "SingleStack"],
        ));
    }
    let mut invalid_ips = false;
    for (i, cip) in ips.iter().enumerate() {
        if i == 0 && *cip == "None" {
            if ips.len() > 1 {
                invalid_ips = true;
                errs.push(FieldError::invalid(
                    &ips_path,
                    ips_value.clone(),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        let e = validate_ip(&ips_path.index(i), cip);
        invalid_ips |= !e.is_empty();
        errs.extend(e);
    }
    if ips.len() > 2 {
        errs.push(FieldError::invalid(
            &ips_path,
            ips_value.clone(),
            "may only hold up to 2 values",
        ));
    }
    if invalid_ips {
        return errs;
    }
    if ips.len() > 1 && !is_dual_stack(&ips) {
        errs.push(FieldError::invalid(
            &ips_path,
            ips_value,
            "may specify no more than one IP for each IP family",
        ));
    }
    if !is_headless(spec) {
        for (i, (cip, fam)) in ips.iter().zip(&families).enumerate() {
            if *fam == "IPv4" && is_ipv6(cip) {
                errs.push(FieldError::invalid(
                    &ips_path.index(i),
                    *cip,
                    format!("expected an IPv4 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
            if *fam == "IPv6" && !is_ipv6(cip) {
                errs.push(FieldError::invalid(
                    &ips_path.index(i),
                    *cip,
                    format!("expected an IPv6 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
        }
    }
    errs
}

/// `ValidateService`.
pub(crate) fn validate(svc: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(svc, "spec");
    let path = Path::new("spec");
    let annotations = field_at(svc, &["metadata", "annotations"]);
    const MODE: &str = "service.kubernetes.io/topology-mode";
    const HINTS: &str = "service.kubernetes.io/topology-aware-hints";
    if let (Some(m), Some(h)) = (annotations.opt_str(MODE), annotations.opt_str(HINTS))
        && m != h
    {
        errs.push(FieldError::invalid(
            &Path::new("metadata").child("annotations").key(MODE),
            m,
            format!("must match annotations[{HINTS}] when both are specified"),
        ));
    }
    let svc_type = spec.str("type");
    let headless = is_headless(spec);
    let ports = spec.arr("ports");
    if ports.is_empty() && !headless && svc_type != "ExternalName" {
        errs.push(FieldError::required(&path.child("ports"), ""));
    }
    let first_ip = spec
        .str_list("clusterIPs")
        .first()
        .copied()
        .unwrap_or_default()
        .to_string();
    match svc_type {
        "LoadBalancer" if headless => errs.push(FieldError::invalid(
            &path.child("clusterIPs").index(0),
            first_ip,
            "may not be set to 'None' for LoadBalancer services",
        )),
        "NodePort" if headless => errs.push(FieldError::invalid(
            &path.child("clusterIPs").index(0),
            first_ip,
            "may not be set to 'None' for NodePort services",
        )),
        "ExternalName" => {
            if !spec.arr("clusterIPs").is_empty() {
                errs.push(FieldError::forbidden(
                    &path.child("clusterIPs"),
                    "may not be set for ExternalName services",
                ));
            }
            if !spec.arr("ipFamilies").is_empty() {
                errs.push(FieldError::forbidden(
                    &path.child("ipFamilies"),
                    "may not be set for ExternalName services",
                ));
            }
            if spec.has("ipFamilyPolicy") {
                errs.push(FieldError::forbidden(
                    &path.child("ipFamilyPolicy"),
                    "may not be set for ExternalName services",
                ));
            }
            let cname = spec.str("externalName");
            let cname = cname.strip_suffix('.').unwrap_or(cname);
            if cname.is_empty() {
                errs.push(FieldError::required(&path.child("externalName"), ""));
            } else {
                for m in names::dns1123_subdomain_errors(cname) {
                    errs.push(FieldError::invalid(&path.child("externalName"), cname, m));
                }
            }
        }
        _ => {}
    }
    let mut seen_names = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        errs.extend(validate_port(
            p,
            ports.len() > 1,
            &mut seen_names,
            &path.child("ports").index(i),
        ));
    }
    if spec.has("selector") {
        errs.extend(validate_labels(
            field(spec, "selector"),
            &path.child("selector"),
        ));
    }
    match spec.str("sessionAffinity") {
        "" => errs.push(FieldError::required(&path.child("sessionAffinity"), "")),
        "ClientIP" => {
            let cfg = field(spec, "sessionAffinityConfig");
            let cp = path.child("sessionAffinityConfig");
            const WHEN: &str = "when session affinity type is ClientIP";
            if cfg.is_null() {
                errs.push(FieldError::required(&cp, WHEN));
            } else if field(cfg, "clientIP").is_null() {
                errs.push(FieldError::required(&cp.child("clientIP"), WHEN));
            } else {
                match field_at(cfg, &["clientIP", "timeoutSeconds"]) {
                    Value::Null => errs.push(FieldError::required(
                        &cp.child("clientIP").child("timeoutSeconds"),
                        WHEN,
                    )),
                    t => {
                        let t = as_int(t).unwrap_or(0);
                        if t <= 0 || t > 86400 {
                            errs.push(FieldError::invalid(
                                &cp.child("clientIP").child("timeoutSeconds"),
                                t,
                                "must be greater than 0 and less than 86400",
                            ));
                        }
                    }
                }
            }
        }
        "None" => {
            if spec.has("sessionAffinityConfig") {
                errs.push(FieldError::forbidden(
                    &path.child("sessionAffinityConfig"),
                    "must not be set when session affinity is None",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            &path.child("sessionAffinity"),
            other,
            &["ClientIP", "None"],
        )),
    }
    errs.extend(validate_cluster_ips(spec, &path));
    for (i, ip) in spec.str_list("externalIPs").iter().enumerate() {
        let p = path.child("externalIPs").index(i);
        let e = validate_ip(&p, ip);
        if e.is_empty() {
            errs.extend(validate_non_special_ip(&p, ip));
        } else {
            errs.extend(e);
        }
    }
    const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
    if svc_type.is_empty() {
        errs.push(FieldError::required(&path.child("type"), ""));
    } else if !TYPES.contains(&svc_type) {
        errs.push(FieldError::not_supported(
            &path.child("type"),
            svc_type,
            TYPES,
        ));
    }
    if svc_type == "ClusterIP" {
        for (i, p) in ports.iter().enumerate() {
            if p.int("nodePort").unwrap_or(0) != 0 {
                errs.push(FieldError::forbidden(
                    &path.child("ports").index(i).child("nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports: HashSet<(&str, i64)> = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let np = p.int("nodePort").unwrap_or(0);
        if np == 0 {
            continue;
        }
        let key = (p.str("protocol"), np);
        if !node_ports.insert(key) {
            errs.push(FieldError::duplicate(
                &path.child("ports").index(i).child("nodePort"),
                np,
            ));
        }
    }
    let mut seen_ports: HashSet<(&str, i64)> = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let key = (p.str("protocol"), p.int("port").unwrap_or(0));
        if !seen_ports.insert(key) {
            errs.push(FieldError::duplicate(
                &path.child("ports").index(i),
                json!({"protocol": key.0, "port": key.1}),
            ));
        }
    }
    let ranges = spec.str_list("loadBalancerSourceRanges");
    const RANGES_ANNOTATION: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";
    if !ranges.is_empty() {
        let p = path.child("LoadBalancerSourceRanges");
        if svc_type != "LoadBalancer" {
            errs.push(FieldError::forbidden(&p, LB_ONLY));
        }
        for (i, r) in ranges.iter().enumerate() {
            errs.extend(validate_cidr(&p.index(i), r.trim()));
        }
    } else if let Some(v) = annotations.opt_str(RANGES_ANNOTATION) {
        let p = Path::new("metadata")
            .child("annotations")
            .key(RANGES_ANNOTATION);
        if svc_type != "LoadBalancer" {
            errs.push(FieldError::forbidden(&p, LB_ONLY));
        }
        let v = v.trim();
        if !v.is_empty() {
            for r in v.split(',') {
                errs.extend(validate_cidr(&p, r.trim()));
            }
        }
    }
    if spec.has("allocateLoadBalancerNodePorts") && svc_type != "LoadBalancer" {
        errs.push(FieldError::forbidden(
            &path.child("allocateLoadBalancerNodePorts"),
            LB_ONLY,
        ));
    }
    if svc_type == "LoadBalancer" && !spec.has("allocateLoadBalancerNodePorts") {
        errs.push(FieldError::required(
            &Path::new("allocateLoadBalancerNodePorts"),
            "",
        ));
    }
    if let Some(class) = spec.opt_str("loadBalancerClass") {
        if svc_type == "LoadBalancer" {
            errs.extend(validate_qualified_name(
                class,
                &path.child("loadBalancerClass"),
            ));
        } else {
            errs.push(FieldError::forbidden(
                &path.child("loadBalancerClass"),
                LB_ONLY,
            ));
        }
    }
    let etp = spec.str("externalTrafficPolicy");
    if !externally_accessible(spec) {
        if !etp.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("externalTrafficPolicy"),
                etp,
                "may only be set for externally-accessible services",
            ));
        }
    } else if etp.is_empty() {
        errs.push(FieldError::required(
            &path.child("externalTrafficPolicy"),
            "",
        ));
    } else if etp != "Cluster" && etp != "Local" {
        errs.push(FieldError::not_supported(
            &path.child("externalTrafficPolicy"),
            etp,
            &["Cluster", "Local"],
        ));
    }
    let hc = spec.int("healthCheckNodePort").unwrap_or(0);
    if !needs_health_check(spec) {
        if hc != 0 {
            errs.push(FieldError::invalid(
                &path.child("healthCheckNodePort"),
                hc,
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        }
    } else if hc == 0 {
        errs.push(FieldError::required(&path.child("healthCheckNodePort"), ""));
    } else {
        for m in names::port_number_errors(hc) {
            errs.push(FieldError::invalid(
                &path.child("healthCheckNodePort"),
                hc,
                m,
            ));
        }
    }
    match spec.opt_str("internalTrafficPolicy") {
        None => {
            if matches!(svc_type, "NodePort" | "LoadBalancer" | "ClusterIP") {
                errs.push(FieldError::required(
                    &path.child("internalTrafficPolicy"),
                    "",
                ));
            }
        }
        Some(p) if p != "Cluster" && p != "Local" => {
            errs.push(FieldError::not_supported(
                &path.child("internalTrafficPolicy"),
                p,
                &["Cluster", "Local"],
            ));
        }
        _ => {}
    }
    if let Some(td) = spec.opt_str("trafficDistribution")
        && td != "PreferClose"
    {
        errs.push(FieldError::not_supported(
            &path.child("trafficDistribution"),
            td,
            &["PreferClose"],
        ));
    }
    errs
}

fn validate_cluster_ips_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if new.str("type") == "ExternalName" || old.str("type") == "ExternalName" {
        return errs;
    }
    if is_headless(new) && is_headless(old) {
        return errs;
    }
    let p = Path::new("spec").child("clusterIPs");
    let n = new.str_list("clusterIPs");
    let o = old.str_list("clusterIPs");
    let nv = Value::from(new.arr("clusterIPs").to_vec());
    if n.len() == o.len() {
        for (i, ip) in o.iter().enumerate() {
            if n.get(i) != Some(ip) {
                errs.push(FieldError::invalid(
                    &p.index(i),
                    nv.clone(),
                    "may not change once set",
                ));
            }
        }
    } else if o.len() > n.len() {
        if n.is_empty() {
            errs.push(FieldError::invalid(
                &p.index(0),
                nv.clone(),
                "primary clusterIP can not be unset",
            ));
        }
        if let (Some(a), Some(b)) = (o.first(), n.first())
            && a != b
        {
            errs.push(FieldError::invalid(
                &p.index(0),
                nv.clone(),
                "may not change once set",
            ));
        }
        if n.len() == 1 && new.str("ipFamilyPolicy") != "SingleStack" {
            errs.push(FieldError::invalid(
                &Path::new("spec").child("ipFamilyPolicy"),
                field(new, "ipFamilyPolicy").clone(),
                "must be set to 'SingleStack' when releasing the secondary clusterIP",
            ));
        }
    } else if let (Some(a), Some(b)) = (o.first(), n.first())
        && a != b
    {
        errs.push(FieldError::invalid(
            &p.index(0),
            nv,
            "may not change once set",
        ));
    }
    errs
}

fn validate_families_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if new.str("type") == "ExternalName" || old.str("type") == "ExternalName" {
        return errs;
    }
    if is_headless(new) != is_headless(old) || is_headless(new) {
        return errs;
    }
    let p = Path::new("spec").child("ipFamilies");
    let n = new.str_list("ipFamilies");
    let o = old.str_list("ipFamilies");
    let nv = Value::from(new.arr("ipFamilies").to_vec());
    let ips = Value::from(new.arr("clusterIPs").to_vec());
    if n.len() == o.len() {
        for (i, f) in o.iter().enumerate() {
            if n.get(i) != Some(f) {
                errs.push(FieldError::invalid(
                    &p.index(0),
                    nv.clone(),
                    "may not change once set",
                ));
            }
        }
    } else if o.len() > n.len() {
        if new.arr("clusterIPs").is_empty() {
            errs.push(FieldError::invalid(
                &p.index(0),
                nv.clone(),
                "primary ipFamily can not be unset",
            ));
        }
        if let (Some(a), Some(b)) = (o.first(), n.first())
            && a != b
        {
            errs.push(FieldError::invalid(
                &p.index(0),
                ips.clone(),
                "may not change once set",
            ));
        }
        if n.len() == 1 && new.str("ipFamilyPolicy") != "SingleStack" {
            errs.push(FieldError::invalid(
                &Path::new("spec").child("ipFamilyPolicy"),
                field(new, "ipFamilyPolicy").clone(),
                "must be set to 'SingleStack' when releasing the secondary ipFamily",
            ));
        }
    } else if let (Some(a), Some(b)) = (o.first(), n.first())
        && a != b
    {
        errs.push(FieldError::invalid(
            &p.index(0),
            ips,
            "may not change once set",
        ));
    }
    errs
}

/// `ValidateServiceUpdate` beyond the checks of a new service.
pub(crate) fn validate_update(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let ns = field(new, "spec");
    let os = field(old, "spec");
    let mut errs = validate_cluster_ips_update(ns, os);
    errs.extend(validate_families_update(ns, os));
    if ns.str("type") == "LoadBalancer"
        && os.str("type") == "LoadBalancer"
        && ns.opt_str("loadBalancerClass") != os.opt_str("loadBalancerClass")
    {
        errs.push(FieldError::invalid(
            &Path::new("spec").child("loadBalancerClass"),
            field(ns, "loadBalancerClass").clone(),
            "may not change once set",
        ));
    }
    if needs_health_check(ns)
        && needs_health_check(os)
        && ns.int("healthCheckNodePort") != os.int("healthCheckNodePort")
    {
        errs.push(FieldError::forbidden(
            &Path::new("spec").child("healthCheckNodePort"),
            "field is immutable",
        ));
    }
    errs
}

/// `ValidateServiceStatusUpdate`: the load balancer status.
pub(crate) fn validate_status(new: &Value, _old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = Path::new("status").child("loadBalancer").child("ingress");
    let ingress = field_at(new, &["status", "loadBalancer", "ingress"])
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if field_at(new, &["spec", "type"]).as_str() != Some("LoadBalancer") && !ingress.is_empty() {
        return vec![FieldError::forbidden(
            &path,
            "may only be used when `spec.type` is 'LoadBalancer'",
        )];
    }
    for (i, ing) in ingress.iter().enumerate() {
        let p = path.index(i);
        let ip = ing.str("ip");
        if !ip.is_empty() {
            errs.extend(validate_ip(&p.child("ip"), ip));
        }
        match ing.opt_str("ipMode") {
            None if !ip.is_empty() => errs.push(FieldError::required(
                &p.child("ipMode"),
                "must be specified when `ip` is set",
            )),
            Some(_) if ip.is_empty() => errs.push(FieldError::forbidden(
                &p.child("ipMode"),
                "may not be specified when `ip` is not set",
            )),
            Some(m) if m != "Proxy" && m != "VIP" => errs.push(FieldError::not_supported(
                &p.child("ipMode"),
                m,
                &["Proxy", "VIP"],
            )),
            _ => {}
        }
        let host = ing.str("hostname");
        if !host.is_empty() {
            for m in names::dns1123_subdomain_errors(host) {
                errs.push(FieldError::invalid(&p.child("hostname"), host, m));
            }
            if parse_ip(host).is_some() {
                errs.push(FieldError::invalid(
                    &p.child("hostname"),
                    host,
                    "must be a DNS name, not an IP address",
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx<'static> {
        Ctx { old: None }
    }

    fn svc(spec: Value) -> Value {
        let mut s = json!({"metadata": {"name": "s", "namespace": "default"}, "spec": spec});
        default_service(&mut s);
        prepare(&mut s);
        s
    }

    fn msgs(v: &Value) -> Vec<String> {
        validate(v, &ctx())
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn defaults() {
        let s = svc(json!({"selector": {"app": "a"}, "ports": [{"port": 80}]}));
        assert_eq!(
            s["spec"],
            json!({"selector": {"app": "a"}, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                "sessionAffinity": "None", "type": "ClusterIP", "internalTrafficPolicy": "Cluster"})
        );
        assert_eq!(s["status"], json!({"loadBalancer": {}}));
        let lb =
            svc(json!({"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": "http"}]}));
        assert_eq!(lb["spec"]["externalTrafficPolicy"], json!("Cluster"));
        assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], json!(true));
        assert_eq!(lb["spec"]["ports"][0]["targetPort"], json!("http"));
        let ci = svc(json!({"sessionAffinity": "ClientIP", "ports": [{"port": 80}]}));
        assert_eq!(
            ci["spec"]["sessionAffinityConfig"],
            json!({"clientIP": {"timeoutSeconds": 10800}})
        );
    }

    #[test]
    fn valid_services() {
        assert!(msgs(&svc(json!({"ports": [{"port": 80}]}))).is_empty());
        assert!(msgs(&svc(json!({"clusterIP": "None"}))).is_empty());
        assert!(
            msgs(&svc(
                json!({"type": "ExternalName", "externalName": "example.com."})
            ))
            .is_empty()
        );
        assert!(
            msgs(&svc(
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]})
            ))
            .is_empty()
        );
    }

    #[test]
    fn common_mistakes() {
        assert_eq!(msgs(&svc(json!({}))), vec!["spec.ports: Required value"]);
        assert_eq!(
            msgs(&svc(
                json!({"ports": [{"port": 80}, {"port": 81, "name": "b"}]})
            )),
            vec!["spec.ports[0].name: Required value"]
        );
        assert_eq!(
            msgs(&svc(
                json!({"ports": [{"port": 0, "name": "a"}, {"port": 80, "name": "a", "protocol": "ICMP"}]})
            )),
            vec![
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive",
                r#"spec.ports[1].name: Duplicate value: "a""#,
                r#"spec.ports[1].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP""#,
            ]
        );
        assert_eq!(
            msgs(&svc(json!({"type": "Weird", "ports": [{"port": 80}]}))),
            vec![
                r#"spec.type: Unsupported value: "Weird": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort""#
            ]
        );
        assert_eq!(
            msgs(&svc(
                json!({"clusterIP": "10.0.0.300", "ports": [{"port": 80}]})
            )),
            vec![
                r#"spec.clusterIPs[0]: Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"#
            ]
        );
        assert_eq!(
            msgs(&svc(json!({"ports": [{"port": 80, "nodePort": 30000}]}))),
            vec!["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]
        );
    }

    #[test]
    fn cluster_ip_is_immutable() {
        let old = svc(json!({"clusterIP": "10.0.0.1", "ports": [{"port": 80}]}));
        let mut new = old.clone();
        new["spec"]["clusterIP"] = json!("10.0.0.2");
        prepare_update(&mut new, &old);
        let errs: Vec<String> = validate_update(&new, &old, &ctx())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            vec![
                r#"spec.clusterIPs[0]: Invalid value: []string{"10.0.0.2"}: may not change once set"#
            ]
        );
        let mut kept = old.clone();
        if let Some(spec) = kept["spec"].as_object_mut() {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        prepare_update(&mut kept, &old);
        assert_eq!(kept["spec"]["clusterIPs"], json!(["10.0.0.1"]));
        assert!(validate_update(&kept, &old, &ctx()).is_empty());
    }

    #[test]
    fn load_balancer_status() {
        let mut s = svc(json!({"type": "LoadBalancer", "ports": [{"port": 80}]}));
        s["status"] =
            json!({"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "1.2.3.5"}]}});
        default_service(&mut s);
        assert_eq!(
            s["status"]["loadBalancer"]["ingress"][0]["ipMode"],
            json!("VIP")
        );
        let errs = validate_status(&s, &Value::Null, &ctx());
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "status.loadBalancer.ingress[1].hostname");
    }
}
