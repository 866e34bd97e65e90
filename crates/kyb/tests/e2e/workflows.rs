//! The kubectl workflows that go through PATCH (and its neighbours): client-side and
//! server-side apply, diff, edit, patch of every type, label/annotate, scale, set, replace,
//! dry runs, managed fields, wait.

use crate::cluster::{Cluster, DEADLINE, path_str};
use kyb_testkit::Process;
use std::path::Path;

fn deployment(replicas: u32, image: &str, env: &[(&str, &str)], port: Option<u16>) -> String {
    let env: String = env
        .iter()
        .map(|(k, v)| format!("        - name: {k}\n          value: \"{v}\"\n"))
        .collect();
    let env = if env.is_empty() {
        String::new()
    } else {
        format!("        env:\n{env}")
    };
    let ports = port
        .map(|p| format!("        ports:\n        - containerPort: {p}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    app: web\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: nginx\n        image: {image}\n{env}{ports}"
    )
}

fn jsonpath(cluster: &Cluster, what: &[&str], path: &str) -> String {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    let expression = format!("jsonpath={path}");
    args.extend_from_slice(&["-o", &expression]);
    cluster.kubectl_ok(&args)
}

#[test]
fn client_side_apply_creates_updates_and_prunes_fields() {
    let cluster = Cluster::start();
    let file = cluster.write_file(
        "web.yaml",
        &deployment(2, "nginx:1.26", &[("MODE", "a"), ("LEVEL", "1")], Some(80)),
    );
    assert!(
        cluster
            .kubectl_ok(&["apply", "-f", path_str(&file)])
            .contains("deployment.apps/web created")
    );
    let annotation = jsonpath(
        &cluster,
        &["deployment", "web"],
        "{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}",
    );
    assert!(annotation.contains("nginx:1.26"), "{annotation}");

    // Changed fields are updated...
    std::fs::write(
        &file,
        deployment(3, "nginx:1.27", &[("MODE", "b"), ("LEVEL", "1")], Some(80)),
    )
    .unwrap();
    assert!(
        cluster
            .kubectl_ok(&["apply", "-f", path_str(&file)])
            .contains("deployment.apps/web configured")
    );
    assert_eq!(
        jsonpath(
            &cluster,
            &["deployment", "web"],
            "{.spec.replicas} {.spec.template.spec.containers[0].image}"
        ),
        "3 nginx:1.27"
    );
    assert_eq!(
        jsonpath(
            &cluster,
            &["deployment", "web"],
            "{.spec.template.spec.containers[0].env[*].value}"
        ),
        "b 1"
    );

    // ...and fields removed from the file are removed from the object.
    std::fs::write(&file, deployment(3, "nginx:1.27", &[("MODE", "b")], None)).unwrap();
    cluster.kubectl_ok(&["apply", "-f", path_str(&file)]);
    assert_eq!(
        jsonpath(
            &cluster,
            &["deployment", "web"],
            "{.spec.template.spec.containers[0].env[*].name}"
        ),
        "MODE"
    );
    assert_eq!(
        jsonpath(
            &cluster,
            &["deployment", "web"],
            "{.spec.template.spec.containers[0].ports}"
        ),
        ""
    );
    // Unchanged: nothing to do.
    assert!(
        cluster
            .kubectl_ok(&["apply", "-f", path_str(&file)])
            .contains("deployment.apps/web unchanged")
    );
}

#[test]
fn apply_a_directory_recursively_and_multi_document_files() {
    let cluster = Cluster::start();
    let dir = cluster.dir.path().join("manifests");
    std::fs::create_dir_all(dir.join("nested")).unwrap();
    std::fs::write(dir.join("a.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n").unwrap();
    std::fs::write(
        dir.join("nested/c.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
    )
    .unwrap();
    let flat = cluster.kubectl_ok(&["apply", "-f", path_str(&dir)]);
    assert!(
        flat.contains("configmap/a created")
            && flat.contains("configmap/b created")
            && !flat.contains("configmap/c"),
        "{flat}"
    );
    let recursive = cluster.kubectl_ok(&["apply", "-R", "-f", path_str(&dir)]);
    assert!(
        recursive.contains("configmap/a unchanged") && recursive.contains("configmap/c created"),
        "{recursive}"
    );
}

#[test]
fn server_side_apply_with_conflicts_and_force() {
    let cluster = Cluster::start();
    let file = cluster.write_file(
        "web.yaml",
        &deployment(2, "nginx:1.26", &[("MODE", "a")], Some(80)),
    );
    assert!(
        cluster
            .kubectl_ok(&["apply", "--server-side", "-f", path_str(&file)])
            .contains("serverside-applied")
    );
    std::fs::write(
        &file,
        deployment(2, "nginx:1.27", &[("MODE", "a"), ("EXTRA", "x")], Some(80)),
    )
    .unwrap();
    cluster.kubectl_ok(&["apply", "--server-side", "-f", path_str(&file)]);
    assert_eq!(
        jsonpath(
            &cluster,
            &["deployment", "web"],
            "{.spec.template.spec.containers[0].image}"
        ),
        "nginx:1.27"
    );
    // Dropping a field it owns alone removes it.
    std::fs::write(&file, deployment(2, "nginx:1.27", &[("MODE", "a")], None)).unwrap();
    cluster.kubectl_ok(&["apply", "--server-side", "-f", path_str(&file)]);
    assert_eq!(
        jsonpath(
            &cluster,
            &["deployment", "web"],
            "{.spec.template.spec.containers[0].env[*].name}"
        ),
        "MODE"
    );
    assert_eq!(
        jsonpath(
            &cluster,
            &["deployment", "web"],
            "{.spec.template.spec.containers[0].ports}"
        ),
        ""
    );

    // Another manager takes replicas...
    cluster.kubectl_ok(&["scale", "deployment", "web", "--replicas=5"]);
    // ...so applying a different value conflicts, and nothing changes.
    std::fs::write(&file, deployment(3, "nginx:1.27", &[("MODE", "a")], None)).unwrap();
    let conflict = cluster.kubectl(&["apply", "--server-side", "-f", path_str(&file)]);
    let stderr = String::from_utf8_lossy(&conflict.stderr);
    assert!(!conflict.status.success());
    assert!(
        stderr.contains("conflict") && stderr.contains(".spec.replicas"),
        "{stderr}"
    );
    assert_eq!(
        jsonpath(&cluster, &["deployment", "web"], "{.spec.replicas}"),
        "5"
    );
    // Forcing takes it over.
    cluster.kubectl_ok(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        path_str(&file),
    ]);
    assert_eq!(
        jsonpath(&cluster, &["deployment", "web"], "{.spec.replicas}"),
        "3"
    );
    let managers = jsonpath(
        &cluster,
        &["deployment", "web", "--show-managed-fields"],
        "{.metadata.managedFields[*].manager}",
    );
    assert!(managers.contains("kubectl"), "{managers}");
}

#[test]
fn diff_shows_what_apply_would_change() {
    let cluster = Cluster::start();
    let file = cluster.write_file("web.yaml", &deployment(2, "nginx:1.26", &[], None));
    cluster.kubectl_ok(&["apply", "-f", path_str(&file)]);
    // No difference: exit status 0.
    assert!(
        cluster
            .kubectl(&["diff", "-f", path_str(&file)])
            .status
            .success()
    );
    std::fs::write(&file, deployment(4, "nginx:1.26", &[], None)).unwrap();
    let diff = cluster.kubectl(&["diff", "-f", path_str(&file)]);
    // A difference: exit status 1 and the changed line.
    assert_eq!(diff.status.code(), Some(1), "{diff:?}");
    let text = String::from_utf8_lossy(&diff.stdout);
    assert!(
        text.contains("-  replicas: 2") && text.contains("+  replicas: 4"),
        "{text}"
    );
    // diff never changes the object.
    assert_eq!(
        jsonpath(&cluster, &["deployment", "web"], "{.spec.replicas}"),
        "2"
    );
}

#[test]
fn edit_label_annotate_patch_scale_and_set() {
    let cluster = Cluster::start();
    let file = cluster.write_file(
        "web.yaml",
        &deployment(1, "nginx:1.26", &[("MODE", "a")], Some(80)),
    );
    cluster.kubectl_ok(&["create", "-f", path_str(&file)]);

    // edit: EDITOR is a script that changes the image.
    let editor = cluster.write_file(
        "editor.sh",
        "#!/bin/sh\nsed -i 's/nginx:1.26/nginx:1.28/' \"$1\"\n",
    );
    make_executable(&editor);
    let mut edit = cluster.kubectl_command(&["edit", "deployment", "web"]);
    edit.env("EDITOR", &editor);
    let output = edit.output().unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        jsonpath(
            &cluster,
            &["deployment", "web"],
            "{.spec.template.spec.containers[0].image}"
        ),
        "nginx:1.28"
    );

    // label / annotate: add, overwrite only with --overwrite, remove with key-.
    cluster.kubectl_ok(&["label", "deployment", "web", "tier=front"]);
    assert!(
        !cluster
            .kubectl(&["label", "deployment", "web", "tier=back"])
            .status
            .success()
    );
    cluster.kubectl_ok(&["label", "deployment", "web", "tier=back", "--overwrite"]);
    assert_eq!(
        jsonpath(&cluster, &["deployment", "web"], "{.metadata.labels.tier}"),
        "back"
    );
    cluster.kubectl_ok(&["label", "deployment", "web", "tier-"]);
    assert_eq!(
        jsonpath(&cluster, &["deployment", "web"], "{.metadata.labels.tier}"),
        ""
    );
    cluster.kubectl_ok(&["annotate", "deployment", "web", "note=hello"]);
    assert_eq!(
        jsonpath(
            &cluster,
            &["deployment", "web"],
            "{.metadata.annotations.note}"
        ),
        "hello"
    );
    cluster.kubectl_ok(&["annotate", "deployment", "web", "note-"]);

    // patch: strategic (merges containers by name), merge, json.
    cluster.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}"#,
    ]);
    assert_eq!(
        jsonpath(
            &cluster,
            &["deployment", "web"],
            "{.spec.template.spec.containers[*].name}"
        ),
        // Kubernetes puts items the live list lacks before the live ones.
        "sidecar nginx"
    );
    cluster.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"minReadySeconds":5}}"#,
    ]);
    assert_eq!(
        jsonpath(&cluster, &["deployment", "web"], "{.spec.minReadySeconds}"),
        "5"
    );
    cluster.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/spec/template/spec/containers/0"}]"#,
    ]);
    assert_eq!(
        jsonpath(
            &cluster,
            &["deployment", "web"],
            "{.spec.template.spec.containers[*].name}"
        ),
        "nginx"
    );
    let failed = cluster.kubectl(&[
        "patch",
        "deployment",
        "web",
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/spec/replicas","value":9}]"#,
    ]);
    assert!(!failed.status.success());

    // scale goes through the scale subresource.
    cluster.kubectl_ok(&["scale", "deployment", "web", "--replicas=4"]);
    assert_eq!(
        jsonpath(&cluster, &["deployment", "web"], "{.spec.replicas}"),
        "4"
    );

    // set image / set env.
    cluster.kubectl_ok(&["set", "image", "deployment/web", "nginx=nginx:1.29"]);
    assert_eq!(
        jsonpath(
            &cluster,
            &["deployment", "web"],
            "{.spec.template.spec.containers[0].image}"
        ),
        "nginx:1.29"
    );
    cluster.kubectl_ok(&["set", "env", "deployment/web", "LEVEL=3"]);
    assert_eq!(
        jsonpath(
            &cluster,
            &["deployment", "web"],
            "{.spec.template.spec.containers[0].env[*].name}"
        ),
        "MODE LEVEL"
    );
    cluster.kubectl_ok(&["set", "env", "deployment/web", "MODE-"]);
    assert_eq!(
        jsonpath(
            &cluster,
            &["deployment", "web"],
            "{.spec.template.spec.containers[0].env[*].name}"
        ),
        "LEVEL"
    );
}

