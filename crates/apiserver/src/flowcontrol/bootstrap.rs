//! Kubernetes' bootstrap flow-control configuration and the keeper that maintains it.
//!
//! The mandatory objects (the `exempt` and `catch-all` FlowSchemas and priority levels)
//! always exist with their fixed specs: recreated when deleted, restored when changed.
//! The suggested ones (`system`, `node-high`, `leader-election`, `workload-high`,
//! `workload-low`, `global-default` levels and their schemas, `probes` among them) are
//! recreated when deleted, and their spec is brought back to the suggested one while
//! their `apf.kubernetes.io/autoupdate-spec` annotation is `"true"`; an object without the
//! annotation gets `"true"` if it was never changed (generation 1), else `"false"`.
//!
//! The keeper also maintains each FlowSchema's `Dangling` condition: `True` (reason
//! `NotFound`) while the priority level it names does not exist, `False` (`Found`) once it
//! does — what Kubernetes' flow-control configuration controller writes.

use crate::engine::Engine;
use crate::rest;
use kyb_api::Status;
use kyb_serving::Verb;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

pub(crate) const GROUP: &str = "flowcontrol.apiserver.k8s.io";
pub const AUTOUPDATE_ANNOTATION: &str = "apf.kubernetes.io/autoupdate-spec";

fn level(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name, "annotations": {AUTOUPDATE_ANNOTATION: "true"}},
        "spec": spec,
    })
}

fn queued(shares: i64, lendable: i64, queues: i64, hand: i64) -> Value {
    json!({"type": "Limited", "limited": {
        "nominalConcurrencyShares": shares,
        "lendablePercent": lendable,
        "limitResponse": {"type": "Queue", "queuing": {
            "queues": queues, "handSize": hand, "queueLengthLimit": 50}},
    }})
}

fn schema(
    name: &str,
    level: &str,
    precedence: i64,
    distinguisher: Option<&str>,
    rules: Value,
) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
        "rules": rules,
    });
    if let Some(method) = distinguisher {
        spec["distinguisherMethod"] = json!({"type": method});
    }
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": name, "annotations": {AUTOUPDATE_ANNOTATION: "true"}},
        "spec": spec,
    })
}

fn users(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "User", "user": {"name": n}}))
        .collect()
}

fn groups(names: &[&str]) -> Value {
    Value::Array(
        names
            .iter()
            .map(|n| json!({"kind": "Group", "group": {"name": n}}))
            .collect(),
    )
}

fn kube_system_accounts(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "ServiceAccount", "serviceAccount": {"name": n, "namespace": "kube-system"}}))
        .collect()
}

fn resource_rule(
    verbs: &[&str],
    groups: &[&str],
    resources: &[&str],
    namespaces: &[&str],
    cluster: bool,
) -> Value {
    let mut rule = json!({"verbs": verbs, "apiGroups": groups, "resources": resources, "namespaces": namespaces});
    if cluster {
        rule["clusterScope"] = json!(true);
    }
    rule
}

fn leader_election_rules(subjects: Vec<Value>, namespace: &str) -> Value {
    let verbs = ["get", "create", "update"];
    json!([{
        "subjects": subjects,
        "resourceRules": [
            resource_rule(&verbs, &[""], &["endpoints", "configmaps"], &[namespace], false),
            resource_rule(&verbs, &["coordination.k8s.io"], &["leases"], &[namespace], false),
        ],
    }])
}

