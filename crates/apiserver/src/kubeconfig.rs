//! The admin kubeconfig `kyb server` writes for kubectl.

use std::io::Write;
use std::path::Path;

/// Writes (atomically, mode 0600) a kubeconfig for `server_url`.
pub fn write(path: &Path, server_url: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let contents = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kybernetes\n  cluster:\n    server: {server_url}\ncontexts:\n- name: kybernetes\n  context:\n    cluster: kybernetes\n    user: admin\n    namespace: default\ncurrent-context: kybernetes\nusers:\n- name: admin\n  user: {{}}\npreferences: {{}}\n"
    );
    let temporary = path.with_extension("yaml.tmp");
    {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(contents.as_bytes())?;
        file.sync_all()?;
    }
    std::fs::rename(&temporary, path)
}
