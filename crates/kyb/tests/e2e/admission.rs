//! The built-in admission plugins, seen from kubectl: what they add to objects, what they
//! refuse and with which words, and the warnings they send.

use crate::cluster::Cluster;
use std::process::Output;

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn pod_security_enforces_warns_and_checks_existing_pods() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "namespace", "secure"]);
    cluster.kubectl_ok(&[
        "label",
        "namespace",
        "secure",
        "pod-security.kubernetes.io/enforce=baseline",
        "pod-security.kubernetes.io/warn=restricted",
    ]);
    // Baseline allows a plain pod; restricted warns about it.
    let output = cluster.kubectl(&["run", "plain", "--image=busybox", "-n", "secure"]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains(r#"Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "plain" must set securityContext.allowPrivilegeEscalation=false)"#),
        "{}",
        text(&output)
    );
    // A privileged pod violates baseline: refused, nothing stored.
    let privileged = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"root","namespace":"secure"},"spec":{"hostNetwork":true,"containers":[{"name":"c","image":"busybox","securityContext":{"privileged":true}}]}}"#;
    let path = cluster.write_file("privileged.json", privileged);
    let output = cluster.kubectl(&["create", "-f", path.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains(r#"pods "root" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), privileged (container "c" must not set securityContext.privileged=true)"#),
        "{}",
        text(&output)
    );
    assert!(
        !cluster
            .kubectl(&["get", "pod", "root", "-n", "secure"])
            .status
            .success()
    );
    // Workloads are warned about, never refused.
    let output = cluster.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "-n",
        "secure",
    ]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("would violate PodSecurity"),
        "{}",
        text(&output)
    );
    // Tightening enforce warns about the pods already there.
    let output = cluster.kubectl(&[
        "label",
        "namespace",
        "secure",
        "pod-security.kubernetes.io/enforce=restricted",
        "--overwrite",
    ]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains(r#"existing pods in namespace "secure" violate the new PodSecurity enforce level "restricted:latest""#),
        "{}",
        text(&output)
    );
    // The Deployment's pod (its controller made one) violates it the same way: Kubernetes
    // names one pod per group of identical violations ("plain (and 1 other pod): …").
    assert!(
        text(&output).contains("plain: allowPrivilegeEscalation != false")
            || text(&output).contains("plain (and 1 other pod): allowPrivilegeEscalation != false"),
        "{}",
        text(&output)
    );
    // A bad level is refused as invalid.
    let output = cluster.kubectl(&[
        "label",
        "namespace",
        "secure",
        "pod-security.kubernetes.io/enforce=strict",
        "--overwrite",
    ]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains("must be one of privileged, baseline, restricted"),
        "{}",
        text(&output)
    );
    // A restricted-conforming pod is admitted.
    let good = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"good","namespace":"secure"},"spec":{"securityContext":{"runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}},"containers":[{"name":"c","image":"busybox","securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}]}}"#;
    let path = cluster.write_file("good.json", good);
    let output = cluster.kubectl(&["create", "-f", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(!text(&output).contains("Warning"), "{}", text(&output));
}

/// Waits until `kubectl get <args>` prints `want`.
fn wait_output(cluster: &Cluster, args: &[&str], want: &str) {
    let deadline = std::time::Instant::now() + crate::cluster::DEADLINE;
    loop {
        let output = cluster.kubectl(args);
        let got = String::from_utf8_lossy(&output.stdout).to_string();
        if got == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "kubectl {args:?}: want {want:?}, still {got:?} {}",
            String::from_utf8_lossy(&output.stderr)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn resource_quota_holds_under_concurrent_creates_and_recovers_after_deletes() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "namespace", "q"]);
    cluster.kubectl_ok(&[
        "create",
        "quota",
        "objects",
        "-n",
        "q",
        "--hard=configmaps=6,pods=2,requests.cpu=1",
    ]);
    // The resource quota controller fills in the status (the namespace's kube-root-ca.crt
    // counts); until then the quota constrains nothing.
    wait_output(
        &cluster,
        &[
            "get",
            "quota",
            "objects",
            "-n",
            "q",
            "-o",
            "jsonpath={.status.used.configmaps}",
        ],
        "1",
    );

    // 16 clients create 16 ConfigMaps at once: exactly 5 more may exist.
    let connector = cluster.connector(crate::cluster::Who::Admin);
    let handles: Vec<_> = (0..16)
        .map(|i| {
            let connector = connector.clone();
            std::thread::spawn(move || {
                let body = format!(
                    r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}"}}}}"#
                );
                let request = format!(
                    "POST /api/v1/namespaces/q/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                connector.send(request.as_bytes())
            })
        })
        .collect();
    let responses: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let created = responses
        .iter()
        .filter(|r| r.starts_with("HTTP/1.1 201"))
        .count();
    let refused: Vec<&String> = responses
        .iter()
        .filter(|r| r.starts_with("HTTP/1.1 403"))
        .collect();
    assert_eq!(created, 5, "{responses:#?}");
    assert_eq!(refused.len(), 11, "{responses:#?}");
    assert!(
        refused[0].contains("exceeded quota: objects, requested: configmaps=1, used: configmaps=6, limited: configmaps=6"),
        "{}",
        refused[0]
    );
    let listed = cluster.kubectl_ok(&["get", "configmaps", "-n", "q", "-o", "name"]);
    assert_eq!(listed.lines().count(), 6, "{listed}");
    assert_eq!(
        cluster.kubectl_ok(&[
            "get",
            "quota",
            "objects",
            "-n",
            "q",
            "-o",
            "jsonpath={.status.used.configmaps}"
        ]),
        "6"
    );

    // Compute: pods must state what the quota limits, and may not exceed it.
    let output = cluster.kubectl(&["run", "bare", "--image=busybox", "-n", "q"]);
    assert!(
        text(&output).contains(r#"pods "bare" is forbidden: failed quota: objects: must specify requests.cpu for: bare"#),
        "{}",
        text(&output)
    );
    let pod = |name: &str, cpu: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"q"}},"spec":{{"containers":[{{"name":"c","image":"busybox","resources":{{"requests":{{"cpu":"{cpu}"}}}}}}]}}}}"#
        )
    };
    cluster.kubectl_stdin(&["create", "-f", "-"], &pod("small", "600m"));
    let path = cluster.write_file("big.json", &pod("big", "500m"));
    let output = cluster.kubectl(&["create", "-f", path.to_str().unwrap()]);
    assert!(
        text(&output).contains("exceeded quota: objects, requested: requests.cpu=500m, used: requests.cpu=600m, limited: requests.cpu=1"),
        "{}",
        text(&output)
    );

    // Deleting gives the room back (the resource quota controller recalculates).
    cluster.kubectl_ok(&[
        "delete",
        "configmap",
        "cm-0",
        "cm-1",
        "cm-2",
        "-n",
        "q",
        "--ignore-not-found",
    ]);
    let remaining = cluster
        .kubectl_ok(&["get", "configmaps", "-n", "q", "-o", "name"])
        .lines()
        .count();
    wait_output(
        &cluster,
        &[
            "get",
            "quota",
            "objects",
            "-n",
            "q",
            "-o",
            "jsonpath={.status.used.configmaps}",
        ],
        &remaining.to_string(),
    );
    cluster.kubectl_ok(&[
        "delete",
        "pod",
        "small",
        "-n",
        "q",
        "--grace-period=0",
        "--force",
    ]);
    wait_output(
        &cluster,
        &[
            "get",
            "quota",
            "objects",
            "-n",
            "q",
            "-o",
            "jsonpath={.status.used.requests\\.cpu}",
        ],
        "0",
    );
    cluster.kubectl_ok(&["create", "-f", path.to_str().unwrap()]);
    let describe = cluster.kubectl_ok(&["describe", "quota", "objects", "-n", "q"]);
    assert!(describe.contains("requests.cpu  500m  1"), "{describe}");
}