/// The bootstrap FlowSchemas and PriorityLevelConfigurations, mandatory and suggested, as
/// Kubernetes 1.33 creates them.
pub fn objects() -> (Vec<Value>, Vec<Value>) {
    let mandatory_level = |name: &str| {
        level(
            name,
            kyb_validation::mandatory_priority_level_spec(name).unwrap_or_default(),
        )
    };
    let levels = vec![
        mandatory_level("exempt"),
        mandatory_level("catch-all"),
        level("system", queued(30, 33, 64, 6)),
        level("node-high", queued(40, 25, 64, 6)),
        level("leader-election", queued(10, 0, 16, 4)),
        level("workload-high", queued(40, 50, 128, 6)),
        level("workload-low", queued(100, 90, 128, 6)),
        level("global-default", queued(20, 50, 128, 6)),
    ];
    let everyone = || groups(&["system:unauthenticated", "system:authenticated"]);
    let all = kyb_validation::all_rules;
    let mandatory_schema = |name: &str| {
        let mut object = schema(name, name, 0, None, json!([]));
        object["spec"] = kyb_validation::mandatory_flow_schema_spec(name).unwrap_or_default();
        object
    };
    let controller_manager = "system:kube-controller-manager";
    let scheduler = "system:kube-scheduler";
    let endpoint_controllers = [
        users(&[controller_manager]),
        kube_system_accounts(&["endpoint-controller", "endpointslicemirroring-controller"]),
    ]
    .concat();
    let schemas = vec![
        mandatory_schema("exempt"),
        mandatory_schema("catch-all"),
        schema(
            "system-nodes",
            "system",
            500,
            Some("ByUser"),
            all(groups(&["system:nodes"])),
        ),
        schema(
            "system-node-high",
            "node-high",
            400,
            Some("ByUser"),
            json!([{
                "subjects": groups(&["system:nodes"]),
                "resourceRules": [
                    resource_rule(&["*"], &[""], &["nodes", "nodes/status"], &["*"], true),
                    resource_rule(&["*"], &["coordination.k8s.io"], &["leases"], &["*"], false),
                ],
            }]),
        ),
        schema(
            "probes",
            "exempt",
            2,
            None,
            json!([{
                "subjects": everyone(),
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
            }]),
        ),
        schema(
            "system-leader-election",
            "leader-election",
            100,
            Some("ByUser"),
            leader_election_rules(
                [
                    users(&[controller_manager, scheduler]),
                    kube_system_accounts(&["*"]),
                ]
                .concat(),
                "kube-system",
            ),
        ),
        schema(
            "endpoint-controller",
            "workload-high",
            150,
            Some("ByUser"),
            json!([{
                "subjects": endpoint_controllers,
                "resourceRules": [resource_rule(&["get", "create", "update"], &[""], &["endpoints"], &["*"], false)],
            }]),
        ),
        schema(
            "workload-leader-election",
            "leader-election",
            200,
            Some("ByUser"),
            leader_election_rules(kube_system_accounts(&["*"]), "*"),
        ),
        schema(
            "kube-controller-manager",
            "workload-high",
            800,
            Some("ByNamespace"),
            all(Value::Array(users(&[controller_manager]))),
        ),
        schema(
            "kube-scheduler",
            "workload-high",
            800,
            Some("ByNamespace"),
            all(Value::Array(users(&[scheduler]))),
        ),
        schema(
            "kube-system-service-accounts",
            "workload-high",
            900,
            Some("ByNamespace"),
            all(Value::Array(kube_system_accounts(&["*"]))),
        ),
        schema(
            "service-accounts",
            "workload-low",
            9000,
            Some("ByUser"),
            all(groups(&["system:serviceaccounts"])),
        ),
        schema(
            "global-default",
            "global-default",
            9900,
            Some("ByUser"),
            all(everyone()),
        ),
    ];
    (schemas, levels)
}

fn name(object: &Value) -> &str {
    kyb_apimachinery::meta::name(object).unwrap_or_default()
}

fn annotation(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(AUTOUPDATE_ANNOTATION))
        .and_then(Value::as_str)
}

