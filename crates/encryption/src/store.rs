//! [`EncryptedStore`]: a [`Store`] decorator that encrypts the values of governed keys on
//! their way in and decrypts every value on its way out (reads, lists, a delete's previous
//! value, the current value carried by a lost compare-and-swap or a refused create, and
//! each watch event's value and previous value). Keys the configuration does not govern
//! pass through untouched: one prefix comparison per configured prefix, no copy, and
//! watches of prefixes without governed keys are the inner store's own streams.
//!
//! A value that cannot be decrypted is an error naming the key
//! ([`kyb_storage::Error::Backend`], which the API server answers with 500); in a watch it
//! ends the stream. (A `delete` whose previous value cannot be decrypted has deleted the
//! key all the same; the error only says the previous value is unreadable.)

use crate::config::EncryptionConfig;
use crate::providers::TransformError;
use async_trait::async_trait;
use bytes::Bytes;
use kyb_storage::{
    DeleteResponse, Error, Event, EventKind, GetResponse, KeyValue, ListRequest, ListResponse,
    Result, Revision, Store, WatchStream,
};
use std::sync::Arc;

/// Wraps `store` so that the resources `config` names are encrypted at rest. A
/// configuration that governs no key returns `store` itself.
pub fn wrap(store: Arc<dyn Store>, config: EncryptionConfig) -> Arc<dyn Store> {
    if config.is_empty() {
        return store;
    }
    Arc::new(EncryptedStore::new(store, config))
}

/// A store whose governed values are encrypted at rest; see the [module](self) docs.
pub struct EncryptedStore {
    inner: Arc<dyn Store>,
    config: EncryptionConfig,
}

impl EncryptedStore {
    pub fn new(inner: Arc<dyn Store>, config: EncryptionConfig) -> Self {
        Self { inner, config }
    }

    /// The store holding the encrypted values.
    pub fn inner(&self) -> &Arc<dyn Store> {
        &self.inner
    }

    pub fn config(&self) -> &EncryptionConfig {
        &self.config
    }

    fn encrypt(&self, key: &[u8], value: Bytes) -> Result<Bytes> {
        self.config
            .encrypt(key, value)
            .map_err(|source| Error::Backend {
                context: format!("failed to encrypt the value of key {}", show_key(key)),
                source: Box::new(source),
            })
    }

    /// Maps the current value a refused write carries to plaintext.
    fn decrypt_error(&self, error: Error) -> Error {
        match error {
            Error::Conflict {
                expected,
                mut current,
            } => match decrypt_kv(&self.config, &mut current) {
                Ok(()) => Error::Conflict { expected, current },
                Err(error) => error,
            },
            Error::AlreadyExists { mut current } => match decrypt_kv(&self.config, &mut current) {
                Ok(()) => Error::AlreadyExists { current },
                Err(error) => error,
            },
            other => other,
        }
    }
}

/// A key as the storage errors print it: quoted text, or escaped bytes.
fn show_key(key: &[u8]) -> String {
    match std::str::from_utf8(key) {
        Ok(text) => format!("{text:?}"),
        Err(_) => format!("\"{}\"", key.escape_ascii()),
    }
}

fn unreadable(key: &[u8], source: TransformError) -> Error {
    Error::Backend {
        context: format!("failed to decrypt the value of key {}", show_key(key)),
        source: Box::new(source),
    }
}

/// Replaces a stored value with its plaintext.
fn decrypt_kv(config: &EncryptionConfig, kv: &mut KeyValue) -> Result<()> {
    if !config.governs(&kv.key) {
        return Ok(());
    }
    let stored = std::mem::take(&mut kv.value);
    kv.value = config
        .decrypt(&kv.key, stored)
        .map_err(|source| unreadable(&kv.key, source))?
        .value;
    Ok(())
}

/// Decrypts an event's value (a deletion has none) and previous value.
fn decrypt_event(config: &EncryptionConfig, event: &mut Event) -> Result<()> {
    if event.kind == EventKind::Put {
        decrypt_kv(config, &mut event.kv)?;
    }
    if let Some(prev) = &mut event.prev {
        decrypt_kv(config, prev)?;
    }
    Ok(())
}

