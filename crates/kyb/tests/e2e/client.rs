//! kube-rs against `kyb server`: typed CRUD, lists with pagination, and watches (list+watch,
//! streaming lists with bookmarks, resuming, and 410 after a restart).

use crate::cluster::Cluster;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::watcher;
use kube::{Client, Config};
use std::collections::BTreeMap;
use std::time::Duration;

/// A kube-rs client of the cluster, as its admin.
pub(crate) async fn client(cluster: &Cluster) -> Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(cluster.kubeconfig()).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

fn config_map(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut map = ConfigMap::default();
    map.metadata.name = Some(name.into());
    map.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    map.data = Some(BTreeMap::from([("key".to_string(), name.to_string())]));
    map
}

async fn with_deadline<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("timed out")
}

/// Every namespace holds the cluster CA's ConfigMap; lists here leave it out.
const NOT_ROOT_CA: &str = "metadata.name!=kube-root-ca.crt";

#[tokio::test]
async fn typed_crud_and_optimistic_concurrency() {
    let cluster = Cluster::start();
    let api: Api<ConfigMap> = Api::namespaced(client(&cluster).await, "default");
    let created = api
        .create(&PostParams::default(), &config_map("one", &[("app", "a")]))
        .await
        .unwrap();
    let rv = created.metadata.resource_version.clone().unwrap();
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());

    let fetched = api.get("one").await.unwrap();
    assert_eq!(
        fetched
            .data
            .as_ref()
            .and_then(|d| d.get("key"))
            .map(String::as_str),
        Some("one")
    );

    // Replace with the current resourceVersion works, with a stale one conflicts.
    let mut changed = fetched.clone();
    changed.data = Some(BTreeMap::from([("key".to_string(), "two".to_string())]));
    let replaced = api
        .replace("one", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_ne!(
        replaced.metadata.resource_version.as_deref(),
        Some(rv.as_str())
    );
    match api.replace("one", &PostParams::default(), &changed).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"))
        }
        other => panic!("a stale replace must conflict: {other:?}"),
    }

    let patched = api
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"labels": {"patched": "yes"}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("patched"))
            .map(String::as_str),
        Some("yes")
    );

    let selected = api
        .list(&ListParams::default().labels("patched=yes"))
        .await
        .unwrap();
    assert_eq!(selected.items.len(), 1);
    api.delete("one", &DeleteParams::default()).await.unwrap();
    match api.get("one").await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 404),
        other => panic!("deleted: {other:?}"),
    }
}

