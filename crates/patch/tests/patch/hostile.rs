//! Malformed and hostile input: every one gives an error with Kubernetes' status code
//! (and text, where Kubernetes' is known), never a panic; and random patches thrown at
//! realistic objects never panic.

use crate::{DEPLOYMENT, POD, smp};
use kyb_patch::{json_patch, merge_patch, strategic};
use serde_json::{Map, Value, json};

fn pod() -> Value {
    json!({
        "metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["f"]},
        "spec": {
            "containers": [{"name": "web", "image": "nginx", "env": [{"name": "A", "value": "1"}],
                            "ports": [{"containerPort": 80}]}],
            "volumes": [{"name": "v", "emptyDir": {}}],
            "tolerations": [{"key": "k"}]
        }
    })
}

#[test]
fn malformed_strategic_patches() {
    let cases: Vec<(Value, u16, &str)> = vec![
        (
            json!([]),
            400,
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            json!("x"),
            400,
            "json: cannot unmarshal string into Go value of type map[string]interface {}",
        ),
        (
            json!(3),
            400,
            "json: cannot unmarshal number into Go value of type map[string]interface {}",
        ),
        (
            json!({"spec": {"$patch": "foo"}}),
            500,
            "unknown patch type: foo in map: map[$patch:foo]",
        ),
        (
            json!({"spec": {"$patch": 1}}),
            500,
            "unknown patch type: %!s(int64=1) in map: map[$patch:1]",
        ),
        (
            json!({"spec": {"$patch": "merge"}}),
            500,
            "unknown patch type: merge in map: map[$patch:merge]",
        ),
        (
            json!({"spec": {"containers": [{"image": "nginx"}]}}),
            500,
            "map: map[image:nginx] does not contain declared merge key: name",
        ),
        (
            json!({"spec": {"containers": [{"$patch": "delete"}]}}),
            500,
            "map: map[$patch:delete] does not contain declared merge key: name",
        ),
        (
            json!({"spec": {"containers": [{"$patch": "merge"}]}}),
            500,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            json!({"spec": {"containers": [{"name": "web", "$patch": "frob"}]}}),
            500,
            "unknown patch type: frob in map: map[$patch:frob name:web]",
        ),
        (
            json!({"spec": {"containers": ["web"]}}),
            500,
            "list element types are not identical: [[map[env:[map[name:A value:1]] image:nginx name:web ports:[map[containerPort:80]]]] [web]]",
        ),
        (
            json!({"spec": {"$retainKeys": "x"}}),
            400,
            "invalid patch format of retainKeys",
        ),
        (
            json!({"spec": {"$retainKeys": ["hostname"], "nodeName": "n"}}),
            400,
            "invalid patch format of retainKeys",
        ),
        (
            json!({"spec": {"$setElementOrder/containers": "x"}}),
            500,
            "expected a []interface {}, but received a string",
        ),
        (
            json!({"spec": {"$setElementOrder/containers": [{"name": "web"}], "containers": {"name": "web"}}}),
            500,
            "expected a []interface {}, but received a map[string]interface {}",
        ),
        (
            json!({"spec": {"$setElementOrderContainers": []}}),
            400,
            "invalid patch format of setElementOrder list",
        ),
        (
            json!({"metadata": {"$deleteFromPrimitiveListFinalizers": ["f"]}}),
            400,
            "invalid patch format of primitive list",
        ),
        (
            json!({"spec": {"$setElementOrder/containers": [{"name": "x"}], "containers": [{"name": "web"}]}}),
            500,
            "the order in patch list:\n[map[name:web]]\n doesn't match $setElementOrder list:\n[map[name:x]]",
        ),
        (
            json!({"spec": {"$setElementOrder/containers": ["web"], "containers": [{"name": "web"}]}}),
            500,
            "expected a map[string]interface {}, but received a string",
        ),
    ];
    let mut failures = Vec::new();
    for (patch, code, message) in cases {
        match smp(POD, &pod(), &patch) {
            Err(error) if error.code() == code && error.message() == message => {}
            other => failures.push(format!(
                "{patch}: expected {code} {message:?}, got {other:?}"
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_list_of_lists_is_invalid() {
    let live = json!({"spec": {"containers": []}});
    let error = smp(POD, &live, &json!({"spec": {"containers": [["x"]]}})).unwrap_err();
    assert_eq!(
        error,
        kyb_patch::PatchError::Invalid("lists of lists are not supported".into())
    );
    assert_eq!(error.status_message(), kyb_patch::INVALID_MESSAGE);
}

#[test]
fn an_order_without_any_list_items_is_an_error() {
    let live = json!({"spec": {"containers": []}});
    let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "web"}]}});
    let error = smp(POD, &live, &patch).unwrap_err();
    assert_eq!(
        (error.code(), error.message()),
        (500, "no elements in any of the given slices")
    );
}

