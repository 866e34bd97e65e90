//! Pods really running: `kyb server` with its node agent on a real containerd, inside the
//! test's own network namespace (see [`crate::node`]), driven by the real kubectl. Each
//! test needs root (containers, network namespaces).

use crate::node::{BUSYBOX, NodeCluster, condition, container_status, init_container_status};
use serde_json::Value;

fn state<'a>(status: &'a Value, which: &str) -> &'a Value {
    &status["state"][which]
}

#[test]
fn a_deployment_of_busybox_httpd_becomes_ready_and_answers_as_root() {
    let cluster = NodeCluster::start();
    // The README's first example.
    cluster.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        &format!("--image={BUSYBOX}"),
        "--replicas=2",
        "--",
        "httpd",
        "-f",
        "-p",
        "80",
        "-h",
        "/etc",
    ]);
    cluster.kubectl_ok(&[
        "wait",
        "--for=condition=Available",
        "deployment/web",
        "--timeout=90s",
    ]);
    let pods = cluster.get_json(&["pods", "-l", "app=web"]).unwrap();
    let pods = pods["items"].as_array().unwrap();
    assert_eq!(pods.len(), 2);
    let mut ips = vec![];
    for pod in pods {
        let status = &pod["status"];
        assert_eq!(status["phase"], "Running", "{pod}");
        assert_eq!(condition(pod, "Ready"), Some("True"));
        assert_eq!(condition(pod, "PodReadyToStartContainers"), Some("True"));
        assert_eq!(condition(pod, "Initialized"), Some("True"));
        assert_eq!(condition(pod, "ContainersReady"), Some("True"));
        assert_eq!(condition(pod, "PodScheduled"), Some("True"));
        assert_eq!(status["qosClass"], "BestEffort");
        assert!(status["startTime"].is_string());
        assert!(status["hostIP"].is_string());
        let container = container_status(pod, "busybox").unwrap();
        assert_eq!(container["ready"], true);
        assert_eq!(container["started"], true);
        assert_eq!(container["restartCount"], 0);
        assert_eq!(container["image"], BUSYBOX);
        assert!(
            container["containerID"]
                .as_str()
                .unwrap()
                .starts_with("containerd://")
        );
        assert!(container["imageID"].as_str().unwrap().contains("sha256:"));
        assert!(state(container, "running")["startedAt"].is_string());
        let ip = status["podIP"].as_str().unwrap().to_string();
        assert!(ip.starts_with("10.42.0."), "{ip}");
        ips.push(ip);
    }
    assert_ne!(ips[0], ips[1]);
    // Each pod answers on its own address, from inside the test's namespace.
    for (pod, ip) in pods.iter().zip(&ips) {
        let name = pod["metadata"]["name"].as_str().unwrap();
        let hostname = cluster
            .http_get(ip, 80, "/hostname")
            .unwrap_or_else(|| panic!("no answer from {ip}"));
        assert_eq!(hostname.trim(), name);
        let events = cluster.events(name);
        for expected in [
            format!("Pulled: Container image \"{BUSYBOX}\" already present on machine"),
            "Created: Created container: busybox".to_string(),
            "Started: Started container busybox".to_string(),
        ] {
            assert!(events.contains(&expected), "{expected:?} not in {events:?}");
        }
    }

    // Scaled down: the deleted pod's container is stopped and its object removed.
    cluster.kubectl_ok(&["scale", "deployment/web", "--replicas=1"]);
    cluster.wait_for("one web pod left", crate::node::POD_WAIT, |cluster| {
        let pods = cluster.get_json(&["pods", "-l", "app=web"])?;
        (pods["items"].as_array()?.len() == 1).then_some(())
    });
    let running = cluster.containerd.ctr(&["tasks", "ls"]).unwrap();
    let running = running.lines().filter(|l| l.contains("RUNNING")).count();
    // One pod left: its sandbox (pause) and its container.
    assert_eq!(running, 2, "{running}");
}

#[test]
fn a_crashing_container_backs_off_with_growing_restart_counts_as_root() {
    let cluster = NodeCluster::start();
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: crash}}
spec:
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sh", "-c", "echo going down > /dev/termination-log; exit 3"]
"#
    ));
    let pod = cluster.wait_for_pod("crash", "two restarts in CrashLoopBackOff", |pod| {
        container_status(pod, "c").is_some_and(|c| {
            c["restartCount"].as_i64() >= Some(2)
                && state(c, "waiting")["reason"] == "CrashLoopBackOff"
        })
    });
    let c = container_status(&pod, "c").unwrap();
    let message = state(c, "waiting")["message"].as_str().unwrap();
    assert!(
        message.starts_with("back-off 20s restarting failed container=c pod=crash_default("),
        "{message}"
    );
    let last = &c["lastState"]["terminated"];
    assert_eq!(last["exitCode"], 3);
    assert_eq!(last["reason"], "Error");
    assert_eq!(last["message"], "going down\n");
    assert_eq!(pod["status"]["phase"], "Running");
    assert_eq!(condition(&pod, "Ready"), Some("False"));
    let events = cluster.events("crash");
    assert!(
        events.iter().any(|e| e
            .starts_with("BackOff: Back-off restarting failed container c in pod crash_default(")),
        "{events:?}"
    );
    // kubectl shows it as users know it.
    let table = cluster.kubectl_ok(&["get", "pod", "crash"]);
    assert!(table.contains("CrashLoopBackOff"), "{table}");
}

