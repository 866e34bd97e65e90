//! `/logs/`: the node's log files (`/var/log` on a Kubernetes node), as kubelet serves them
//! with Go's file server: a directory as an HTML listing (`<pre>` of links, directories
//! with a trailing `/`), a file streamed. Nothing outside the directory is reachable: `..`
//! segments are refused and a symbolic link leading out of it is not followed.

use super::body::{self, Response};
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use std::path::{Component, Path, PathBuf};
use tokio::io::AsyncReadExt as _;

/// The file or directory `relative` names under `root`, if it stays inside it.
pub fn resolve(root: &Path, relative: &str) -> Option<PathBuf> {
    let mut path = root.to_path_buf();
    for part in Path::new(relative).components() {
        match part {
            Component::Normal(name) => path.push(name),
            Component::CurDir | Component::RootDir => {}
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    let real = std::fs::canonicalize(&path).ok()?;
    let root = std::fs::canonicalize(root).ok()?;
    real.starts_with(&root).then_some(real)
}

/// Go's `htmlReplacer`.
fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;")
}

/// A link's target, percent-encoded as Go's `url.URL{Path: name}.String()` writes it.
fn href(name: &str) -> String {
    let mut out = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The HTML listing of a directory.
pub fn listing(dir: &Path) -> std::io::Result<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|entry| {
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                name.push('/');
            }
            name
        })
        .collect();
    names.sort();
    let mut html = String::from(
        "<!doctype html>\n<meta name=\"viewport\" content=\"width=device-width\">\n<pre>\n",
    );
    for name in names {
        html.push_str(&format!(
            "<a href=\"{}\">{}</a>\n",
            html_escape(&href(&name)),
            html_escape(&name)
        ));
    }
    html.push_str("</pre>\n");
    Ok(html)
}

/// `GET /logs/<relative>` under `root`.
pub async fn serve(root: &Path, request_path: &str, relative: &str) -> Response {
    let Some(path) = resolve(root, relative) else {
        return body::http_error(StatusCode::NOT_FOUND, "404 page not found");
    };
    let Ok(metadata) = tokio::fs::metadata(&path).await else {
        return body::http_error(StatusCode::NOT_FOUND, "404 page not found");
    };
    if metadata.is_dir() {
        if !request_path.ends_with('/') {
            // Go's file server: a directory is addressed with a trailing slash.
            let last = request_path.rsplit('/').next().unwrap_or_default();
            let mut response = body::text(StatusCode::MOVED_PERMANENTLY, "");
            if let Ok(location) = HeaderValue::from_str(&format!("{last}/")) {
                response.headers_mut().insert(header::LOCATION, location);
            }
            return response;
        }
        return match listing(&path) {
            Ok(html) => body::bytes(StatusCode::OK, "text/html; charset=utf-8", html),
            Err(error) => body::http_error(StatusCode::INTERNAL_SERVER_ERROR, error),
        };
    }
    let mut file = match tokio::fs::File::open(&path).await {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
            return body::http_error(StatusCode::FORBIDDEN, "403 Forbidden");
        }
        Err(error) => return body::http_error(StatusCode::INTERNAL_SERVER_ERROR, error),
    };
    let (tx, mut response) = body::stream("text/plain; charset=utf-8");
    if let Ok(length) = HeaderValue::from_str(&metadata.len().to_string()) {
        response
            .headers_mut()
            .insert(header::CONTENT_LENGTH, length);
    }
    let mut remaining = metadata.len();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 64 << 10];
        while remaining > 0 {
            let want = buf.len().min(remaining as usize);
            match file.read(&mut buf[..want]).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    remaining -= n as u64;
                    if tx.send(Bytes::copy_from_slice(&buf[..n])).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    response
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn paths_stay_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("log");
        std::fs::create_dir_all(root.join("pods")).unwrap();
        std::fs::write(root.join("syslog"), "x").unwrap();
        std::fs::write(dir.path().join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("escape")).unwrap();
        assert!(resolve(&root, "syslog").is_some());
        assert!(resolve(&root, "pods").is_some());
        assert!(resolve(&root, "").is_some());
        assert!(resolve(&root, "../secret").is_none());
        assert!(resolve(&root, "pods/../../secret").is_none());
        assert!(resolve(&root, "escape").is_none());
        assert!(resolve(&root, "missing").is_none());
        let html = listing(&root).unwrap();
        assert!(html.contains("<a href=\"pods/\">pods/</a>\n"), "{html}");
        assert!(html.contains("<a href=\"syslog\">syslog</a>\n"));
        assert_eq!(href("a b"), "a%20b");
    }
}
