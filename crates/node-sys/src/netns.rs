//! Network namespaces: sockets opened inside one. A socket belongs to the namespace it was
//! created in for its whole life, so a listener bound by a thread that entered a namespace
//! keeps serving there after the thread ends, while the process stays where it was.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;

/// A TCP listener bound to `addr` inside the network namespace at `netns`
/// (`/run/netns/NAME`, or `/proc/PID/ns/net`). The calling thread stays in its own
/// namespace: a short-lived thread enters the other one and binds. Needs root.
pub fn bind_tcp(netns: &Path, addr: SocketAddr) -> std::io::Result<TcpListener> {
    within(netns, move || TcpListener::bind(addr))
}

/// A TCP connection to `addr` made from inside the network namespace at `netns` (see
/// [`bind_tcp`]). Needs root.
pub fn connect_tcp(netns: &Path, addr: SocketAddr) -> std::io::Result<std::net::TcpStream> {
    within(netns, move || std::net::TcpStream::connect(addr))
}

/// Runs `open` on a short-lived thread that entered the network namespace at `netns`.
fn within<T: Send + 'static>(
    netns: &Path,
    open: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    let netns = netns.to_path_buf();
    std::thread::spawn(move || -> std::io::Result<T> {
        let file = std::fs::File::open(&netns).map_err(|e| {
            std::io::Error::new(e.kind(), format!("opening {}: {e}", netns.display()))
        })?;
        rustix::thread::move_into_link_name_space(
            std::os::fd::AsFd::as_fd(&file),
            Some(rustix::thread::LinkNameSpaceType::Network),
        )
        .map_err(|e| {
            std::io::Error::other(format!(
                "entering the network namespace {}: {e}",
                netns.display()
            ))
        })?;
        open()
    })
    .join()
    .map_err(|_| std::io::Error::other("the thread entering the network namespace panicked"))?
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_missing_namespace_is_an_error_that_names_it() {
        let error = bind_tcp(
            Path::new("/run/netns/kyb-none"),
            "127.0.0.1:0".parse().unwrap(),
        )
        .unwrap_err();
        assert!(error.to_string().contains("/run/netns/kyb-none"), "{error}");
    }

    #[test]
    fn the_own_namespace_binds_as_usual_as_root() {
        if !crate::privileges::is_root() {
            return;
        }
        let listener = bind_tcp(
            Path::new("/proc/self/ns/net"),
            "127.0.0.1:0".parse().unwrap(),
        )
        .unwrap();
        let addr = listener.local_addr().unwrap();
        std::net::TcpStream::connect(addr).unwrap();
    }
}