#[test]
fn init_containers_run_in_order_then_sidecars_and_containers_as_root() {
    let cluster = NodeCluster::start();
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: ordered}}
spec:
  initContainers:
  - name: first
    image: {BUSYBOX}
    command: ["sleep", "1"]
  - name: sidecar
    image: {BUSYBOX}
    restartPolicy: Always
    command: ["sleep", "3600"]
  - name: second
    image: {BUSYBOX}
    command: ["true"]
  containers:
  - name: main
    image: {BUSYBOX}
    command: ["sleep", "3600"]
"#
    ));
    let pod = cluster.wait_for_pod("ordered", "Ready", |pod| {
        condition(pod, "Ready") == Some("True")
    });
    let time = |status: &Value, state_: &str, field: &str| {
        state(status, state_)[field]
            .as_str()
            .unwrap()
            .parse::<jiff::Timestamp>()
            .unwrap()
    };
    let first = init_container_status(&pod, "first").unwrap();
    let sidecar = init_container_status(&pod, "sidecar").unwrap();
    let second = init_container_status(&pod, "second").unwrap();
    let main = container_status(&pod, "main").unwrap();
    assert_eq!(state(first, "terminated")["reason"], "Completed");
    assert_eq!(state(second, "terminated")["exitCode"], 0);
    assert!(state(sidecar, "running").is_object(), "{sidecar}");
    assert_eq!(sidecar["ready"], true);
    assert!(time(first, "terminated", "finishedAt") <= time(sidecar, "running", "startedAt"));
    assert!(time(sidecar, "running", "startedAt") <= time(second, "terminated", "startedAt"));
    assert!(time(second, "terminated", "finishedAt") <= time(main, "running", "startedAt"));
    assert_eq!(pod["status"]["phase"], "Running");
}

#[test]
fn restart_policies_end_pods_in_their_phase_as_root() {
    let cluster = NodeCluster::start();
    for (name, policy, command) in [
        ("succeeds", "Never", "exit 0"),
        ("fails", "Never", "echo giving up; exit 7"),
        (
            "retries",
            "OnFailure",
            "test -f /tmp/ran && exit 0; touch /tmp/ran; exit 1",
        ),
    ] {
        cluster.apply(&format!(
            r#"
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  restartPolicy: {policy}
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sh", "-c", "{command}"]
    terminationMessagePolicy: FallbackToLogsOnError
"#
        ));
    }
    let phase = |name: &str, phase: &'static str| {
        cluster.wait_for_pod(name, phase, move |pod| pod["status"]["phase"] == phase)
    };
    let succeeded = phase("succeeds", "Succeeded");
    assert_eq!(condition(&succeeded, "Ready"), Some("False"));
    let failed = phase("fails", "Failed");
    let terminated = state(container_status(&failed, "c").unwrap(), "terminated");
    assert_eq!(terminated["exitCode"], 7);
    // No termination message written: the end of its log (FallbackToLogsOnError).
    assert_eq!(terminated["message"], "giving up\n");
    // OnFailure: restarted once in the same pod (its /tmp survives? no: a new container
    // has a fresh file system), so it fails again and keeps being restarted.
    let retried = cluster.wait_for_pod("retries", "restarted", |pod| {
        container_status(pod, "c").is_some_and(|c| c["restartCount"].as_i64() >= Some(1))
    });
    assert_eq!(retried["status"]["phase"], "Running");
    let table = cluster.kubectl_ok(&["get", "pods"]);
    assert!(table.contains("Completed"), "{table}");
    assert!(table.contains("Error"), "{table}");
}

