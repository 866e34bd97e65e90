//! Secrets at rest: with an EncryptionConfiguration, what etcd holds is ciphertext
//! (`etcdctl get` shows it), clients see plaintext, keys rotate, and data written before
//! encryption stays readable through the identity provider.

use crate::cluster::Cluster;
use kyb_testkit::EtcdServer;
use std::process::Command;

/// The raw bytes etcd holds for a key.
fn etcdctl_get(etcd: &EtcdServer, key: &str) -> Vec<u8> {
    let output = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([
            "--endpoints",
            &etcd.endpoint,
            "get",
            key,
            "--print-value-only",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    output.stdout
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

const KEY1: &str = "c2VjcmV0IGlzIHNlY3VyZSwgb3IgaXMgaXQ/IDMyYiE="; // 32 bytes
const KEY2: &str = "YW5vdGhlciBzZWNyZXQga2V5IG9mIDMyIGJ5dGVzISE="; // 32 bytes

fn config(providers: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources:\n  - secrets\n  providers:\n{providers}"
    )
}

fn aesgcm(name: &str, secret: &str) -> String {
    format!("  - aesgcm:\n      keys:\n      - name: {name}\n        secret: {secret}\n")
}

const IDENTITY: &str = "  - identity: {}\n";

#[test]
fn secrets_are_ciphertext_in_etcd_and_plaintext_to_clients() {
    let etcd = EtcdServer::start().unwrap();
    let dir = kyb_testkit::temp_dir("cluster").unwrap();
    let path = dir.path().join("encryption.yaml");
    let flags = |path: &std::path::Path| {
        vec![
            "--etcd-endpoints".to_string(),
            etcd.endpoint.clone(),
            "--encryption-provider-config".to_string(),
            path.to_str().unwrap().to_string(),
        ]
    };
    let start = |dir: tempfile::TempDir, path: &std::path::Path| {
        let flags = flags(path);
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        Cluster::start_with(dir, &flags)
    };

    // Before encryption: plaintext in etcd.
    std::fs::write(&path, config(IDENTITY)).unwrap();
    let cluster = start(dir, &path);
    cluster.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "old",
        "--from-literal=word=plain-old-data",
    ]);
    // (Secret data is base64 in the stored JSON.)
    assert!(contains(
        &etcdctl_get(&etcd, "/registry/secrets/default/old"),
        b"cGxhaW4tb2xkLWRhdGE="
    ));
    let dir = cluster.stop();

    // aesgcm first, identity still there for reading what was written before.
    std::fs::write(
        &path,
        config(&format!("{}{IDENTITY}", aesgcm("key1", KEY1))),
    )
    .unwrap();
    let cluster = start(dir, &path);
    cluster.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "new",
        "--from-literal=word=fresh-secret-data",
    ]);
    let raw = etcdctl_get(&etcd, "/registry/secrets/default/new");
    assert!(raw.starts_with(b"k8s:enc:aesgcm:v1:key1:"), "{raw:?}");
    assert!(!contains(&raw, b"fresh-secret-data"));
    assert!(
        !contains(&raw, b"ZnJlc2gtc2VjcmV0LWRhdGE"),
        "not even base64"
    );
    // Clients see plaintext, old and new.
    let word =
        |name: &str| cluster.kubectl_ok(&["get", "secret", name, "-o", "jsonpath={.data.word}"]);
    assert_eq!(word("new"), "ZnJlc2gtc2VjcmV0LWRhdGE=");
    assert_eq!(word("old"), "cGxhaW4tb2xkLWRhdGE=");
    // Other resources are untouched.
    cluster.kubectl_ok(&[
        "create",
        "configmap",
        "cm",
        "--from-literal=k=visible-config",
    ]);
    assert!(contains(
        &etcdctl_get(&etcd, "/registry/configmaps/default/cm"),
        b"visible-config"
    ));
    // Rewriting the old secret encrypts it.
    cluster.kubectl_ok(&["label", "secret", "old", "touched=yes"]);
    assert!(
        etcdctl_get(&etcd, "/registry/secrets/default/old").starts_with(b"k8s:enc:aesgcm:v1:key1:")
    );
    let dir = cluster.stop();

    // Rotation: write with key2, still read key1.
    std::fs::write(
        &path,
        config(&format!("{}{}", aesgcm("key2", KEY2), aesgcm("key1", KEY1))),
    )
    .unwrap();
    let cluster = start(dir, &path);
    assert_eq!(
        cluster.kubectl_ok(&["get", "secret", "new", "-o", "jsonpath={.data.word}"]),
        "ZnJlc2gtc2VjcmV0LWRhdGE="
    );
    cluster.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "newer",
        "--from-literal=word=x",
    ]);
    assert!(
        etcdctl_get(&etcd, "/registry/secrets/default/newer")
            .starts_with(b"k8s:enc:aesgcm:v1:key2:")
    );
    let dir = cluster.stop();

    // A bad configuration stops the server with a clear message.
    std::fs::write(
        &path,
        config("  - aesgcm:\n      keys:\n      - name: k\n        secret: c2hvcnQ=\n"),
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_kyb"))
        .args(["server", "--data-dir"])
        .arg(dir.path())
        .args(flags(&path))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("secret"), "{stderr}");
}
