//! Registry credentials from a pod's `imagePullSecrets` (`kubernetes.io/dockerconfigjson`
//! and `kubernetes.io/dockercfg` secrets), matched to an image's repository the way
//! kubelet's credential keyring matches them: the key's host (with `*` globs per label)
//! and port must match, and its path must be a prefix of the repository's; more specific
//! keys come first.

use base64::Engine as _;
use k8s_cri::v1::AuthConfig;
use k8s_openapi::api::core::v1::Secret;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The secret type and data key of `~/.docker/config.json`-style secrets.
const DOCKER_CONFIG_JSON_TYPE: &str = "kubernetes.io/dockerconfigjson";
const DOCKER_CONFIG_JSON_KEY: &str = ".dockerconfigjson";
/// The legacy `~/.dockercfg` style.
const DOCKERCFG_TYPE: &str = "kubernetes.io/dockercfg";
const DOCKERCFG_KEY: &str = ".dockercfg";

/// Docker Hub's legacy key and its host.
const DEFAULT_REGISTRY_KEY: &str = "https://index.docker.io/v1/";
const DEFAULT_REGISTRY_HOST: &str = "index.docker.io";

#[derive(Debug, Default, Deserialize)]
struct DockerConfigJson {
    #[serde(default)]
    auths: BTreeMap<String, DockerConfigEntry>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct DockerConfigEntry {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    auth: String,
}

impl DockerConfigEntry {
    /// The user name and password, from `auth` (`base64(user:password)`) when given.
    fn credentials(&self) -> (String, String) {
        if !self.auth.is_empty()
            && let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(&self.auth)
            && let Ok(text) = String::from_utf8(decoded)
            && let Some((user, password)) = text.split_once(':')
        {
            return (user.to_string(), password.trim_matches('\0').to_string());
        }
        (self.username.clone(), self.password.clone())
    }
}

/// The credentials of a set of pull secrets.
#[derive(Debug, Default)]
pub struct Keyring {
    /// Registry key (as normalized) → credentials, in insertion order per key.
    entries: BTreeMap<String, Vec<DockerConfigEntry>>,
}

/// A key as a host (lowercase, with port) and a path.
fn parse_key(key: &str) -> (String, String) {
    let key = if key == DEFAULT_REGISTRY_KEY {
        DEFAULT_REGISTRY_HOST
    } else {
        key
    };
    let without_scheme = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let (host, path) = match without_scheme.split_once('/') {
        Some((host, path)) => (host, path.trim_end_matches('/')),
        None => (without_scheme, ""),
    };
    // Docker's clients take `host/v1/` and `host/v2/` for the host itself.
    let path = path
        .strip_prefix("v1")
        .or_else(|| path.strip_prefix("v2"))
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
        .map_or(path, |rest| rest.trim_start_matches('/'));
    (host.to_lowercase(), path.to_string())
}

/// Whether one host label matches a glob label (`*`, `a*`, …).
fn label_matches(glob: &str, label: &str) -> bool {
    match glob.split_once('*') {
        None => glob == label,
        // A `*` spans any run of characters within the label.
        Some((prefix, rest)) => {
            label.starts_with(prefix)
                && (prefix.len()..=label.len())
                    .any(|i| label.is_char_boundary(i) && label_matches(rest, &label[i..]))
        }
    }
}

/// Whether a key (`host[:port][/path]`) matches the repository `host[:port]/path`.
fn key_matches(key: &str, repository: &str) -> bool {
    let (key_host, key_path) = parse_key(key);
    let (repo_host, repo_path) = parse_key(repository);
    let split_port = |host: &str| -> (String, String) {
        match host.rsplit_once(':') {
            Some((name, port)) => (name.to_string(), port.to_string()),
            None => (host.to_string(), String::new()),
        }
    };
    let (key_name, key_port) = split_port(&key_host);
    let (repo_name, repo_port) = split_port(&repo_host);
    let key_labels: Vec<&str> = key_name.split('.').collect();
    let repo_labels: Vec<&str> = repo_name.split('.').collect();
    key_port == repo_port
        && key_labels.len() == repo_labels.len()
        && key_labels
            .iter()
            .zip(&repo_labels)
            .all(|(glob, label)| label_matches(glob, label))
        && repo_path.starts_with(&key_path)
}

impl Keyring {
    /// The credentials of the docker-config secrets among `secrets` (others are
    /// ignored, as are secrets whose data does not parse).
    pub fn from_secrets(secrets: &[Secret]) -> Keyring {
        let mut keyring = Keyring::default();
        for secret in secrets {
            let data = secret.data.as_ref();
            let value = |key: &str| data.and_then(|d| d.get(key)).map(|v| v.0.as_slice());
            let config: Option<BTreeMap<String, DockerConfigEntry>> = match secret.type_.as_deref()
            {
                Some(DOCKER_CONFIG_JSON_TYPE) => value(DOCKER_CONFIG_JSON_KEY)
                    .and_then(|bytes| serde_json::from_slice::<DockerConfigJson>(bytes).ok())
                    .map(|config| config.auths),
                Some(DOCKERCFG_TYPE) => {
                    value(DOCKERCFG_KEY).and_then(|bytes| serde_json::from_slice(bytes).ok())
                }
                _ => None,
            };
            for (key, entry) in config.unwrap_or_default() {
                let (host, path) = parse_key(&key);
                let normalized = if path.is_empty() {
                    host
                } else {
                    format!("{host}/{path}")
                };
                keyring.entries.entry(normalized).or_default().push(entry);
            }
        }
        keyring
    }

