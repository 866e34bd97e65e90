//! Registry-level tests: which checks run at each level and version, their order, and the
//! messages built from them.

use serde_json::{Value, json};

use super::*;

fn lv(level: Level, version: Version) -> LevelVersion {
    LevelVersion::new(level, version)
}

const BASELINE_LATEST: LevelVersion = LevelVersion::new(Level::Baseline, Version::Latest);
const RESTRICTED_LATEST: LevelVersion = LevelVersion::new(Level::Restricted, Version::Latest);

fn restricted_pod() -> Value {
    json!({
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": "c",
            "image": "nginx",
            "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}},
        }],
    })
}

fn reasons(level: LevelVersion, meta: Option<&Value>, spec: &Value) -> Vec<String> {
    check_pod(level, meta, spec)
        .into_iter()
        .map(|f| f.reason)
        .collect()
}

/// Applies `change` to a copy of `base`.
fn with(base: &Value, change: impl FnOnce(&mut Value)) -> Value {
    let mut v = base.clone();
    change(&mut v);
    v
}

#[test]
fn check_ids_sorted_and_newest_version() {
    for group in [BASELINE, RESTRICTED] {
        for pair in group.windows(2) {
            assert!(pair[0].id < pair[1].id, "{} !< {}", pair[0].id, pair[1].id);
        }
        for check in group {
            for pair in check.revisions.windows(2) {
                assert!(pair[0].since < pair[1].since, "{}", check.id);
            }
        }
    }
    let newest = BASELINE
        .iter()
        .chain(RESTRICTED)
        .flat_map(|c| c.revisions.iter().map(|r| r.since))
        .max();
    assert_eq!(Some(NEWEST_POLICY_VERSION), newest.map(Version::V));
}

#[test]
fn minimal_and_restricted_pods_pass() {
    let minimal = json!({"containers": [{"name": "c", "image": "nginx"}]});
    assert!(check_pod(BASELINE_LATEST, None, &minimal).is_empty());
    assert!(!check_pod(RESTRICTED_LATEST, None, &minimal).is_empty());
    for minor in 0..=40 {
        for level in [Level::Baseline, Level::Restricted] {
            assert!(
                check_pod(lv(level, Version::V(minor)), None, &restricted_pod()).is_empty(),
                "{level} v1.{minor}"
            );
        }
    }
}

#[test]
fn privileged_allows_anything() {
    let spec = json!({"hostNetwork": true, "containers": [{"name": "c", "securityContext": {"privileged": true}}]});
    assert!(check_pod(LevelVersion::PRIVILEGED_LATEST, None, &spec).is_empty());
    assert!(check_pod(lv(Level::Privileged, Version::V(3)), None, &spec).is_empty());
}