#[test]
fn an_image_that_does_not_exist_fails_to_pull_then_backs_off_as_root() {
    let cluster = NodeCluster::start();
    cluster.apply(
        r#"
apiVersion: v1
kind: Pod
metadata: {name: missing}
spec:
  containers:
  - name: c
    image: kyb.local/does-not-exist:1.0
"#,
    );
    // The pull fails (ErrImagePull), then waits (ImagePullBackOff); the first state may
    // pass between two polls, the events keep both.
    let pod = cluster.wait_for_pod("missing", "ImagePullBackOff", |pod| {
        container_status(pod, "c")
            .is_some_and(|c| state(c, "waiting")["reason"] == "ImagePullBackOff")
    });
    assert_eq!(pod["status"]["phase"], "Pending");
    let message = state(container_status(&pod, "c").unwrap(), "waiting")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        message,
        "Back-off pulling image \"kyb.local/does-not-exist:1.0\""
    );
    let events = cluster.events("missing");
    for expected in [
        "Pulling: Pulling image \"kyb.local/does-not-exist:1.0\"",
        "Failed: Error: ErrImagePull",
        "BackOff: Back-off pulling image \"kyb.local/does-not-exist:1.0\"",
        "Failed: Error: ImagePullBackOff",
    ] {
        assert!(
            events.iter().any(|e| e == expected),
            "{expected:?} not in {events:?}"
        );
    }
    assert!(
        events
            .iter()
            .any(|e| e
                .starts_with("Failed: Failed to pull image \"kyb.local/does-not-exist:1.0\": ")),
        "{events:?}"
    );
}

#[test]
fn a_restarted_server_finds_its_pods_and_restarts_nothing_as_root() {
    let mut cluster = NodeCluster::start();
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: survivor}}
spec:
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["httpd", "-f", "-p", "8080", "-h", "/etc"]
"#
    ));
    let before = cluster.wait_for_pod("survivor", "Ready", |pod| {
        condition(pod, "Ready") == Some("True")
    });
    let id = container_status(&before, "c").unwrap()["containerID"].clone();
    let ip = before["status"]["podIP"].as_str().unwrap().to_string();
    cluster.stop_server();
    // The container keeps serving while kyb is down.
    assert!(cluster.http_get(&ip, 8080, "/hostname").is_some());
    cluster.start_server(&[]);
    let after = cluster.wait_for_pod("survivor", "Ready again", |pod| {
        condition(pod, "Ready") == Some("True")
    });
    let c = container_status(&after, "c").unwrap();
    assert_eq!(c["containerID"], id);
    assert_eq!(c["restartCount"], 0);
    assert_eq!(after["status"]["podIP"], before["status"]["podIP"]);
    let tasks = cluster.containerd.ctr(&["tasks", "ls"]).unwrap();
    assert_eq!(
        tasks.lines().filter(|l| l.contains("RUNNING")).count(),
        2,
        "{tasks}"
    );
}

#[test]
fn deletion_stops_containers_within_the_grace_period_and_removes_the_pod_as_root() {
    let cluster = NodeCluster::start();
    // A container that ignores SIGTERM is killed once its 3 s grace period has passed.
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: stubborn}}
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"]
"#
    ));
    cluster.wait_for_pod("stubborn", "Ready", |pod| {
        condition(pod, "Ready") == Some("True")
    });
    let started = std::time::Instant::now();
    cluster.kubectl_ok(&["delete", "pod", "stubborn", "--wait=true"]);
    let took = started.elapsed();
    assert!(took >= std::time::Duration::from_secs(3), "{took:?}");
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    let events = cluster.events("stubborn");
    assert!(
        events.contains(&"Killing: Stopping container c".to_string()),
        "{events:?}"
    );
    let tasks = cluster.containerd.ctr(&["tasks", "ls"]).unwrap();
    assert_eq!(
        tasks.lines().filter(|l| l.contains("RUNNING")).count(),
        0,
        "{tasks}"
    );
}

#[test]
fn a_static_pod_runs_from_its_manifest_with_a_mirror_pod_as_root() {
    let manifests = kyb_testkit::temp_dir("manifests").unwrap();
    let manifest = manifests.path().join("web.yaml");
    std::fs::write(
        &manifest,
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: static-web\nspec:\n  containers:\n  - name: web\n    image: {BUSYBOX}\n    command: [\"httpd\", \"-f\", \"-p\", \"80\", \"-h\", \"/etc\"]\n"
        ),
    )
    .unwrap();
    let cluster =
        NodeCluster::start_with(&["--pod-manifest-path", manifests.path().to_str().unwrap()]);
    let name = format!("static-web-{}", cluster.node_name);
    let mirror = cluster.wait_for_pod(&name, "its mirror pod Running and Ready", |pod| {
        condition(pod, "Ready") == Some("True")
    });
    let annotations = &mirror["metadata"]["annotations"];
    assert_eq!(annotations["kubernetes.io/config.source"], "file");
    assert!(annotations["kubernetes.io/config.mirror"].is_string());
    assert_eq!(mirror["metadata"]["ownerReferences"][0]["kind"], "Node");
    let ip = mirror["status"]["podIP"].as_str().unwrap().to_string();
    assert_eq!(
        cluster
            .http_get(&ip, 80, "/hostname")
            .map(|h| h.trim().to_string()),
        Some(name.clone())
    );
    // Deleting the mirror pod does not stop the static pod: the mirror comes back.
    let uid = mirror["metadata"]["uid"].clone();
    cluster.kubectl_ok(&["delete", "pod", &name, "--wait=false"]);
    cluster.wait_for_pod(&name, "a new mirror pod", |pod| {
        pod["metadata"]["uid"] != uid && condition(pod, "Ready") == Some("True")
    });
    assert!(cluster.http_get(&ip, 80, "/hostname").is_some());
    // Removing the manifest stops the pod and deletes its mirror.
    std::fs::remove_file(&manifest).unwrap();
    cluster.wait_for(
        "the mirror pod deleted",
        std::time::Duration::from_secs(90),
        |cluster| cluster.pod(&name).is_none().then_some(()),
    );
    cluster.wait_for(
        "the static pod stopped",
        std::time::Duration::from_secs(60),
        |cluster| {
            let tasks = cluster.containerd.ctr(&["tasks", "ls"]).ok()?;
            (!tasks.lines().any(|l| l.contains("RUNNING"))).then_some(())
        },
    );
}

