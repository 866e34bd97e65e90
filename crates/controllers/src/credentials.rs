//! Each controller's own identity, as kube-controller-manager's
//! `--use-service-account-credentials` gives it: controller `X` talks to the API as the
//! service account `kube-system/X`, which the bootstrap policy binds to the ClusterRole
//! `system:controller:X` — so a controller can do only what its role allows.
//!
//! The manager's identity creates the account and requests its tokens (TokenRequest, one
//! hour, renewed every 20 minutes); the client reads the token from a private file that
//! kube-rs re-reads, so renewals need no new client. Informers keep using the manager's own
//! identity (it may list and watch everything).

use anyhow::Context as _;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::PostParams;
use kyb_runtime::client::ClientOptions;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

const NAMESPACE: &str = "kube-system";
const TOKEN_LIFETIME: i64 = 3600;
const RENEW_EVERY: Duration = Duration::from_secs(20 * 60);

/// Hands out API clients: the manager's own, and each controller's.
pub struct Clients {
    base: kube::Client,
    /// How to reach the server, to build per-controller clients; `None` gives every
    /// controller the manager's own client.
    config: Option<(kube::Config, ClientOptions)>,
    dir: PathBuf,
    made: tokio::sync::Mutex<HashMap<String, kube::Client>>,
}

impl Clients {
    /// Every controller uses `client` (tests; managers without service-account
    /// credentials).
    pub fn shared(client: kube::Client) -> Clients {
        Clients {
            base: client,
            config: None,
            dir: PathBuf::new(),
            made: Default::default(),
        }
    }

    /// Controllers get their own service-account clients to the server `config` reaches.
    pub fn per_controller(config: kube::Config, options: ClientOptions) -> anyhow::Result<Clients> {
        let base = kyb_runtime::client::from_config(config.clone(), options)?;
        let dir = std::env::temp_dir().join(format!(
            "kyb-controller-tokens-{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("restricting {}", dir.display()))?;
        Ok(Clients {
            base,
            config: Some((config, options)),
            dir,
            made: Default::default(),
        })
    }

    /// The manager's own client.
    pub fn base(&self) -> &kube::Client {
        &self.base
    }

    /// The client of the controller `name` (its service account's identity).
    pub async fn for_controller(&self, name: &str) -> anyhow::Result<kube::Client> {
        let Some((config, options)) = &self.config else {
            return Ok(self.base.clone());
        };
        let mut made = self.made.lock().await;
        if let Some(client) = made.get(name) {
            return Ok(client.clone());
        }
        let accounts: Api<ServiceAccount> = Api::namespaced(self.base.clone(), NAMESPACE);
        let account = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(NAMESPACE.to_string()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        };
        match accounts.create(&PostParams::default(), &account).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => {
                return Err(error).with_context(|| format!("creating the service account {name}"));
            }
        }
        let path = self.dir.join(name);
        write_token(&accounts, name, &path).await?;
        let mut config = config.clone();
        config.auth_info = kube::config::AuthInfo {
            token_file: Some(path.to_string_lossy().into_owned()),
            ..kube::config::AuthInfo::default()
        };
        let client = kyb_runtime::client::from_config(config, *options)?;
        made.insert(name.to_string(), client.clone());
        let name = name.to_string();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(RENEW_EVERY).await;
                if let Err(error) = write_token(&accounts, &name, &path).await {
                    tracing::warn!(account = %name, error = %format!("{error:#}"), "cannot renew the controller's token");
                }
            }
        });
        Ok(client)
    }
}

/// Requests a token for `name` and writes it to `path` (atomically, mode 0600).
async fn write_token(
    accounts: &Api<ServiceAccount>,
    name: &str,
    path: &Path,
) -> anyhow::Result<()> {
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: vec![],
            expiration_seconds: Some(TOKEN_LIFETIME),
            bound_object_ref: None,
        },
        ..TokenRequest::default()
    };
    // A just-created account may not be visible to the token endpoint yet (it reads the
    // API server's cache): retry a NotFound for a few seconds.
    let mut attempts = 0;
    let issued = loop {
        match accounts
            .create_token_request(name, &PostParams::default(), &request)
            .await
        {
            Err(kube::Error::Api(s)) if s.code == 404 && attempts < 50 => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            result => break result.with_context(|| format!("requesting a token for {name}"))?,
        }
    };
    let token = issued.status.map(|s| s.token).unwrap_or_default();
    let temporary = path.with_extension("new");
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)
            .with_context(|| format!("writing {}", temporary.display()))?;
        file.write_all(token.as_bytes())
            .with_context(|| format!("writing {}", temporary.display()))?;
    }
    std::fs::rename(&temporary, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

impl Drop for Clients {
    fn drop(&mut self) {
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
