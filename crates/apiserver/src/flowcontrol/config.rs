//! The flow-control configuration digested from the FlowSchema and
//! PriorityLevelConfiguration objects: the schemas in matching order (precedence, then
//! name; dangling ones — naming a missing level — left out, as Kubernetes does), each
//! level's seats (the server's concurrency limit split by nominal concurrency shares), and
//! request matching (subjects, resource and non-resource rules, the flow distinguisher).

use kyb_apimachinery::json::{Obj, field, field_at};
use kyb_serving::fairqueuing::{self, QueueSet, Queuing};
use kyb_serving::filters::Classification;
use kyb_serving::{RequestInfo, Target, User};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// A priority level in force.
pub(crate) struct Level {
    pub(crate) name: Arc<str>,
    pub(crate) uid: http::HeaderValue,
    /// `None` for an exempt level.
    pub(crate) queues: Option<Arc<QueueSet>>,
}

/// A FlowSchema in force.
struct Schema {
    name: Arc<str>,
    uid: http::HeaderValue,
    level: usize,
    distinguisher: Distinguisher,
    rules: Vec<Value>,
}

#[derive(Clone, Copy)]
enum Distinguisher {
    None,
    ByUser,
    ByNamespace,
}

/// Schemas in matching order and their levels.
#[derive(Default)]
pub(crate) struct Configuration {
    schemas: Vec<Schema>,
    levels: Vec<Level>,
}

fn header(text: &str) -> http::HeaderValue {
    http::HeaderValue::from_str(text).unwrap_or_else(|_| http::HeaderValue::from_static(""))
}

fn int(value: &Value, path: &[&str]) -> i64 {
    field_at(value, path).as_i64().unwrap_or(0)
}

/// The seats of each limited level: `ceil(server_limit * shares / sum of shares)`.
pub(crate) fn nominal_limits(levels: &[Value], server_limit: usize) -> HashMap<String, usize> {
    let shares = |level: &Value| match field_at(level, &["spec", "type"]).as_str() {
        Some("Limited") => int(level, &["spec", "limited", "nominalConcurrencyShares"]).max(0),
        _ => int(level, &["spec", "exempt", "nominalConcurrencyShares"]).max(0),
    };
    let total: i64 = levels.iter().map(shares).sum();
    levels
        .iter()
        .map(|level| {
            let name = field_at(level, &["metadata", "name"])
                .as_str()
                .unwrap_or_default()
                .to_string();
            let limit = if total == 0 {
                0
            } else {
                (server_limit as u64 * shares(level) as u64).div_ceil(total as u64)
            };
            (name, limit as usize)
        })
        .collect()
}

impl Configuration {
    /// Digests the objects; queue sets of levels that already existed (`previous`) are
    /// kept and reconfigured, so requests waiting in them stay.
    pub(crate) fn build(
        schemas: &[Value],
        levels: &[Value],
        server_limit: usize,
        previous: &Configuration,
    ) -> Configuration {
        let limits = nominal_limits(levels, server_limit);
        let mut config = Configuration::default();
        let mut index = HashMap::new();
        for level in levels {
            let name = field_at(level, &["metadata", "name"])
                .as_str()
                .unwrap_or_default();
            let uid = field_at(level, &["metadata", "uid"])
                .as_str()
                .unwrap_or_default();
            let spec = field(level, "spec");
            let queues = (spec.str("type") == "Limited").then(|| {
                let response = field_at(spec, &["limited", "limitResponse"]);
                let queuing = (response.str("type") == "Queue").then(|| Queuing {
                    queues: int(response, &["queuing", "queues"]).max(1) as usize,
                    hand_size: int(response, &["queuing", "handSize"]).max(1) as usize,
                    queue_length_limit: int(response, &["queuing", "queueLengthLimit"]).max(0)
                        as usize,
                });
                // At least one seat: without borrowing, a level of zero shares would
                // otherwise never serve anything.
                let config = fairqueuing::Config {
                    concurrency_limit: limits.get(name).copied().unwrap_or(0).max(1),
                    queuing,
                };
                match previous
                    .levels
                    .iter()
                    .find(|l| &*l.name == name)
                    .and_then(|l| l.queues.clone())
                {
                    Some(set) => {
                        set.configure(config);
                        set
                    }
                    None => QueueSet::new(config),
                }
            });
            index.insert(name.to_string(), config.levels.len());
            config.levels.push(Level {
                name: name.into(),
                uid: header(uid),
                queues,
            });
        }
        let mut ordered: Vec<&Value> = schemas.iter().collect();
        ordered.sort_by_key(|s| {
            (
                int(s, &["spec", "matchingPrecedence"]),
                field_at(s, &["metadata", "name"])
                    .as_str()
                    .unwrap_or_default(),
            )
        });
        for schema in ordered {
            let level = field_at(schema, &["spec", "priorityLevelConfiguration", "name"])
                .as_str()
                .unwrap_or_default();
            let Some(&level) = index.get(level) else {
                continue;
            };
            let distinguisher =
                match field_at(schema, &["spec", "distinguisherMethod", "type"]).as_str() {
                    Some("ByUser") => Distinguisher::ByUser,
                    Some("ByNamespace") => Distinguisher::ByNamespace,
                    _ => Distinguisher::None,
                };
            config.schemas.push(Schema {
                name: field_at(schema, &["metadata", "name"])
                    .as_str()
                    .unwrap_or_default()
                    .into(),
                uid: header(
                    field_at(schema, &["metadata", "uid"])
                        .as_str()
                        .unwrap_or_default(),
                ),
                level,
                distinguisher,
                rules: field_at(schema, &["spec", "rules"])
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            });
        }
        config
    }