/// Runs `command` in the pod's only container through `kubectl exec`... which needs the
/// streaming issue; until then the pod reports what it sees through an HTTP server over
/// its own files: `httpd -h /data` serves the volume.
fn served(cluster: &NodeCluster, ip: &str, path: &str) -> Option<String> {
    cluster.http_get(ip, 80, path)
}

#[test]
fn config_map_and_secret_volumes_and_env_follow_their_sources_as_root() {
    let cluster = NodeCluster::start();
    cluster.kubectl_ok(&[
        "create",
        "configmap",
        "site",
        "--from-literal=index.html=first",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "keys",
        "--from-literal=token=s3cret",
    ]);
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: reader}}
spec:
  containers:
  - name: web
    image: {BUSYBOX}
    command: ["sh", "-c", "mkdir -p /www && echo -n $GREETING > /www/env && ln -s /site/index.html /www/index.html && ln -s /keys/token /www/token && exec httpd -f -p 80 -h /www"]
    env:
    - name: GREETING
      valueFrom: {{configMapKeyRef: {{name: site, key: index.html}}}}
    volumeMounts:
    - {{name: site, mountPath: /site}}
    - {{name: keys, mountPath: /keys}}
  volumes:
  - name: site
    configMap: {{name: site}}
  - name: keys
    secret: {{secretName: keys}}
"#
    ));
    let pod = cluster.wait_for_pod("reader", "Ready", |pod| {
        condition(pod, "Ready") == Some("True")
    });
    let ip = pod["status"]["podIP"].as_str().unwrap().to_string();
    assert_eq!(
        served(&cluster, &ip, "/index.html").as_deref(),
        Some("first")
    );
    assert_eq!(served(&cluster, &ip, "/token").as_deref(), Some("s3cret"));
    assert_eq!(served(&cluster, &ip, "/env").as_deref(), Some("first"));
    // Updated sources reach the running container's files in place (not its environment).
    cluster.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: site}\ndata: {index.html: second}\n",
    );
    cluster.kubectl_ok(&[
        "patch",
        "secret",
        "keys",
        "-p",
        r#"{"stringData":{"token":"rotated"}}"#,
    ]);
    cluster.wait_for(
        "the volumes updated in place",
        std::time::Duration::from_secs(60),
        |cluster| {
            (served(cluster, &ip, "/index.html").as_deref() == Some("second")
                && served(cluster, &ip, "/token").as_deref() == Some("rotated"))
            .then_some(())
        },
    );
    assert_eq!(served(&cluster, &ip, "/env").as_deref(), Some("first"));
    let restarts =
        container_status(&cluster.pod("reader").unwrap(), "web").unwrap()["restartCount"].clone();
    assert_eq!(restarts, 0);
}

#[test]
fn a_missing_config_map_holds_the_pod_until_it_exists_as_root() {
    let cluster = NodeCluster::start();
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: waiting}}
spec:
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sleep", "3600"]
    volumeMounts:
    - {{name: settings, mountPath: /settings}}
  volumes:
  - name: settings
    configMap: {{name: settings}}
"#
    ));
    cluster.wait_for("a FailedMount event", crate::node::POD_WAIT, |cluster| {
        cluster
            .events("waiting")
            .into_iter()
            .find(|e| {
                e == "FailedMount: MountVolume.SetUp failed for volume \"settings\" : configmap \"settings\" not found"
            })
    });
    let pod = cluster.pod("waiting").unwrap();
    assert_eq!(pod["status"]["phase"], "Pending");
    let c = container_status(&pod, "c").unwrap();
    assert_eq!(state(c, "waiting")["reason"], "ContainerCreating");
    cluster.kubectl_ok(&["create", "configmap", "settings", "--from-literal=a=b"]);
    cluster.wait_for_pod("waiting", "Running once the configMap exists", |pod| {
        pod["status"]["phase"] == "Running"
    });
}

