//! `flowcontrol.apiserver.k8s.io/v1`: API Priority and Fairness' FlowSchemas and
//! PriorityLevelConfigurations — defaults (`matchingPrecedence` 1000, 30 nominal shares,
//! 64 queues / hand of 8 / 50 per queue, 0 % lendable), Kubernetes' validation with its
//! messages, and the fixed specs of the mandatory objects (`exempt`, `catch-all`), which no
//! write may change (the `exempt` level's `spec.exempt` aside).
//!
//! A FlowSchema naming a priority level that does not exist is valid, as in Kubernetes:
//! the API server's flow-control configuration marks it `Dangling=True` instead.

use serde_json::{Map, Value, json};

use crate::Ctx;
use crate::kinds::Kind;
use kyb_apimachinery::equality::semantic_eq;
use kyb_apimachinery::field::{FieldError, Path};
use kyb_apimachinery::json::{Obj, as_int, default_value, field, field_at};
use kyb_apimachinery::names;

/// The most a matching precedence may be (`FlowSchemaMaxMatchingPrecedence`).
pub const MAX_MATCHING_PRECEDENCE: i64 = 10_000;
/// The most queues a priority level may have.
const MAX_QUEUES: i64 = 10_000_000;
/// The hash bits shuffle sharding draws hands from (`shufflesharding.MaxHashBits`).
const MAX_HASH_BITS: f64 = 60.0;
const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "proxy",
    "update",
    "watch",
];
const NAMESPACE_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";

/// The rules of a `flowcontrol.apiserver.k8s.io/v1` kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    match kind {
        "FlowSchema" => Some(
            Kind::new(names::name_is_dns_subdomain)
                .meta(crate::kinds::MetaMode::Generic)
                .with_status()
                .defaults(default_flow_schema)
                .prepare(clear_status)
                .validate(validate_flow_schema)
                .update(|new, _, ctx| validate_flow_schema(new, ctx))
                .status(|new, _, _| validate_conditions(new)),
        ),
        "PriorityLevelConfiguration" => Some(
            Kind::new(names::name_is_dns_subdomain)
                .meta(crate::kinds::MetaMode::Generic)
                .with_status()
                .defaults(default_priority_level)
                .prepare(clear_status)
                .validate(validate_priority_level)
                .update(|new, _, ctx| validate_priority_level(new, ctx))
                .status(|new, _, _| validate_conditions(new)),
        ),
        _ => None,
    }
}

fn clear_status(object: &mut Value) {
    if let Some(o) = object.as_object_mut() {
        o.remove("status");
    }
}

fn default_flow_schema(schema: &mut Value) {
    if let Some(spec) = schema.get_mut("spec").and_then(Value::as_object_mut)
        && as_int(
            &spec
                .get("matchingPrecedence")
                .cloned()
                .unwrap_or(Value::Null),
        )
        .unwrap_or(0)
            == 0
    {
        spec.insert("matchingPrecedence".into(), json!(1000));
    }
}

fn default_priority_level(level: &mut Value) {
    let Some(spec) = level.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(exempt) = spec.get_mut("exempt").and_then(Value::as_object_mut) {
        default_value(exempt, "nominalConcurrencyShares", json!(0));
        default_value(exempt, "lendablePercent", json!(0));
    }
    if let Some(limited) = spec.get_mut("limited").and_then(Value::as_object_mut) {
        default_value(limited, "nominalConcurrencyShares", json!(30));
        default_value(limited, "lendablePercent", json!(0));
        if let Some(queuing) = limited
            .get_mut("limitResponse")
            .and_then(|r| r.get_mut("queuing"))
            .and_then(Value::as_object_mut)
        {
            default_zero(queuing, "handSize", 8);
            default_zero(queuing, "queues", 64);
            default_zero(queuing, "queueLengthLimit", 50);
        }
    }
}

