//! The controller manager's networking and namespace-defaults controllers inside
//! `kyb server`, over pods the fake kubelet runs: EndpointSlices and Endpoints following
//! pods' readiness, `publishNotReadyAddresses`, named target ports and the 100-endpoint
//! slice limit, as kubectl shows them; and the `default` ServiceAccount and
//! `kube-root-ca.crt` ConfigMap every namespace gets and keeps.

use crate::cluster::Cluster;
use crate::kubelet::{FakeKubelet, admin_client};
use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Namespace, Pod, Service, ServiceAccount};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::future::Future;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// Polls `check` until it gives a value, failing after `WAIT` with `what`.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits for the namespace's `default` ServiceAccount (the controller manager creates it
/// just after the namespace; pods are refused without it).
pub async fn wait_for_default_account(client: &kube::Client, namespace: &str) {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    eventually("the default service account", || {
        let accounts = accounts.clone();
        async move { accounts.get_opt("default").await.ok().flatten() }
    })
    .await;
}

async fn create_pod(pods: &Api<Pod>, name: &str, node: &str) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "web", "image": "nginx",
                            "ports": [{"name": "http", "containerPort": 8080}]}],
        },
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
}

async fn create_service(services: &Api<Service>) {
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "web", "labels": {"team": "blue"}},
        "spec": {"selector": {"app": "web"}, "ports": [
            {"name": "http", "port": 80, "targetPort": "http"},
            {"name": "admin", "port": 9000},
        ]},
    }))
    .unwrap();
    services
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
}

async fn service_slices(slices: &Api<EndpointSlice>) -> Vec<EndpointSlice> {
    slices
        .list(&ListParams::default().labels("kubernetes.io/service-name=web"))
        .await
        .unwrap()
        .items
}

/// (ready, not ready) endpoint counts over the service's slices.
fn readiness(slices: &[EndpointSlice]) -> (usize, usize) {
    let all = slices.iter().flat_map(|s| s.endpoints.iter());
    let ready = |e: &&k8s_openapi::api::discovery::v1::Endpoint| {
        e.conditions.as_ref().and_then(|c| c.ready) == Some(true)
    };
    let (r, n): (Vec<_>, Vec<_>) = all.partition(ready);
    (r.len(), n.len())
}

