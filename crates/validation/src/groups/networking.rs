//! `networking.k8s.io/v1`: Ingresses (rules, hosts, paths, backends, TLS), IngressClasses
//! (controller, parameters) and NetworkPolicies (policy types, ports, peers, IP blocks).

use serde_json::{Value, json};

use crate::Ctx;
use crate::core::reset_status;
use crate::kinds::Kind;
use crate::meta::immutable;
use crate::net::{is_strict_subset, parse_cidr, parse_ip, validate_cidr, validate_ip};
use crate::selector::validate_label_selector;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{
    Obj, child_object, default_str, default_value, each_obj, field, field_at, obj_mut,
};
use kyb_apimachinery::names;

/// The rules of a `networking.k8s.io/v1` kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    let subdomain = names::name_is_dns_subdomain;
    Some(match kind {
        "Ingress" => Kind::new(subdomain)
            .with_status()
            .prepare(|o| reset_status(o, json!({"loadBalancer": {}})))
            .validate(validate_ingress)
            .status(validate_ingress_status),
        "IngressClass" => Kind::new(subdomain)
            .defaults(default_ingress_class)
            .validate(validate_ingress_class)
            .update(|n, o, _| {
                immutable(
                    field_at(n, &["spec", "controller"]),
                    field_at(o, &["spec", "controller"]),
                    &Path::new("spec").child("controller"),
                )
            }),
        "NetworkPolicy" => Kind::new(subdomain)
            .defaults(default_network_policy)
            .validate(validate_network_policy),
        "ServiceCIDR" => super::service_ips::service_cidr(),
        "IPAddress" => super::service_ips::ip_address(),
        _ => return None,
    })
}

fn validate_host(host: &str, path: &Path) -> Vec<FieldError> {
    let msgs = if host.contains('*') {
        names::wildcard_dns1123_subdomain_errors(host)
    } else {
        names::dns1123_subdomain_errors(host)
    };
    msgs.into_iter()
        .map(|m| FieldError::invalid(path, host, m))
        .collect()
}

fn validate_typed_reference(r: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(g) = r.opt_str("apiGroup") {
        for m in names::dns1123_subdomain_errors(g) {
            errs.push(FieldError::invalid(&path.child("apiGroup"), g, m));
        }
    }
    for key in ["kind", "name"] {
        let v = r.str(key);
        if v.is_empty() {
            errs.push(FieldError::required(
                &path.child(key),
                format!("{key} is required"),
            ));
        } else {
            for m in names::path_segment_name_errors(v, false) {
                errs.push(FieldError::invalid(&path.child(key), v, m));
            }
        }
    }
    errs
}

fn validate_backend(b: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let res = field(b, "resource");
    let svc = field(b, "service");
    match (res.is_null(), svc.is_null()) {
        (false, false) => {
            return vec![FieldError::invalid(
                path,
                "",
                "cannot set both resource and service backends",
            )];
        }
        (false, true) => errs.extend(validate_typed_reference(res, &path.child("resource"))),
        (true, false) => {
            let sp = path.child("service");
            let name = svc.str("name");
            if name.is_empty() {
                errs.push(FieldError::required(&sp.child("name"), ""));
            } else {
                for m in names::dns1035_label_errors(name) {
                    errs.push(FieldError::invalid(&sp.child("name"), name, m));
                }
            }
            let port = field(svc, "port");
            let pname = port.str("name");
            let pnum = port.int("number").unwrap_or(0);
            if !pname.is_empty() && pnum != 0 {
                errs.push(FieldError::invalid(
                    path,
                    "",
                    "cannot set both port name & port number",
                ));
            } else if !pname.is_empty() {
                for m in names::port_name_errors(pname) {
                    errs.push(FieldError::invalid(
                        &sp.child("port").child("name"),
                        pname,
                        m,
                    ));
                }
            } else if pnum != 0 {
                for m in names::port_number_errors(pnum) {
                    errs.push(FieldError::invalid(
                        &sp.child("port").child("number"),
                        pnum,
                        m,
                    ));
                }
            } else {
                errs.push(FieldError::required(
                    path,
                    "port name or number is required",
                ));
            }
        }
        (true, true) => errs.push(FieldError::invalid(
            path,
            "",
            "resource or service backend is required",
        )),
    }
    errs
}

