//! Behavioural tests of ValidatingAdmissionPolicy evaluation: what a policy author writes,
//! what Kubernetes answers.
#![allow(clippy::unwrap_used)]
use std::sync::Mutex;

use super::*;
use crate::authz::{Authorizer, AuthzCheck, AuthzDecision, AuthzTarget, ServiceAccount};
use crate::compile;
use serde_json::json;

fn policy(spec: Value) -> CompiledPolicy {
    CompiledPolicy::new(&spec, &ExpressionCache::default())
}

fn deployment(replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [
                {"name": "app", "image": "nginx:1.27", "resources": {"limits": {"memory": "512Mi"}}}
            ]}}
        }
    })
}

fn request(operation: &str, username: &str) -> Value {
    let gvr = json!({"group": "apps", "version": "v1", "resource": "deployments"});
    let gvk = json!({"group": "apps", "version": "v1", "kind": "Deployment"});
    json!({
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": "web", "namespace": "prod", "operation": operation,
        "userInfo": {"username": username, "uid": "1", "groups": ["dev", "system:authenticated"],
                     "extra": {"scopes": ["read"]}},
        "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
    })
}

fn on(object: &Value) -> Input<'_> {
    Input {
        object: Some(object),
        ..Input::default()
    }
}

fn failed(message: &str) -> Violation {
    Violation {
        message: message.to_owned(),
        reason: "Invalid".to_owned(),
        kind: ViolationKind::Failed,
    }
}

fn errored(message: &str) -> Violation {
    Violation {
        message: message.to_owned(),
        reason: "Invalid".to_owned(),
        kind: ViolationKind::Error,
    }
}

/// An authorizer that allows what its rules list (`verb group/resource`) and records
/// every check.
#[derive(Default)]
struct FakeAuthorizer {
    allow: Vec<&'static str>,
    checks: Mutex<Vec<AuthzCheck>>,
}

impl FakeAuthorizer {
    fn allowing(allow: &[&'static str]) -> Self {
        FakeAuthorizer {
            allow: allow.to_vec(),
            checks: Mutex::default(),
        }
    }

    fn checks(&self) -> Vec<AuthzCheck> {
        self.checks.lock().unwrap().clone()
    }
}

impl Authorizer for FakeAuthorizer {
    fn check(&self, attributes: &AuthzCheck) -> AuthzDecision {
        self.checks.lock().unwrap().push(attributes.clone());
        let key = match &attributes.target {
            AuthzTarget::Resource(r) => format!("{} {}/{}", attributes.verb, r.group, r.resource),
            AuthzTarget::NonResource { path } => format!("{} {path}", attributes.verb),
        };
        if self.allow.contains(&key.as_str()) {
            AuthzDecision::allow(format!("rule {key}"))
        } else {
            AuthzDecision::deny("no RBAC policy matched")
        }
    }
}

// --- the Deployment replicas policy and its messages -------------------------------------

#[test]
fn replicas_policy_admits_and_denies() {
    let p = policy(json!({"validations": [{"expression": "object.spec.replicas <= 5"}]}));
    assert!(p.compile_errors().is_empty());
    assert_eq!(p.validate(&on(&deployment(5))), []);
    assert_eq!(
        p.validate(&on(&deployment(6))),
        [failed("failed expression: object.spec.replicas <= 5")]
    );
    let v = &p.validate(&on(&deployment(6)))[0];
    assert_eq!(v.status_code(), 422);
    assert_eq!(
        denial_message("max-replicas", Some("max-replicas-binding"), &v.message),
        "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5"
    );
}

#[test]
fn message_then_message_expression_then_default() {
    let expr = "object.spec.replicas <= 5";
    let too_many = "'replicas ' + string(object.spec.replicas) + ' exceeds 5'";
    let p = policy(json!({"validations": [
        {"expression": expr, "message": "too many replicas"},
        {"expression": expr, "messageExpression": too_many},
        {"expression": expr, "message": "static", "messageExpression": too_many},
        {"expression": expr, "message": "static", "messageExpression": "'   '"},
        {"expression": expr, "message": "static", "messageExpression": "'two\\nlines'"},
        {"expression": expr, "message": "static", "messageExpression": "string(object.spec.missing)"},
        {"expression": expr, "message": "static", "messageExpression": "'z'.repeatNot()"},
        {"expression": expr, "messageExpression": "'' + object.spec.missing"},
        {"expression": expr, "message": "static", "messageExpression": format!("'{}'", "m".repeat(MAX_EVALUATED_MESSAGE_BYTES + 1))},
        {"expression": "  object.spec.replicas <= 5  "},
        {"expression": expr, "reason": "Forbidden", "message": "forbidden"},
    ]}));
    // The one that does not compile (an unknown function) is reported for the policy, and
    // at evaluation falls back like a failing one.
    assert_eq!(
        p.compile_errors()
            .iter()
            .map(|(path, _)| path.as_str())
            .collect::<Vec<_>>(),
        ["spec.validations[6].messageExpression"]
    );
    let violations = p.validate(&on(&deployment(7)));
    let messages: Vec<&str> = violations.iter().map(|v| v.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "too many replicas",
            "replicas 7 exceeds 5",
            "replicas 7 exceeds 5",
            "static",
            "static",
            "static",
            "static",
            "failed expression: object.spec.replicas <= 5",
            "static",
            "failed expression: object.spec.replicas <= 5",
            "forbidden",
        ]
    );
    assert!(violations.iter().all(|v| v.kind == ViolationKind::Failed));
    assert_eq!(violations[10].reason, "Forbidden");
    assert_eq!(violations[10].status_code(), 403);
    // Passing validations produce nothing, whatever their messages.
    assert_eq!(p.validate(&on(&deployment(1))), []);
}