#[test]
fn local_volumes_claims_and_empty_dir_size_limits_as_root() {
    let cluster = NodeCluster::start();
    let dir = shared_dir();
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: PersistentVolume
metadata: {{name: disk}}
spec:
  storageClassName: manual
  capacity: {{storage: 1Gi}}
  accessModes: [ReadWriteOnce]
  hostPath: {{path: "{}", type: Directory}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data}}
spec:
  storageClassName: manual
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 1Gi}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: writer}}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sh", "-c", "echo written > /data/sub/out"]
    volumeMounts:
    - {{name: data, mountPath: /data/sub, subPath: nested}}
  volumes:
  - name: data
    persistentVolumeClaim: {{claimName: data}}
"#,
        dir.path().display()
    ));
    let pod = cluster.wait_for_pod("writer", "Succeeded", |pod| {
        pod["status"]["phase"] == "Succeeded"
    });
    assert!(pod["spec"]["nodeName"].is_string(), "{pod}");
    let written = std::fs::read_to_string(dir.path().join("nested/out")).unwrap();
    assert_eq!(written, "written\n");
    let claim = cluster.get_json(&["pvc", "data"]).unwrap();
    assert_eq!(claim["status"]["phase"], "Bound");
    assert_eq!(claim["spec"]["volumeName"], "disk");

    // An emptyDir past its sizeLimit gets its pod evicted, as kubelet does.
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: filler}}
spec:
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sh", "-c", "dd if=/dev/zero of=/scratch/fill bs=1M count=3; sleep 3600"]
    volumeMounts:
    - {{name: scratch, mountPath: /scratch}}
  volumes:
  - name: scratch
    emptyDir: {{sizeLimit: 1Mi}}
"#
    ));
    let pod = cluster.wait_for_pod("filler", "evicted", |pod| {
        pod["status"]["phase"] == "Failed"
    });
    assert_eq!(pod["status"]["reason"], "Evicted");
    assert_eq!(
        pod["status"]["message"],
        "Usage of EmptyDir volume \"scratch\" exceeds the limit \"1Mi\". "
    );
}

/// A directory on the host that the test's pods mount (hostPath), so the test can change
/// what their probes see.
fn shared_dir() -> tempfile::TempDir {
    let dir = kyb_testkit::temp_dir("pod-files").unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    dir
}

#[test]
fn probes_fail_and_recover_and_liveness_restarts_as_root() {
    let cluster = NodeCluster::start();
    let files = shared_dir();
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: probed}}
spec:
  containers:
  - name: web
    image: {BUSYBOX}
    command: ["httpd", "-f", "-p", "80", "-h", "/www"]
    readinessProbe:
      httpGet: {{path: /ready, port: 80}}
      periodSeconds: 1
      failureThreshold: 1
    livenessProbe:
      exec: {{command: ["sh", "-c", "test ! -f /www/dead"]}}
      periodSeconds: 1
      failureThreshold: 2
    volumeMounts:
    - {{name: www, mountPath: /www}}
  - name: late
    image: {BUSYBOX}
    command: ["sh", "-c", "sleep 4; exec httpd -f -p 8081 -h /www"]
    readinessProbe:
      tcpSocket: {{port: 8081}}
      periodSeconds: 1
      failureThreshold: 1
    volumeMounts:
    - {{name: www, mountPath: /www}}
  volumes:
  - name: www
    hostPath: {{path: {}, type: Directory}}