/// The spec the keeper wants an existing bootstrap object to have, and its annotation;
/// `None` when it is left alone.
fn wanted(current: &Value, bootstrap: &Value, mandatory: bool) -> Option<Value> {
    let mut updated = current.clone();
    let mut changed = false;
    let autoupdate = if mandatory {
        true
    } else {
        match annotation(current) {
            Some(value) => value == "true",
            None => {
                let never_changed = current
                    .pointer("/metadata/generation")
                    .and_then(Value::as_i64)
                    .is_none_or(|g| g == 1);
                let annotations = kyb_apimachinery::meta::metadata_mut(&mut updated)
                    .entry("annotations")
                    .or_insert_with(|| json!({}));
                if let Some(map) = annotations.as_object_mut() {
                    map.insert(
                        AUTOUPDATE_ANNOTATION.into(),
                        json!(never_changed.to_string()),
                    );
                }
                changed = true;
                never_changed
            }
        }
    };
    if autoupdate {
        let mut spec = bootstrap["spec"].clone();
        // The exempt level's `spec.exempt` is the administrator's.
        if mandatory
            && name(bootstrap) == "exempt"
            && bootstrap["kind"] == "PriorityLevelConfiguration"
            && let Some(exempt) = current.pointer("/spec/exempt")
        {
            spec["exempt"] = exempt.clone();
        }
        if !kyb_apimachinery::equality::semantic_eq(&current["spec"], &spec) {
            updated["spec"] = spec;
            changed = true;
        }
    }
    changed.then_some(updated)
}

/// Creates the missing bootstrap objects and brings the others up to date.
async fn ensure(engine: &Arc<Engine>) -> Result<(), Status> {
    let registry = engine.registry.snapshot();
    let (schemas, levels) = objects();
    // Levels first: schemas created before their level would start dangling.
    for (plural, objects) in [
        ("prioritylevelconfigurations", levels),
        ("flowschemas", schemas),
    ] {
        let def = registry
            .find(GROUP, "v1", plural)
            .ok_or_else(|| Status::internal(format!("{plural} is not registered")))?;
        for object in objects {
            let object_name = name(&object).to_string();
            let mandatory = matches!(object_name.as_str(), "exempt" | "catch-all");
            let current = engine.cache.lookup(GROUP, plural, None, &object_name);
            let result = match current {
                None => rest::ensure(engine, def, object, false).await,
                Some(current) => match wanted(&current, &object, mandatory) {
                    Some(updated) => rest::ensure(engine, def, updated, true).await,
                    None => continue,
                },
            };
            match result {
                Ok(_) => {}
                Err(status) if status.code == 409 => {}
                Err(status) => tracing::warn!(
                    resource = plural,
                    name = object_name,
                    error = %status.message,
                    "cannot keep a bootstrap flow-control object"
                ),
            }
        }
    }
    Ok(())
}

/// The `Dangling` condition a FlowSchema should have, given the levels that exist.
fn dangling_condition(schema: &Value, level_exists: bool) -> Value {
    let level = schema
        .pointer("/spec/priorityLevelConfiguration/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (status, reason, message) = if level_exists {
        (
            "False",
            "Found",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists"
            ),
        )
    } else {
        (
            "True",
            "NotFound",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named {level:?} but there is no such object"
            ),
        )
    };
    json!({"type": "Dangling", "status": status, "reason": reason, "message": message})
}