    /// The credentials to try for `repository` (`host[:port]/path`, as
    /// [`super::reference::Reference::repository`] gives it), most specific key first;
    /// empty when none matches (the pull then goes without credentials).
    pub fn lookup(&self, repository: &str) -> Vec<AuthConfig> {
        let is_docker_hub = repository.starts_with("docker.io/");
        let hub_repository = is_docker_hub.then(|| {
            format!(
                "{DEFAULT_REGISTRY_HOST}/{}",
                &repository["docker.io/".len()..]
            )
        });
        let mut found = Vec::new();
        // Reverse order: longer (more specific) keys before their prefixes.
        for (key, entries) in self.entries.iter().rev() {
            let matches = key_matches(key, repository)
                || hub_repository
                    .as_deref()
                    .is_some_and(|hub| key_matches(key, hub));
            if !matches {
                continue;
            }
            // As kubelet: the user name and password alone (`auth` decoded into them), no
            // server address (containerd would drop credentials whose address it cannot
            // parse as a URL's host, as `localhost:5000` is not).
            for entry in entries {
                let (username, password) = entry.credentials();
                found.push(AuthConfig {
                    username,
                    password,
                    ..AuthConfig::default()
                });
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::ByteString;

    fn secret(type_: &str, key: &str, json: &str) -> Secret {
        Secret {
            type_: Some(type_.into()),
            data: Some(BTreeMap::from([(
                key.to_string(),
                ByteString(json.as_bytes().to_vec()),
            )])),
            ..Secret::default()
        }
    }

    #[test]
    fn dockerconfigjson_credentials_match_their_registry() {
        let auth = base64::engine::general_purpose::STANDARD.encode("alice:s3cret");
        let keyring = Keyring::from_secrets(&[secret(
            DOCKER_CONFIG_JSON_TYPE,
            DOCKER_CONFIG_JSON_KEY,
            &format!(r#"{{"auths":{{"localhost:5000":{{"auth":"{auth}"}}}}}}"#),
        )]);
        let found = keyring.lookup("localhost:5000/team/app");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].username, "alice");
        assert_eq!(found[0].password, "s3cret");
        assert_eq!(found[0].server_address, "");
        assert!(keyring.lookup("localhost:5001/team/app").is_empty());
        assert!(keyring.lookup("docker.io/library/busybox").is_empty());
    }

    #[test]
    fn dockercfg_globs_paths_and_docker_hub() {
        let keyring = Keyring::from_secrets(&[
            secret(
                DOCKERCFG_TYPE,
                DOCKERCFG_KEY,
                r#"{"*.example.com":{"username":"any","password":"p"},
                    "registry.example.com/team":{"username":"team","password":"p"},
                    "https://index.docker.io/v1/":{"username":"hub","password":"p"},
                    "https://other.example.org/v2/":{"username":"v2","password":"p"}}"#,
            ),
            // A secret of another type is ignored even with the right key.
            secret(
                "Opaque",
                DOCKERCFG_KEY,
                r#"{"registry.example.com":{"username":"x"}}"#,
            ),
        ]);
        let users = |repo: &str| -> Vec<String> {
            keyring
                .lookup(repo)
                .into_iter()
                .map(|a| a.username)
                .collect()
        };
        assert_eq!(users("registry.example.com/team/app"), ["team", "any"]);
        assert_eq!(users("registry.example.com/other/app"), ["any"]);
        assert_eq!(users("a.b.example.com/app"), Vec::<String>::new());
        assert_eq!(users("docker.io/library/busybox"), ["hub"]);
        assert_eq!(users("other.example.org/any/app"), ["v2"]);
    }

    #[test]
    fn globs_match_within_a_label() {
        assert!(label_matches("*", "registry"));
        assert!(label_matches("reg*", "registry"));
        assert!(label_matches("*try", "registry"));
        assert!(label_matches("r*s*y", "registry"));
        assert!(!label_matches("x*", "registry"));
    }
}
