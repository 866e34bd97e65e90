//! Kubeconfig files: one cluster (server URL and CA), one user (a client certificate or a
//! token), one context, as kubectl and client libraries read them.

use crate::Credentials;
use base64::Engine;
use std::path::Path;

/// How the kubeconfig's user authenticates.
pub enum User<'a> {
    Certificate(&'a Credentials),
    Token(&'a str),
}

/// A kubeconfig for `server` (`https://127.0.0.1:6443`), trusting `ca_pem`.
pub fn render(server: &str, ca_pem: &str, user_name: &str, user: &User<'_>) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    let user = match user {
        User::Certificate(credentials) => format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(&credentials.cert_pem),
            b64(&credentials.key_pem)
        ),
        User::Token(token) => format!("    token: {}\n", quote(token)),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kybernetes\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\ncontexts:\n- name: kybernetes\n  context:\n    cluster: kybernetes\n    user: {name}\n    namespace: default\ncurrent-context: kybernetes\nusers:\n- name: {name}\n  user:\n{user}preferences: {{}}\n",
        ca = b64(ca_pem),
        name = quote(user_name),
    )
}

/// Writes a kubeconfig atomically with mode 0600.
pub fn write(path: &Path, contents: &str) -> Result<(), crate::Error> {
    crate::files::write_private(path, contents)
}

/// A YAML double-quoted scalar.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