/// (addresses, notReadyAddresses) counts of an Endpoints object.
fn address_counts(endpoints: &Endpoints) -> (usize, usize) {
    let subsets = endpoints.subsets.iter().flatten();
    subsets.fold((0, 0), |(a, n), s| {
        (
            a + s.addresses.as_ref().map_or(0, Vec::len),
            n + s.not_ready_addresses.as_ref().map_or(0, Vec::len),
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_and_endpoints_follow_pods_readiness_and_ports() {
    let cluster = Cluster::start();
    let client = admin_client(&cluster).await;
    let kubelet = FakeKubelet::start(client.clone(), &["node-a"]).await;
    wait_for_default_account(&client, "default").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), "default");
    create_service(&services).await;
    for name in ["web-1", "web-2", "web-3"] {
        create_pod(&pods, name, "node-a").await;
    }

    // Three ready endpoints in one slice, ports resolved per pod (named targetPort).
    let slice = eventually("a slice with 3 ready endpoints", || {
        let slices = slices.clone();
        async move {
            let found = service_slices(&slices).await;
            (found.len() == 1 && readiness(&found) == (3, 0)).then(|| found[0].clone())
        }
    })
    .await;
    let labels = slice.metadata.labels.clone().unwrap();
    assert_eq!(
        labels["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    assert_eq!(labels["team"], "blue");
    assert!(slice.metadata.name.as_deref().unwrap().starts_with("web-"));
    assert_eq!(slice.address_type, "IPv4");
    let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Service", "web")
    );
    let mut ports: Vec<(String, i32)> = slice
        .ports
        .iter()
        .flatten()
        .map(|p| (p.name.clone().unwrap(), p.port.unwrap()))
        .collect();
    ports.sort();
    assert_eq!(ports, [("admin".into(), 9000), ("http".into(), 8080)]);
    let endpoint = &slice.endpoints[0];
    assert_eq!(endpoint.node_name.as_deref(), Some("node-a"));
    assert_eq!(
        endpoint.target_ref.as_ref().unwrap().kind.as_deref(),
        Some("Pod")
    );

    // The mirrored Endpoints object.
    let mirrored = eventually("the Endpoints object with 3 addresses", || {
        let endpoints = endpoints.clone();
        async move {
            let e = endpoints.get_opt("web").await.ok().flatten()?;
            (address_counts(&e) == (3, 0)).then_some(e)
        }
    })
    .await;
    assert_eq!(
        mirrored.metadata.labels.as_ref().unwrap()["endpointslice.kubernetes.io/skip-mirror"],
        "true"
    );
    assert!(
        mirrored
            .metadata
            .annotations
            .as_ref()
            .unwrap()
            .contains_key("endpoints.kubernetes.io/last-change-trigger-time")
    );

    // One pod turns not ready.
    kubelet.set_ready("default", "web-2", false);
    eventually("web-2 not ready in the slice", || {
        let slices = slices.clone();
        async move {
            let found = service_slices(&slices).await;
            let web2 = found
                .iter()
                .flat_map(|s| s.endpoints.iter())
                .find(|e| e.target_ref.as_ref().and_then(|t| t.name.as_deref()) == Some("web-2"))?;
            let c = web2.conditions.as_ref()?;
            (c.ready == Some(false) && c.serving == Some(false) && readiness(&found) == (2, 1))
                .then_some(())
        }
    })
    .await;
    eventually("web-2 among the notReadyAddresses", || {
        let endpoints = endpoints.clone();
        async move {
            let e = endpoints.get_opt("web").await.ok().flatten()?;
            let not_ready = e
                .subsets
                .iter()
                .flatten()
                .flat_map(|s| s.not_ready_addresses.iter().flatten());
            let web2 = not_ready
                .into_iter()
                .any(|a| a.target_ref.as_ref().and_then(|t| t.name.as_deref()) == Some("web-2"));
            (web2 && address_counts(&e) == (2, 1)).then_some(())
        }
    })
    .await;

    // publishNotReadyAddresses: every pod counts as ready.
    services
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"publishNotReadyAddresses": true}})),
        )
        .await
        .unwrap();
    eventually("all ready with publishNotReadyAddresses", || {
        let (slices, endpoints) = (slices.clone(), endpoints.clone());
        async move {
            let found = service_slices(&slices).await;
            let e = endpoints.get_opt("web").await.ok().flatten()?;
            (readiness(&found) == (3, 0) && address_counts(&e) == (3, 0)).then_some(())
        }
    })
    .await;

    // kubectl shows them.
    let listed = cluster.kubectl_ok(&["get", "endpointslices"]);
    assert!(
        listed.contains("IPv4") && listed.contains("web-"),
        "{listed}"
    );
    let listed = cluster.kubectl_ok(&["get", "endpoints", "web"]);
    assert!(
        listed.contains(":8080") || listed.contains(":9000"),
        "{listed}"
    );
    let described = cluster.kubectl_ok(&["describe", "svc", "web"]);
    assert!(described.contains("Endpoints:"), "{described}");
    assert!(described.contains(":8080"), "{described}");

    // A deleted pod leaves; deleting the Endpoints object brings it back.
    pods.delete("web-3", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    endpoints
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    eventually("2 endpoints everywhere", || {
        let (slices, endpoints) = (slices.clone(), endpoints.clone());
        async move {
            let found = service_slices(&slices).await;
            let e = endpoints.get_opt("web").await.ok().flatten()?;
            (readiness(&found) == (2, 0) && address_counts(&e) == (2, 0)).then_some(())
        }
    })
    .await;

    // A deleted service takes its slices and Endpoints with it.
    services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    eventually("no slices and no Endpoints", || {
        let (slices, endpoints) = (slices.clone(), endpoints.clone());
        async move {
            let found = service_slices(&slices).await;
            let e = endpoints.get_opt("web").await.ok().flatten();
            (found.is_empty() && e.is_none()).then_some(())
        }
    })
    .await;
    drop(kubelet);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_service_is_split_into_slices_of_at_most_100() {
    let cluster = Cluster::start();
    let client = admin_client(&cluster).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), "default");
    create_service(&services).await;
    // 150 running, ready pods; their status is written here, all at once, as kubelets
    // would (the fake kubelet writes one pod at a time).
    let creates = (0..150).map(|i| {
        let pods = pods.clone();
        async move {
            let name = format!("web-{i}");
            create_pod(&pods, &name, "node-a").await;
            let status = json!({"status": {
                "phase": "Running",
                "podIP": format!("10.244.{}.{}", i / 100, i % 100 + 2),
                "podIPs": [{"ip": format!("10.244.{}.{}", i / 100, i % 100 + 2)}],
                "conditions": [{"type": "Ready", "status": "True"}],
            }});
            pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await
                .unwrap();
        }
    });
    futures::future::join_all(creates).await;
    let last = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let seen = last.clone();
    let waited = tokio::time::timeout(
        WAIT,
        eventually("150 ready endpoints", || {
            let (slices, seen) = (slices.clone(), seen.clone());
            async move {
                let found = service_slices(&slices).await;
                let sizes: Vec<usize> = found.iter().map(|s| s.endpoints.len()).collect();
                *seen.lock().unwrap() = format!("{:?} sizes {sizes:?}", readiness(&found));
                (readiness(&found) == (150, 0)).then_some(found)
            }
        }),
    )
    .await;
    let Ok(found) = waited else {
        panic!("last seen: {}", last.lock().unwrap());
    };
    let mut sizes: Vec<usize> = found.iter().map(|s| s.endpoints.len()).collect();
    sizes.sort();
    assert_eq!(sizes.len(), 2, "{sizes:?}");
    assert!(sizes.iter().all(|n| *n <= 100), "{sizes:?}");
    eventually("150 addresses in the Endpoints object", || {
        let endpoints = endpoints.clone();
        async move {
            let e = endpoints.get_opt("web").await.ok().flatten()?;
            (address_counts(&e) == (150, 0)).then_some(())
        }
    })
    .await;
    // Ten pods go: the slices shrink in place, no slice is created.
    let names: Vec<String> = found
        .iter()
        .map(|s| s.metadata.name.clone().unwrap())
        .collect();
    for i in 0..10 {
        pods.delete(
            &format!("web-{i}"),
            &DeleteParams::default().grace_period(0),
        )
        .await
        .unwrap();
    }
    let after = eventually("140 endpoints", || {
        let slices = slices.clone();
        async move {
            let found = service_slices(&slices).await;
            (readiness(&found) == (140, 0)).then_some(found)
        }
    })
    .await;
    let mut kept: Vec<String> = after
        .iter()
        .map(|s| s.metadata.name.clone().unwrap())
        .collect();
    kept.sort();
    let mut names = names;
    names.sort();
    assert_eq!(kept, names, "the same slices, updated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_namespace_keeps_its_default_account_and_root_ca() {
    let cluster = Cluster::start();
    let client = admin_client(&cluster).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team-a"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "team-a");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    let ca = std::fs::read_to_string(cluster.kubeconfig()).unwrap();
    let original = eventually("kube-root-ca.crt", || {
        let config_maps = config_maps.clone();
        async move { config_maps.get_opt("kube-root-ca.crt").await.ok().flatten() }
    })
    .await;
    let pem = original.data.as_ref().unwrap()["ca.crt"].clone();
    assert!(pem.contains("BEGIN CERTIFICATE"));
    // The kubeconfig's CA (base64) is the same certificate.
    assert!(ca.contains("certificate-authority-data"));
    assert!(
        original.metadata.annotations.as_ref().unwrap()["kubernetes.io/description"]
            .starts_with("Contains a CA bundle")
    );
    wait_for_default_account(&client, "team-a").await;

    // Deleted: both come back.
    let first_uid = accounts.get("default").await.unwrap().metadata.uid;
    accounts
        .delete("default", &DeleteParams::default())
        .await
        .unwrap();
    config_maps
        .delete("kube-root-ca.crt", &DeleteParams::default())
        .await
        .unwrap();
    eventually("a new default account", || {
        let accounts = accounts.clone();
        let first_uid = first_uid.clone();
        async move {
            let a = accounts.get_opt("default").await.ok().flatten()?;
            (a.metadata.uid != first_uid).then_some(())
        }
    })
    .await;
    eventually("kube-root-ca.crt again", || {
        let config_maps = config_maps.clone();
        async move { config_maps.get_opt("kube-root-ca.crt").await.ok().flatten() }
    })
    .await;

    // Changed: the data is put back.
    config_maps
        .patch(
            "kube-root-ca.crt",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"ca.crt": "forged", "extra": "x"}})),
        )
        .await
        .unwrap();
    eventually("the CA restored", || {
        let config_maps = config_maps.clone();
        let pem = pem.clone();
        async move {
            let cm = config_maps
                .get_opt("kube-root-ca.crt")
                .await
                .ok()
                .flatten()?;
            let data = cm.data?;
            (data.len() == 1 && data["ca.crt"] == pem).then_some(())
        }
    })
    .await;
    let listed = cluster.kubectl_ok(&["get", "serviceaccounts,configmaps", "-n", "team-a"]);
    assert!(
        listed.contains("default") && listed.contains("kube-root-ca.crt"),
        "{listed}"
    );
}