#[test]
fn custom_resources_have_no_strategic_merge_patch() {
    assert!(strategic::supported(POD));
    assert!(strategic::supported("io.k8s.api.apps.v1.Deployment"));
    assert!(!strategic::supported("com.example.v1.Widget"));
    let error = strategic::apply(&json!({}), &json!({}), "com.example.v1.Widget").unwrap_err();
    assert_eq!(
        (error.code(), error.reason()),
        (415, "UnsupportedMediaType")
    );
    assert_eq!(error.message(), strategic::UNSUPPORTED_MESSAGE);
}

#[test]
fn status_of_an_unclassified_error() {
    let error = smp(
        POD,
        &pod(),
        &json!({"spec": {"containers": [{"image": "x"}]}}),
    )
    .unwrap_err();
    assert_eq!((error.code(), error.reason()), (500, ""));
    assert_eq!(error.status_message(), error.message());
}

/// A small deterministic generator, so failures reproduce.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        let index = self.below(items.len() as u64) as usize;
        items.get(index).copied().unwrap_or("")
    }

    fn value(&mut self, depth: u32) -> Value {
        const KEYS: &[&str] = &[
            "spec",
            "metadata",
            "template",
            "containers",
            "initContainers",
            "name",
            "image",
            "env",
            "ports",
            "containerPort",
            "protocol",
            "volumes",
            "emptyDir",
            "configMap",
            "labels",
            "finalizers",
            "tolerations",
            "strategy",
            "type",
            "rollingUpdate",
            "$patch",
            "$retainKeys",
            "$setElementOrder/containers",
            "$setElementOrder/env",
            "$setElementOrder/finalizers",
            "$deleteFromPrimitiveList/finalizers",
            "$deleteFromPrimitiveList/args",
            "$setElementOrder",
            "args",
            "value",
            "x",
        ];
        const WORDS: &[&str] = &["delete", "replace", "merge", "web", "A", "f", "v", "x", ""];
        let choice = if depth == 0 {
            self.below(5)
        } else {
            self.below(8)
        };
        match choice {
            0 => Value::Null,
            1 => json!(self.below(3) == 0),
            2 => json!(self.below(100)),
            3 | 4 => json!(self.pick(WORDS)),
            5 => {
                let len = self.below(4);
                Value::Array((0..len).map(|_| self.value(depth - 1)).collect())
            }
            _ => {
                let len = self.below(5);
                let mut map = Map::new();
                for _ in 0..len {
                    let key = self.pick(KEYS).to_string();
                    map.insert(key, self.value(depth - 1));
                }
                Value::Object(map)
            }
        }
    }
}

#[test]
fn random_strategic_patches_never_panic() {
    let mut random = Random(0x9e37_79b9_7f4a_7c15);
    let deployment = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                                     "template": pod()}});
    let codes = [400, 415, 422, 500];
    for _ in 0..20_000 {
        let patch = random.value(5);
        for (definition, live) in [(POD, pod()), (DEPLOYMENT, deployment.clone())] {
            if let Err(error) = smp(definition, &live, &patch) {
                assert!(codes.contains(&error.code()), "{patch}: {error:?}");
            }
        }
    }
}

