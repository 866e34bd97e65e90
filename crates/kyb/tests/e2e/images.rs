//! `kyb image`: building the project's images reproducibly, and importing archives into
//! the node's containerd (a real one, in a network namespace of the test's, as root).

use kyb_kubelet::containerd::{self, ContainerdConfig};
use kyb_testkit::{ContainerdFiles, NetNs, TestContainerd};
use std::process::{Command, Output};

fn kyb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kyb"))
        .env_remove("RUST_LOG")
        .env_remove("KYB_DATA_DIR")
        .args(args)
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn build_gives_the_same_bytes_and_leaves_an_unchanged_archive_alone() {
    let dir = kyb_testkit::temp_dir("images").unwrap();
    let file = dir.path().join("out/busybox.tar");
    let file_arg = file.to_str().unwrap();
    let first = kyb(&["image", "build", "busybox", "-o", file_arg]);
    assert!(first.status.success(), "{}", text(&first));
    assert!(
        text(&first).contains("kyb.local/busybox:1.35.0 (sha256:"),
        "{}",
        text(&first)
    );
    let bytes = std::fs::read(&file).unwrap();
    let second = kyb(&["image", "build", "busybox", "-o", file_arg]);
    assert!(text(&second).contains("unchanged"), "{}", text(&second));
    assert_eq!(std::fs::read(&file).unwrap(), bytes);

    let unknown = kyb(&["image", "build", "nginx", "-o", file_arg]);
    assert!(!unknown.status.success());
    assert!(
        text(&unknown).contains("possible values: pause, busybox"),
        "{}",
        text(&unknown)
    );
}

#[test]
fn import_says_what_is_missing() {
    let dir = kyb_testkit::temp_dir("images").unwrap();
    let missing = dir.path().join("missing.tar");
    let output = kyb(&["image", "import", missing.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains("missing.tar: no such file"),
        "{}",
        text(&output)
    );

    let archive = dir.path().join("present.tar");
    std::fs::write(&archive, b"").unwrap();
    let data_dir = dir.path().join("data");
    let output = kyb(&[
        "--data-dir",
        data_dir.to_str().unwrap(),
        "image",
        "import",
        archive.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains("no containerd socket at")
            && text(&output).contains("start the server first"),
        "{}",
        text(&output)
    );
}

#[test]
fn import_puts_images_where_the_servers_containerd_finds_them_as_root() {
    let netns = NetNs::create().unwrap();
    let containerd = TestContainerd::start(&netns, |root| {
        let config = ContainerdConfig::new(root.join("agent"));
        containerd::write_config(&config)?;
        Ok(ContainerdFiles {
            config_file: config.config_file(),
            socket: config.socket_path(),
        })
    })
    .unwrap();
    let dir = kyb_testkit::temp_dir("images").unwrap();
    let pause = dir.path().join("pause.tar");
    let built = kyb(&["image", "build", "pause", "-o", pause.to_str().unwrap()]);
    assert!(built.status.success(), "{}", text(&built));

    // The data dir of a server: its containerd's socket is found under it.
    let data_dir = containerd.dir().to_str().unwrap();
    let imported = kyb(&[
        "--data-dir",
        data_dir,
        "image",
        "import",
        pause.to_str().unwrap(),
    ]);
    assert!(imported.status.success(), "{}", text(&imported));
    let listed = kyb(&["--data-dir", data_dir, "image", "ls"]);
    assert!(
        text(&listed).contains("kyb.local/pause:1.0"),
        "{}",
        text(&listed)
    );
    // What CRI sees: the k8s.io namespace.
    let images = containerd.ctr(&["images", "ls", "-q"]).unwrap();
    assert!(
        images.lines().any(|l| l == "kyb.local/pause:1.0"),
        "{images}"
    );
}