/// Each baseline control, with a passing and a failing pod, at baseline and restricted.
#[test]
fn baseline_controls() {
    let base = restricted_pod();
    let cases: Vec<(&str, Option<Value>, Value)> = vec![
        (
            "host namespaces",
            None,
            with(&base, |p| p["hostPID"] = json!(true)),
        ),
        (
            "privileged",
            None,
            with(&base, |p| {
                p["containers"][0]["securityContext"]["privileged"] = json!(true)
            }),
        ),
        (
            "hostPort",
            None,
            with(&base, |p| {
                p["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 80}])
            }),
        ),
        (
            "forbidden AppArmor profile",
            None,
            with(&base, |p| {
                p["securityContext"]["appArmorProfile"] = json!({"type": "Unconfined"})
            }),
        ),
        (
            "forbidden AppArmor profile",
            Some(
                json!({"annotations": {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}}),
            ),
            base.clone(),
        ),
        (
            "seLinuxOptions",
            None,
            with(&base, |p| {
                p["securityContext"]["seLinuxOptions"] = json!({"type": "spc_t"})
            }),
        ),
        (
            "procMount",
            None,
            with(&base, |p| {
                p["containers"][0]["securityContext"]["procMount"] = json!("Unmasked")
            }),
        ),
        (
            "forbidden sysctls",
            None,
            with(&base, |p| {
                p["securityContext"]["sysctls"] = json!([{"name": "kernel.msgmax", "value": "1"}])
            }),
        ),
        (
            "hostProcess",
            None,
            with(&base, |p| {
                p["securityContext"]["windowsOptions"] = json!({"hostProcess": true})
            }),
        ),
    ];
    for (reason, meta, spec) in &cases {
        assert_eq!(
            reasons(BASELINE_LATEST, meta.as_ref(), spec),
            [*reason],
            "{spec}"
        );
        assert_eq!(
            reasons(RESTRICTED_LATEST, meta.as_ref(), spec),
            [*reason],
            "{spec}"
        );
    }

    // Capabilities, hostPath volumes and seccomp are checked by their restricted versions at
    // the restricted level.
    let caps = with(&base, |p| {
        p["containers"][0]["securityContext"]["capabilities"]["add"] = json!(["NET_ADMIN"])
    });
    assert_eq!(
        reasons(BASELINE_LATEST, None, &caps),
        ["non-default capabilities"]
    );
    assert_eq!(
        reasons(RESTRICTED_LATEST, None, &caps),
        ["unrestricted capabilities"]
    );
    let ok_caps = with(&base, |p| {
        p["containers"][0]["securityContext"]["capabilities"]["add"] = json!(["CHOWN"])
    });
    assert!(reasons(BASELINE_LATEST, None, &ok_caps).is_empty());

    let host_path = with(&base, |p| {
        p["volumes"] = json!([{"name": "h", "hostPath": {"path": "/"}}])
    });
    assert_eq!(
        reasons(BASELINE_LATEST, None, &host_path),
        ["hostPath volumes"]
    );
    assert_eq!(
        reasons(RESTRICTED_LATEST, None, &host_path),
        ["restricted volume types"]
    );

    let unconfined = with(&base, |p| {
        p["securityContext"]["seccompProfile"]["type"] = json!("Unconfined")
    });
    assert_eq!(
        reasons(BASELINE_LATEST, None, &unconfined),
        ["seccompProfile"]
    );
    assert_eq!(
        check_pod(RESTRICTED_LATEST, None, &unconfined),
        [CheckFailure::new(
            "seccompProfile",
            r#"pod must not set securityContext.seccompProfile.type to "Unconfined""#
        )]
    );
}

/// Each restricted control, with a failing pod that baseline allows.
#[test]
fn restricted_controls() {
    let base = restricted_pod();
    let cases: Vec<(&str, Value)> = vec![
        (
            "restricted volume types",
            with(&base, |p| {
                p["volumes"] = json!([{"name": "n", "nfs": {"server": "s", "path": "/"}}])
            }),
        ),
        (
            "allowPrivilegeEscalation != false",
            with(&base, |p| {
                p["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = json!(true)
            }),
        ),
        (
            "runAsNonRoot != true",
            with(&base, |p| {
                p["securityContext"]["runAsNonRoot"] = json!(false)
            }),
        ),
        (
            "runAsUser=0",
            with(&base, |p| {
                p["containers"][0]["securityContext"]["runAsUser"] = json!(0)
            }),
        ),
        (
            "seccompProfile",
            with(&base, |p| {
                p["securityContext"]["seccompProfile"] = Value::Null
            }),
        ),
        (
            "unrestricted capabilities",
            with(&base, |p| {
                p["containers"][0]["securityContext"]["capabilities"] = json!({"drop": ["NET_RAW"]})
            }),
        ),
        (
            "unrestricted capabilities",
            with(&base, |p| {
                p["containers"][0]["securityContext"]["capabilities"]["add"] = json!(["CHOWN"]);
            }),
        ),
    ];
    for (reason, spec) in &cases {
        assert!(reasons(BASELINE_LATEST, None, spec).is_empty(), "{spec}");
        assert_eq!(reasons(RESTRICTED_LATEST, None, spec), [*reason], "{spec}");
    }
    // Allowed values.
    let non_root_user = with(&base, |p| {
        p["containers"][0]["securityContext"]["runAsUser"] = json!(1000)
    });
    let bind = with(&base, |p| {
        p["containers"][0]["securityContext"]["capabilities"]["add"] = json!(["NET_BIND_SERVICE"])
    });
    let localhost = with(&base, |p| {
        p["securityContext"]["seccompProfile"] =
            json!({"type": "Localhost", "localhostProfile": "p.json"})
    });
    let volumes = with(
        &base,
        |p| {
            p["volumes"] =
                json!([{"name": "s", "secret": {"secretName": "s"}}, {"name": "e", "emptyDir": {}}])
        },
    );
    for spec in [non_root_user, bind, localhost, volumes] {
        assert!(
            check_pod(RESTRICTED_LATEST, None, &spec).is_empty(),
            "{spec}"
        );
    }
}

#[test]
fn init_and_ephemeral_containers_are_checked() {
    let base = restricted_pod();
    let init = with(&base, |p| {
        p["initContainers"] = json!([{"name": "init", "image": "busybox"}])
    });
    assert_eq!(
        check_pod(RESTRICTED_LATEST, None, &init),
        [
            CheckFailure::new(
                "allowPrivilegeEscalation != false",
                r#"container "init" must set securityContext.allowPrivilegeEscalation=false"#
            ),
            CheckFailure::new(
                "unrestricted capabilities",
                r#"container "init" must set securityContext.capabilities.drop=["ALL"]"#
            ),
        ]
    );
    let debug = with(&base, |p| {
        p["ephemeralContainers"] = json!([{"name": "debugger", "image": "busybox", "targetContainerName": "c",
            "securityContext": {"privileged": true}}]);
    });
    assert_eq!(
        check_pod(BASELINE_LATEST, None, &debug),
        [CheckFailure::new(
            "privileged",
            r#"container "debugger" must not set securityContext.privileged=true"#
        )]
    );
    let failures = check_pod(RESTRICTED_LATEST, None, &debug);
    assert_eq!(
        failures
            .iter()
            .map(|f| f.reason.as_str())
            .collect::<Vec<_>>(),
        [
            "privileged",
            "allowPrivilegeEscalation != false",
            "unrestricted capabilities"
        ]
    );
}

#[test]
fn exact_message_for_pod_failing_many_restricted_checks() {
    let spec = json!({
        "hostNetwork": true,
        "initContainers": [{"name": "init", "image": "busybox", "securityContext": {"privileged": true}}],
        "containers": [{"name": "c", "image": "nginx"}],
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
    });
    let failures = check_pod(RESTRICTED_LATEST, None, &spec);
    assert_eq!(
        forbidden_reason(RESTRICTED_LATEST, &failures),
        concat!(
            r#"violates PodSecurity "restricted:latest": "#,
            r#"host namespaces (hostNetwork=true), "#,
            r#"privileged (container "init" must not set securityContext.privileged=true), "#,
            r#"allowPrivilegeEscalation != false (containers "init", "c" must set securityContext.allowPrivilegeEscalation=false), "#,
            r#"unrestricted capabilities (containers "init", "c" must set securityContext.capabilities.drop=["ALL"]), "#,
            r#"restricted volume types (volume "h" uses restricted volume type "hostPath"), "#,
            r#"runAsNonRoot != true (pod or containers "init", "c" must set securityContext.runAsNonRoot=true), "#,
            r#"seccompProfile (pod or containers "init", "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#,
        )
    );
    assert_eq!(
        failure_reasons(&failures),
        "host namespaces, privileged, allowPrivilegeEscalation != false, unrestricted capabilities, restricted volume types, runAsNonRoot != true, seccompProfile"
    );
    let baseline = lv(Level::Baseline, Version::V(29));
    assert_eq!(
        violation_warning(baseline, &check_pod(baseline, None, &spec)),
        r#"would violate PodSecurity "baseline:v1.29": host namespaces (hostNetwork=true), hostPath volumes (volume "h"), privileged (container "init" must not set securityContext.privileged=true)"#
    );
}

/// A message a Kubernetes 1.32 cluster printed for this pod (`kubectl apply` into a
/// `restricted:v1.32` namespace).
#[test]
fn message_matches_kubernetes_output() {
    let spec = json!({
        "securityContext": {
            "seLinuxOptions": {"user": "system_u", "role": "system_r"},
            "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}, {"name": "kernel.msgmax", "value": "65536"}],
        },
        "containers": [{"name": "my-pod", "image": "busybox"}],
    });
    let level = lv(Level::Restricted, Version::V(32));
    assert_eq!(
        forbidden_reason(level, &check_pod(level, None, &spec)),
        concat!(
            r#"violates PodSecurity "restricted:v1.32": "#,
            r#"seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: user may not be set; role may not be set), "#,
            r#"forbidden sysctls (net.core.somaxconn, kernel.msgmax), "#,
            r#"allowPrivilegeEscalation != false (container "my-pod" must set securityContext.allowPrivilegeEscalation=false), "#,
            r#"unrestricted capabilities (container "my-pod" must set securityContext.capabilities.drop=["ALL"]), "#,
            r#"runAsNonRoot != true (pod or container "my-pod" must set securityContext.runAsNonRoot=true), "#,
            r#"seccompProfile (pod or container "my-pod" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#,
        )
    );
}

#[test]
fn details_are_optional_in_messages() {
    let failures = [CheckFailure::new("a", ""), CheckFailure::new("b", "x")];
    assert_eq!(forbidden_detail(&failures), "a, b (x)");
    assert_eq!(forbidden_detail(&[]), "");
}

#[test]
fn version_specific_behaviour() {
    let base = restricted_pod();
    let restricted = |minor| lv(Level::Restricted, Version::V(minor));
    let baseline = |minor| lv(Level::Baseline, Version::V(minor));

    // allowPrivilegeEscalation is checked from v1.8.
    let escalate = with(&base, |p| {
        p["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = json!(true)
    });
    assert!(check_pod(restricted(7), None, &escalate).is_empty());
    assert_eq!(
        reasons(restricted(8), None, &escalate),
        ["allowPrivilegeEscalation != false"]
    );

    // runAsUser=0 is forbidden from v1.23.
    let root = with(&base, |p| p["securityContext"]["runAsUser"] = json!(0));
    assert!(check_pod(restricted(22), None, &root).is_empty());
    assert_eq!(reasons(restricted(23), None, &root), ["runAsUser=0"]);

    // Seccomp: annotations before v1.19, fields from v1.19 (and required by restricted).
    let annotated =
        json!({"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}});
    let no_profile = with(&base, |p| {
        p["securityContext"]["seccompProfile"] = Value::Null
    });
    assert_eq!(
        check_pod(baseline(18), Some(&annotated), &no_profile),
        [CheckFailure::new(
            "seccompProfile",
            r#"forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined""#
        )]
    );
    assert!(check_pod(baseline(19), Some(&annotated), &no_profile).is_empty());
    assert_eq!(
        reasons(restricted(18), Some(&annotated), &no_profile),
        ["seccompProfile"]
    );
    assert!(check_pod(restricted(18), None, &no_profile).is_empty());
    assert_eq!(
        reasons(restricted(19), None, &no_profile),
        ["seccompProfile"]
    );

    // Capabilities: restricted applies the baseline allow-list before v1.22.
    let chown = with(&base, |p| {
        p["containers"][0]["securityContext"]["capabilities"] = json!({"add": ["CHOWN"]})
    });
    assert!(check_pod(restricted(21), None, &chown).is_empty());
    assert_eq!(
        reasons(restricted(22), None, &chown),
        ["unrestricted capabilities"]
    );
    let admin = with(&base, |p| {
        p["containers"][0]["securityContext"]["capabilities"] = json!({"add": ["SYS_ADMIN"]})
    });
    assert_eq!(
        reasons(restricted(21), None, &admin),
        ["non-default capabilities"]
    );

    // Windows pods are exempt from the Linux-only restricted checks from v1.25.
    let windows = json!({
        "os": {"name": "windows"},
        "securityContext": {"runAsNonRoot": true},
        "containers": [{"name": "w", "image": "mcr.microsoft.com/windows"}],
    });
    assert_eq!(
        reasons(restricted(24), None, &windows),
        [
            "allowPrivilegeEscalation != false",
            "unrestricted capabilities",
            "seccompProfile"
        ]
    );
    assert!(check_pod(restricted(25), None, &windows).is_empty());

    // Sysctls allowed by version.
    let keepalive =
        with(
            &base,
            |p| {
                p["securityContext"]["sysctls"] =
                    json!([{"name": "net.ipv4.tcp_keepalive_time", "value": "60"}])
            },
        );
    assert_eq!(
        reasons(baseline(28), None, &keepalive),
        ["forbidden sysctls"]
    );
    assert!(check_pod(baseline(29), None, &keepalive).is_empty());

    // SELinux container_engine_t from v1.31.
    let engine = with(&base, |p| {
        p["securityContext"]["seLinuxOptions"] = json!({"type": "container_engine_t"})
    });
    assert_eq!(reasons(baseline(30), None, &engine), ["seLinuxOptions"]);
    assert!(check_pod(baseline(31), None, &engine).is_empty());

    // `latest` and versions newer than the newest revision are the newest revision.
    let rmem = with(&base, |p| {
        p["securityContext"]["sysctls"] = json!([{"name": "net.ipv4.tcp_rmem", "value": "1 2 3"}])
    });
    assert_eq!(reasons(baseline(31), None, &rmem), ["forbidden sysctls"]);
    for version in [
        Version::V(32),
        Version::V(33),
        Version::V(u64::MAX),
        Version::Latest,
    ] {
        assert!(check_pod(lv(Level::Baseline, version), None, &rmem).is_empty());
    }
}

#[test]
fn hostile_input_never_panics() {
    let specs = [
        json!(null),
        json!(42),
        json!("spec"),
        json!([1, 2, 3]),
        json!({"containers": "x", "initContainers": 3, "ephemeralContainers": {}}),
        json!({"containers": [null, 1, "c", [], {"name": 5, "securityContext": "sc"}]}),
        json!({"containers": [{"securityContext": {"capabilities": {"add": [1, null, {}], "drop": "ALL"},
            "seLinuxOptions": [], "seccompProfile": {"type": 3}, "appArmorProfile": 1, "procMount": 7,
            "runAsUser": "0", "runAsNonRoot": "true", "privileged": 1, "windowsOptions": {"hostProcess": "yes"}},
            "ports": [{"hostPort": "80"}, {"hostPort": 1.5}, {"hostPort": -1}, 4]}]}),
        json!({"securityContext": {"sysctls": [1, {"name": 2}, {"name": null}], "seLinuxOptions": {"type": ["x"]},
            "runAsUser": 0.0, "windowsOptions": null}, "volumes": [1, null, {"hostPath": 1}], "os": "windows",
            "hostNetwork": "yes", "runtimeClassName": 5}),
    ];
    let metas = [
        None,
        Some(json!(null)),
        Some(json!({"annotations": "x"})),
        Some(
            json!({"annotations": {"container.apparmor.security.beta.kubernetes.io/a": 1,
            "seccomp.security.alpha.kubernetes.io/pod": null}}),
        ),
    ];
    for spec in &specs {
        for meta in &metas {
            for level in [Level::Privileged, Level::Baseline, Level::Restricted] {
                for version in [
                    Version::V(0),
                    Version::V(19),
                    Version::V(25),
                    Version::Latest,
                ] {
                    let failures = check_pod(lv(level, version), meta.as_ref(), spec);
                    let _ = forbidden_reason(lv(level, version), &failures);
                }
            }
        }
    }
    // Mistyped fields read as unset: a float zero user is still root, `-1` a host port.
    let odd = &specs[7];
    let failures = check_pod(RESTRICTED_LATEST, None, odd);
    assert!(failures.iter().any(|f| f.reason == "runAsUser=0"));
    assert!(
        failures
            .iter()
            .any(|f| f.reason == "restricted volume types")
    );
    let failures = check_pod(BASELINE_LATEST, None, &specs[6]);
    assert!(failures.contains(&CheckFailure::new(
        "hostPort",
        r#"container "" uses hostPort -1"#
    )));
}