fn validate_http_path(p: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(pt) = p.opt_str("pathType") else {
        return vec![FieldError::required(
            &path.child("pathType"),
            "pathType must be specified",
        )];
    };
    let value = p.str("path");
    let pp = path.child("path");
    match pt {
        "Exact" | "Prefix" => {
            if !value.starts_with('/') {
                errs.push(FieldError::invalid(&pp, value, "must be an absolute path"));
            }
            if !value.is_empty() {
                for seq in ["//", "/./", "/../", "%2f", "%2F"] {
                    if value.contains(seq) {
                        errs.push(FieldError::invalid(
                            &pp,
                            value,
                            format!("must not contain '{seq}'"),
                        ));
                    }
                }
                for suffix in ["/..", "/."] {
                    if value.ends_with(suffix) {
                        errs.push(FieldError::invalid(
                            &pp,
                            value,
                            format!("cannot end with '{suffix}'"),
                        ));
                    }
                }
            }
        }
        "ImplementationSpecific" => {
            if !value.is_empty() && !value.starts_with('/') {
                errs.push(FieldError::invalid(&pp, value, "must be an absolute path"));
            }
        }
        other => errs.push(FieldError::not_supported(
            &path.child("pathType"),
            other,
            &["Exact", "ImplementationSpecific", "Prefix"],
        )),
    }
    errs.extend(validate_backend(
        field(p, "backend"),
        &path.child("backend"),
    ));
    errs
}