/// Forwards `inner`'s events, decrypted, until either side stops; an event that cannot be
/// decrypted is sent as the stream's last item, an error.
async fn forward(
    config: EncryptionConfig,
    mut inner: WatchStream,
    tx: tokio::sync::mpsc::Sender<Result<Event>>,
) {
    loop {
        let item = tokio::select! {
            item = inner.next() => item,
            () = tx.closed() => return,
        };
        let Some(item) = item else { return };
        let item = item.and_then(|mut event| decrypt_event(&config, &mut event).map(|()| event));
        let last = item.is_err();
        if tx.send(item).await.is_err() || last {
            return;
        }
    }
}

#[async_trait]
impl Store for EncryptedStore {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    async fn current_revision(&self) -> Result<Revision> {
        self.inner.current_revision().await
    }

    async fn get(&self, key: &[u8], revision: Option<Revision>) -> Result<GetResponse> {
        let mut response = self.inner.get(key, revision).await?;
        if let Some(kv) = &mut response.kv {
            decrypt_kv(&self.config, kv)?;
        }
        Ok(response)
    }

    async fn list(&self, request: &ListRequest) -> Result<ListResponse> {
        let mut response = self.inner.list(request).await?;
        if self.config.governs_some_key_under(&request.prefix) {
            for kv in &mut response.kvs {
                decrypt_kv(&self.config, kv)?;
            }
        }
        Ok(response)
    }

    async fn create(&self, key: &[u8], value: Bytes) -> Result<Revision> {
        let value = self.encrypt(key, value)?;
        self.inner
            .create(key, value)
            .await
            .map_err(|e| self.decrypt_error(e))
    }

    async fn update(&self, key: &[u8], value: Bytes, expected: Revision) -> Result<Revision> {
        let value = self.encrypt(key, value)?;
        self.inner
            .update(key, value, expected)
            .await
            .map_err(|e| self.decrypt_error(e))
    }

    async fn delete(&self, key: &[u8], expected: Option<Revision>) -> Result<DeleteResponse> {
        let mut response = self
            .inner
            .delete(key, expected)
            .await
            .map_err(|e| self.decrypt_error(e))?;
        decrypt_kv(&self.config, &mut response.prev)?;
        Ok(response)
    }