    /// The first schema matching the request, in matching order.
    pub(crate) fn classify(&self, info: &RequestInfo, user: &User) -> Option<Classification> {
        let schema = self
            .schemas
            .iter()
            .find(|s| s.rules.iter().any(|rule| rule_matches(rule, info, user)))?;
        let level = &self.levels[schema.level];
        let namespace = info
            .resource()
            .and_then(|r| r.namespace.as_deref())
            .unwrap_or_default();
        let distinguisher = match schema.distinguisher {
            Distinguisher::None => "",
            Distinguisher::ByUser => &user.name,
            Distinguisher::ByNamespace => namespace,
        };
        Some(Classification {
            flow_schema: schema.name.clone(),
            flow_schema_uid: schema.uid.clone(),
            priority_level: level.name.clone(),
            priority_level_uid: level.uid.clone(),
            flow_hash: fairqueuing::flow_hash(&[&schema.name, distinguisher]),
            queues: level.queues.clone(),
        })
    }
}

fn strings<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a str> {
    value.arr(key).iter().filter_map(Value::as_str)
}

fn has(value: &Value, key: &str, wanted: &str) -> bool {
    strings(value, key).any(|s| s == "*" || s == wanted)
}

/// Whether a `PolicyRulesWithSubjects` matches the request.
pub(crate) fn rule_matches(rule: &Value, info: &RequestInfo, user: &User) -> bool {
    if !rule
        .arr("subjects")
        .iter()
        .any(|s| subject_matches(s, user))
    {
        return false;
    }
    match &info.target {
        Target::Resource(request) => rule.arr("resourceRules").iter().any(|r| {
            let resource = match &request.subresource {
                Some(sub) => format!("{}/{sub}", request.resource),
                None => request.resource.clone(),
            };
            has(r, "verbs", request.verb.as_str())
                && has(r, "apiGroups", &request.group)
                && has(r, "resources", &resource)
                && match request.namespace.as_deref() {
                    None | Some("") => r.flag("clusterScope"),
                    Some(namespace) => has(r, "namespaces", namespace),
                }
        }),
        Target::NonResource => {
            let verb = kyb_serving::request_info::non_resource_verb(&info.method);
            rule.arr("nonResourceRules").iter().any(|r| {
                has(r, "verbs", verb)
                    && strings(r, "nonResourceURLs").any(|url| url_matches(url, &info.path))
            })
        }
    }
}

fn url_matches(rule: &str, path: &str) -> bool {
    if rule == "*" || rule == path {
        return true;
    }
    let Some(prefix) = rule.strip_suffix('*') else {
        return false;
    };
    let prefix = prefix.trim_end_matches('/');
    path == prefix || path.starts_with(&format!("{prefix}/"))
}