#[test]
fn message_expressions_cannot_use_the_authorizer_and_must_be_strings() {
    let errors = check_policy(&json!({"validations": [
        {"expression": "true", "messageExpression": "authorizer.path('/x').check('get').reason()"},
        {"expression": "true", "messageExpression": "1 + 2"},
    ]}));
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(errors[0].0, "spec.validations[0].messageExpression");
    assert!(
        errors[0]
            .1
            .contains("undeclared reference to 'authorizer' (in container '')"),
        "{errors:?}"
    );
    assert_eq!(
        errors[1],
        (
            "spec.validations[1].messageExpression".to_owned(),
            "must evaluate to string but got int".to_owned()
        )
    );
}

// --- inputs: params, namespaceObject, request, oldObject ------------------------------------

#[test]
fn params_bound_the_replicas() {
    let p = policy(json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "validations": [{
            "expression": "object.spec.replicas <= int(params.data.maxReplicas)",
            "messageExpression": "'at most ' + params.data.maxReplicas + ' replicas'"
        }]
    }));
    assert!(p.compile_errors().is_empty(), "{:?}", p.compile_errors());
    let params = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"maxReplicas": "3"}});
    let object = deployment(4);
    let input = Input {
        params: Some(&params),
        ..on(&object)
    };
    assert_eq!(p.validate(&input), [failed("at most 3 replicas")]);
    let object = deployment(3);
    assert_eq!(
        p.validate(&Input {
            params: Some(&params),
            ..on(&object)
        }),
        []
    );

    // A custom parameter resource with an integer field.
    let p = policy(json!({
        "paramKind": {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"},
        "validations": [{"expression": "object.spec.replicas <= params.maxReplicas"}]
    }));
    let limit = json!({"maxReplicas": 5});
    let object = deployment(6);
    assert_eq!(
        p.validate(&Input {
            params: Some(&limit),
            ..on(&object)
        }),
        [failed(
            "failed expression: object.spec.replicas <= params.maxReplicas"
        )]
    );
    // A binding without params (paramRef absent): params is null and reading it errors.
    let v = p.validate(&on(&object));
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].kind, ViolationKind::Error);
    assert!(
        v[0].message.starts_with(
            "expression 'object.spec.replicas <= params.maxReplicas' resulted in error: "
        ),
        "{v:?}"
    );
}

#[test]
fn params_are_undeclared_without_a_param_kind() {
    let errors = check_policy(&json!({"validations": [{"expression": "params.max > 1"}]}));
    assert_eq!(
        errors,
        [(
            "spec.validations[0].expression".to_owned(),
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n | params.max > 1\n | ^"
                .to_owned()
        )]
    );
}