"#,
        files.path().display()
    ));
    // httpGet fails (404) until /ready exists; tcpSocket until the late server listens.
    cluster.wait_for(
        "a failed readiness probe",
        crate::node::POD_WAIT,
        |cluster| {
            cluster.events("probed").into_iter().find(|e| {
                e == "Unhealthy: Readiness probe failed: HTTP probe failed with statuscode: 404"
            })
        },
    );
    let pod = cluster.pod("probed").unwrap();
    assert_eq!(condition(&pod, "Ready"), Some("False"));
    let web = container_status(&pod, "web").unwrap();
    assert!(state(web, "running").is_object(), "{web}");
    assert_eq!(web["ready"], false);
    std::fs::write(files.path().join("ready"), "ok").unwrap();
    cluster.wait_for_pod("probed", "Ready", |pod| {
        condition(pod, "Ready") == Some("True")
    });
    // The readiness probe fails again: the pod leaves Ready (and its endpoints).
    std::fs::remove_file(files.path().join("ready")).unwrap();
    cluster.wait_for_pod("probed", "not Ready again", |pod| {
        condition(pod, "Ready") == Some("False")
    });
    std::fs::write(files.path().join("ready"), "ok").unwrap();
    // Liveness fails twice in a row: the container is restarted.
    std::fs::write(files.path().join("dead"), "x").unwrap();
    let restarted = cluster.wait_for_pod("probed", "web restarted", |pod| {
        container_status(pod, "web").is_some_and(|c| c["restartCount"] == 1)
    });
    std::fs::remove_file(files.path().join("dead")).unwrap();
    let last = &container_status(&restarted, "web").unwrap()["lastState"]["terminated"];
    assert!(last.is_object(), "{restarted}");
    // It recovers and stays: Ready with one restart.
    let pod = cluster.wait_for_pod("probed", "Ready after the restart", |pod| {
        condition(pod, "Ready") == Some("True")
    });
    assert_eq!(container_status(&pod, "web").unwrap()["restartCount"], 1);
    assert_eq!(container_status(&pod, "late").unwrap()["restartCount"], 0);

    // The kill is an event (on a fresh pod: the readiness failures above used up the
    // event spam filter's tokens for that one, as they would in Kubernetes).
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: doomed}}
spec:
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sleep", "3600"]
    livenessProbe:
      exec: {{command: ["false"]}}
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 1
"#
    ));
    cluster.wait_for(
        "the liveness kill's events",
        crate::node::POD_WAIT,
        |cluster| {
            let events = cluster.events("doomed");
            (events.contains(
                &"Killing: Container c failed liveness probe, will be restarted".to_string(),
            ) && events.contains(&"Unhealthy: Liveness probe failed: ".to_string()))
            .then_some(())
        },
    );
}

#[test]
fn a_startup_probe_holds_liveness_and_readiness_until_it_passes_as_root() {
    let cluster = NodeCluster::start();
    let files = shared_dir();
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: slow}}
spec:
  containers:
  - name: app
    image: {BUSYBOX}
    command: ["sleep", "3600"]
    startupProbe:
      exec: {{command: ["test", "-f", "/files/started"]}}
      periodSeconds: 1
      failureThreshold: 60
    livenessProbe:
      exec: {{command: ["false"]}}
      periodSeconds: 1
      failureThreshold: 100
    volumeMounts:
    - {{name: files, mountPath: /files}}
  volumes:
  - name: files
    hostPath: {{path: {}, type: Directory}}
"#,
        files.path().display()
    ));
    cluster.wait_for("a failed startup probe", crate::node::POD_WAIT, |cluster| {
        cluster
            .events("slow")
            .into_iter()
            .find(|e| e.starts_with("Unhealthy: Startup probe failed"))
    });
    let pod = cluster.pod("slow").unwrap();
    let app = container_status(&pod, "app").unwrap();
    assert_eq!(app["started"], false);
    assert_eq!(app["ready"], false);
    // Liveness does not run before the container has started.
    assert!(
        !cluster
            .events("slow")
            .iter()
            .any(|e| e.starts_with("Unhealthy: Liveness")),
    );
    std::fs::write(files.path().join("started"), "").unwrap();
    let pod = cluster.wait_for_pod("slow", "started and Ready", |pod| {
        condition(pod, "Ready") == Some("True")
    });
    assert_eq!(container_status(&pod, "app").unwrap()["started"], true);
}

#[test]
fn graceful_deletion_runs_pre_stop_then_sigterm_as_root() {
    let cluster = NodeCluster::start();
    let files = shared_dir();
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: polite}}
spec:
  terminationGracePeriodSeconds: 20
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sh", "-c", "trap 'echo term >> /files/log; exit 0' TERM; echo started >> /files/log; while true; do sleep 1; done"]
    lifecycle:
      postStart:
        exec: {{command: ["sh", "-c", "echo post-start >> /files/hooks"]}}
      preStop:
        exec: {{command: ["sh", "-c", "echo pre-stop >> /files/log"]}}
    volumeMounts:
    - {{name: files, mountPath: /files}}
  volumes:
  - name: files
    hostPath: {{path: {}, type: Directory}}
"#,
        files.path().display()
    ));
    cluster.wait_for_pod("polite", "Ready", |pod| {
        condition(pod, "Ready") == Some("True")
    });
    assert_eq!(
        std::fs::read_to_string(files.path().join("hooks")).unwrap(),
        "post-start\n"
    );
    let started = std::time::Instant::now();
    cluster.kubectl_ok(&["delete", "pod", "polite", "--wait=true"]);
    // It exits on SIGTERM: well before its 20 s grace period.
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert_eq!(
        std::fs::read_to_string(files.path().join("log")).unwrap(),
        "started\npre-stop\nterm\n"
    );
}

