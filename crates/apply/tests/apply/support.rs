//! Helpers: writers, a tiny object store that applies and updates like the API server
//! would, and accessors for managed fields entries.

use kyb_apply::{ApplyError, Writer};
use serde_json::{Value, json};

pub const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";
pub const CONFIG_MAP: &str = "io.k8s.api.core.v1.ConfigMap";

/// `2025-01-01T00:00:<n>Z`: a distinct second per step.
pub fn at(n: u32) -> String {
    format!("2025-01-01T00:{:02}:{:02}Z", n / 60, n % 60)
}

/// One object of one kind, written by successive applies and updates.
pub struct Store {
    pub definition: &'static str,
    pub api_version: &'static str,
    pub object: Option<Value>,
    clock: u32,
}

impl Store {
    pub fn new(definition: &'static str, api_version: &'static str) -> Store {
        Store {
            definition,
            api_version,
            object: None,
            clock: 0,
        }
    }

    fn tick(&mut self) -> String {
        self.clock += 1;
        at(self.clock)
    }

    /// The time of the last write.
    pub fn now(&self) -> String {
        at(self.clock)
    }

    pub fn apply(
        &mut self,
        manager: &str,
        config: Value,
        force: bool,
    ) -> Result<&Value, ApplyError> {
        self.apply_to(manager, None, config, force, &[])
    }

    pub fn apply_to(
        &mut self,
        manager: &str,
        subresource: Option<&str>,
        config: Value,
        force: bool,
        ignored: &[&str],
    ) -> Result<&Value, ApplyError> {
        let time = self.tick();
        let writer = Writer {
            manager,
            api_version: self.api_version,
            subresource,
            time: &time,
        };
        let result = kyb_apply::apply(
            self.definition,
            self.object.as_ref(),
            &config,
            &writer,
            force,
            ignored,
        )?;
        self.object = Some(result);
        Ok(self.object.as_ref().unwrap())
    }

    /// A non-apply write: `change` edits a copy of the current object (or builds the
    /// created one from `{}`).
    pub fn update(
        &mut self,
        manager: &str,
        subresource: Option<&str>,
        ignored: &[&str],
        change: impl FnOnce(&mut Value),
    ) -> &Value {
        let time = self.tick();
        let writer = Writer {
            manager,
            api_version: self.api_version,
            subresource,
            time: &time,
        };
        let old = self.object.clone();
        let mut new = old.clone().unwrap_or_else(|| json!({}));
        change(&mut new);
        kyb_apply::update(self.definition, old.as_ref(), &mut new, &writer, ignored);
        self.object = Some(new);
        self.object.as_ref().unwrap()
    }

    pub fn get(&self) -> &Value {
        self.object.as_ref().unwrap()
    }

    pub fn at(&self, pointer: &str) -> Value {
        self.get().pointer(pointer).cloned().unwrap_or(Value::Null)
    }
}

/// The managed fields entries of `obj`.
pub fn entries(obj: &Value) -> Vec<Value> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The entry of `manager` with `operation`.
pub fn entry(obj: &Value, manager: &str, operation: &str) -> Option<Value> {
    entries(obj)
        .into_iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
}

/// The `fieldsV1` of `manager`'s `operation` entry (`null` if none).
pub fn fields(obj: &Value, manager: &str, operation: &str) -> Value {
    entry(obj, manager, operation).map_or(Value::Null, |e| e["fieldsV1"].clone())
}

/// `(manager, operation)` of each entry, in order.
pub fn managers(obj: &Value) -> Vec<(String, String)> {
    entries(obj)
        .iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or("").to_owned(),
                e["operation"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// A Deployment configuration as in the documentation, with `replicas`.
pub fn nginx(replicas: Option<i64>) -> Value {
    let mut d = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx-deployment", "labels": {"app": "nginx"}},
        "spec": {
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{
                    "name": "nginx",
                    "image": "nginx:1.14.2",
                    "ports": [{"containerPort": 80}]
                }]}
            }
        }
    });
    if let Some(r) = replicas {
        d["spec"]["replicas"] = json!(r);
    }
    d
}

/// A ConfigMap configuration.
pub fn config_map(data: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "test-cm", "namespace": "default"},
        "data": data
    })
}