#[tokio::test]
async fn pagination_returns_every_object_once() {
    let cluster = Cluster::start();
    let api: Api<ConfigMap> = Api::namespaced(client(&cluster).await, "default");
    for i in 0..23 {
        api.create(
            &PostParams::default(),
            &config_map(&format!("cm-{i:02}"), &[]),
        )
        .await
        .unwrap();
    }
    let mut names = Vec::new();
    let mut params = ListParams::default().limit(5).fields(NOT_ROOT_CA);
    let mut revision = None;
    loop {
        let page = api.list(&params).await.unwrap();
        // Every page is read at the first page's revision.
        assert_eq!(
            *revision.get_or_insert(page.metadata.resource_version.clone()),
            page.metadata.resource_version
        );
        names.extend(page.items.iter().filter_map(|c| c.metadata.name.clone()));
        // A write between pages does not show up in the later pages.
        api.create(
            &PostParams::default(),
            &config_map(&format!("late-{}", names.len()), &[]),
        )
        .await
        .unwrap();
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    assert_eq!(
        names,
        (0..23).map(|i| format!("cm-{i:02}")).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn watcher_sees_every_change() {
    let cluster = Cluster::start();
    let api: Api<ConfigMap> = Api::namespaced(client(&cluster).await, "default");
    api.create(&PostParams::default(), &config_map("before", &[("w", "1")]))
        .await
        .unwrap();
    for config in [
        watcher::Config::default().labels("w=1"),
        watcher::Config::default().labels("w=1").streaming_lists(),
    ] {
        let mut events = watcher(api.clone(), config).boxed();
        // The initial state arrives as a complete set.
        let mut initial = Vec::new();
        loop {
            match with_deadline(events.next()).await.unwrap().unwrap() {
                watcher::Event::Init => {}
                watcher::Event::InitApply(cm) => initial.push(cm.metadata.name.unwrap()),
                watcher::Event::InitDone => break,
                other => panic!("unexpected before InitDone: {other:?}"),
            }
        }
        assert!(initial.contains(&"before".to_string()), "{initial:?}");
        let name = format!("during-{}", initial.len());
        api.create(&PostParams::default(), &config_map(&name, &[("w", "1")]))
            .await
            .unwrap();
        api.create(&PostParams::default(), &config_map("unlabelled", &[]))
            .await
            .ok();
        match with_deadline(events.next()).await.unwrap().unwrap() {
            watcher::Event::Apply(cm) => {
                assert_eq!(cm.metadata.name.as_deref(), Some(name.as_str()))
            }
            other => panic!("expected the new object: {other:?}"),
        }
        api.delete(&name, &DeleteParams::default()).await.unwrap();
        match with_deadline(events.next()).await.unwrap().unwrap() {
            watcher::Event::Delete(cm) => {
                assert_eq!(cm.metadata.name.as_deref(), Some(name.as_str()))
            }
            other => panic!("expected the deletion: {other:?}"),
        }
    }
}

#[tokio::test]
async fn watches_resume_from_a_resource_version_and_get_410_when_too_old() {
    let cluster = Cluster::start();
    let api: Api<ConfigMap> = Api::namespaced(client(&cluster).await, "default");
    let first = api
        .create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
    let rv = first.metadata.resource_version.unwrap();
    api.create(&PostParams::default(), &config_map("b", &[]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &config_map("c", &[]))
        .await
        .unwrap();
    // Resuming after `a` replays exactly what came after it.
    let mut stream = api
        .watch(&WatchParams::default().timeout(5), &rv)
        .await
        .unwrap()
        .boxed();
    let mut names = Vec::new();
    while names.len() < 2 {
        match with_deadline(stream.next()).await.unwrap().unwrap() {
            WatchEvent::Added(cm) => names.push(cm.metadata.name.unwrap()),
            other => panic!("unexpected: {other:?}"),
        }
    }
    assert_eq!(names, vec!["b", "c"]);

    // The initial-events-end bookmark of a streaming list.
    let params = WatchParams::streaming_lists()
        .fields(NOT_ROOT_CA)
        .timeout(5);
    let mut stream = api.watch(&params, "").await.unwrap().boxed();
    let mut added = 0;
    loop {
        match with_deadline(stream.next()).await.unwrap().unwrap() {
            WatchEvent::Added(_) => added += 1,
            WatchEvent::Bookmark(bookmark) => {
                assert_eq!(
                    bookmark
                        .metadata
                        .annotations
                        .get("k8s.io/initial-events-end")
                        .map(String::as_str),
                    Some("true")
                );
                break;
            }
            other => panic!("unexpected: {other:?}"),
        }
    }
    assert_eq!(added, 3);

    // After a restart the window is gone: resuming from before it is 410 Gone, and the
    // objects are all still there.
    let dir = cluster.stop();
    let cluster = Cluster::start_in(dir);
    let api: Api<ConfigMap> = Api::namespaced(client(&cluster).await, "default");
    assert_eq!(
        api.list(&ListParams::default().fields(NOT_ROOT_CA))
            .await
            .unwrap()
            .items
            .len(),
        3
    );
    let mut stream = api
        .watch(&WatchParams::default().timeout(5), &rv)
        .await
        .unwrap()
        .boxed();
    match with_deadline(stream.next()).await.unwrap().unwrap() {
        WatchEvent::Error(status) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"))
        }
        other => panic!("expected 410: {other:?}"),
    }
}

#[tokio::test]
async fn metadata_only_clients_get_partial_objects() {
    let cluster = Cluster::start();
    let api: Api<ConfigMap> = Api::namespaced(client(&cluster).await, "default");
    api.create(&PostParams::default(), &config_map("meta", &[("m", "1")]))
        .await
        .unwrap();
    // kube-rs asks for `as=PartialObjectMetadataList` / `as=PartialObjectMetadata`.
    let list = api
        .list_metadata(&ListParams::default().labels("m=1"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("meta"));
    assert_eq!(
        list.items[0].types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata")
    );
    let one = api.get_metadata("meta").await.unwrap();
    assert_eq!(
        one.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("m"))
            .map(String::as_str),
        Some("1")
    );
}

#[tokio::test]
async fn lists_at_an_exact_past_resource_version() {
    use kube::api::VersionMatch;
    let cluster = Cluster::start();
    let api: Api<ConfigMap> = Api::namespaced(client(&cluster).await, "default");
    api.create(&PostParams::default(), &config_map("kept", &[]))
        .await
        .unwrap();
    let then = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    api.create(&PostParams::default(), &config_map("later", &[]))
        .await
        .unwrap();
    api.delete("kept", &DeleteParams::default()).await.unwrap();
    let names = |list: kube::api::ObjectList<ConfigMap>| {
        list.items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect::<Vec<_>>()
    };
    let past = api
        .list(
            &ListParams::default()
                .fields(NOT_ROOT_CA)
                .at(&then)
                .matching(VersionMatch::Exact),
        )
        .await
        .unwrap();
    assert_eq!(
        past.metadata.resource_version.as_deref(),
        Some(then.as_str())
    );
    assert_eq!(names(past), vec!["kept"]);
    assert_eq!(
        names(
            api.list(&ListParams::default().fields(NOT_ROOT_CA))
                .await
                .unwrap()
        ),
        vec!["later"]
    );
    // "Not older than" a revision serves the latest state.
    let recent = api
        .list(
            &ListParams::default()
                .fields(NOT_ROOT_CA)
                .at(&then)
                .matching(VersionMatch::NotOlderThan),
        )
        .await
        .unwrap();
    assert_eq!(names(recent), vec!["later"]);
}

#[tokio::test]
async fn every_patch_type_through_kube_rs() {
    use k8s_openapi::api::apps::v1::Deployment;
    let cluster = Cluster::start();
    let api: Api<Deployment> = Api::namespaced(client(&cluster).await, "default");
    let applied = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx:1.26"}]}}
        }
    });
    let apply = PatchParams::apply("kube-rs-test");
    // Apply creates...
    let created = api
        .patch("web", &apply, &Patch::Apply(&applied))
        .await
        .unwrap();
    assert_eq!(created.spec.as_ref().and_then(|s| s.replicas), Some(2));
    let managers: Vec<_> = created
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| (m.manager.clone(), m.operation.clone()))
        .collect();
    assert_eq!(
        managers,
        vec![(Some("kube-rs-test".to_string()), Some("Apply".to_string()))]
    );

    // ...strategic merge adds a container by name...
    let strategic = serde_json::json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox"}]}}}});
    let patched = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(&strategic),
        )
        .await
        .unwrap();
    let names: Vec<_> = patched
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers
        .into_iter()
        .map(|c| c.name)
        .collect();
    // (new items go before the live ones, as Kubernetes orders them)
    assert_eq!(names, vec!["sidecar", "nginx"]);

    // ...a merge patch replaces the list...
    let merge = serde_json::json!({"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "busybox"}]}}}});
    let patched = api
        .patch("web", &PatchParams::default(), &Patch::Merge(&merge))
        .await
        .unwrap();
    assert_eq!(
        patched
            .spec
            .unwrap()
            .template
            .spec
            .unwrap()
            .containers
            .len(),
        1
    );

    // ...a JSON patch edits by path, and a failing test changes nothing.
    let json: json_patch::Patch = serde_json::from_value(serde_json::json!([
        {"op": "replace", "path": "/spec/replicas", "value": 4}
    ]))
    .unwrap();
    let patched = api
        .patch("web", &PatchParams::default(), &Patch::Json::<()>(json))
        .await
        .unwrap();
    assert_eq!(patched.spec.as_ref().and_then(|s| s.replicas), Some(4));
    let failing: json_patch::Patch = serde_json::from_value(serde_json::json!([
        {"op": "test", "path": "/spec/replicas", "value": 9},
        {"op": "replace", "path": "/spec/replicas", "value": 1}
    ]))
    .unwrap();
    assert!(
        api.patch("web", &PatchParams::default(), &Patch::Json::<()>(failing))
            .await
            .is_err()
    );
    assert_eq!(
        api.get("web").await.unwrap().spec.and_then(|s| s.replicas),
        Some(4)
    );

    // The applier's replicas were taken over by the JSON patch: applying them again conflicts,
    // forcing takes them back.
    match api.patch("web", &apply, &Patch::Apply(&applied)).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"))
        }
        other => panic!("expected a conflict: {other:?}"),
    }
    let forced = api
        .patch("web", &apply.clone().force(), &Patch::Apply(&applied))
        .await
        .unwrap();
    assert_eq!(forced.spec.and_then(|s| s.replicas), Some(2));
}