#[test]
fn limit_ranges_default_and_bound_containers() {
    let cluster = Cluster::start();
    cluster.kubectl_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"limits"},"spec":{"limits":[{"type":"Container","default":{"cpu":"500m","memory":"256Mi"},"defaultRequest":{"cpu":"100m","memory":"64Mi"},"max":{"cpu":"1"},"min":{"cpu":"50m"}}]}}"#,
    );
    cluster.kubectl_ok(&["run", "plain", "--image=busybox"]);
    let resources = cluster.kubectl_ok(&[
        "get",
        "pod",
        "plain",
        "-o",
        "jsonpath={.spec.containers[0].resources}",
    ]);
    let resources: serde_json::Value = serde_json::from_str(&resources).unwrap();
    assert_eq!(
        resources,
        serde_json::json!({"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "64Mi"}})
    );
    assert_eq!(
        cluster.kubectl_ok(&[
            "get",
            "pod",
            "plain",
            "-o",
            "jsonpath={.metadata.annotations.kubernetes\\.io/limit-ranger}"
        ]),
        "LimitRanger plugin set: cpu, memory request for container plain; cpu, memory limit for container plain"
    );
    let greedy = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"greedy"},"spec":{"containers":[{"name":"c","image":"busybox","resources":{"limits":{"cpu":"2"},"requests":{"cpu":"10m"}}}]}}"#;
    let path = cluster.write_file("greedy.json", greedy);
    let output = cluster.kubectl(&["create", "-f", path.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains(r#"pods "greedy" is forbidden: [minimum cpu usage per Container is 50m, but request is 10m, maximum cpu usage per Container is 1, but limit is 2]"#),
        "{}",
        text(&output)
    );
}

#[test]
fn built_in_plugins_fill_in_pods_nodes_and_claims() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["run", "plain", "--image=busybox"]);
    let pod: serde_json::Value =
        serde_json::from_str(&cluster.kubectl_ok(&["get", "pod", "plain", "-o", "json"])).unwrap();
    let spec = &pod["spec"];
    // ServiceAccount: the default account and its token volume, mounted.
    assert_eq!(spec["serviceAccountName"], "default");
    let volume = &spec["volumes"][0];
    let volume_name = volume["name"].as_str().unwrap();
    assert!(volume_name.starts_with("kube-api-access-") && volume_name.len() == 21);
    assert_eq!(
        volume["projected"]["sources"][0]["serviceAccountToken"],
        serde_json::json!({"expirationSeconds": 3607, "path": "token"})
    );
    assert_eq!(
        spec["containers"][0]["volumeMounts"][0],
        serde_json::json!({"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": volume_name, "readOnly": true})
    );
    // DefaultTolerationSeconds and Priority.
    assert_eq!(
        spec["tolerations"],
        serde_json::json!([
            {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300},
        ])
    );
    assert_eq!(
        (spec["priority"].clone(), spec["preemptionPolicy"].clone()),
        (
            serde_json::json!(0),
            serde_json::json!("PreemptLowerPriority")
        )
    );
    // A pod needs its account to exist.
    let output = cluster.kubectl(&[
        "run",
        "ghostly",
        "--image=busybox",
        "--overrides",
        r#"{"spec":{"serviceAccountName":"ghost"}}"#,
    ]);
    assert!(
        text(&output).contains(r#"pods "ghostly" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found"#),
        "{}",
        text(&output)
    );
    // A new namespace's pods find their default account at once.
    cluster.kubectl_ok(&["create", "namespace", "fresh"]);
    cluster.kubectl_ok(&["run", "early", "--image=busybox", "-n", "fresh"]);

    // Priority classes: the system ones exist; a class gives its value; unknown classes
    // and a second global default are refused.
    assert_eq!(
        cluster.kubectl_ok(&[
            "get",
            "priorityclass",
            "system-node-critical",
            "-o",
            "jsonpath={.value}"
        ]),
        "2000001000"
    );
    cluster.kubectl_ok(&["create", "priorityclass", "high", "--value=1000"]);
    cluster.kubectl_ok(&[
        "create",
        "priorityclass",
        "usual",
        "--value=10",
        "--global-default",
    ]);
    cluster.kubectl_ok(&[
        "run",
        "important",
        "--image=x",
        "--overrides",
        r#"{"spec":{"priorityClassName":"high"}}"#,
    ]);
    assert_eq!(
        cluster.kubectl_ok(&["get", "pod", "important", "-o", "jsonpath={.spec.priority}"]),
        "1000"
    );
    cluster.kubectl_ok(&["run", "ordinary", "--image=x"]);
    assert_eq!(
        cluster.kubectl_ok(&[
            "get",
            "pod",
            "ordinary",
            "-o",
            "jsonpath={.spec.priorityClassName}/{.spec.priority}"
        ]),
        "usual/10"
    );
    let output = cluster.kubectl(&[
        "run",
        "unknown",
        "--image=x",
        "--overrides",
        r#"{"spec":{"priorityClassName":"nope"}}"#,
    ]);
    assert!(
        text(&output).contains("no PriorityClass with name nope was found"),
        "{}",
        text(&output)
    );
    let output = cluster.kubectl(&[
        "create",
        "priorityclass",
        "another",
        "--value=1",
        "--global-default",
    ]);
    assert!(
        text(&output).contains(
            "PriorityClass usual is already marked as default. Only one default can exist"
        ),
        "{}",
        text(&output)
    );

    // TaintNodesByCondition: a new node is not ready yet.
    cluster.kubectl_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}"#,
    );
    assert_eq!(
        cluster.kubectl_ok(&["get", "node", "n1", "-o", "jsonpath={.spec.taints}"]),
        r#"[{"effect":"NoSchedule","key":"node.kubernetes.io/not-ready"}]"#
    );
    // DefaultStorageClass: claims without a class get the default one.
    cluster.kubectl_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fast","annotations":{"storageclass.kubernetes.io/is-default-class":"true"}},"provisioner":"example.com/fast"}"#,
    );
    cluster.kubectl_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}"#,
    );
    assert_eq!(
        cluster.kubectl_ok(&[
            "get",
            "pvc",
            "data",
            "-o",
            "jsonpath={.spec.storageClassName}"
        ]),
        "fast"
    );
}