fn validate_ingress(ing: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(ing, "spec");
    let path = Path::new("spec");
    let rules = spec.arr("rules");
    if rules.is_empty() && !spec.has("defaultBackend") {
        errs.push(FieldError::invalid(
            &path,
            Value::from(rules.to_vec()),
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(b) = spec.get_field("defaultBackend") {
        errs.extend(validate_backend(b, &path.child("defaultBackend")));
    }
    let rp = path.child("rules");
    for (i, r) in rules.iter().enumerate() {
        let host = r.str("host");
        if !host.is_empty() {
            if parse_ip(host).is_some() {
                errs.push(FieldError::invalid(
                    &rp.index(i).child("host"),
                    host,
                    "must be a DNS name, not an IP address",
                ));
            }
            errs.extend(validate_host(host, &rp.index(i).child("host")));
        }
        let http = field(r, "http");
        if !http.is_null() {
            let hp = rp.index(i).child("http");
            let paths = http.arr("paths");
            if paths.is_empty() {
                errs.push(FieldError::required(&hp.child("paths"), ""));
            }
            for (j, p) in paths.iter().enumerate() {
                errs.extend(validate_http_path(p, &hp.child("paths").index(j)));
            }
        }
    }
    for (i, tls) in spec.arr("tls").iter().enumerate() {
        let tp = path.child("tls").index(i);
        for (j, h) in tls.str_list("hosts").iter().enumerate() {
            errs.extend(validate_host(h, &tp.child("hosts").index(j)));
        }
        let secret = tls.str("secretName");
        if !secret.is_empty() {
            for m in names::name_is_dns_subdomain(secret, false) {
                errs.push(FieldError::invalid(&tp.child("secretName"), secret, m));
            }
        }
    }
    if let Some(class) = spec.opt_str("ingressClassName") {
        for m in names::name_is_dns_subdomain(class, false) {
            errs.push(FieldError::invalid(
                &path.child("ingressClassName"),
                class,
                m,
            ));
        }
        let annotation = field_at(
            ing,
            &["metadata", "annotations", "kubernetes.io/ingress.class"],
        );
        if let Some(a) = annotation.as_str() {
            errs.push(FieldError::invalid(
                &Path::new("annotations").child("kubernetes.io/ingress.class"),
                a,
                "can not be set when the class field is also set",
            ));
        }
    }
    errs
}

fn validate_ingress_status(new: &Value, _old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = Path::new("status").child("loadBalancer").child("ingress");
    for (i, ing) in field_at(new, &["status", "loadBalancer", "ingress"])
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let p = path.index(i);
        let ip = ing.str("ip");
        if !ip.is_empty() {
            errs.extend(validate_ip(&p.child("ip"), ip));
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

fn default_ingress_class(obj: &mut Value) {
    if let Some(o) = obj.as_object_mut()
        && let Some(spec) = obj_mut(o, "spec")
        && let Some(params) = obj_mut(spec, "parameters")
    {
        default_value(params, "scope", json!("Cluster"));
    }
}

fn validate_ingress_class(ic: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(ic, "spec");
    let cp = Path::new("spec").child("controller");
    let controller = spec.str("controller");
    if controller.len() > 250 {
        errs.push(FieldError::too_long(&cp, 250));
    }
    if controller.is_empty() {
        errs.push(FieldError::required(&cp, ""));
    } else {
        match controller.split_once('/') {
            Some((host, rest)) if !host.is_empty() && !rest.is_empty() => {
                for m in names::dns1123_subdomain_errors(host) {
                    errs.push(FieldError::invalid(&cp, host, m));
                }
                let ok = rest
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c));
                if !ok {
                    errs.push(FieldError::invalid(
                        &cp,
                        rest,
                        names::regex_error("Invalid path", "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+", &[]),
                    ));
                }
            }
            _ => errs.push(FieldError::invalid(
                &cp,
                controller,
                "must be a domain-prefixed path (such as \"acme.io/foo\")",
            )),
        }
    }
    let params = field(spec, "parameters");
    if !params.is_null() {
        let pp = Path::new("spec").child("parameters");
        errs.extend(validate_typed_reference(params, &pp));
        match params.opt_str("scope") {
            None => errs.push(FieldError::required(&pp.child("scope"), "")),
            Some("Namespace") => match params.opt_str("namespace") {
                None => errs.push(FieldError::required(
                    &pp.child("namespace"),
                    "`parameters.scope` is set to 'Namespace'",
                )),
                Some(ns) => {
                    for m in names::name_is_dns_label(ns, false) {
                        errs.push(FieldError::invalid(&pp.child("namespace"), ns, m));
                    }
                }
            },
            Some("Cluster") => {
                if params.has("namespace") {
                    errs.push(FieldError::forbidden(
                        &pp.child("namespace"),
                        "`parameters.scope` is set to 'Cluster'",
                    ));
                }
            }
            Some(other) => errs.push(FieldError::not_supported(
                &pp.child("scope"),
                other,
                &["Cluster", "Namespace"],
            )),
        }
    }
    errs
}

/// `SetDefaults_NetworkPolicy` and its ports' protocol.
fn default_network_policy(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    let Some(spec) = child_object(o, "spec") else {
        return;
    };
    let no_types = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_types {
        let has_egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty());
        let types = if has_egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".to_string(), types);
    }
    for key in ["ingress", "egress"] {
        each_obj(spec, key, |rule| {
            each_obj(rule, "ports", |p| default_str(p, "protocol", "TCP"))
        });
    }
}

fn validate_np_port(port: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(proto) = port.opt_str("protocol")
        && !["TCP", "UDP", "SCTP"].contains(&proto)
    {
        errs.push(FieldError::not_supported(
            &path.child("protocol"),
            proto,
            &["TCP", "UDP", "SCTP"],
        ));
    }
    let end = port.int("endPort");
    match field(port, "port") {
        Value::Null => {
            if let Some(e) = end {
                errs.push(FieldError::invalid(
                    &path.child("endPort"),
                    e,
                    "may not be specified when `port` is not specified",
                ));
            }
        }
        Value::String(s) => {
            if let Some(e) = end {
                errs.push(FieldError::invalid(
                    &path.child("endPort"),
                    e,
                    "may not be specified when `port` is non-numeric",
                ));
            }
            for m in names::port_name_errors(s) {
                errs.push(FieldError::invalid(&path.child("port"), s.as_str(), m));
            }
        }
        v => {
            let p = kyb_apimachinery::json::as_int(v).unwrap_or(0);
            for m in names::port_number_errors(p) {
                errs.push(FieldError::invalid(&path.child("port"), p, m));
            }
            if let Some(e) = end {
                if e < p {
                    errs.push(FieldError::invalid(
                        &path.child("endPort"),
                        p,
                        "must be greater than or equal to `port`",
                    ));
                }
                for m in names::port_number_errors(e) {
                    errs.push(FieldError::invalid(&path.child("endPort"), e, m));
                }
            }
        }
    }
    errs
}

fn validate_peer(peer: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut count = 0;
    for key in ["podSelector", "namespaceSelector"] {
        if let Some(sel) = peer.get_field(key) {
            count += 1;
            errs.extend(validate_label_selector(sel, false, &path.child(key)));
        }
    }
    let block = field(peer, "ipBlock");
    if !block.is_null() {
        count += 1;
        let bp = path.child("ipBlock");
        let cidr = block.str("cidr");
        if cidr.is_empty() {
            errs.push(FieldError::required(&bp.child("cidr"), ""));
        } else {
            errs.extend(validate_cidr(&bp.child("cidr"), cidr));
            if parse_cidr(cidr).is_some() {
                for (i, ex) in block.str_list("except").iter().enumerate() {
                    let ep = bp.child("except").index(i);
                    let e = validate_cidr(&ep, ex);
                    if !e.is_empty() {
                        errs.extend(e);
                        continue;
                    }
                    if !is_strict_subset(cidr, ex) {
                        errs.push(FieldError::invalid(
                            &ep,
                            *ex,
                            "must be a strict subset of `cidr`",
                        ));
                    }
                }
            }
        }
    }
    if count == 0 {
        errs.push(FieldError::required(path, "must specify a peer"));
    } else if count > 1 && !block.is_null() {
        errs.push(FieldError::forbidden(
            path,
            "may not specify both ipBlock and another peer",
        ));
    }
    errs
}

fn validate_network_policy(np: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(np, "spec");
    let path = Path::new("spec");
    errs.extend(validate_label_selector(
        field(spec, "podSelector"),
        false,
        &path.child("podSelector"),
    ));
    for (key, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in spec.arr(key).iter().enumerate() {
            let rp = path.child(key).index(i);
            for (j, port) in rule.arr("ports").iter().enumerate() {
                errs.extend(validate_np_port(port, &rp.child("ports").index(j)));
            }
            for (j, peer) in rule.arr(peers).iter().enumerate() {
                errs.extend(validate_peer(peer, &rp.child(peers).index(j)));
            }
        }
    }
    let types = spec.arr("policyTypes");
    let tp = path.child("policyTypes");
    if types.len() > 2 {
        errs.push(FieldError::invalid(
            &tp,
            Value::from(types.to_vec()),
            "may not specify more than two policyTypes",
        ));
        return errs;
    }
    for (i, t) in types.iter().enumerate() {
        let t = t.as_str().unwrap_or_default();
        if t != "Ingress" && t != "Egress" {
            errs.push(FieldError::not_supported(
                &tp.index(i),
                t,
                &["Ingress", "Egress"],
            ));
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

    fn msgs(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn ingresses() {
        let ok = json!({"spec": {"ingressClassName": "nginx", "rules": [{"host": "foo.example.com", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}],
            "tls": [{"hosts": ["*.example.com"], "secretName": "tls"}]}});
        assert!(validate_ingress(&ok, &ctx()).is_empty());
        let bad = json!({"spec": {"rules": [{"host": "10.0.0.1", "http": {"paths": [
            {"path": "api", "pathType": "Exact", "backend": {"service": {"name": "web"}}},
            {"path": "/x", "backend": {}}]}}]}});
        assert_eq!(
            msgs(validate_ingress(&bad, &ctx())),
            vec![
                r#"spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address"#,
                r#"spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path"#,
                "spec.rules[0].http.paths[0].backend: Required value: port name or number is required",
                "spec.rules[0].http.paths[1].pathType: Required value: pathType must be specified",
            ]
        );
        assert_eq!(
            msgs(validate_ingress(&json!({"spec": {}}), &ctx())),
            vec![
                "spec: Invalid value: []string{}: either `defaultBackend` or `rules` must be specified"
            ]
        );
    }

    #[test]
    fn ingress_classes() {
        let mut ic = json!({"spec": {"controller": "example.com/ingress", "parameters": {"kind": "Params", "name": "p"}}});
        default_ingress_class(&mut ic);
        assert_eq!(ic["spec"]["parameters"]["scope"], json!("Cluster"));
        assert!(validate_ingress_class(&ic, &ctx()).is_empty());
        assert_eq!(
            msgs(validate_ingress_class(
                &json!({"spec": {"controller": "nginx"}}),
                &ctx()
            )),
            vec![
                r#"spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")"#
            ]
        );
    }

    #[test]
    fn network_policies() {
        let mut np = json!({"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}], "to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]}]}});
        default_network_policy(&mut np);
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(
            np["spec"]["egress"][0]["ports"][0]["protocol"],
            json!("TCP")
        );
        assert!(validate_network_policy(&np, &ctx()).is_empty());
        let bad = json!({"spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80, "endPort": 70}], "from": [{}, {"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.0.0/8"]}, "podSelector": {}}]}], "policyTypes": ["Sideways"]}});
        assert_eq!(
            msgs(validate_network_policy(&bad, &ctx())),
            vec![
                "spec.ingress[0].ports[0].endPort: Invalid value: 80: must be greater than or equal to `port`",
                "spec.ingress[0].from[0]: Required value: must specify a peer",
                r#"spec.ingress[0].from[1].ipBlock.except[0]: Invalid value: "10.0.0.0/8": must be a strict subset of `cidr`"#,
                "spec.ingress[0].from[1]: Forbidden: may not specify both ipBlock and another peer",
                r#"spec.policyTypes[0]: Unsupported value: "Sideways": supported values: "Ingress", "Egress""#,
            ]
        );
    }
}
