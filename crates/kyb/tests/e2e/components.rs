//! The components `kyb server` supervises: reported in `/readyz` and `/livez`, a failed one
//! restarted, all stopped cleanly on SIGTERM.

use crate::cluster::Cluster;
use crate::poll::blocking_wait_for;
use std::time::{Duration, Instant};

/// `/path` as the admin: (status code, body).
fn get(cluster: &Cluster, path: &str) -> (u16, String) {
    cluster.http("GET", path, "text/plain", b"")
}

#[test]
fn readyz_and_livez_report_each_component() {
    let cluster = Cluster::start();
    let readyz = blocking_wait_for("every component ready", || {
        let (code, body) = get(&cluster, "/readyz?verbose");
        (code == 200).then_some(body)
    });
    for line in [
        "[+]etcd ok",
        "[+]component/apiserver ok",
        "[+]component/scheduler ok",
        "[+]component/controller-manager ok",
        "[+]shutdown ok",
        "readyz check passed",
    ] {
        assert!(readyz.contains(line), "{line} missing from\n{readyz}");
    }
    assert!(
        readyz.find("component/scheduler") < readyz.find("component/controller-manager"),
        "{readyz}"
    );
    assert_eq!(
        get(&cluster, "/readyz/component/scheduler"),
        (200, "ok".to_string())
    );

    let (code, livez) = get(&cluster, "/livez?verbose");
    assert_eq!(code, 200, "{livez}");
    assert!(
        livez.contains("[+]component/controller-manager ok"),
        "{livez}"
    );
    assert!(!livez.contains("shutdown"), "readiness only:\n{livez}");
    assert_eq!(
        get(&cluster, "/livez/component/apiserver"),
        (200, "ok".to_string())
    );
    assert_eq!(get(&cluster, "/readyz/component/kubelet").0, 404);
}

#[test]
fn a_failed_controller_manager_is_reported_and_restarted() {
    // The controller manager's metrics address is taken: it fails until it is freed.
    let port = kyb_testkit::free_port().unwrap();
    let taken = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let address = format!("127.0.0.1:{port}");
    let dir = kyb_testkit::temp_dir("components").unwrap();
    // Choosing the controllers: the harness then does not wait for what they create.
    let cluster = Cluster::start_with(
        dir,
        &[
            "--controllers=*",
            "--controller-manager-metrics-address",
            &address,
        ],
    );
    blocking_wait_for("the controller manager's failure logged", || {
        let output = cluster.process.output();
        (output.contains("component failed") && output.contains("binding the metrics address"))
            .then_some(())
    });
    // Down between restarts (1 s, then 2 s, 4 s, …): reported failed.
    let readyz = blocking_wait_for("the controller manager reported failed", || {
        let (code, body) = get(&cluster, "/readyz?verbose");
        body.contains("[-]component/controller-manager failed: reason withheld")
            .then(|| {
                assert_eq!(code, 500, "{body}");
                body
            })
    });
    assert!(readyz.contains("[+]component/scheduler ok"), "{readyz}");
    assert!(readyz.contains("readyz check failed"), "{readyz}");
    assert_eq!(get(&cluster, "/readyz/component/apiserver").0, 200);

    drop(taken);
    blocking_wait_for("the controller manager restarted and ready", || {
        (get(&cluster, "/readyz").0 == 200).then_some(())
    });
    assert!(
        cluster.process.output().contains("restarting"),
        "{}",
        cluster.process.output()
    );
    cluster.wait_for_default_account("default");
}

#[test]
fn sigterm_stops_every_component_and_the_store_cleanly() {
    let mut cluster = Cluster::start();
    blocking_wait_for("every component ready", || {
        (get(&cluster, "/readyz").0 == 200).then_some(())
    });
    let asked = Instant::now();
    cluster.process.terminate().unwrap();
    let status = cluster.process.wait_exit(Duration::from_secs(15)).unwrap();
    let output = cluster.process.output();
    assert!(status.success(), "{status}: {output}");
    assert!(asked.elapsed() < Duration::from_secs(15));
    assert!(output.contains("shutting down"), "{output}");
    assert!(!output.contains("did not stop in time"), "{output}");
    assert!(!output.contains("panicked"), "{output}");

    // The store was closed cleanly: the same data dir serves again.
    let cluster = Cluster::start_in(cluster.dir);
    blocking_wait_for("ready again", || {
        (get(&cluster, "/readyz").0 == 200).then_some(())
    });
}

#[test]
fn the_apiserver_alone_reports_only_itself() {
    let dir = kyb_testkit::temp_dir("components").unwrap();
    let port = kyb_testkit::free_port().unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kyb"));
    command
        .env_remove("RUST_LOG")
        .args(["apiserver", "--bind-address", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .arg("--data-dir")
        .arg(dir.path());
    let mut process = kyb_testkit::Process::spawn(&mut command).unwrap();
    process
        .wait_for_line("kyb server ready", crate::cluster::DEADLINE)
        .unwrap();
    let cluster = Cluster { process, dir, port };
    let readyz = blocking_wait_for("the API server ready", || {
        let (code, body) = get(&cluster, "/readyz?verbose");
        (code == 200).then_some(body)
    });
    assert!(readyz.contains("[+]component/apiserver ok"), "{readyz}");
    assert!(!readyz.contains("component/scheduler"), "{readyz}");
    cluster.stop();
}

/// The holder of the `kube-system/<name>` Lease, if it has one.
fn lease_holder(cluster: &Cluster, name: &str) -> Option<String> {
    let output = cluster.kubectl(&[
        "-n",
        "kube-system",
        "get",
        "lease",
        name,
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ]);
    let holder = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (output.status.success() && !holder.is_empty()).then_some(holder)
}

/// The election identity a server keeps in its data dir.
fn election_identity(cluster: &Cluster) -> String {
    let path = cluster.dir.path().join("components/election-identity");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .trim()
        .to_string()
}

#[test]
fn two_servers_on_one_etcd_elect_one_scheduler_and_controller_manager() {
    let etcd = kyb_testkit::EtcdServer::start().unwrap();
    let flags = ["--etcd-endpoints", etcd.endpoint.as_str()];
    let first = Cluster::start_with(kyb_testkit::temp_dir("first").unwrap(), &flags);
    let first_identity = election_identity(&first);
    for lease in ["kube-scheduler", "kube-controller-manager"] {
        let holder = blocking_wait_for(&format!("{lease} held"), || lease_holder(&first, lease));
        assert_eq!(holder, first_identity, "{lease}");
    }

    // A second server on the same store waits: the leases stay with the first.
    let second = Cluster::start_with(kyb_testkit::temp_dir("second").unwrap(), &flags);
    let second_identity = election_identity(&second);
    assert_ne!(first_identity, second_identity);
    let renewed = |lease: &str| {
        second.kubectl_ok(&[
            "-n",
            "kube-system",
            "get",
            "lease",
            lease,
            "-o",
            "jsonpath={.spec.renewTime}",
        ])
    };
    let before = renewed("kube-scheduler");
    blocking_wait_for("the first server renews its lease", || {
        (renewed("kube-scheduler") != before).then_some(())
    });
    for lease in ["kube-scheduler", "kube-controller-manager"] {
        assert_eq!(lease_holder(&second, lease), Some(first_identity.clone()));
    }

    // The first one gone, the second takes both leases once they expire (15 s).
    drop(first.stop());
    for lease in ["kube-scheduler", "kube-controller-manager"] {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if lease_holder(&second, lease).as_deref() == Some(second_identity.as_str()) {
                break;
            }
            assert!(Instant::now() < deadline, "{lease} not taken over");
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}