/// Sets `key` when absent or zero, as Go defaults a plain `int32`.
fn default_zero(map: &mut Map<String, Value>, key: &str, value: i64) {
    if map.get(key).and_then(as_int).unwrap_or(0) == 0 {
        map.insert(key.into(), json!(value));
    }
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn validate_flow_schema(schema: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let name = field_at(schema, &["metadata", "name"])
        .as_str()
        .unwrap_or_default();
    let spec = field(schema, "spec");
    let path = Path::new("spec");
    let mut errs = Vec::new();
    let precedence = spec.int("matchingPrecedence").unwrap_or(0);
    let precedence_path = path.child("matchingPrecedence");
    if precedence <= 0 {
        errs.push(FieldError::invalid(
            &precedence_path,
            precedence,
            "must be a positive value",
        ));
    }
    if precedence > MAX_MATCHING_PRECEDENCE {
        errs.push(FieldError::invalid(
            &precedence_path,
            precedence,
            format!("must not be greater than {MAX_MATCHING_PRECEDENCE}"),
        ));
    }
    if precedence == 1 && name != "exempt" {
        errs.push(FieldError::invalid(
            &precedence_path,
            precedence,
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    if spec.get_field("distinguisherMethod").is_some() {
        let method = field_at(spec, &["distinguisherMethod", "type"])
            .as_str()
            .unwrap_or_default();
        if !matches!(method, "ByNamespace" | "ByUser") {
            errs.push(FieldError::not_supported(
                &path.child("distinguisherMethod").child("type"),
                method,
                &["ByNamespace", "ByUser"],
            ));
        }
    }
    let level = field_at(spec, &["priorityLevelConfiguration", "name"])
        .as_str()
        .unwrap_or_default();
    let level_path = path.child("priorityLevelConfiguration").child("name");
    if level.is_empty() {
        errs.push(FieldError::required(
            &level_path,
            "must reference a priority level",
        ));
    }
    for message in names::name_is_dns_subdomain(level, false)
        .into_iter()
        .filter(|_| !level.is_empty())
    {
        errs.push(FieldError::invalid(&level_path, level, message));
    }
    for (i, rule) in spec.arr("rules").iter().enumerate() {
        errs.extend(validate_rule(rule, &path.child("rules").index(i)));
    }
    if let Some(fixed) = mandatory_flow_schema_spec(name)
        && !semantic_eq(spec, &fixed)
    {
        errs.push(FieldError::invalid(
            &path,
            spec.clone(),
            format!("spec of '{name}' must equal the fixed value"),
        ));
    }
    errs.extend(validate_conditions(schema));
    errs
}

fn validate_rule(rule: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let subjects = rule.arr("subjects");
    if subjects.is_empty() {
        errs.push(FieldError::required(
            &path.child("subjects"),
            "subjects must contain at least one value",
        ));
    }
    for (i, subject) in subjects.iter().enumerate() {
        errs.extend(validate_subject(subject, &path.child("subjects").index(i)));
    }
    let (resource_rules, non_resource_rules) =
        (rule.arr("resourceRules"), rule.arr("nonResourceRules"));
    if resource_rules.is_empty() && non_resource_rules.is_empty() {
        errs.push(FieldError::required(
            path,
            "at least one of resourceRules and nonResourceRules has to be non-empty",
        ));
    }
    for (i, r) in resource_rules.iter().enumerate() {
        errs.extend(validate_resource_rule(
            r,
            &path.child("resourceRules").index(i),
        ));
    }
    for (i, r) in non_resource_rules.iter().enumerate() {
        errs.extend(validate_non_resource_rule(
            r,
            &path.child("nonResourceRules").index(i),
        ));
    }
    errs
}

fn validate_subject(subject: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let kind = subject.str("kind");
    let forbid = |errs: &mut Vec<FieldError>, key: &str, message: &str| {
        if subject.get_field(key).is_some() {
            errs.push(FieldError::forbidden(&path.child(key), message));
        }
    };
    const NOT_USER: &str = "user is forbidden when subject kind is not 'User'";
    const NOT_GROUP: &str = "group is forbidden when subject kind is not 'Group'";
    const NOT_SA: &str = "serviceAccount is forbidden when subject kind is not 'ServiceAccount'";
    match kind {
        "ServiceAccount" => {
            let sa_path = path.child("serviceAccount");
            match subject.get_field("serviceAccount") {
                None => errs.push(FieldError::required(
                    &sa_path,
                    "serviceAccount is required when subject kind is 'ServiceAccount'",
                )),
                Some(sa) => {
                    let name = sa.str("name");
                    if name.is_empty() {
                        errs.push(FieldError::required(&sa_path.child("name"), ""));
                    } else if name != "*" {
                        for m in names::name_is_dns_subdomain(name, false) {
                            errs.push(FieldError::invalid(&sa_path.child("name"), name, m));
                        }
                    }
                    let namespace = sa.str("namespace");
                    if namespace.is_empty() {
                        errs.push(FieldError::required(
                            &sa_path.child("namespace"),
                            "must specify namespace for service account",
                        ));
                    }
                    for m in names::name_is_dns_label(namespace, false)
                        .into_iter()
                        .filter(|_| !namespace.is_empty())
                    {
                        errs.push(FieldError::invalid(
                            &sa_path.child("namespace"),
                            namespace,
                            m,
                        ));
                    }
                }
            }
            forbid(&mut errs, "user", NOT_USER);
            forbid(&mut errs, "group", NOT_GROUP);
        }
        "User" | "Group" => {
            let key = if kind == "User" { "user" } else { "group" };
            match subject.get_field(key) {
                None => errs.push(FieldError::required(
                    &path.child(key),
                    format!("{key} is required when subject kind is '{kind}'"),
                )),
                Some(s) if s.str("name").is_empty() => {
                    errs.push(FieldError::required(&path.child(key).child("name"), ""));
                }
                Some(_) => {}
            }
            forbid(&mut errs, "serviceAccount", NOT_SA);
            if kind == "User" {
                forbid(&mut errs, "group", NOT_GROUP);
            } else {
                forbid(&mut errs, "user", NOT_USER);
            }
        }
        other => errs.push(FieldError::not_supported(
            &path.child("kind"),
            other,
            &["Group", "ServiceAccount", "User"],
        )),
    }
    errs
}

fn validate_verbs(rule: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let verbs = strings(field(rule, "verbs"));
    let verbs_path = path.child("verbs");
    if verbs.is_empty() {
        errs.push(FieldError::required(
            &verbs_path,
            "verbs must contain at least one value",
        ));
    } else if verbs.contains(&"*") {
        if verbs.len() > 1 {
            errs.push(FieldError::invalid(
                &verbs_path,
                field(rule, "verbs").clone(),
                "if '*' is present, must not specify other verbs",
            ));
        }
    } else if verbs.iter().any(|v| !VERBS.contains(v)) {
        errs.push(FieldError::not_supported(
            &verbs_path,
            field(rule, "verbs").clone(),
            VERBS,
        ));
    }
}

fn validate_resource_rule(rule: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_verbs(rule, path, &mut errs);
    for (key, what) in [("apiGroups", "api group"), ("resources", "resource")] {
        let values = strings(field(rule, key));
        if values.is_empty() {
            errs.push(FieldError::required(
                &path.child(key),
                format!("resource rules must supply at least one {what}"),
            ));
        } else if values.len() > 1 && values.contains(&"*") {
            let plural = if key == "apiGroups" {
                "api groups"
            } else {
                "resources"
            };
            errs.push(FieldError::invalid(
                &path.child(key),
                field(rule, key).clone(),
                format!("if '*' is present, must not specify other {plural}"),
            ));
        }
    }
    let namespaces = strings(field(rule, "namespaces"));
    let ns_path = path.child("namespaces");
    if namespaces.is_empty() && !rule.flag("clusterScope") {
        errs.push(FieldError::required(
            &ns_path,
            "resource rules that are not cluster scoped must supply at least one namespace",
        ));
    } else if namespaces.contains(&"*") {
        if namespaces.len() > 1 {
            errs.push(FieldError::invalid(
                &ns_path,
                field(rule, "namespaces").clone(),
                "if '*' is present, must not specify other namespaces",
            ));
        }
    } else {
        for (i, namespace) in namespaces.iter().enumerate() {
            for m in names::name_is_dns_label(namespace, false) {
                errs.push(FieldError::invalid(
                    &ns_path.index(i),
                    *namespace,
                    format!("{NAMESPACE_INTRO}{m}"),
                ));
            }
        }
    }
    errs
}

fn validate_non_resource_rule(rule: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_verbs(rule, path, &mut errs);
    let urls = strings(field(rule, "nonResourceURLs"));
    let urls_path = path.child("nonResourceURLs");
    if urls.is_empty() {
        errs.push(FieldError::required(
            &urls_path,
            "nonResourceURLs must contain at least one value",
        ));
    } else if urls.contains(&"*") {
        if urls.len() > 1 {
            errs.push(FieldError::invalid(
                &urls_path,
                field(rule, "nonResourceURLs").clone(),
                "if '*' is present, must not specify other non-resource URLs",
            ));
        }
    } else {
        for (i, url) in urls.iter().enumerate() {
            if let Some(message) = non_resource_url_error(url) {
                errs.push(FieldError::invalid(&urls_path.index(i), *url, message));
            }
        }
    }
    errs
}

/// Kubernetes' `ValidateNonResourceURLPath`.
fn non_resource_url_error(url: &str) -> Option<&'static str> {
    if url.is_empty() {
        return Some("must not be empty");
    }
    if url == "/" {
        return None;
    }
    if !url.starts_with('/') {
        return Some("must start with slash");
    }
    if url.contains(' ') {
        return Some("must not contain white-space");
    }
    if url.contains("//") {
        return Some("must not contain double slash");
    }
    let wildcards = url.matches('*').count();
    if wildcards > 1 || (wildcards == 1 && !url.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}

fn validate_conditions(object: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let path = Path::new("status").child("conditions");
    for (i, condition) in field_at(object, &["status", "conditions"])
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let kind = condition.str("type");
        if !seen.insert(kind) {
            errs.push(FieldError::duplicate(&path.index(i).child("type"), kind));
        }
        if kind.is_empty() {
            errs.push(FieldError::required(
                &path.index(i).child("type"),
                "must not be empty",
            ));
        }
    }
    errs
}

fn validate_priority_level(level: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let name = field_at(level, &["metadata", "name"])
        .as_str()
        .unwrap_or_default();
    let spec = field(level, "spec");
    let path = Path::new("spec");
    let mut errs = Vec::new();
    let kind = spec.str("type");
    if (name == "exempt") != (kind == "Exempt") {
        errs.push(FieldError::invalid(
            &path.child("type"),
            kind,
            "type must be 'Exempt' if and only if name is 'exempt'",
        ));
    }
    match kind {
        "Exempt" => {
            if spec.get_field("limited").is_some() {
                errs.push(FieldError::forbidden(
                    &path.child("limited"),
                    "must be nil if the type is not Limited",
                ));
            }
            if let Some(exempt) = spec.get_field("exempt") {
                let exempt_path = path.child("exempt");
                if let Some(shares) = exempt.int("nominalConcurrencyShares")
                    && shares < 0
                {
                    errs.push(FieldError::invalid(
                        &exempt_path.child("nominalConcurrencyShares"),
                        shares,
                        "must be a non-negative integer",
                    ));
                }
                errs.extend(lendable_percent(exempt, &exempt_path));
            }
        }
        "Limited" => {
            if spec.get_field("exempt").is_some() {
                errs.push(FieldError::forbidden(
                    &path.child("exempt"),
                    "must be nil if the type is Limited",
                ));
            }
            match spec.get_field("limited") {
                None => errs.push(FieldError::required(
                    &path.child("limited"),
                    "must not be empty when type is Limited",
                )),
                Some(limited) => errs.extend(validate_limited(limited, &path.child("limited"))),
            }
        }
        other => errs.push(FieldError::not_supported(
            &path.child("type"),
            other,
            &["Exempt", "Limited"],
        )),
    }
    if let Some(fixed) = mandatory_priority_level_spec(name) {
        let (mut have, mut want) = (spec.clone(), fixed);
        let except_exempt = name == "exempt";
        if except_exempt {
            for s in [&mut have, &mut want] {
                if let Some(o) = s.as_object_mut() {
                    o.remove("exempt");
                }
            }
        }
        if !semantic_eq(&have, &want) {
            let message = if except_exempt {
                format!(
                    "spec of '{name}' except the 'spec.exempt' field must equal the fixed value"
                )
            } else {
                format!("spec of '{name}' must equal the fixed value")
            };
            errs.push(FieldError::invalid(&path, spec.clone(), message));
        }
    }
    errs.extend(validate_conditions(level));
    errs
}

fn lendable_percent(config: &Value, path: &Path) -> Option<FieldError> {
    let percent = config.int("lendablePercent")?;
    (!(0..=100).contains(&percent)).then(|| {
        FieldError::invalid(
            &path.child("lendablePercent"),
            percent,
            "must be between 0 and 100, inclusive",
        )
    })
}

fn validate_limited(limited: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(shares) = limited.int("nominalConcurrencyShares")
        && shares < 0
    {
        errs.push(FieldError::invalid(
            &path.child("nominalConcurrencyShares"),
            shares,
            "must be a non-negative integer",
        ));
    }
    errs.extend(lendable_percent(limited, path));
    if let Some(limit) = limited.int("borrowingLimitPercent")
        && limit < 0
    {
        errs.push(FieldError::invalid(
            &path.child("borrowingLimitPercent"),
            limit,
            "if specified, must be a non-negative integer",
        ));
    }
    let response = field(limited, "limitResponse");
    let response_path = path.child("limitResponse");
    match response.str("type") {
        "Reject" => {
            if response.get_field("queuing").is_some() {
                errs.push(FieldError::forbidden(
                    &response_path.child("queuing"),
                    "must be nil if limited.limitResponse.type is not Limited",
                ));
            }
        }
        "Queue" => match response.get_field("queuing") {
            None => errs.push(FieldError::required(
                &response_path.child("queuing"),
                "must not be empty if limited.limitResponse.type is Limited",
            )),
            Some(queuing) => {
                errs.extend(validate_queuing(queuing, &response_path.child("queuing")))
            }
        },
        other => errs.push(FieldError::not_supported(
            &response_path.child("type"),
            other,
            &["Queue", "Reject"],
        )),
    }
    errs
}

fn validate_queuing(queuing: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let length = queuing.int("queueLengthLimit").unwrap_or(0);
    if length <= 0 {
        errs.push(FieldError::invalid(
            &path.child("queueLengthLimit"),
            length,
            "must be positive",
        ));
    }
    let queues = queuing.int("queues").unwrap_or(0);
    if queues <= 0 {
        errs.push(FieldError::invalid(
            &path.child("queues"),
            queues,
            "must be positive",
        ));
    } else if queues > MAX_QUEUES {
        errs.push(FieldError::invalid(
            &path.child("queues"),
            queues,
            format!("must not be greater than {MAX_QUEUES}"),
        ));
    }
    let hand = queuing.int("handSize").unwrap_or(0);
    if hand <= 0 {
        errs.push(FieldError::invalid(
            &path.child("handSize"),
            hand,
            "must be positive",
        ));
    } else if hand > queues {
        errs.push(FieldError::invalid(
            &path.child("handSize"),
            hand,
            format!("should not be greater than queues ({queues})"),
        ));
    } else if required_entropy_bits(queues, hand) > MAX_HASH_BITS {
        errs.push(FieldError::invalid(
            &path.child("handSize"),
            hand,
            format!(
                "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than 60"
            ),
        ));
    }
    errs
}

/// The hash bits dealing a hand of `hand` cards from `deck` takes (`RequiredEntropyBits`).
fn required_entropy_bits(deck: i64, hand: i64) -> f64 {
    ((deck as f64).log2() * hand as f64).ceil()
}

/// Subjects matching every request: the unauthenticated and authenticated groups.
fn everyone() -> Value {
    json!([
        {"kind": "Group", "group": {"name": "system:unauthenticated"}},
        {"kind": "Group", "group": {"name": "system:authenticated"}},
    ])
}

/// Rules matching every resource and non-resource request.
pub fn all_rules(subjects: Value) -> Value {
    json!([{
        "subjects": subjects,
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
            "clusterScope": true, "namespaces": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    }])
}

/// The fixed spec of a mandatory FlowSchema (`exempt`, `catch-all`), defaults applied.
pub fn mandatory_flow_schema_spec(name: &str) -> Option<Value> {
    match name {
        "exempt" => Some(json!({
            "matchingPrecedence": 1,
            "priorityLevelConfiguration": {"name": "exempt"},
            "rules": all_rules(json!([{"kind": "Group", "group": {"name": "system:masters"}}])),
        })),
        "catch-all" => Some(json!({
            "matchingPrecedence": 10000,
            "priorityLevelConfiguration": {"name": "catch-all"},
            "distinguisherMethod": {"type": "ByUser"},
            "rules": all_rules(everyone()),
        })),
        _ => None,
    }
}

/// The fixed spec of a mandatory PriorityLevelConfiguration (`exempt`, `catch-all`),
/// defaults applied.
pub fn mandatory_priority_level_spec(name: &str) -> Option<Value> {
    match name {
        "exempt" => Some(json!({
            "type": "Exempt",
            "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0},
        })),
        "catch-all" => Some(json!({
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": 5,
                "lendablePercent": 0,
                "limitResponse": {"type": "Reject"},
            },
        })),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn schema(name: &str, spec: Value) -> Value {
        let mut object = json!({"metadata": {"name": name}, "spec": spec});
        default_flow_schema(&mut object);
        object
    }

    #[test]
    fn flow_schemas() {
        let ctx = Ctx { old: None };
        let ok = schema(
            "mine",
            json!({"priorityLevelConfiguration": {"name": "nowhere"},
                   "distinguisherMethod": {"type": "ByUser"},
                   "rules": all_rules(everyone())}),
        );
        assert_eq!(ok["spec"]["matchingPrecedence"], 1000);
        assert!(
            validate_flow_schema(&ok, &ctx).is_empty(),
            "a missing level is valid"
        );
        let bad = schema(
            "mine",
            json!({"matchingPrecedence": 1, "distinguisherMethod": {"type": "ByColor"},
                   "rules": [{"subjects": [{"kind": "Robot"}],
                              "resourceRules": [{"verbs": ["get", "*"], "apiGroups": ["*"],
                                                 "resources": ["pods"], "namespaces": ["Bad"]}],
                              "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/a*"]}]}]}),
        );
        assert_eq!(
            messages(&validate_flow_schema(&bad, &ctx)),
            [
                "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1",
                "spec.distinguisherMethod.type: Unsupported value: \"ByColor\": supported values: \"ByNamespace\", \"ByUser\"",
                "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
                "spec.rules[0].subjects[0].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\"",
                "spec.rules[0].resourceRules[0].verbs: Invalid value: []string{\"get\", \"*\"}: if '*' is present, must not specify other verbs",
                "spec.rules[0].resourceRules[0].namespaces[0]: Invalid value: \"Bad\": each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"/a*\": wildcard can only do suffix matching",
            ]
        );
        let too_high = schema(
            "x",
            json!({"matchingPrecedence": 10001, "priorityLevelConfiguration": {"name": "a"},
                   "rules": []}),
        );
        assert_eq!(
            messages(&validate_flow_schema(&too_high, &ctx)),
            ["spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"]
        );
    }

    #[test]
    fn mandatory_objects_are_fixed() {
        let ctx = Ctx { old: None };
        for name in ["exempt", "catch-all"] {
            let fixed = schema(name, mandatory_flow_schema_spec(name).unwrap_or_default());
            assert!(validate_flow_schema(&fixed, &ctx).is_empty(), "{name}");
            let mut level = json!({"metadata": {"name": name},
                                   "spec": mandatory_priority_level_spec(name)});
            default_priority_level(&mut level);
            assert!(validate_priority_level(&level, &ctx).is_empty(), "{name}");
        }
        let changed = schema(
            "catch-all",
            json!({"matchingPrecedence": 9000, "priorityLevelConfiguration": {"name": "catch-all"},
                   "distinguisherMethod": {"type": "ByUser"}, "rules": all_rules(everyone())}),
        );
        let errs = messages(&validate_flow_schema(&changed, &ctx));
        assert!(
            errs[0].ends_with("spec of 'catch-all' must equal the fixed value"),
            "{errs:?}"
        );
        let exempt = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt",
            "exempt": {"nominalConcurrencyShares": 10, "lendablePercent": 5}}});
        assert!(validate_priority_level(&exempt, &ctx).is_empty());
    }

    #[test]
    fn priority_levels() {
        let ctx = Ctx { old: None };
        let mut level = json!({"metadata": {"name": "mine"}, "spec": {"type": "Limited",
            "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}});
        default_priority_level(&mut level);
        assert_eq!(
            level["spec"]["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse":
                {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}})
        );
        assert!(validate_priority_level(&level, &ctx).is_empty());
        let bad = json!({"metadata": {"name": "mine"}, "spec": {"type": "Exempt",
            "limited": {"nominalConcurrencyShares": -1, "lendablePercent": 101,
                "limitResponse": {"type": "Queue", "queuing": {"queues": 4, "handSize": 5, "queueLengthLimit": 0}}}}});
        assert_eq!(
            messages(&validate_priority_level(&bad, &ctx)),
            [
                "spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'",
                "spec.limited: Forbidden: must be nil if the type is not Limited",
            ]
        );
        let bad = json!({"metadata": {"name": "mine"}, "spec": {"type": "Limited",
            "limited": {"nominalConcurrencyShares": -1, "lendablePercent": 101,
                "limitResponse": {"type": "Queue", "queuing": {"queues": 4, "handSize": 5, "queueLengthLimit": 0}}}}});
        assert_eq!(
            messages(&validate_priority_level(&bad, &ctx)),
            [
                "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
                "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
                "spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: 0: must be positive",
                "spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)",
            ]
        );
        let entropy = json!({"metadata": {"name": "mine"}, "spec": {"type": "Limited",
            "limited": {"limitResponse": {"type": "Queue", "queuing": {"queues": 10000000, "handSize": 10, "queueLengthLimit": 1}}}}});
        assert_eq!(
            messages(&validate_priority_level(&entropy, &ctx)),
            [
                "spec.limited.limitResponse.queuing.handSize: Invalid value: 10: required entropy bits of deckSize 10000000 and handSize 10 should not be greater than 60"
            ]
        );
    }
}