#[test]
fn a_container_over_its_memory_limit_is_oom_killed_as_root() {
    let cluster = NodeCluster::start();
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: hungry}}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sh", "-c", "dd if=/dev/zero of=/dev/null bs=64M count=1"]
    resources:
      limits: {{memory: 16Mi}}
"#
    ));
    let pod = cluster.wait_for_pod("hungry", "Failed", |pod| pod["status"]["phase"] == "Failed");
    let c = container_status(&pod, "c").unwrap();
    assert_eq!(state(c, "terminated")["reason"], "OOMKilled", "{c}");
    assert_eq!(state(c, "terminated")["exitCode"], 137);
    assert_eq!(pod["status"]["qosClass"], "Burstable");

    // The pod's own cgroup carries the pod's limits: the sums of its containers'.
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: sized}}
spec:
  containers:
  - name: a
    image: {BUSYBOX}
    command: ["sleep", "3600"]
    resources:
      limits: {{cpu: 200m, memory: 64Mi}}
  - name: b
    image: {BUSYBOX}
    command: ["sleep", "3600"]
    resources:
      limits: {{cpu: 100m, memory: 32Mi}}
"#
    ));
    let pod = cluster.wait_for_pod("sized", "Running", |pod| {
        pod["status"]["phase"] == "Running"
    });
    assert_eq!(pod["status"]["qosClass"], "Guaranteed");
    let uid = pod["metadata"]["uid"].as_str().unwrap();
    let read = |file: &str| {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{file}"))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|e| panic!("{file}: {e}"))
    };
    if std::path::Path::new("/sys/fs/cgroup/memory").is_dir() {
        assert_eq!(
            read(&format!("memory/kubepods/pod{uid}/memory.limit_in_bytes")),
            "100663296"
        );
        assert_eq!(
            read(&format!("cpu/kubepods/pod{uid}/cpu.cfs_quota_us")),
            "30000"
        );
        assert_eq!(read(&format!("cpu/kubepods/pod{uid}/cpu.shares")), "307");
    } else {
        assert_eq!(read(&format!("kubepods/pod{uid}/memory.max")), "100663296");
        assert_eq!(read(&format!("kubepods/pod{uid}/cpu.max")), "30000 100000");
    }
}

#[test]
fn the_node_registers_with_its_flags_as_root() {
    let cluster = NodeCluster::start_with(&[
        "--node-labels",
        "tier=edge,kyb.test/rack=r1",
        "--register-with-taints",
        "dedicated=edge:PreferNoSchedule",
        "--max-pods",
        "20",
        "--system-reserved",
        "memory=100Mi",
    ]);
    let node = cluster.get_json(&["node", &cluster.node_name]).unwrap();
    let labels = &node["metadata"]["labels"];
    assert_eq!(labels["tier"], "edge");
    assert_eq!(labels["kyb.test/rack"], "r1");
    assert_eq!(labels["kubernetes.io/hostname"], cluster.node_name.as_str());
    assert_eq!(labels["kubernetes.io/os"], "linux");
    let taints = node["spec"]["taints"].as_array().unwrap();
    assert!(
        taints.iter().any(|t| t["key"] == "dedicated"
            && t["value"] == "edge"
            && t["effect"] == "PreferNoSchedule"),
        "{taints:?}"
    );
    assert_eq!(node["status"]["capacity"]["pods"], "20");
    assert_eq!(node["status"]["allocatable"]["pods"], "20");
    let info = &node["status"]["nodeInfo"];
    assert_eq!(info["kubeletVersion"], "v1.33.0");
    assert!(
        info["containerRuntimeVersion"]
            .as_str()
            .unwrap()
            .starts_with("containerd://"),
        "{info}"
    );
    // The images on the node are reported.
    let images = node["status"]["images"].as_array().unwrap();
    assert!(
        images
            .iter()
            .any(|i| i["names"].as_array().unwrap().iter().any(|n| n == BUSYBOX)),
        "{images:?}"
    );

    // A pod bound past the scheduler that the node cannot hold is rejected, never run.
    let cpus = node["status"]["allocatable"]["cpu"]
        .as_str()
        .unwrap()
        .to_string();
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: too-big}}
spec:
  nodeName: {}
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sleep", "3600"]
    resources:
      requests: {{cpu: "100"}}
"#,
        cluster.node_name
    ));
    let pod = cluster.wait_for_pod("too-big", "rejected", |pod| {
        pod["status"]["phase"] == "Failed"
    });
    assert_eq!(pod["status"]["reason"], "OutOfcpu");
    let message = pod["status"]["message"].as_str().unwrap();
    let allocatable_milli = milli_cpu(&cpus);
    assert_eq!(
        message,
        format!(
            "Pod was rejected: Node didn't have enough resource: cpu, requested: 100000, used: 0, capacity: {allocatable_milli}"
        )
    );
    assert!(pod["status"]["containerStatuses"].is_null(), "{pod}");
}

