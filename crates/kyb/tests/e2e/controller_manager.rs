//! `kyb controller-manager` as its own process: leader election through the
//! `kube-system/kube-controller-manager` Lease (two managers → one leads; the other takes
//! over within the lease duration when the leader dies) and its `/metrics` and `/healthz`.

use crate::cluster::{Cluster, DEADLINE};
use kyb_testkit::Process;
use std::process::Command;
use std::time::{Duration, Instant};

fn manager(cluster: &Cluster, metrics_port: u16) -> Process {
    let kubeconfig = cluster
        .dir
        .path()
        .join("components/controller-manager.kubeconfig");
    Process::spawn(
        Command::new(env!("CARGO_BIN_EXE_kyb"))
            .env_remove("RUST_LOG")
            .args([
                "controller-manager",
                "--leader-elect-lease-duration=3s",
                "--leader-elect-renew-deadline=2s",
                "--leader-elect-retry-period=500ms",
                "--metrics-bind-address",
                &format!("127.0.0.1:{metrics_port}"),
                "--kubeconfig",
            ])
            .arg(kubeconfig),
    )
    .unwrap()
}

/// The lease's holder and transitions.
fn lease(cluster: &Cluster) -> (String, i64) {
    let out = cluster.kubectl(&[
        "get",
        "lease",
        "-n",
        "kube-system",
        "kube-controller-manager",
        "-o",
        "jsonpath={.spec.holderIdentity} {.spec.leaseTransitions}",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut parts = text.split_whitespace();
    let holder = parts.next().unwrap_or_default().to_string();
    let transitions = parts.next().and_then(|t| t.parse().ok()).unwrap_or(0);
    (holder, transitions)
}

fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text
}

#[test]
fn one_manager_leads_and_the_other_takes_over() {
    // The server's own in-process manager runs no controllers and does not compete.
    let dir = kyb_testkit::temp_dir("cluster").unwrap();
    let cluster = Cluster::start_with(dir, &["--controllers=none"]);
    let ports = [
        kyb_testkit::free_port().unwrap(),
        kyb_testkit::free_port().unwrap(),
    ];
    let mut managers = [manager(&cluster, ports[0]), manager(&cluster, ports[1])];
    let deadline = Instant::now() + DEADLINE;
    let leader = loop {
        let (holder, _) = lease(&cluster);
        let leading: Vec<usize> = (0..2)
            .filter(|i| {
                !holder.is_empty()
                    && managers[*i]
                        .output()
                        .lines()
                        .any(|l| l.contains("became the leader") && l.contains(&holder))
            })
            .collect();
        if let [one] = leading[..] {
            break one;
        }
        assert!(Instant::now() < deadline, "no leader: {holder:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let follower = 1 - leader;
    managers[leader]
        .wait_for_line("controllers started", DEADLINE)
        .unwrap();
    assert!(
        !managers[follower].output().contains("controllers started"),
        "only the leader runs controllers"
    );
    // Its endpoint answers.
    assert!(http_get(ports[leader], "/healthz").ends_with("ok"));
    assert!(http_get(ports[leader], "/metrics").starts_with("HTTP/1.0 200"));

    let (first_holder, transitions) = lease(&cluster);
    managers[leader].terminate().unwrap();
    managers[leader].wait_exit(DEADLINE).unwrap();
    let stopped = Instant::now();
    managers[follower]
        .wait_for_line("controllers started", Duration::from_secs(20))
        .unwrap();
    let took = stopped.elapsed();
    let (holder, after) = lease(&cluster);
    assert_ne!(holder, first_holder);
    assert!(
        managers[follower].output().contains(&holder),
        "the follower holds the lease"
    );
    assert_eq!(after, transitions + 1);
    // Within the 3 s lease duration plus a retry period and some slack.
    assert!(took < Duration::from_secs(8), "takeover took {took:?}");
}