#[test]
fn namespace_object_labels() {
    let p = policy(json!({"validations": [{
        "expression": "namespaceObject.metadata.labels.env != 'prod' || object.spec.replicas >= 2",
        "message": "production deployments need at least 2 replicas"
    }]}));
    let prod = json!({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": "prod", "labels": {"env": "prod"}}});
    let dev = json!({"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": "dev", "labels": {"env": "dev"}}});
    let object = deployment(1);
    let with_ns = |ns| Input {
        namespace_object: Some(ns),
        ..on(&object)
    };
    assert_eq!(
        p.validate(&with_ns(&prod)),
        [failed("production deployments need at least 2 replicas")]
    );
    assert_eq!(p.validate(&with_ns(&dev)), []);
    // A namespace without labels: reading the label is an error ("no such key").
    let bare = json!({"metadata": {"name": "bare"}});
    let v = p.validate(&with_ns(&bare));
    assert_eq!(
        v,
        [errored(
            "expression 'namespaceObject.metadata.labels.env != 'prod' || object.spec.replicas >= 2' resulted in error: no such key: labels"
        )]
    );
    // has() guards it.
    let p = policy(json!({"validations": [{
        "expression": "!has(namespaceObject.metadata.labels) || !('env' in namespaceObject.metadata.labels)"
    }]}));
    assert_eq!(p.validate(&with_ns(&bare)), []);
    assert_eq!(p.validate(&with_ns(&prod)).len(), 1);
}

#[test]
fn request_user_info_and_operation() {
    let p = policy(json!({"validations": [
        {"expression": "request.userInfo.username != 'mallory'", "reason": "Forbidden"},
        {"expression": "'dev' in request.userInfo.groups"},
        {"expression": "request.operation == 'CREATE' && request.resource.resource == 'deployments' && request.namespace == object.metadata.namespace"},
        {"expression": "request.userInfo.extra.scopes[0] == 'read' && !request.dryRun"},
    ]}));
    assert!(p.compile_errors().is_empty(), "{:?}", p.compile_errors());
    let object = deployment(1);
    let alice = request("CREATE", "alice");
    let input = Input {
        request: Some(&alice),
        ..on(&object)
    };
    assert_eq!(p.validate(&input), []);
    let mallory = request("UPDATE", "mallory");
    let v = p.validate(&Input {
        request: Some(&mallory),
        ..on(&object)
    });
    assert_eq!(v.len(), 2, "{v:?}");
    assert_eq!(v[0].reason, "Forbidden");
    assert_eq!(
        v[0].message,
        "failed expression: request.userInfo.username != 'mallory'"
    );
    assert!(v[1].message.contains("request.operation == 'CREATE'"));
}

#[test]
fn old_object_on_update_create_and_delete() {
    let p = policy(json!({"validations": [{
        "expression": "oldObject == null || object == null || object.spec.replicas >= oldObject.spec.replicas",
        "messageExpression": "'cannot scale down from ' + string(oldObject.spec.replicas)"
    }]}));
    let old = deployment(5);
    let new = deployment(3);
    let update = Input {
        old_object: Some(&old),
        ..on(&new)
    };
    assert_eq!(p.validate(&update), [failed("cannot scale down from 5")]);
    let up = deployment(8);
    assert_eq!(
        p.validate(&Input {
            old_object: Some(&old),
            ..on(&up)
        }),
        []
    );
    // CREATE: no oldObject.
    assert_eq!(p.validate(&on(&new)), []);
    // DELETE: no object.
    assert_eq!(
        p.validate(&Input {
            old_object: Some(&old),
            ..Input::default()
        }),
        []
    );
    // Reading a field of the null oldObject is an error, not false.
    let p = policy(json!({"validations": [{"expression": "oldObject.spec.replicas == 1"}]}));
    assert_eq!(p.validate(&on(&new))[0].kind, ViolationKind::Error);
}

// --- variables ------------------------------------------------------------------------------

#[test]
fn variables_are_evaluated_lazily_and_once() {
    // The side channel: each evaluation of `canScale` makes one authorizer call.
    let p = policy(json!({
        "variables": [
            {"name": "canScale", "expression": "authorizer.group('apps').resource('deployments').namespace(object.metadata.namespace).check('scale').allowed()"},
            {"name": "limit", "expression": "variables.canScale ? 100 : 5"},
            {"name": "unused", "expression": "authorizer.path('/unused').check('get').allowed()"},
        ],
        "matchConditions": [{"name": "scalable", "expression": "variables.limit > 0"}],
        "validations": [
            {"expression": "object.spec.replicas <= variables.limit",
             "messageExpression": "'at most ' + string(variables.limit) + ' replicas'"},
            {"expression": "variables.canScale || object.spec.replicas <= 5"},
        ],
        "auditAnnotations": [{"key": "limit", "valueExpression": "string(variables.limit)"}]
    }));
    assert!(p.compile_errors().is_empty(), "{:?}", p.compile_errors());
    let object = deployment(7);
    let authorizer = FakeAuthorizer::default();
    let input = Input {
        authorizer: Some(&authorizer),
        ..on(&object)
    };
    let result = p.evaluate(&input);
    assert_eq!(result.matched, MatchOutcome::Matched);
    assert_eq!(
        result.violations,
        [
            failed("at most 5 replicas"),
            failed("failed expression: variables.canScale || object.spec.replicas <= 5"),
        ]
    );
    assert_eq!(
        result.audit_annotations.values,
        [("limit".to_owned(), "5".to_owned())]
    );
    // Used by a match condition, a variable, two validations, a message and an audit
    // annotation: evaluated once. The unused variable: never.
    let checks = authorizer.checks();
    assert_eq!(checks.len(), 1, "{checks:?}");
    assert_eq!(checks[0].verb, "scale");

    // Each method call is its own evaluation.
    let authorizer = FakeAuthorizer::allowing(&["scale apps/deployments"]);
    let input = Input {
        authorizer: Some(&authorizer),
        ..on(&object)
    };
    assert_eq!(p.validate(&input), []);
    assert_eq!(authorizer.checks().len(), 1);
}

#[test]
fn variables_see_earlier_variables_only() {
    let errors = check_policy(&json!({"variables": [
        {"name": "a", "expression": "variables.b + 1"},
        {"name": "b", "expression": "1"},
    ], "validations": [{"expression": "variables.a > variables.b"}]}));
    assert_eq!(
        errors,
        [(
            "spec.variables[0].expression".to_owned(),
            "compilation failed: ERROR: <input>:1:10: undefined field 'b'\n | variables.b + 1\n | .........^"
                .to_owned()
        )]
    );
}

#[test]
fn variable_errors_surface_where_they_are_used() {
    let p = policy(json!({
        "variables": [
            {"name": "replicas", "expression": "object.spec.replicaz"},
            {"name": "broken", "expression": "object.spec.replicas +"},
        ],
        "validations": [
            {"expression": "variables.replicas <= 5"},
            {"expression": "variables.broken <= 5"},
            {"expression": "object.spec.replicas <= 5"},
        ]
    }));
    let v = p.validate(&on(&deployment(3)));
    assert_eq!(
        v,
        [
            errored(
                "expression 'variables.replicas <= 5' resulted in error: composited variable \"replicas\" fails to evaluate: no such key: replicaz"
            ),
            errored(&format!(
                "expression 'variables.broken <= 5' resulted in error: composited variable \"broken\" fails to compile: {}",
                compile("object.spec.replicas +").unwrap_err().detail()
            )),
        ]
    );
    assert_eq!(p.compile_errors()[0].0, "spec.variables[1].expression");
}

// --- match conditions -------------------------------------------------------------------------

#[test]
fn match_conditions_true_false_and_error() {
    let spec = |conditions: Value| {
        policy(json!({
            "matchConditions": conditions,
            "validations": [{"expression": "object.spec.replicas <= 5"}]
        }))
    };
    let object = deployment(7);
    let alice = request("CREATE", "alice");
    let input = Input {
        request: Some(&alice),
        ..on(&object)
    };
    let exclude_system = json!({"name": "exclude-system", "expression": "!request.userInfo.username.startsWith('system:')"});
    let is_prod = json!({"name": "is-prod", "expression": "object.metadata.namespace == 'prod'"});
    let is_dev = json!({"name": "is-dev", "expression": "object.metadata.namespace == 'dev'"});
    let broken = json!({"name": "broken", "expression": "object.metadata.missing == 'x'"});
    let not_bool = json!({"name": "not-bool", "expression": "[request.name, true][0]"});

    assert_eq!(
        spec(json!([exclude_system, is_prod])).match_conditions(&input),
        MatchOutcome::Matched
    );
    assert_eq!(
        spec(json!([exclude_system, is_dev])).match_conditions(&input),
        MatchOutcome::NotMatched {
            name: "is-dev".to_owned()
        }
    );
    assert_eq!(
        spec(json!([broken, is_prod])).match_conditions(&input),
        MatchOutcome::Error {
            name: "broken".to_owned(),
            message: "expression 'object.metadata.missing == 'x'' resulted in error: no such key: missing"
                .to_owned()
        }
    );
    // An error and a false condition: not matched, whatever the order.
    assert_eq!(
        spec(json!([broken, is_dev])).match_conditions(&input),
        MatchOutcome::NotMatched {
            name: "is-dev".to_owned()
        }
    );
    assert_eq!(
        spec(json!([is_dev, broken])).match_conditions(&input),
        MatchOutcome::NotMatched {
            name: "is-dev".to_owned()
        }
    );
    // Not a boolean: an error. Several errors are aggregated as Kubernetes does.
    assert_eq!(
        spec(json!([not_bool])).match_conditions(&input),
        MatchOutcome::Error {
            name: "not-bool".to_owned(),
            message: "expression '[request.name, true][0]' resulted in error: must evaluate to bool but got string"
                .to_owned()
        }
    );
    let MatchOutcome::Error { name, message } =
        spec(json!([broken, not_bool])).match_conditions(&input)
    else {
        panic!("expected an error")
    };
    assert_eq!(name, "broken");
    assert!(
        message.starts_with("[expression 'object.metadata.missing"),
        "{message}"
    );
    assert!(message.ends_with("got string]"), "{message}");

    // evaluate(): nothing else runs when the policy does not match.
    let result = spec(json!([is_dev])).evaluate(&input);
    assert!(!result.matched.is_matched());
    assert!(result.violations.is_empty());
    let result = spec(json!([is_prod])).evaluate(&input);
    assert!(result.matched.is_matched());
    assert_eq!(result.violations.len(), 1);
    // No match conditions: matched.
    assert!(spec(json!([])).match_conditions(&input).is_matched());
}

#[test]
fn match_condition_compile_errors_are_errors_at_evaluation() {
    let p = policy(json!({"matchConditions": [{"name": "bad", "expression": "object.x =="}]}));
    let MatchOutcome::Error { name, message } = p.match_conditions(&on(&deployment(1))) else {
        panic!("expected an error")
    };
    assert_eq!(name, "bad");
    assert!(
        message.starts_with("compilation error: compilation failed: ERROR: <input>:1:"),
        "{message}"
    );
}

// --- compile errors ---------------------------------------------------------------------------

#[test]
fn compile_errors_carry_kubernetes_field_paths() {
    let spec = json!({
        "variables": [{"name": "v", "expression": "object.spec.("}],
        "matchConditions": [
            {"name": "ok", "expression": "true"},
            {"name": "bad", "expression": "nope == 1"},
        ],
        "validations": [
            {"expression": "object.spec.replicas <= ", "messageExpression": "'a' +"},
            {"expression": "object.spec.replicas"},
        ],
        "auditAnnotations": [{"key": "k", "valueExpression": "1 + 1"}]
    });
    let errors = check_policy(&spec);
    let paths: Vec<&str> = errors.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "spec.variables[0].expression",
            "spec.matchConditions[1].expression",
            "spec.validations[0].expression",
            "spec.validations[0].messageExpression",
            "spec.validations[1].expression",
            "spec.auditAnnotations[0].valueExpression",
        ]
    );
    assert!(
        errors[0]
            .1
            .starts_with("compilation failed: ERROR: <input>:1:13: Syntax error: "),
        "{errors:?}"
    );
    assert_eq!(
        errors[1].1,
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')\n | nope == 1\n | ^"
    );
    assert!(
        errors[2].1.starts_with(
            "compilation failed: ERROR: <input>:1:25: Syntax error: mismatched input '<EOF>'"
        ),
        "{errors:?}"
    );
    assert_eq!(errors[4].1, "must evaluate to bool but got dyn");
    assert_eq!(
        errors[5].1,
        "must evaluate to one of [string null_type] but got int"
    );
    // A valid policy has none; empty expressions are left to structural validation.
    assert_eq!(
        check_policy(
            &json!({"validations": [{"expression": "object.spec.replicas <= 5"}, {"expression": ""}]})
        ),
        []
    );
}

