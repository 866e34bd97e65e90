//! The identities of the components `kyb server` runs besides the API server: each gets
//! its own client certificate from the cluster CA and its own kubeconfig in
//! `<data-dir>/components/`, and talks to the API with only the permissions the bootstrap
//! RBAC policy (or, for kubelets, the Node authorizer) gives it — exactly as it would as a
//! separate process (`kyb scheduler --kubeconfig …`).

use anyhow::Context;
use kyb_pki::{Credentials, Pki};
use std::path::{Path, PathBuf};

/// One component's identity.
pub struct Component {
    /// The kubeconfig's file stem (`scheduler`, `controller-manager`, `kubelet`).
    pub file: &'static str,
    pub user: String,
    pub credentials: Credentials,
}

/// The components' identities, issued (or reused) from the cluster CA.
pub fn issue(pki: &Pki, node_name: &str) -> anyhow::Result<Vec<Component>> {
    let wanted: [(&str, String, Vec<&str>); 3] = [
        ("scheduler", "system:kube-scheduler".into(), vec![]),
        (
            "controller-manager",
            "system:kube-controller-manager".into(),
            vec![],
        ),
        (
            "kubelet",
            format!("system:node:{node_name}"),
            vec!["system:nodes"],
        ),
    ];
    wanted
        .into_iter()
        .map(|(file, user, groups)| {
            let credentials = pki
                .client(file, &user, &groups)
                .with_context(|| format!("issuing the {file} certificate"))?;
            Ok(Component {
                file,
                user,
                credentials,
            })
        })
        .collect()
}

/// How the API server reaches kubelets: the certificate and key of
/// `--kubelet-client-certificate`/`--kubelet-client-key`, else `kube-apiserver-kubelet-client`
/// issued from the cluster CA (the API server binds it to `system:kubelet-api-admin`);
/// kubelets verified against `--kubelet-certificate-authority`, else the cluster CA.
pub fn kubelet_client(
    pki: &Pki,
    args: &crate::cli::KubeletClientArgs,
) -> anyhow::Result<kyb_apiserver::kubelet::KubeletClientConfig> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    };
    let credentials = match (&args.kubelet_client_certificate, &args.kubelet_client_key) {
        (Some(cert), Some(key)) => Credentials {
            cert_pem: read(cert)?,
            key_pem: read(key)?,
        },
        _ => pki
            .client(
                "apiserver-kubelet-client",
                "kube-apiserver-kubelet-client",
                &[],
            )
            .context("issuing the kubelet client certificate")?,
    };
    let certificate_authority = match &args.kubelet_certificate_authority {
        Some(path) => read(path)?,
        None => pki.ca_pem().to_string(),
    };
    Ok(kyb_apiserver::kubelet::KubeletClientConfig {
        client_certificate: Some(credentials),
        certificate_authority: Some(certificate_authority),
        preferred_address_types: args.kubelet_preferred_address_types.clone(),
        ..Default::default()
    })
}

/// Where the components' kubeconfigs are, under the data dir.
const DIR: &str = "components";

/// The kubeconfig of the component whose file stem is `file` (`scheduler`).
pub fn kubeconfig(data_dir: &Path, file: &str) -> PathBuf {
    data_dir.join(DIR).join(format!("{file}.kubeconfig"))
}

/// Writes each component's kubeconfig (mode 0600) for the server at `url`.
pub fn write_kubeconfigs(
    components: &[Component],
    data_dir: &Path,
    url: &str,
    ca_pem: &str,
) -> anyhow::Result<()> {
    let dir = data_dir.join(DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for component in components {
        let contents = kyb_pki::kubeconfig::render(
            url,
            ca_pem,
            &component.user,
            &kyb_pki::kubeconfig::User::Certificate(&component.credentials),
        );
        let path = kubeconfig(data_dir, component.file);
        kyb_pki::kubeconfig::write(&path, &contents)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// This machine's node name: its hostname, lower-cased (as the kubelet defaults it).
pub fn node_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_ascii_lowercase())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// The leader-election identity of this server's in-process components: the node name and
/// a suffix made once and kept in the data dir, so that a restarted server takes its own
/// lease back at once while another server sharing the store waits for it to expire.
pub fn election_identity(data_dir: &Path) -> anyhow::Result<String> {
    let dir = data_dir.join(DIR);
    let path = dir.join("election-identity");
    if let Ok(kept) = std::fs::read_to_string(&path) {
        let kept = kept.trim();
        if !kept.is_empty() {
            return Ok(kept.to_string());
        }
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let identity = format!("{}_{:016x}", node_name(), fastrand::u64(..));
    std::fs::write(&path, &identity).with_context(|| format!("writing {}", path.display()))?;
    Ok(identity)
}