/// A CPU quantity as the node reports it (`2`, `1900m`) in millicores.
fn milli_cpu(cpu: &str) -> i64 {
    match cpu.strip_suffix('m') {
        Some(milli) => milli.parse().unwrap(),
        None => cpu.parse::<i64>().unwrap() * 1000,
    }
}

#[test]
fn a_node_whose_agent_stops_goes_not_ready_and_its_pods_are_evicted_as_root() {
    // The agent as its own process, so that it can stop while the control plane runs;
    // the node lifecycle controller gives up on a silent node after 6 s.
    let mut cluster = NodeCluster::start_with(&[
        "--disable-agent",
        "--node-monitor-grace-period",
        "6s",
        "--node-monitor-period",
        "1s",
    ]);
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: tenant}}
spec:
  terminationGracePeriodSeconds: 1
  tolerations:
  - {{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 2}}
  - {{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 2}}
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sleep", "3600"]
"#
    ));
    cluster.wait_for_pod("tenant", "Ready", |pod| {
        condition(pod, "Ready") == Some("True")
    });
    // A second, healthy node (a Node and a Lease the test keeps renewing): with every
    // node of a zone down, Kubernetes stops evicting (full disruption), as would we.
    cluster.apply(
        "apiVersion: v1\nkind: Node\nmetadata: {name: standby}\nspec:\n  taints: [{key: kyb.test/standby, effect: NoSchedule}]\n",
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let heartbeat = {
        let stop = stop.clone();
        let kubeconfig = cluster.kubeconfig();
        let netns = cluster.netns.path();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                standby_heartbeat(&netns, &kubeconfig);
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
        })
    };
    cluster.wait_for("the standby node Ready", crate::node::POD_WAIT, |cluster| {
        cluster
            .get_json(&["node", "standby"])
            .filter(|node| condition(node, "Ready") == Some("True"))
    });
    cluster.stop_kubelet();
    let name = cluster.node_name.clone();
    let node = cluster.wait_for(
        "the node NotReady (Unknown)",
        crate::node::POD_WAIT,
        |cluster| {
            cluster
                .get_json(&["node", &name])
                .filter(|node| condition(node, "Ready") == Some("Unknown"))
        },
    );
    let ready = node["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()
        .clone();
    assert_eq!(ready["reason"], "NodeStatusUnknown");
    assert_eq!(ready["message"], "Kubelet stopped posting node status.");
    // Its toleration runs out: the pod is evicted (being deleted while no agent confirms).
    cluster.wait_for_pod("tenant", "evicted", |pod| {
        pod["metadata"]["deletionTimestamp"].is_string()
    });
    // The agent comes back, stops the container and the deletion completes.
    cluster.start_kubelet();
    cluster.wait_for("the evicted pod gone", crate::node::POD_WAIT, |cluster| {
        cluster.pod("tenant").is_none().then_some(())
    });
    cluster.wait_for("the node Ready again", crate::node::POD_WAIT, |cluster| {
        cluster
            .get_json(&["node", &name])
            .filter(|node| condition(node, "Ready") == Some("True"))
    });
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    heartbeat.join().unwrap();
}

/// One heartbeat of the test's `standby` node: its Lease renewed and a Ready status, as a
/// kubelet would post them (kubectl inside the cluster's namespace).
fn standby_heartbeat(netns: &std::path::Path, kubeconfig: &std::path::Path) {
    use std::io::Write as _;
    let now = jiff::Timestamp::now();
    let micro = now.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string();
    let seconds = now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let lease = format!(
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {{name: standby, namespace: kube-node-lease}}\nspec: {{holderIdentity: standby, leaseDurationSeconds: 40, renewTime: \"{micro}\"}}\n"
    );
    let status = format!(
        r#"{{"status":{{"conditions":[{{"type":"Ready","status":"True","reason":"KubeletReady","message":"kubelet is posting ready status","lastHeartbeatTime":"{seconds}","lastTransitionTime":"{seconds}"}}]}}}}"#
    );
    let kubectl = |args: &[&str], input: Option<&str>| {
        let Ok(mut child) = std::process::Command::new("nsenter")
            .arg(format!("--net={}", netns.display()))
            .arg("--")
            .arg("kubectl")
            .env("KUBECONFIG", kubeconfig)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
        else {
            return;
        };
        if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
            let _ = stdin.write_all(input.as_bytes());
        }
        drop(child.stdin.take());
        let _ = child.wait();
    };
    kubectl(&["apply", "-f", "-"], Some(&lease));
    kubectl(
        &[
            "patch",
            "node",
            "standby",
            "--subresource=status",
            "--type=merge",
            "-p",
            &status,
        ],
        None,
    );
}