// --- CEL semantics on JSON --------------------------------------------------------------------

#[test]
fn json_fields_has_and_absent_keys() {
    let object = json!({"spec": {"replicas": 3, "ratio": 0.5, "big": 1e300, "name": "web",
                                 "tags": ["a", "b"], "empty": {}, "nothing": null}});
    let cases = [
        ("has(object.spec.replicas)", true),
        ("!has(object.spec.paused)", true),
        (
            "has(object.spec.nothing) && object.spec.nothing == null",
            true,
        ),
        (
            "object.spec.replicas == 3 && object.spec.replicas + 1 == 4",
            true,
        ),
        ("object.spec.replicas / 2 == 1", true), // integer division: int64
        (
            "object.spec.ratio == 0.5 && object.spec.ratio * 2.0 == 1.0",
            true,
        ),
        ("object.spec.ratio < object.spec.replicas", true),
        ("object.spec.big > 1.0e299", true),
        (
            "object.spec.tags.size() == 2 && 'b' in object.spec.tags",
            true,
        ),
        ("object.spec.empty.size() == 0", true),
        (
            "object.spec.name.startsWith('w') && object.spec.name.matches('^[a-z]+$')",
            true,
        ),
        (
            "object.spec.tags.all(t, t.size() == 1) && object.spec.tags.exists(t, t == 'b')",
            true,
        ),
        (
            "object.spec.tags.map(t, t.upperAscii()) == ['A', 'B']",
            true,
        ),
        ("object.spec.tags.filter(t, t != 'a') == ['b']", true),
        ("object.spec.tags.exists_one(t, t == 'a')", true),
        ("object.spec.tags.join(',') == 'a,b'", true),
        ("'web,api'.split(',') == ['web', 'api']", true),
        (
            "'  x '.trim() == 'x' && 'abc'.substring(1) == 'bc' && 'abc'.indexOf('c') == 2",
            true,
        ),
        ("'%s has %d'.format(['web', 3]) == 'web has 3'", true),
        (
            "[3, 1, 2].sort() == [1, 2, 3] && [1, 2, 3].isSorted() && [1, 2].sum() == 3",
            true,
        ),
        (
            "sets.contains(['a', 'b'], ['a']) && sets.intersects(['a'], ['a', 'c'])",
            true,
        ),
        ("math.greatest([1, 5, 3]) == 5", true),
        ("object.spec.?paused.orValue(false) == false", true),
        (
            "object.?spec.?replicas.orValue(0) == 3 && !object.spec.?paused.hasValue()",
            true,
        ),
        (
            "type(object.spec.replicas) == int && type(object.spec.ratio) == double",
            true,
        ),
        (
            "type(object.spec.name) == string && type(object.spec.tags) == list && type(object.spec.empty) == map",
            true,
        ),
        (
            "type(object.spec.nothing) == null_type && type(1) != string && type(int) == type",
            true,
        ),
        (
            "url('https://example.com:8443/x').getPort() == '8443'",
            true,
        ),
        (
            "isCIDR('10.0.0.0/8') && cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))",
            true,
        ),
        ("'a1'.find('[0-9]') == '1'", true),
        (
            "duration('90m') > duration('1h') && timestamp('2025-01-01T00:00:00Z') > timestamp('2024-01-01T00:00:00Z')",
            true,
        ),
    ];
    for (expression, expected) in cases {
        let p = policy(json!({"validations": [{"expression": expression}]}));
        assert!(
            p.compile_errors().is_empty(),
            "{expression}: {:?}",
            p.compile_errors()
        );
        let v = p.validate(&on(&object));
        assert_eq!(v.is_empty(), expected, "{expression}: {v:?}");
    }
    // Absent fields are errors when read, in Kubernetes' words.
    let errors = [
        ("object.spec.paused == false", "no such key: paused"),
        ("object.spec.tags[2] == 'c'", "index out of range: 2"),
        ("object.spec.replicas / 0 == 1", "division by zero"),
        ("object.spec.replicas > 'a'", "no such overload"),
        (
            "9223372036854775807 + object.spec.replicas > 0",
            "integer overflow",
        ),
    ];
    for (expression, message) in errors {
        let p = policy(json!({"validations": [{"expression": expression}]}));
        assert_eq!(
            p.validate(&on(&object)),
            [errored(&format!(
                "expression '{expression}' resulted in error: {message}"
            ))],
        );
    }
}