/// Writes each FlowSchema's `Dangling` condition where it is not already right.
async fn mark_dangling(engine: &Arc<Engine>) {
    let registry = engine.registry.snapshot();
    let Some(def) = registry.find(GROUP, "v1", "flowschemas") else {
        return;
    };
    let levels: std::collections::HashSet<String> = engine
        .cache
        .objects(GROUP, "prioritylevelconfigurations", None)
        .iter()
        .map(|l| name(l).to_string())
        .collect();
    for schema in engine.cache.objects(GROUP, "flowschemas", None) {
        let level = schema
            .pointer("/spec/priorityLevelConfiguration/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut desired = dangling_condition(&schema, levels.contains(level));
        let conditions = schema
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let current = conditions.iter().find(|c| c["type"] == "Dangling");
        if current.is_some_and(|c| {
            c["status"] == desired["status"]
                && c["reason"] == desired["reason"]
                && c["message"] == desired["message"]
        }) {
            continue;
        }
        desired["lastTransitionTime"] = json!(crate::util::now());
        let mut status = schema.get("status").cloned().unwrap_or_else(|| json!({}));
        let mut conditions: Vec<Value> = conditions
            .into_iter()
            .filter(|c| c["type"] != "Dangling")
            .collect();
        conditions.push(desired);
        status["conditions"] = Value::Array(conditions);
        let result = match rest::internal_call(
            engine,
            def,
            Verb::Update,
            None,
            Some(kyb_api::registry::Subresource::Status),
        ) {
            Ok(call) => rest::update_status(&call, name(&schema), None, status)
                .await
                .map(|_| ()),
            Err(status) => Err(status),
        };
        if let Err(status) = result
            && status.code != 404
            && status.code != 409
        {
            tracing::warn!(schema = name(&schema), error = %status.message, "cannot mark a FlowSchema's Dangling condition");
        }
    }
}

/// Keeps the bootstrap objects and the `Dangling` conditions for as long as the server
/// runs: at start, then after every change of either kind.
pub async fn run(engine: Arc<Engine>) {
    let mut changes = engine.cache.changes();
    let pass = async |engine: &Arc<Engine>| {
        if let Err(status) = ensure(engine).await {
            tracing::warn!(error = %status.message, "cannot keep the flow-control configuration");
        }
        mark_dangling(engine).await;
    };
    pass(&engine).await;
    loop {
        match changes.recv().await {
            Ok(change) if change.def.group == GROUP => {
                while let Ok(_more) = changes.try_recv() {}
                pass(&engine).await;
            }
            Ok(_) => {}
            Err(RecvError::Lagged(_)) => pass(&engine).await,
            Err(RecvError::Closed) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_objects_are_valid() {
        let (schemas, levels) = objects();
        assert_eq!(schemas.len(), 13);
        assert_eq!(levels.len(), 8);
        for (kind, object) in schemas
            .iter()
            .map(|o| ("FlowSchema", o))
            .chain(levels.iter().map(|o| ("PriorityLevelConfiguration", o)))
        {
            let mut defaulted = object.clone();
            kyb_validation::default_object(GROUP, "v1", kind, &mut defaulted);
            assert_eq!(
                &defaulted,
                object,
                "{kind} {} has its defaults",
                name(object)
            );
            let errors = kyb_validation::validate_create(GROUP, "v1", kind, false, object);
            assert!(errors.is_empty(), "{kind} {}: {errors:?}", name(object));
        }
    }

    #[test]
    fn autoupdate_semantics() {
        let (_, levels) = objects();
        let bootstrap = levels
            .iter()
            .find(|l| name(l) == "workload-low")
            .cloned()
            .unwrap_or_default();
        let mut changed = bootstrap.clone();
        changed["spec"]["limited"]["nominalConcurrencyShares"] = json!(1);
        // Annotated "true": restored.
        assert_eq!(
            wanted(&changed, &bootstrap, false).map(|o| o["spec"].clone()),
            Some(bootstrap["spec"].clone())
        );
        // Annotated "false": left alone.
        changed["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] = json!("false");
        assert_eq!(wanted(&changed, &bootstrap, false), None);
        // Not annotated and changed since creation: marked "false", spec kept.
        changed["metadata"]["annotations"] = json!({});
        changed["metadata"]["generation"] = json!(2);
        let marked = wanted(&changed, &bootstrap, false).unwrap_or_default();
        assert_eq!(
            marked["metadata"]["annotations"][AUTOUPDATE_ANNOTATION],
            "false"
        );
        assert_eq!(marked["spec"]["limited"]["nominalConcurrencyShares"], 1);
        // Mandatory objects are always restored, whatever the annotation says.
        let catch_all = levels
            .iter()
            .find(|l| name(l) == "catch-all")
            .cloned()
            .unwrap_or_default();
        let mut changed = catch_all.clone();
        changed["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] = json!("false");
        changed["spec"]["limited"]["nominalConcurrencyShares"] = json!(50);
        assert_eq!(
            wanted(&changed, &catch_all, true).map(|o| o["spec"].clone()),
            Some(catch_all["spec"].clone())
        );
    }
}
