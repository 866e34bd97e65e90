//! The binary's command line and process behaviour.

use kyb_testkit::{EtcdServer, Process};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(30);
const READY: &str = "kyb server ready";

fn kyb() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kyb"));
    command.env_remove("RUST_LOG");
    command
}

fn server(data_dir: &Path, extra: &[&str]) -> Process {
    let port = kyb_testkit::free_port().unwrap().to_string();
    let mut command = kyb();
    command
        .args([
            "server",
            "--disable-agent",
            "--bind-address",
            "127.0.0.1",
            "--port",
            &port,
            "--data-dir",
        ])
        .arg(data_dir)
        .args(extra);
    Process::spawn(&mut command).unwrap()
}

#[test]
fn version_prints_the_version() {
    let output = kyb().arg("version").output().unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8(output.stdout).unwrap().trim(),
        format!("kyb {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn server_runs_on_the_embedded_store_and_stops_on_sigterm() {
    let dir = kyb_testkit::temp_dir("kyb").unwrap();
    for _ in 0..2 {
        let mut kyb = server(dir.path(), &[]);
        let ready = kyb.wait_for_line(READY, DEADLINE).unwrap();
        assert!(ready.contains("store=\"embedded\""), "{ready}");
        assert!(dir.path().join("db/kyb.redb").is_file());
        kyb.terminate().unwrap();
        let status = kyb.wait_exit(DEADLINE).unwrap();
        assert!(status.success(), "{status}: {}", kyb.output());
    }
}

#[test]
fn server_refuses_a_damaged_store_without_panicking() {
    let dir = kyb_testkit::temp_dir("kyb").unwrap();
    std::fs::create_dir_all(dir.path().join("db")).unwrap();
    std::fs::write(dir.path().join("db/kyb.redb"), vec![0x42; 64 * 1024]).unwrap();
    let mut kyb = server(dir.path(), &[]);
    let status = kyb.wait_exit(DEADLINE).unwrap();
    let output = kyb.output();
    assert!(!status.success());
    assert!(output.contains("not a usable store file"), "{output}");
    assert!(!output.contains("panicked"), "{output}");
}

#[test]
fn server_runs_on_etcd_when_given_endpoints() {
    let etcd = EtcdServer::start().unwrap();
    let dir = kyb_testkit::temp_dir("kyb").unwrap();
    let mut kyb = server(dir.path(), &["--etcd-endpoints", &etcd.endpoint]);
    let ready = kyb.wait_for_line(READY, DEADLINE).unwrap();
    assert!(ready.contains("store=\"etcd\""), "{ready}");
    assert!(
        !dir.path().join("db").exists(),
        "no embedded store next to etcd"
    );
    kyb.terminate().unwrap();
    assert!(kyb.wait_exit(DEADLINE).unwrap().success());
}

#[test]
fn server_reports_an_unreachable_etcd() {
    let dir = kyb_testkit::temp_dir("kyb").unwrap();
    let port = kyb_testkit::free_port().unwrap();
    let endpoint = format!("http://127.0.0.1:{port}");
    let mut kyb = server(dir.path(), &["--etcd-endpoints", &endpoint]);
    let status = kyb.wait_exit(DEADLINE).unwrap();
    let output = kyb.output();
    assert!(!status.success());
    assert!(
        output.contains(&format!("connecting to etcd at {endpoint}")),
        "{output}"
    );
}