#[test]
fn random_json_and_merge_patches_never_panic() {
    let mut random = Random(0x2545_f491_4f6c_dd1d);
    const OPS: &[&str] = &["add", "remove", "replace", "move", "copy", "test", "nope"];
    const PATHS: &[&str] = &[
        "",
        "/",
        "/spec",
        "/spec/containers",
        "/spec/containers/0",
        "/spec/containers/-",
        "/spec/containers/-1",
        "/spec/containers/9",
        "/spec/containers/0/env/0/name",
        "/metadata/labels/a",
        "/metadata/labels/~1x",
        "/x/y",
        "spec",
        "/spec/containers/01",
    ];
    for _ in 0..20_000 {
        let len = random.below(4);
        let ops: Vec<Value> = (0..len)
            .map(|_| {
                let mut op = Map::new();
                op.insert("op".into(), json!(random.pick(OPS)));
                op.insert("path".into(), json!(random.pick(PATHS)));
                if random.below(2) == 0 {
                    op.insert("from".into(), json!(random.pick(PATHS)));
                }
                if random.below(3) != 0 {
                    op.insert("value".into(), random.value(3));
                }
                Value::Object(op)
            })
            .collect();
        let _ = json_patch::apply(pod(), &Value::Array(ops));
        let patch = random.value(4);
        let _ = json_patch::apply(pod(), &patch);
        let _ = merge_patch::apply(&pod(), &patch);
    }
}

#[test]
fn large_lists_merge_without_quadratic_work() {
    // Tens of thousands of items (a few MB of JSON, the most a request may carry): any
    // quadratic step would take minutes here.
    const N: usize = 40_000;
    let env: Vec<Value> = (0..N)
        .map(|i| json!({"name": format!("V{i}"), "value": "x"}))
        .collect();
    let live = json!({"spec": {"containers": [{"name": "web", "env": env}]},
                      "metadata": {"finalizers": (0..N).map(|i| format!("f{i}")).collect::<Vec<_>>()}});
    let mut patch_env: Vec<Value> = (0..N / 2)
        .map(|i| json!({"name": format!("V{}", i * 2), "$patch": "delete"}))
        .collect();
    patch_env.extend(
        (0..N)
            .rev()
            .map(|i| json!({"name": format!("W{i}"), "value": "y"})),
    );
    let order: Vec<Value> = (0..N)
        .rev()
        .map(|i| json!({"name": format!("W{i}")}))
        .collect();
    let patch = json!({
        "metadata": {
            "finalizers": (0..N).map(|i| format!("g{i}")).collect::<Vec<_>>(),
            "$deleteFromPrimitiveList/finalizers": (0..N / 2).map(|i| format!("f{i}")).collect::<Vec<_>>()
        },
        "spec": {"containers": [{"name": "web", "env": patch_env, "$setElementOrder/env": order}]}
    });
    let started = std::time::Instant::now();
    let result = match smp(POD, &live, &patch) {
        Ok(result) => result,
        Err(error) => panic!(
            "{} {}",
            error.code(),
            error.message().chars().take(200).collect::<String>()
        ),
    };
    let env = result["spec"]["containers"][0]["env"].as_array().unwrap();
    assert_eq!(env.len(), N + N / 2);
    // The live items left keep their place before the added ones, which follow the order.
    assert_eq!(env[0]["name"], json!("V1"));
    assert_eq!(env[N / 2]["name"], json!(format!("W{}", N - 1)));
    assert_eq!(env[N + N / 2 - 1]["name"], json!("W0"));
    let finalizers = result["metadata"]["finalizers"].as_array().unwrap();
    assert_eq!(finalizers.len(), N + N / 2);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}
