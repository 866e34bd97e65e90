//! Garbage in, errors out: no input may make defaulting, preparation or validation panic,
//! and large inputs must stay fast.

use crate::fixtures::{Fixture, admit, all, rich};
use kyb_validation::{
    default_object, prepare_for_create, prepare_for_status_update, prepare_for_update,
    validate_create, validate_namespace_finalize, validate_status_update, validate_update,
};
use serde_json::{Map, Value, json};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

/// Runs every entry point on `new` (and `old` as the stored object).
fn exercise(f: &Fixture, new: &Value, old: &Value) {
    let (g, v, k) = (f.group, f.version, f.kind);
    let mut a = new.clone();
    default_object(g, v, k, &mut a);
    let mut b = new.clone();
    prepare_for_create(g, v, k, &mut b);
    let _ = validate_create(g, v, k, f.namespaced, new);
    let _ = validate_create(g, v, k, f.namespaced, &b);
    let _ = validate_update(g, v, k, f.namespaced, new, old);
    let _ = validate_update(g, v, k, f.namespaced, old, new);
    let _ = validate_status_update(g, v, k, f.namespaced, new, old);
    let _ = validate_status_update(g, v, k, f.namespaced, old, new);
    let mut c = new.clone();
    prepare_for_update(g, v, k, &mut c, old);
    let mut d = new.clone();
    prepare_for_status_update(g, v, k, &mut d, old);
    if k == "Namespace" {
        let _ = validate_namespace_finalize(new, old);
    }
}

fn exercise_or_fail(f: &Fixture, new: &Value, old: &Value, what: &str) {
    if catch_unwind(AssertUnwindSafe(|| exercise(f, new, old))).is_err() {
        panic!(
            "{} panicked on {what}: {}",
            f.kind,
            serde_json::to_string(new).unwrap_or_default()
        );
    }
}

/// Values of every JSON shape, including extremes.
fn garbage() -> Vec<Value> {
    vec![
        Value::Null,
        json!(0),
        json!(-1),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(1e300),
        json!(-0.5),
        json!(""),
        json!("x"),
        json!("-1"),
        json!("1e999999"),
        json!("💥\u{0}"),
        json!(true),
        json!([]),
        json!([null, 1, "a", {}]),
        json!({}),
        json!({"": null, "a": [1]}),
    ]
}

