//! API discovery: `/api`, `/apis`, `/apis/<group>`, the resource lists of each
//! group-version, and the aggregated form (`apidiscovery.k8s.io`) kubectl asks for first —
//! each answered from the registry snapshot the request sees, so discovery lists a
//! resource from the moment it is added until it is removed.

use kyb_api::registry::Snapshot;
use kyb_api::{ResourceDef, Subresource};
use serde_json::{Value, json};

/// `/api`: the core group's versions.
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_versions(group: &str, versions: &[&str]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({
        "name": group,
        "versions": versions.clone(),
        "preferredVersion": versions.first().cloned().unwrap_or(Value::Null),
    })
}

/// `/apis`: every named group.
pub fn api_group_list(snapshot: &Snapshot) -> Value {
    let groups: Vec<Value> = snapshot
        .groups()
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, versions)| group_versions(g, &versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`.
pub fn api_group(snapshot: &Snapshot, group: &str) -> Option<Value> {
    let (name, versions) = snapshot
        .groups()
        .into_iter()
        .find(|(g, _)| *g == group && !g.is_empty())?;
    let mut value = group_versions(name, &versions);
    value["kind"] = "APIGroup".into();
    value["apiVersion"] = "v1".into();
    Some(value)
}

/// `/api/v1`, `/apis/<group>/<version>`.
pub fn resource_list(snapshot: &Snapshot, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for def in snapshot.resources_of(group, version) {
        let mut entry = json!({
            "name": def.plural,
            "singularName": def.singular,
            "namespaced": def.namespaced,
            "kind": def.kind,
            "verbs": def.verbs,
        });
        if !def.short_names.is_empty() {
            entry["shortNames"] = json!(def.short_names);
        }
        if !def.categories.is_empty() {
            entry["categories"] = json!(def.categories);
        }
        resources.push(entry);
        for sub in def.subresources.iter() {
            let (g, v, kind) = sub.gvk(def);
            let mut entry = json!({
                "name": format!("{}/{}", def.plural, sub.name()),
                "singularName": "",
                "namespaced": def.namespaced,
                "kind": kind,
                "verbs": sub.verbs(),
            });
            if g != def.group || v != def.version {
                entry["group"] = g.into();
                entry["version"] = v.into();
            }
            resources.push(entry);
        }
    }
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

fn discovery_resource(def: &ResourceDef) -> Value {
    let subresources: Vec<Value> = def
        .subresources
        .iter()
        .map(|sub: &Subresource| {
            let (g, v, kind) = sub.gvk(def);
            json!({
                "subresource": sub.name(),
                "responseKind": {"group": g, "version": v, "kind": kind},
                "verbs": sub.verbs(),
            })
        })
        .collect();
    let mut entry = json!({
        "resource": def.plural,
        "responseKind": {"group": def.group, "version": def.version, "kind": def.kind},
        "scope": if def.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": def.singular,
        "verbs": def.verbs,
    });
    if !def.short_names.is_empty() {
        entry["shortNames"] = json!(def.short_names);
    }
    if !def.categories.is_empty() {
        entry["categories"] = json!(def.categories);
    }
    if !subresources.is_empty() {
        entry["subresources"] = json!(subresources);
    }
    entry
}

/// The aggregated discovery document: the core group for `/api`, the named groups for
/// `/apis`, in apidiscovery.k8s.io `version` (`v2` or `v2beta1`).
pub fn aggregated(snapshot: &Snapshot, core: bool, version: &str) -> Value {
    let items: Vec<Value> = snapshot
        .groups()
        .into_iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = snapshot
                        .resources_of(group, v)
                        .map(|r| discovery_resource(r))
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": group, "creationTimestamp": null}, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> std::sync::Arc<Snapshot> {
        match crate::strategies::registry() {
            Ok(registry) => registry.snapshot(),
            Err(error) => panic!("the built-in registry: {error}"),
        }
    }

    #[test]
    fn core_resources_with_subresources() {
        let snapshot = snapshot();
        let Some(list) = resource_list(&snapshot, "", "v1") else {
            panic!("core v1 exists")
        };
        let resources = list["resources"].as_array().cloned().unwrap_or_default();
        let pods = resources.iter().find(|r| r["name"] == "pods");
        assert_eq!(pods.map(|p| p["shortNames"].clone()), Some(json!(["po"])));
        let scale = resource_list(&snapshot, "apps", "v1")
            .map(|l| l["resources"].clone())
            .unwrap_or_default();
        let scale = scale
            .as_array()
            .and_then(|r| r.iter().find(|r| r["name"] == "deployments/scale").cloned());
        assert_eq!(
            scale.map(|s| (s["group"].clone(), s["kind"].clone())),
            Some((json!("autoscaling"), json!("Scale")))
        );
        assert!(resource_list(&snapshot, "apps", "v9").is_none());
    }

    #[test]
    fn groups_and_aggregated() {
        let snapshot = snapshot();
        let groups = api_group_list(&snapshot);
        let names: Vec<&str> = groups["groups"]
            .as_array()
            .map(|g| g.iter().filter_map(|g| g["name"].as_str()).collect())
            .unwrap_or_default();
        assert!(names.contains(&"apps") && !names.contains(&""));
        assert_eq!(
            api_group(&snapshot, "autoscaling").map(|g| g["preferredVersion"]["version"].clone()),
            Some(json!("v2"))
        );
        let core = aggregated(&snapshot, true, "v2");
        assert_eq!(core["items"].as_array().map(Vec::len), Some(1));
        assert_eq!(
            core["items"][0]["versions"][0]["resources"][0]["scope"],
            "Cluster"
        );
    }
}