#[test]
fn invalid_patches_change_nothing() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "configmap", "cm", "--from-literal=a=b"]);
    let before = jsonpath(
        &cluster,
        &["configmap", "cm"],
        "{.metadata.resourceVersion}",
    );
    // A patch producing an invalid object: 422.
    let invalid = cluster.kubectl(&[
        "patch",
        "configmap",
        "cm",
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"labels":{"bad key!":"x"}}}"#,
    ]);
    assert!(
        String::from_utf8_lossy(&invalid.stderr).contains("is invalid"),
        "{invalid:?}"
    );
    // A malformed patch: 400.
    let malformed = cluster.kubectl(&[
        "patch",
        "configmap",
        "cm",
        "--type",
        "json",
        "-p",
        r#"{"not":"a list"}"#,
    ]);
    assert!(!malformed.status.success());
    assert_eq!(
        jsonpath(
            &cluster,
            &["configmap", "cm"],
            "{.metadata.resourceVersion}"
        ),
        before
    );
}

#[test]
fn replace_dry_run_managed_fields_and_wait() {
    let cluster = Cluster::start();
    let file = cluster.write_file("web.yaml", &deployment(1, "nginx:1.26", &[], None));
    cluster.kubectl_ok(&["create", "-f", path_str(&file)]);
    std::fs::write(&file, deployment(2, "nginx:1.26", &[], None)).unwrap();
    cluster.kubectl_ok(&["replace", "-f", path_str(&file)]);
    assert_eq!(
        jsonpath(&cluster, &["deployment", "web"], "{.spec.replicas}"),
        "2"
    );
    let uid = jsonpath(&cluster, &["deployment", "web"], "{.metadata.uid}");
    cluster.kubectl_ok(&["replace", "--force", "-f", path_str(&file)]);
    assert_ne!(
        jsonpath(&cluster, &["deployment", "web"], "{.metadata.uid}"),
        uid,
        "replace --force recreates"
    );

    // A server-side dry run returns the object as it would be, and stores nothing.
    let dry = cluster.kubectl_ok(&[
        "create",
        "deployment",
        "dry",
        "--image=busybox",
        "--dry-run=server",
        "-o",
        "yaml",
    ]);
    assert!(
        dry.contains("name: dry")
            && dry.contains("uid:")
            && dry.contains("progressDeadlineSeconds: 600"),
        "{dry}"
    );
    assert!(
        !cluster
            .kubectl(&["get", "deployment", "dry"])
            .status
            .success()
    );

    // Managed fields are recorded and shown on request.
    let shown = cluster.kubectl_ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "yaml",
        "--show-managed-fields",
    ]);
    assert!(
        shown.contains("managedFields:")
            && shown.contains("manager: kubectl-replace")
            && shown.contains("f:replicas: {}"),
        "{shown}"
    );
    let hidden = cluster.kubectl_ok(&["get", "deployment", "web", "-o", "yaml"]);
    assert!(!hidden.contains("managedFields"), "{hidden}");

    // wait --for=jsonpath and --for=delete.
    let mut waiting = Process::spawn(&mut cluster.kubectl_command(&[
        "wait",
        "deployment/web",
        "--for=jsonpath={.spec.replicas}=7",
        "--timeout=20s",
    ]))
    .unwrap();
    cluster.kubectl_ok(&["scale", "deployment", "web", "--replicas=7"]);
    assert!(
        waiting.wait_exit(DEADLINE).unwrap().success(),
        "{}",
        waiting.output()
    );
    let mut deleting = Process::spawn(&mut cluster.kubectl_command(&[
        "wait",
        "deployment/web",
        "--for=delete",
        "--timeout=20s",
    ]))
    .unwrap();
    cluster.kubectl_ok(&["delete", "deployment", "web", "--wait=false"]);
    assert!(
        deleting.wait_exit(DEADLINE).unwrap().success(),
        "{}",
        deleting.output()
    );
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}