    async fn watch(&self, prefix: &[u8], start: Revision) -> Result<WatchStream> {
        let inner = self.inner.watch(prefix, start).await?;
        if !self.config.governs_some_key_under(prefix) {
            return Ok(inner);
        }
        let (tx, stream) = WatchStream::channel();
        tokio::spawn(forward(self.config.clone(), inner, tx));
        Ok(stream)
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.inner.compact(revision).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use kyb_storage::{EmbeddedOptions, EmbeddedStore, EtcdStore};
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    const KEY1: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const KEY2: &str = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";
    const SECRET: &[u8] =
        br#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s1"},"data":{"password":"aHVudGVyMg=="}}"#;
    const S1: &[u8] = b"/registry/secrets/default/s1";
    const S2: &[u8] = b"/registry/secrets/default/s2";
    const DEADLINE: Duration = Duration::from_secs(20);

    fn config(resources: &str, providers: &str) -> EncryptionConfig {
        EncryptionConfig::parse(
            format!(
                "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [{resources}]
  providers:
{providers}"
            )
            .as_bytes(),
        )
        .unwrap()
    }

    fn aesgcm(name: &str, secret: &str) -> String {
        format!("  - aesgcm: {{keys: [{{name: {name}, secret: {secret}}}]}}\n")
    }

    fn secretbox(name: &str, secret: &str) -> String {
        format!("  - secretbox: {{keys: [{{name: {name}, secret: {secret}}}]}}\n")
    }

    const IDENTITY: &str = "  - identity: {}\n";

    /// An embedded store in a temporary directory.
    struct Embedded {
        store: Arc<dyn Store>,
        _dir: tempfile::TempDir,
    }

    fn embedded() -> Embedded {
        let dir = kyb_testkit::temp_dir("encryption").unwrap();
        let store = EmbeddedStore::open(dir.path(), &EmbeddedOptions::default()).unwrap();
        Embedded {
            store: Arc::new(store),
            _dir: dir,
        }
    }

    async fn raw(store: &dyn Store, key: &[u8]) -> Bytes {
        store.get(key, None).await.unwrap().kv.unwrap().value
    }

    async fn next_event(watch: &mut WatchStream) -> Result<Event> {
        match tokio::time::timeout(DEADLINE, watch.next()).await {
            Ok(Some(item)) => item,
            Ok(None) => panic!("watch ended"),
            Err(_) => panic!("no event within {DEADLINE:?}"),
        }
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    #[tokio::test]
    async fn both_providers_round_trip_and_store_no_plaintext() {
        for (providers, prefix) in [
            (aesgcm("key1", KEY1), &b"k8s:enc:aesgcm:v1:key1:"[..]),
            (secretbox("box1", KEY1), &b"k8s:enc:secretbox:v1:box1:"[..]),
        ] {
            let harness = embedded();
            let store = wrap(harness.store.clone(), config("secrets", &providers));
            assert_eq!(store.backend(), "embedded");
            let revision = store.create(S1, Bytes::from_static(SECRET)).await.unwrap();
            let kv = store.get(S1, None).await.unwrap().kv.unwrap();
            assert_eq!(kv.value, SECRET);
            assert_eq!(kv.mod_revision, revision);

            let stored = raw(&*harness.store, S1).await;
            assert!(stored.starts_with(prefix), "{stored:?}");
            assert!(!contains(&stored, b"password"));
            assert!(!contains(&stored, b"aHVudGVyMg=="));

            let updated = br#"{"kind":"Secret","data":{"token":"c2VjcmV0"}}"#;
            store
                .update(S1, Bytes::from_static(updated), revision)
                .await
                .unwrap();
            let listed = store
                .list(&ListRequest::prefix("/registry/secrets/"))
                .await
                .unwrap();
            assert_eq!(listed.kvs.len(), 1);
            assert_eq!(listed.kvs[0].value, &updated[..]);
            let deleted = store.delete(S1, None).await.unwrap();
            assert_eq!(deleted.prev.value, &updated[..]);
        }
    }

    #[tokio::test]
    async fn ciphertext_moved_to_another_key_does_not_decrypt() {
        let harness = embedded();
        let store = wrap(
            harness.store.clone(),
            config("secrets", &aesgcm("key1", KEY1)),
        );
        store.create(S1, Bytes::from_static(SECRET)).await.unwrap();
        let stolen = raw(&*harness.store, S1).await;
        harness.store.create(S2, stolen).await.unwrap();
        let error = store.get(S2, None).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"failed to decrypt the value of key "/registry/secrets/default/s2": cipher: message authentication failed"#
        );
        // A list containing it fails too, naming the key.
        let error = store
            .list(&ListRequest::prefix("/registry/secrets/"))
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("/registry/secrets/default/s2"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn key_rotation_reads_the_old_key_and_writes_the_new() {
        let harness = embedded();
        let before = wrap(
            harness.store.clone(),
            config("secrets", &aesgcm("key1", KEY1)),
        );
        let revision = before.create(S1, Bytes::from_static(SECRET)).await.unwrap();
        let rotated = wrap(
            harness.store.clone(),
            config("secrets", &(aesgcm("key2", KEY2) + &aesgcm("key1", KEY1))),
        );
        assert_eq!(
            rotated.get(S1, None).await.unwrap().kv.unwrap().value,
            SECRET
        );
        rotated
            .update(S1, Bytes::from_static(SECRET), revision)
            .await
            .unwrap();
        assert!(
            raw(&*harness.store, S1)
                .await
                .starts_with(b"k8s:enc:aesgcm:v1:key2:")
        );
        assert_eq!(
            rotated.get(S1, None).await.unwrap().kv.unwrap().value,
            SECRET
        );
        // Once key1 is dropped, data still under key1 is unreadable.
        before.create(S2, Bytes::from_static(SECRET)).await.unwrap();
        let after = wrap(
            harness.store.clone(),
            config("secrets", &aesgcm("key2", KEY2)),
        );
        assert_eq!(after.get(S1, None).await.unwrap().kv.unwrap().value, SECRET);
        assert_eq!(
            after.get(S2, None).await.unwrap_err().to_string(),
            r#"failed to decrypt the value of key "/registry/secrets/default/s2": no matching key was found for the provided AES transformer"#
        );
    }

    #[tokio::test]
    async fn plaintext_is_read_only_with_identity_configured() {
        let harness = embedded();
        // Written before encryption was turned on.
        harness
            .store
            .create(S1, Bytes::from_static(SECRET))
            .await
            .unwrap();
        let with_identity = wrap(
            harness.store.clone(),
            config("secrets", &(aesgcm("key1", KEY1) + IDENTITY)),
        );
        assert_eq!(
            with_identity.get(S1, None).await.unwrap().kv.unwrap().value,
            SECRET
        );
        let without = wrap(
            harness.store.clone(),
            config("secrets", &aesgcm("key1", KEY1)),
        );
        assert_eq!(
            without.get(S1, None).await.unwrap_err().to_string(),
            r#"failed to decrypt the value of key "/registry/secrets/default/s1": no matching prefix found"#
        );
        // identity first: writes plaintext, still reads encrypted data (decryption rollout).
        with_identity
            .create(S2, Bytes::from_static(SECRET))
            .await
            .unwrap();
        let decrypting = wrap(
            harness.store.clone(),
            config("secrets", &(IDENTITY.to_string() + &aesgcm("key1", KEY1))),
        );
        assert_eq!(
            decrypting.get(S2, None).await.unwrap().kv.unwrap().value,
            SECRET
        );
        let revision = decrypting
            .get(S2, None)
            .await
            .unwrap()
            .kv
            .unwrap()
            .mod_revision;
        decrypting
            .update(S2, Bytes::from_static(SECRET), revision)
            .await
            .unwrap();
        assert_eq!(raw(&*harness.store, S2).await, SECRET);
    }

    #[tokio::test]
    async fn watch_events_are_decrypted() {
        let harness = embedded();
        let store = wrap(
            harness.store.clone(),
            config("secrets", &secretbox("box1", KEY1)),
        );
        let mut watch = store.watch(b"/registry/", 0).await.unwrap();
        let first = store
            .create(S1, Bytes::from_static(b"{\"v\":1}"))
            .await
            .unwrap();
        store
            .create(
                b"/registry/configmaps/default/c",
                Bytes::from_static(b"{\"c\":1}"),
            )
            .await
            .unwrap();
        store
            .update(S1, Bytes::from_static(b"{\"v\":2}"), first)
            .await
            .unwrap();
        store.delete(S1, None).await.unwrap();

        let created = next_event(&mut watch).await.unwrap();
        assert_eq!(
            (created.kind, created.kv.value.as_ref()),
            (EventKind::Put, &b"{\"v\":1}"[..])
        );
        assert_eq!(created.prev, None);
        let configmap = next_event(&mut watch).await.unwrap();
        assert_eq!(configmap.kv.value, &b"{\"c\":1}"[..]);
        let updated = next_event(&mut watch).await.unwrap();
        assert_eq!(updated.kv.value, &b"{\"v\":2}"[..]);
        assert_eq!(updated.prev.unwrap().value, &b"{\"v\":1}"[..]);
        let deleted = next_event(&mut watch).await.unwrap();
        assert_eq!(deleted.kind, EventKind::Delete);
        assert!(deleted.kv.value.is_empty());
        assert_eq!(deleted.prev.unwrap().value, &b"{\"v\":2}"[..]);

        // A watch resumed from history is decrypted too.
        let mut replay = store.watch(b"/registry/secrets/", first).await.unwrap();
        assert_eq!(
            next_event(&mut replay).await.unwrap().kv.value,
            &b"{\"v\":1}"[..]
        );
    }

    #[tokio::test]
    async fn an_undecryptable_watch_event_ends_the_stream_with_an_error() {
        let harness = embedded();
        let store = wrap(
            harness.store.clone(),
            config("secrets", &aesgcm("key1", KEY1)),
        );
        let mut watch = store.watch(b"/registry/secrets/", 0).await.unwrap();
        harness
            .store
            .create(S1, Bytes::from_static(SECRET))
            .await
            .unwrap();
        store.create(S2, Bytes::from_static(SECRET)).await.unwrap();
        let error = next_event(&mut watch).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"failed to decrypt the value of key "/registry/secrets/default/s1": no matching prefix found"#
        );
        assert!(
            tokio::time::timeout(DEADLINE, watch.next())
                .await
                .unwrap()
                .is_none(),
            "the stream ends after the error"
        );
    }

    #[tokio::test]
    async fn refused_writes_carry_decrypted_values() {
        let harness = embedded();
        let store = wrap(
            harness.store.clone(),
            config("secrets", &aesgcm("key1", KEY1)),
        );
        let revision = store.create(S1, Bytes::from_static(SECRET)).await.unwrap();
        match store
            .update(S1, Bytes::from_static(b"{}"), revision + 10)
            .await
        {
            Err(Error::Conflict { expected, current }) => {
                assert_eq!(expected, revision + 10);
                assert_eq!(current.value, SECRET);
                assert_eq!(current.mod_revision, revision);
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
        match store.delete(S1, Some(revision + 10)).await {
            Err(Error::Conflict { current, .. }) => assert_eq!(current.value, SECRET),
            other => panic!("expected a conflict, got {other:?}"),
        }
        match store.create(S1, Bytes::from_static(b"{}")).await {
            Err(Error::AlreadyExists { current }) => assert_eq!(current.value, SECRET),
            other => panic!("expected already exists, got {other:?}"),
        }
    }

    /// A store that records the value it was given and hands back one fixed value, to
    /// see whether the decorator copies or touches values of keys it does not govern.
    struct Recorder {
        value: Bytes,
        written: Mutex<Option<Bytes>>,
    }

    impl Recorder {
        fn kv(&self, key: &[u8]) -> KeyValue {
            KeyValue {
                key: key.to_vec(),
                value: self.value.clone(),
                create_revision: 1,
                mod_revision: 1,
                version: 1,
            }
        }
    }

    #[async_trait]
    impl Store for Recorder {
        fn backend(&self) -> &'static str {
            "recorder"
        }
        async fn current_revision(&self) -> Result<Revision> {
            Ok(1)
        }
        async fn get(&self, key: &[u8], _: Option<Revision>) -> Result<GetResponse> {
            Ok(GetResponse {
                kv: Some(self.kv(key)),
                revision: 1,
            })
        }
        async fn list(&self, request: &ListRequest) -> Result<ListResponse> {
            let mut key = request.prefix.clone();
            key.extend_from_slice(b"ns/x");
            Ok(ListResponse {
                kvs: vec![self.kv(&key)],
                revision: 1,
                next: None,
            })
        }
        async fn create(&self, _: &[u8], value: Bytes) -> Result<Revision> {
            *self.written.lock().unwrap() = Some(value);
            Ok(2)
        }
        async fn update(&self, _: &[u8], value: Bytes, _: Revision) -> Result<Revision> {
            *self.written.lock().unwrap() = Some(value);
            Ok(2)
        }
        async fn delete(&self, key: &[u8], _: Option<Revision>) -> Result<DeleteResponse> {
            Ok(DeleteResponse {
                revision: 2,
                prev: self.kv(key),
            })
        }
        async fn watch(&self, _: &[u8], _: Revision) -> Result<WatchStream> {
            let (tx, stream) = WatchStream::channel();
            // The producer is gone at once; the stream just ends.
            drop(tx);
            Ok(stream)
        }
        async fn compact(&self, _: Revision) -> Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn keys_outside_the_prefixes_are_untouched() {
        let recorder = Arc::new(Recorder {
            value: Bytes::from(b"not json, not encrypted".to_vec()),
            written: Mutex::new(None),
        });
        let store = EncryptedStore::new(
            recorder.clone(),
            config("'*.'", &(aesgcm("key1", KEY1) + IDENTITY)),
        );
        let key = b"/registry/deployments/default/web";
        let value = Bytes::from(b"{\"kind\":\"Deployment\"}".to_vec());

        // The very buffers go through: no copy, no transformation.
        store.create(key, value.clone()).await.unwrap();
        assert_eq!(
            recorder.written.lock().unwrap().as_ref().unwrap().as_ptr(),
            value.as_ptr()
        );
        store.update(key, value.clone(), 1).await.unwrap();
        assert_eq!(
            recorder.written.lock().unwrap().as_ref().unwrap().as_ptr(),
            value.as_ptr()
        );
        let read = store.get(key, None).await.unwrap().kv.unwrap().value;
        assert_eq!(read.as_ptr(), recorder.value.as_ptr());
        let listed = store
            .list(&ListRequest::prefix("/registry/deployments/"))
            .await
            .unwrap();
        assert_eq!(listed.kvs[0].value.as_ptr(), recorder.value.as_ptr());
        let deleted = store.delete(key, None).await.unwrap();
        assert_eq!(deleted.prev.value.as_ptr(), recorder.value.as_ptr());

        // A watch of a prefix without governed keys is the inner stream (no forwarding
        // task); one that covers governed keys is forwarded.
        let metrics = tokio::runtime::Handle::current().metrics();
        let tasks = metrics.num_alive_tasks();
        let plain = store.watch(b"/registry/deployments/", 0).await.unwrap();
        assert_eq!(metrics.num_alive_tasks(), tasks);
        let forwarded = store.watch(b"/registry/", 0).await.unwrap();
        assert_eq!(metrics.num_alive_tasks(), tasks + 1);
        drop((plain, forwarded));

        // Governed keys are encrypted.
        store.create(S1, value.clone()).await.unwrap();
        let written = recorder.written.lock().unwrap().clone().unwrap();
        assert!(written.starts_with(b"k8s:enc:aesgcm:v1:key1:"));

        // What deciding costs: one prefix comparison per configured prefix (15 core
        // prefixes here). Printed as a bench figure; the bound only catches blunders.
        let config = store.config();
        let rounds: u32 = 200_000;
        let start = Instant::now();
        let mut governed = 0;
        for i in 0..rounds {
            let key: &[u8] = if i % 2 == 0 {
                b"/registry/deployments/default/web"
            } else {
                b"/registry/apiextensions.k8s.io/customresourcedefinitions/x"
            };
            governed += usize::from(config.governs(std::hint::black_box(key)));
        }
        let per_key = start.elapsed() / rounds;
        println!(
            "prefix check for a key outside {} prefixes: {per_key:?} per key",
            config.prefixes().count()
        );
        assert_eq!(governed, 0);
        assert!(per_key < Duration::from_micros(5), "{per_key:?} per key");
    }

    #[tokio::test]
    async fn a_configuration_that_governs_nothing_returns_the_store_itself() {
        let harness = embedded();
        let store = wrap(
            harness.store.clone(),
            config("frobs", &aesgcm("key1", KEY1)),
        );
        assert!(Arc::ptr_eq(&store, &harness.store));
    }

    #[tokio::test]
    async fn etcd_holds_kubernetes_wire_format() {
        let server = tokio::task::spawn_blocking(kyb_testkit::EtcdServer::start)
            .await
            .unwrap()
            .expect("start etcd (is etcd-server installed? run `make deps`)");
        let etcd: Arc<dyn Store> = Arc::new(
            EtcdStore::connect(std::slice::from_ref(&server.endpoint))
                .await
                .unwrap(),
        );
        let store = wrap(etcd.clone(), config("secrets", &aesgcm("key1", KEY1)));
        assert_eq!(store.backend(), "etcd");
        store.create(S1, Bytes::from_static(SECRET)).await.unwrap();
        assert_eq!(store.get(S1, None).await.unwrap().kv.unwrap().value, SECRET);

        let stored = raw(&*etcd, S1).await;
        assert!(stored.starts_with(b"k8s:enc:aesgcm:v1:key1:"), "{stored:?}");
        assert!(!contains(&stored, b"password"));

        // What `etcdctl get` prints is those bytes.
        let output = std::process::Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(["--endpoints", &server.endpoint, "get", "--print-value-only"])
            .arg(std::str::from_utf8(S1).unwrap())
            .output()
            .expect("run etcdctl (install etcd-client: `make deps`)");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.stdout.starts_with(b"k8s:enc:aesgcm:v1:key1:"));
        assert_eq!(output.stdout.strip_suffix(b"\n").unwrap(), &stored[..]);
    }
}