#[test]
fn quantities_compare_by_value() {
    let p = policy(json!({"validations": [{
        "expression": "object.spec.template.spec.containers.all(c, quantity(c.resources.limits.memory).compareTo(quantity('1Gi')) <= 0)",
        "message": "memory limit above 1Gi"
    }, {
        "expression": "quantity('1Gi').isGreaterThan(quantity('1000Mi')) && quantity('500m').isLessThan(quantity('1')) && quantity('2k').asInteger() == 2000"
    }, {
        "expression": "isQuantity('1.5Gi') && !isQuantity('1.5 Gi') && quantity('1Gi').add(quantity('1Gi')) == quantity('2Gi')"
    }]}));
    assert!(p.compile_errors().is_empty(), "{:?}", p.compile_errors());
    let small = deployment(1);
    assert_eq!(p.validate(&on(&small)), []);
    let mut big = deployment(1);
    big["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] =
        json!("2Gi");
    assert_eq!(p.validate(&on(&big)), [failed("memory limit above 1Gi")]);
    big["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] =
        json!("lots");
    assert_eq!(p.validate(&on(&big))[0].kind, ViolationKind::Error);
}

#[test]
fn non_boolean_validation_results_are_errors() {
    // Known at compile time: refused with Kubernetes' message, reported at evaluation.
    let p = policy(json!({"validations": [{"expression": "object.spec.replicas"}]}));
    assert_eq!(
        p.compile_errors(),
        [(
            "spec.validations[0].expression".to_owned(),
            "must evaluate to bool but got dyn".to_owned()
        )]
    );
    assert_eq!(
        p.validate(&on(&deployment(1))),
        [errored(
            "compilation error: must evaluate to bool but got dyn"
        )]
    );
    for (expression, detail) in [
        (
            "object.spec.replicas + 1",
            "must evaluate to bool but got int",
        ),
        ("request.name", "must evaluate to bool but got string"),
        (
            "request.userInfo.groups",
            "must evaluate to bool but got list(string)",
        ),
    ] {
        let p = policy(json!({"validations": [{"expression": expression}]}));
        assert_eq!(p.compile_errors()[0].1, detail, "{expression}");
    }
    // Known only at run time.
    let p = policy(json!({"validations": [{"expression": "[object.spec.replicas, true][0]"}]}));
    assert!(p.compile_errors().is_empty());
    assert_eq!(
        p.validate(&on(&deployment(2))),
        [errored(
            "expression '[object.spec.replicas, true][0]' resulted in error: must evaluate to bool but got int"
        )]
    );
}

// --- authorizer -------------------------------------------------------------------------------

#[test]
fn authorizer_checks_reach_the_callers_authorizer() {
    let p = policy(json!({"validations": [
        {"expression": "authorizer.group('apps').resource('deployments').subresource('scale').namespace('prod').name('web').check('update').allowed()",
         "message": "no scale permission", "reason": "Forbidden"},
        {"expression": "authorizer.path('/healthz').check('get').allowed()"},
        {"expression": "authorizer.serviceAccount('ci', 'builder').group('').resource('pods').check('create').allowed()"},
        {"expression": "authorizer.requestResource.check('patch').allowed()"},
        {"expression": "authorizer.group('').resource('secrets').check('get').reason() == 'no RBAC policy matched'"},
        {"expression": "!authorizer.group('').resource('secrets').check('get').errored()"},
    ]}));
    assert!(p.compile_errors().is_empty(), "{:?}", p.compile_errors());
    let object = deployment(1);
    let req = request("UPDATE", "alice");
    let authorizer = FakeAuthorizer::allowing(&["update apps/deployments", "get /healthz"]);
    let input = Input {
        request: Some(&req),
        authorizer: Some(&authorizer),
        ..on(&object)
    };
    let v = p.validate(&input);
    let messages: Vec<&str> = v.iter().map(|v| v.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "failed expression: authorizer.serviceAccount('ci', 'builder').group('').resource('pods').check('create').allowed()",
            "failed expression: authorizer.requestResource.check('patch').allowed()",
        ]
    );
    let checks = authorizer.checks();
    assert_eq!(checks.len(), 6);
    // The resource check, exactly as built.
    assert_eq!(checks[0].service_account, None);
    assert_eq!(checks[0].verb, "update");
    let AuthzTarget::Resource(r) = &checks[0].target else {
        panic!("not a resource check")
    };
    assert_eq!(
        (
            r.group.as_str(),
            r.version.as_str(),
            r.resource.as_str(),
            r.subresource.as_str(),
            r.namespace.as_str(),
            r.name.as_str()
        ),
        ("apps", "*", "deployments", "scale", "prod", "web")
    );
    assert_eq!(
        checks[1].target,
        AuthzTarget::NonResource {
            path: "/healthz".to_owned()
        }
    );
    assert_eq!(
        checks[2].service_account,
        Some(ServiceAccount {
            namespace: "ci".to_owned(),
            name: "builder".to_owned()
        })
    );
    // requestResource: the request's own resource, namespace and name.
    let AuthzTarget::Resource(r) = &checks[3].target else {
        panic!("not a resource check")
    };
    assert_eq!(
        (
            r.group.as_str(),
            r.resource.as_str(),
            r.namespace.as_str(),
            r.name.as_str()
        ),
        ("apps", "deployments", "prod", "web")
    );
    assert_eq!(checks[3].verb, "patch");

    // Without an authorizer, expressions using it are errors (the failure policy decides).
    let v = p.validate(&on(&object));
    assert_eq!(v.len(), 6);
    assert!(v.iter().all(|v| v.kind == ViolationKind::Error), "{v:?}");
}

#[test]
fn authorizer_argument_errors() {
    let p = policy(json!({"validations": [
        {"expression": "authorizer.serviceAccount('ci', 'Not_Valid').group('').resource('pods').check('get').allowed()"},
        {"expression": "authorizer.group('').resource('').check('get').allowed()"},
    ]}));
    let authorizer = FakeAuthorizer::default();
    let object = deployment(1);
    let v = p.validate(&Input {
        authorizer: Some(&authorizer),
        ..on(&object)
    });
    assert_eq!(v.len(), 2);
    assert!(v.iter().all(|v| v.kind == ViolationKind::Error));
    assert!(
        v[0].message.ends_with("Invalid service account name"),
        "{v:?}"
    );
    assert!(authorizer.checks().is_empty());
}

// --- audit annotations and failure policy ------------------------------------------------------

#[test]
fn audit_annotations_skip_null_and_empty() {
    let p = policy(json!({
        "failurePolicy": "Ignore",
        "auditAnnotations": [
            {"key": "replicas", "valueExpression": "'replicas: ' + string(object.spec.replicas)"},
            {"key": "high", "valueExpression": "object.spec.replicas > 5 ? 'high' : null"},
            {"key": "empty", "valueExpression": "''"},
            {"key": "broken", "valueExpression": "string(object.spec.nope)"},
        ]
    }));
    assert_eq!(p.failure_policy(), FailurePolicy::Ignore);
    let a = p.audit_annotations(&on(&deployment(3)));
    assert_eq!(
        a.values,
        [("replicas".to_owned(), "replicas: 3".to_owned())]
    );
    assert_eq!(
        a.errors,
        [AuditAnnotationError {
            key: "broken".to_owned(),
            message: "expression 'string(object.spec.nope)' resulted in error: no such key: nope"
                .to_owned()
        }]
    );
    let a = p.audit_annotations(&on(&deployment(9)));
    assert_eq!(
        a.values,
        [
            ("replicas".to_owned(), "replicas: 9".to_owned()),
            ("high".to_owned(), "high".to_owned())
        ]
    );
    // A value of another type is refused at run time with Kubernetes' text.
    let p = policy(
        json!({"auditAnnotations": [{"key": "n", "valueExpression": "[object.spec.replicas][0]"}]}),
    );
    assert_eq!(
        p.audit_annotations(&on(&deployment(1))).errors[0].message,
        "valueExpression '[object.spec.replicas][0]' resulted in unsupported return type: int. Return type must be either string or null."
    );
    assert_eq!(policy(json!({})).failure_policy(), FailurePolicy::Fail);
    assert_eq!(
        policy(json!({"failurePolicy": "Fail"})).failure_policy(),
        FailurePolicy::Fail
    );
}

// --- cache --------------------------------------------------------------------------------------

#[test]
fn a_policy_compiles_once_per_cache() {
    let cache = ExpressionCache::new(16);
    let spec = json!({
        "matchConditions": [{"name": "m", "expression": "object.spec.replicas > 0"}],
        "validations": [
            {"expression": "object.spec.replicas <= 5", "messageExpression": "'too many'"},
            {"expression": "object.spec.replicas <= 5"},
        ]
    });
    let first = CompiledPolicy::new(&spec, &cache);
    let after_first = cache.stats();
    assert_eq!((after_first.misses, after_first.hits), (3, 1));
    let second = CompiledPolicy::new(&spec, &cache);
    let after_second = cache.stats();
    assert_eq!(after_second.misses, 3, "no recompilation");
    assert_eq!(after_second.hits, 5);
    assert_eq!(
        first.validate(&on(&deployment(9))),
        second.validate(&on(&deployment(9)))
    );
}

// --- hostile inputs -------------------------------------------------------------------------------

#[test]
fn deep_json_is_an_error_not_a_crash() {
    // Built by hand: `json!` would serialize the value recursively. (The API server's
    // decoder refuses documents nested deeper than 128 levels, so this cannot arrive
    // from a request; a programmatic caller could still build one.)
    let mut deep = json!("bottom");
    for _ in 0..500 {
        let mut map = serde_json::Map::new();
        map.insert("a".to_owned(), Value::Array(vec![deep]));
        deep = Value::Object(map);
    }
    let mut object = json!({"spec": {"replicas": 1}});
    object["spec"]["deep"] = deep;
    let p = policy(json!({"validations": [
        {"expression": "object.spec.replicas <= 5"},
        {"expression": "request == null"},
    ]}));
    let v = p.validate(&on(&object));
    assert_eq!(
        v,
        [errored(
            "expression 'object.spec.replicas <= 5' resulted in error: object is nested deeper than 200 levels"
        )]
    );
    // Other inputs are unaffected; a moderately deep object is fine.
    let mut nested = json!(1);
    for _ in 0..150 {
        nested = json!({"a": nested});
    }
    let object = json!({"spec": {"replicas": 1, "n": nested}});
    assert_eq!(p.validate(&on(&object)), []);
}

#[test]
fn huge_strings_and_lists_stay_bounded() {
    let big = "a".repeat(4 << 20);
    let items: Vec<Value> = (0..50_000).map(|i| json!({"n": i})).collect();
    let object = json!({"spec": {"replicas": 1, "data": big, "items": items}});
    let p = policy(json!({"validations": [
        {"expression": "object.spec.data.size() == 4194304"},
        {"expression": "object.spec.data.startsWith('aaa') && object.spec.data.matches('^a+$')"},
        {"expression": "object.spec.items.all(i, i.n >= 0)"},
        {"expression": "object.spec.items.all(i, object.spec.items.exists(j, j.n == i.n))"},
        {"expression": "lists.range(100000000).size() > 0"},
        {"expression": "lists.range(1000).map(i, object.spec.data + 'x').size() > 0"},
        {"expression": "lists.range(100000).map(i, object.spec.data).join('').size() > 0"},
        {"expression": "object.spec.data.replace('a', 'aaaaaaaa').size() > 0"},
    ]}));
    assert!(p.compile_errors().is_empty(), "{:?}", p.compile_errors());
    let started = std::time::Instant::now();
    let v = p.validate(&on(&object));
    let limited = |v: &Violation| {
        v.kind == ViolationKind::Error
            && (v.message.ends_with(crate::COST_LIMIT_EXCEEDED)
                || v.message == crate::OUT_OF_BUDGET)
    };
    // The first three pass; every other one is cancelled by the cost limit, before it
    // could allocate gigabytes or loop for minutes.
    assert_eq!(v.len(), 5, "{v:?}");
    assert!(v.iter().all(limited), "{v:?}");
    for (violation, expression) in v.iter().zip([
        "object.spec.items.all(i, object.spec.items.exists(",
        "lists.range(100000000)",
        "lists.range(1000).map(i, object.spec.data + 'x')",
        "lists.range(100000).map(i, object.spec.data).join('')",
        "object.spec.data.replace(",
    ]) {
        assert!(
            violation
                .message
                .starts_with(&format!("expression '{expression}")),
            "{violation:?}"
        );
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn the_phase_budget_stops_further_validations() {
    // Each validation costs ~200k units: under the per-expression limit, over the phase
    // budget after a dozen.
    let validations: Vec<Value> = (0..20)
        .map(|_| json!({"expression": "lists.range(100000).all(i, i >= 0)"}))
        .collect();
    let p = policy(json!({"validations": validations}));
    let v = p.validate(&on(&deployment(1)));
    assert_eq!(v, [errored(crate::OUT_OF_BUDGET)]);
}

#[test]
fn hostile_expressions_do_not_crash() {
    let object = deployment(1);
    for expression in [
        format!("{}true{}", "(".repeat(5_000), ")".repeat(5_000)),
        format!("{}1{} == 1", "[".repeat(99), "]".repeat(99)),
        vec!["object.spec.replicas"; 3_000].join(" + "),
        format!("'{}' == ''", "x".repeat(90_000)),
        "!".repeat(10_000) + "true",
        "-".repeat(10_000) + "1 == 1",
        "object".to_owned() + &".a".repeat(5_000) + " == 1",
        "\u{0}\u{ffff}".to_owned(),
        "'\\xff' == 'a' && b'\\xff' == b'a'".to_owned(),
        "lists.range(50).map(a, lists.range(50).map(b, lists.range(50).map(c, a + b + c))).size() > 0".to_owned(),
    ] {
        let p = policy(json!({"validations": [{"expression": expression}]}));
        // Either a compile error or an evaluation; never a panic or an abort.
        let v = p.validate(&on(&object));
        if p.compile_errors().is_empty() {
            assert!(v.len() <= 1, "{v:?}");
        } else {
            assert_eq!(v[0].kind, ViolationKind::Error);
        }
    }
}

#[test]
#[ignore = "timing probe: cargo test --release -p kyb-cel timing -- --ignored --nocapture"]
fn timing_probe() {
    let p = policy(json!({
        "matchConditions": [{"name": "not-system", "expression": "!request.userInfo.username.startsWith('system:')"}],
        "validations": [
            {"expression": "object.spec.replicas <= 5", "messageExpression": "'replicas: ' + string(object.spec.replicas)"},
            {"expression": "object.spec.template.spec.containers.all(c, c.image.startsWith('nginx') && quantity(c.resources.limits.memory).compareTo(quantity('1Gi')) <= 0)"},
            {"expression": "'app' in object.metadata.labels && object.metadata.labels.app == object.metadata.name"},
        ]
    }));
    let object = deployment(3);
    let req = request("CREATE", "alice");
    let input = Input {
        request: Some(&req),
        ..on(&object)
    };
    let rounds = 20_000;
    let started = std::time::Instant::now();
    for _ in 0..rounds {
        assert!(p.evaluate(&input).violations.is_empty());
    }
    println!("policy evaluation: {:?} each", started.elapsed() / rounds);
    let cache = ExpressionCache::default();
    let started = std::time::Instant::now();
    for i in 0..200 {
        cache
            .compile(&format!("object.spec.replicas <= {i}"))
            .unwrap();
    }
    println!("compile (miss): {:?} each", started.elapsed() / 200);
    let started = std::time::Instant::now();
    for _ in 0..rounds {
        cache.compile("object.spec.replicas <= 7").unwrap();
    }
    println!("compile (hit): {:?} each", started.elapsed() / rounds);
}