#[test]
fn kubelets_reach_only_their_own_node_and_pods() {
    let cluster = Cluster::start();
    let n1 = cluster.user_kubeconfig("system:node:n1", &["system:nodes"]);
    let as_n1 = |args: &[&str]| cluster.kubectl_as(&n1, args);
    let node = |name: &str| {
        format!(r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{name}"}}}}"#)
    };
    let create = |kubeconfig: &std::path::Path, json: &str| {
        let path = cluster.write_file("object.json", json);
        cluster.kubectl_as(kubeconfig, &["create", "-f", path.to_str().unwrap()])
    };
    // Its own Node, not another.
    let output = create(&n1, &node("n1"));
    assert!(output.status.success(), "{}", text(&output));
    let output = create(&n1, &node("n2"));
    assert!(!output.status.success());
    assert!(
        text(&output)
            .contains(r#"nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2""#),
        "{}",
        text(&output)
    );
    // Reserved labels are refused.
    let output = as_n1(&[
        "label",
        "node",
        "n1",
        "node-restriction.kubernetes.io/role=db",
    ]);
    assert!(!output.status.success());
    assert!(
        text(&output)
            .contains("is not allowed to modify labels: node-restriction.kubernetes.io/role"),
        "{}",
        text(&output)
    );

    // Secrets only through the pods bound to it.
    cluster.kubectl_ok(&["create", "secret", "generic", "mine", "--from-literal=k=v"]);
    cluster.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "theirs",
        "--from-literal=k=v",
    ]);
    cluster.kubectl_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"on-n1"},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"x","env":[{"name":"K","valueFrom":{"secretKeyRef":{"name":"mine","key":"k"}}}]}]}}"#,
    );
    cluster.kubectl_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"elsewhere"},"spec":{"containers":[{"name":"c","image":"x"}]}}"#,
    );
    let deadline = std::time::Instant::now() + crate::cluster::DEADLINE;
    while !as_n1(&["get", "secret", "mine"]).status.success() {
        assert!(
            std::time::Instant::now() < deadline,
            "the graph never saw the pod"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let output = as_n1(&["get", "secret", "theirs"]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains(r#"secrets "theirs" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'n1' and this object"#),
        "{}",
        text(&output)
    );
    // Its pods by field selector, the status of its own pods only.
    let output = as_n1(&[
        "get",
        "pods",
        "-A",
        "--field-selector",
        "spec.nodeName=n1",
        "-o",
        "name",
    ]);
    assert_eq!(text(&output), "pod/on-n1\n");
    // (kubectl patch would read pods/status first, which kubelets may not; they write it.)
    let status = |pod: &str| {
        let mut object: serde_json::Value =
            serde_json::from_str(&cluster.kubectl_ok(&["get", "pod", pod, "-o", "json"])).unwrap();
        object["status"]["phase"] = "Running".into();
        let path = cluster.write_file("status.json", &object.to_string());
        as_n1(&[
            "replace",
            "--raw",
            &format!("/api/v1/namespaces/default/pods/{pod}/status"),
            "-f",
            path.to_str().unwrap(),
        ])
    };
    let output = status("on-n1");
    assert!(output.status.success(), "{}", text(&output));
    let output = status("elsewhere");
    assert!(!output.status.success(), "{}", text(&output));
}

#[test]
fn runtime_class_names_a_class_that_exists_and_brings_its_overhead() {
    let cluster = Cluster::start();
    let pod = |class: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: sandboxed-{class}}}\nspec:\n  runtimeClassName: {class}\n  containers:\n  - {{name: c, image: busybox}}\n"
        )
    };
    let output = cluster.kubectl_input(&["apply", "-f", "-"], &pod("gvisor"));
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        r#"Error from server (Forbidden): error when creating "STDIN": pods "sandboxed-gvisor" is forbidden: pod rejected: RuntimeClass "gvisor" not found"#
    );
    cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: fast}\nhandler: runc\noverhead:\n  podFixed: {cpu: 100m}\nscheduling:\n  nodeSelector: {sandbox: \"yes\"}\n",
    );
    cluster.kubectl_stdin(&["apply", "-f", "-"], &pod("fast"));
    let overhead = cluster.kubectl_ok(&[
        "get",
        "pod",
        "sandboxed-fast",
        "-o",
        "jsonpath={.spec.overhead.cpu} {.spec.nodeSelector.sandbox}",
    ]);
    assert_eq!(overhead, "100m yes");
}