/// Every path (as pointer segments) to a value inside `v`.
fn paths(v: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                prefix.push(k.clone());
                out.push(prefix.clone());
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                prefix.push(i.to_string());
                out.push(prefix.clone());
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn pointer(path: &[String]) -> String {
    path.iter()
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// Replaces, one at a time, every value inside `f.object` (after defaulting) by each of
/// `values`, skipping paths for which `skip` is true, and runs every entry point.
fn replace_everywhere(f: &Fixture, values: &[Value], skip: impl Fn(&[String]) -> bool) {
    let mut old = f.object.clone();
    admit(f.group, f.version, f.kind, &mut old);
    let mut all_paths = Vec::new();
    paths(&old, &mut Vec::new(), &mut all_paths);
    for p in all_paths.iter().filter(|p| !skip(p)) {
        for g in values {
            let mut new = old.clone();
            if let Some(slot) = new.pointer_mut(&pointer(p)) {
                *slot = g.clone();
            }
            exercise_or_fail(f, &new, &old, &format!("{} = {g}", pointer(p)));
        }
    }
}

#[test]
fn every_field_of_minimal_objects_replaced_by_garbage() {
    for f in all() {
        replace_everywhere(&f, &garbage(), |_| false);
    }
}

/// A smaller set of wrong shapes, for the large objects.
fn wrong_shapes() -> Vec<Value> {
    vec![
        Value::Null,
        json!(-1),
        json!(i64::MAX),
        json!(""),
        json!("x"),
        json!(true),
        json!([null]),
        json!({}),
    ]
}

#[test]
fn every_field_of_a_rich_pod_replaced_by_garbage() {
    for f in rich().into_iter().filter(|f| f.kind == "Pod") {
        replace_everywhere(&f, &wrong_shapes(), |_| false);
    }
}

#[test]
fn every_field_of_rich_objects_replaced_by_garbage() {
    // Pod templates run the same code as Pods (covered above): only their outer layers
    // are replaced here.
    let in_pod_template = |p: &[String]| {
        let s: Vec<&str> = p.iter().map(String::as_str).collect();
        matches!(
            s.as_slice(),
            ["spec", "template", "spec", _, _, ..]
                | ["spec", "jobTemplate", "spec", "template", "spec", _, _, ..]
        )
    };
    for f in rich().into_iter().filter(|f| f.kind != "Pod") {
        replace_everywhere(&f, &wrong_shapes(), in_pod_template);
    }
}

#[test]
fn non_object_inputs() {
    for f in all() {
        let good = f.object.clone();
        for g in garbage().into_iter().filter(|g| !g.is_object()) {
            exercise_or_fail(&f, &g, &good, "top-level garbage");
            exercise_or_fail(&f, &good, &g, "garbage stored object");
            exercise_or_fail(&f, &g, &g, "garbage both");
            let errs = validate_create(f.group, f.version, f.kind, f.namespaced, &g);
            assert!(!errs.is_empty(), "{}: {g} accepted", f.kind);
        }
    }
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Keys seen in the fixtures, so random objects hit real fields.
fn vocabulary() -> Vec<String> {
    fn collect(v: &Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                for (k, c) in m {
                    out.insert(k.clone());
                    collect(c, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|c| collect(c, out)),
            _ => {}
        }
    }
    let mut set = std::collections::BTreeSet::new();
    for f in all() {
        let mut o = f.object.clone();
        admit(f.group, f.version, f.kind, &mut o);
        collect(&o, &mut set);
    }
    for extra in [
        "initContainers",
        "ephemeralContainers",
        "volumeMounts",
        "env",
        "envFrom",
        "valueFrom",
        "resourceFieldRef",
        "secretKeyRef",
        "tolerations",
        "affinity",
        "nodeAffinity",
        "podAntiAffinity",
        "topologySpreadConstraints",
        "securityContext",
        "seccompProfile",
        "capabilities",
        "hostAliases",
        "dnsConfig",
        "readinessGates",
        "resourceClaims",
        "schedulingGates",
        "os",
        "overhead",
        "sessionAffinityConfig",
        "clientIP",
        "externalIPs",
        "loadBalancerSourceRanges",
        "ipFamilies",
        "ipFamilyPolicy",
        "clusterIPs",
        "nodePort",
        "healthCheckNodePort",
        "podFailurePolicy",
        "successPolicy",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
        "completionMode",
        "matchExpressions",
        "operator",
        "values",
        "key",
        "limits",
        "requests",
        "stringData",
        "immutable",
        "ownerReferences",
        "finalizers",
        "labels",
        "annotations",
        "generateName",
        "deletionTimestamp",
        "managedFields",
        "fieldsV1",
        "dataSource",
        "dataSourceRef",
        "storageClassName",
        "claimRef",
        "nodeAffinity",
        "behavior",
        "scaleUp",
        "policies",
        "metrics",
        "egress",
        "ingress",
        "from",
        "to",
        "ipBlock",
        "except",
        "defaultBackend",
        "tls",
        "hosts",
        "aggregationRule",
        "clusterRoleSelectors",
        "matchConditions",
        "paramKind",
        "auditAnnotations",
        "variables",
        "conversion",
        "webhook",
        "caBundle",
        "timeZone",
        "startingDeadlineSeconds",
        "ordinals",
        "start",
        "minReadySeconds",
        "rollingUpdate",
        "maxSurge",
    ] {
        set.insert(extra.to_string());
    }
    set.into_iter().collect()
}

fn random_value(rng: &mut Rng, vocab: &[String], depth: usize) -> Value {
    let choice = if depth == 0 {
        rng.below(6)
    } else {
        rng.below(9)
    };
    match choice {
        0 => Value::Null,
        1 => json!(rng.next() as i64 >> rng.below(64)),
        2 => json!(rng.below(2) == 0),
        3 => {
            let samples = [
                "",
                "a",
                "A_b",
                "nginx",
                "10.0.0.1",
                "::1",
                "10.0.0.0/8",
                "1Gi",
                "500m",
                "-3",
                "25%",
                "TCP",
                "Always",
                "kube-system",
                "a/b",
                "*",
                "@hourly",
                "0 0 * * *",
                "Exists",
                "In",
                "x.io/y",
                "\u{0}",
            ];
            json!(samples[rng.below(samples.len())])
        }
        4 => json!((rng.next() % 100_000) as f64 / 7.0),
        5 => json!(vocab[rng.below(vocab.len())]),
        6 | 7 => {
            let mut m = Map::new();
            for _ in 0..rng.below(6) {
                let key = vocab[rng.below(vocab.len())].clone();
                m.insert(key, random_value(rng, vocab, depth - 1));
            }
            Value::Object(m)
        }
        _ => Value::Array(
            (0..rng.below(5))
                .map(|_| random_value(rng, vocab, depth - 1))
                .collect(),
        ),
    }
}

/// Replaces a random subtree of `v` with a random value.
fn mutate(rng: &mut Rng, vocab: &[String], v: &mut Value) {
    let mut all_paths = Vec::new();
    paths(v, &mut Vec::new(), &mut all_paths);
    if all_paths.is_empty() {
        return;
    }
    let p = &all_paths[rng.below(all_paths.len())];
    let replacement = random_value(rng, vocab, 4);
    if let Some(slot) = v.pointer_mut(&pointer(p)) {
        *slot = replacement;
    }
}

#[test]
fn random_objects_and_mutations() {
    let vocab = vocabulary();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for f in all().into_iter().chain(rich()) {
        let mut base = f.object.clone();
        admit(f.group, f.version, f.kind, &mut base);
        for _ in 0..60 {
            let random = random_value(&mut rng, &vocab, 6);
            exercise_or_fail(&f, &random, &base, "random object");
            let mut mutated = base.clone();
            for _ in 0..1 + rng.below(4) {
                mutate(&mut rng, &vocab, &mut mutated);
            }
            exercise_or_fail(&f, &mutated, &base, "mutated object");
            let mut idempotent = mutated.clone();
            default_object(f.group, f.version, f.kind, &mut idempotent);
            let mut twice = idempotent.clone();
            default_object(f.group, f.version, f.kind, &mut twice);
            assert_eq!(
                idempotent, twice,
                "{}: defaults not idempotent on {mutated}",
                f.kind
            );
        }
    }
}

fn fixture(kind: &str) -> Fixture {
    all()
        .into_iter()
        .find(|f| f.kind == kind && f.group.is_empty())
        .unwrap()
}

/// Runs the create path on `object` and returns the elapsed time.
fn timed(kind: &str, object: Value) -> (Duration, usize) {
    let f = fixture(kind);
    let start = Instant::now();
    let mut o = object;
    admit(f.group, f.version, f.kind, &mut o);
    let errs = validate_create(f.group, f.version, f.kind, f.namespaced, &o);
    let _ = validate_update(f.group, f.version, f.kind, f.namespaced, &o, &o);
    (start.elapsed(), errs.len())
}

#[test]
fn huge_arrays_stay_fast() {
    let limit = Duration::from_secs(20);
    let n = 20_000;
    let containers: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("c{}", i % 100), "image": "nginx", "ports": [{"name": "http", "containerPort": 80}], "volumeMounts": [{"name": "v", "mountPath": "/v"}]}))
        .collect();
    let (t, errs) = timed(
        "Pod",
        json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": containers}}),
    );
    assert!(t < limit, "pod with {n} containers took {t:?}");
    assert!(
        errs > 0,
        "duplicate names and missing volumes must be reported"
    );

    let ports: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("p{i}"), "port": 1 + (i % 65535)}))
        .collect();
    let (t, _) = timed(
        "Service",
        json!({"metadata": {"name": "s", "namespace": "default"}, "spec": {"ports": ports}}),
    );
    assert!(t < limit, "service with {n} ports took {t:?}");

    let data: Map<String, Value> = (0..100_000)
        .map(|i| (format!("key-{i}"), json!("v")))
        .collect();
    let (t, errs) = timed(
        "ConfigMap",
        json!({"metadata": {"name": "cm", "namespace": "default"}, "data": data}),
    );
    assert!(t < limit, "config map with 100000 keys took {t:?}");
    assert_eq!(errs, 0);

    let labels: Map<String, Value> = (0..50_000).map(|i| (format!("l{i}"), json!("v"))).collect();
    let finalizers: Vec<Value> = (0..n).map(|i| json!(format!("example.com/f{i}"))).collect();
    let (t, _) = timed(
        "Secret",
        json!({"metadata": {"name": "s", "namespace": "default", "labels": labels, "finalizers": finalizers}}),
    );
    assert!(t < limit, "secret with huge metadata took {t:?}");

    let huge_name = "a".repeat(1_000_000);
    let (t, errs) = timed(
        "Secret",
        json!({"metadata": {"name": huge_name, "namespace": "default"}}),
    );
    assert!(t < limit, "huge name took {t:?}");
    assert!(errs > 0);
}

#[test]
fn deeply_nested_free_form_data() {
    let mut deep = json!("leaf");
    for _ in 0..120 {
        deep = json!({"x": [deep]});
    }
    for f in all() {
        let mut o = f.object.clone();
        if let Some(m) = o.as_object_mut() {
            m.insert("data".into(), deep.clone());
            m.insert(
                "spec".into(),
                json!({"template": deep.clone(), "schema": deep.clone()}),
            );
        }
        let old = o.clone();
        exercise_or_fail(&f, &o, &old, "deep nesting");
    }
}
