//! What only the etcd backend promises: its data is plain etcd data.

use crate::harness::{etcd, value};
use std::process::Command;

#[tokio::test]
async fn data_written_is_readable_with_etcdctl() {
    let harness = etcd().await;
    let store = harness.store.clone();
    store
        .create(
            b"/registry/configmaps/default/settings",
            value("{\"kind\":\"ConfigMap\"}"),
        )
        .await
        .unwrap();
    store
        .create(
            b"/registry/namespaces/default",
            value("{\"kind\":\"Namespace\"}"),
        )
        .await
        .unwrap();
    let output = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([
            "--endpoints",
            harness.etcd_endpoint().unwrap(),
            "get",
            "--prefix",
            "/registry/",
        ])
        .output()
        .expect("run etcdctl (install etcd-client: `make deps`)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        vec![
            "/registry/configmaps/default/settings",
            "{\"kind\":\"ConfigMap\"}",
            "/registry/namespaces/default",
            "{\"kind\":\"Namespace\"}",
        ]
    );
}