fn subject_matches(subject: &Value, user: &User) -> bool {
    match subject.str("kind") {
        "User" => {
            let name = field_at(subject, &["user", "name"])
                .as_str()
                .unwrap_or_default();
            name == "*" || name == user.name
        }
        "Group" => {
            let name = field_at(subject, &["group", "name"])
                .as_str()
                .unwrap_or_default();
            name == "*" || user.groups.iter().any(|g| g == name)
        }
        "ServiceAccount" => {
            let account = field(subject, "serviceAccount");
            let Some(rest) = user.name.strip_prefix("system:serviceaccount:") else {
                return false;
            };
            let Some((namespace, name)) = rest.split_once(':') else {
                return false;
            };
            account.str("namespace") == namespace
                && (account.str("name") == "*" || account.str("name") == name)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info(method: &str, path: &str) -> RequestInfo {
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .body(())
            .unwrap_or_default();
        RequestInfo::of_api_request(&request.into_parts().0)
    }

    fn user(name: &str, groups: &[&str]) -> User {
        User {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..User::default()
        }
    }

    fn objects() -> (Vec<Value>, Vec<Value>) {
        let (schemas, levels) = super::super::bootstrap::objects();
        let with_uid = |mut o: Value| {
            let name = field_at(&o, &["metadata", "name"])
                .as_str()
                .unwrap_or_default()
                .to_string();
            o["metadata"]["uid"] = json!(format!("uid-{name}"));
            kyb_validation::default_object(
                "flowcontrol.apiserver.k8s.io",
                "v1",
                if o["spec"].get("rules").is_some()
                    || o["spec"].get("priorityLevelConfiguration").is_some()
                {
                    "FlowSchema"
                } else {
                    "PriorityLevelConfiguration"
                },
                &mut o,
            );
            o
        };
        (
            schemas.into_iter().map(with_uid).collect(),
            levels.into_iter().map(with_uid).collect(),
        )
    }

    #[test]
    fn suggested_configuration_classifies_as_kubernetes() {
        let (schemas, levels) = objects();
        let config = Configuration::build(&schemas, &levels, 600, &Configuration::default());
        let classify = |info: &RequestInfo, user: &User| {
            config.classify(info, user).map(|c| {
                (
                    c.flow_schema.to_string(),
                    c.priority_level.to_string(),
                    c.queues.is_some(),
                )
            })
        };
        let masters = user("admin", &["system:masters", "system:authenticated"]);
        let jane = user("jane", &["system:authenticated"]);
        let node = user("system:node:n1", &["system:nodes", "system:authenticated"]);
        let sa = user(
            "system:serviceaccount:kube-system:foo",
            &["system:serviceaccounts", "system:authenticated"],
        );
        let list = info("GET", "/api/v1/namespaces/default/configmaps");
        assert_eq!(
            classify(&list, &masters),
            Some(("exempt".into(), "exempt".into(), false))
        );
        assert_eq!(
            classify(&list, &jane),
            Some(("global-default".into(), "global-default".into(), true))
        );
        assert_eq!(
            classify(&info("GET", "/readyz"), &jane),
            Some(("probes".into(), "exempt".into(), false))
        );
        assert_eq!(
            classify(&info("GET", "/version"), &jane).map(|c| c.0),
            Some("global-default".into())
        );
        assert_eq!(
            classify(&info("PUT", "/api/v1/nodes/n1/status"), &node).map(|c| c.0),
            Some("system-node-high".into())
        );
        assert_eq!(
            classify(&list, &node).map(|c| c.0),
            Some("system-nodes".into())
        );
        assert_eq!(
            classify(
                &info(
                    "PUT",
                    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x"
                ),
                &sa
            )
            .map(|c| c.0),
            Some("system-leader-election".into())
        );
        assert_eq!(
            classify(&list, &sa).map(|c| c.0),
            Some("kube-system-service-accounts".into())
        );
        let anonymous = User::anonymous();
        assert_eq!(
            classify(&list, &anonymous).map(|c| c.1),
            Some("global-default".into())
        );
        // Limits: 600 seats split by shares (245 in all).
        let limits = nominal_limits(&levels, 600);
        assert_eq!(
            (
                limits["workload-low"],
                limits["global-default"],
                limits["catch-all"],
                limits["exempt"]
            ),
            (245, 49, 13, 0)
        );
    }

    #[test]
    fn dangling_schemas_are_skipped_and_distinguishers_split_flows() {
        let (mut schemas, levels) = objects();
        schemas.push(json!({"metadata": {"name": "mine", "uid": "u"}, "spec": {
            "matchingPrecedence": 100, "priorityLevelConfiguration": {"name": "missing"},
            "rules": kyb_validation::all_rules(json!([{"kind": "User", "user": {"name": "jane"}}]))}}));
        let config = Configuration::build(&schemas, &levels, 600, &Configuration::default());
        let jane = user("jane", &["system:authenticated"]);
        let joe = user("joe", &["system:authenticated"]);
        let list = info("GET", "/api/v1/namespaces/default/configmaps");
        let a = config
            .classify(&list, &jane)
            .map(|c| (c.flow_schema.to_string(), c.flow_hash));
        let b = config
            .classify(&list, &joe)
            .map(|c| (c.flow_schema.to_string(), c.flow_hash));
        assert_eq!(a.as_ref().map(|a| a.0.as_str()), Some("global-default"));
        assert_ne!(a.map(|a| a.1), b.map(|b| b.1), "ByUser: one flow per user");
        assert!(url_matches("/apis/*", "/apis/apps/v1"));
        assert!(url_matches("/apis/*", "/apis"));
        assert!(!url_matches("/apis/*", "/apisx"));
        assert!(!url_matches("/healthz", "/healthz/etcd"));
    }
}
