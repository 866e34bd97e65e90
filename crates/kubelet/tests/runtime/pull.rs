//! Image pulls through CRI from a real registry (plain HTTP on localhost:5000 in the
//! test's network namespace), and kubelet's pull policies, reasons and events.

use crate::{image_archive, start_containerd};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Container, Pod, Secret};
use kyb_kubelet::cri::Cri;
use kyb_kubelet::images::pull::{
    ERR_IMAGE_NEVER_PULL, ERR_IMAGE_PULL, IMAGE_PULL_BACK_OFF, INVALID_IMAGE_NAME,
};
use kyb_kubelet::images::{EventType, ImagePuller};
use kyb_testkit::{NetNs, REGISTRY_ADDRESS, TestRegistry};
use std::collections::BTreeMap;

fn pod() -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = Some("puller".into());
    pod.metadata.namespace = Some("default".into());
    pod.metadata.uid = Some("uid-pull".into());
    pod
}

fn container(image: &str, policy: Option<&str>) -> Container {
    Container {
        name: "main".into(),
        image: Some(image.into()),
        image_pull_policy: policy.map(str::to_string),
        ..Container::default()
    }
}

#[tokio::test]
async fn images_are_pulled_from_a_plain_http_registry_as_root() -> anyhow::Result<()> {
    let netns = NetNs::create()?;
    let registry = TestRegistry::start(&netns)?;
    let archive = image_archive("busybox")?;
    let image = format!("{REGISTRY_ADDRESS}/kyb/busybox:1.35.0");
    let copy = netns
        .command("skopeo")
        .args(["--insecure-policy", "copy", "--dest-tls-verify=false"])
        .arg(format!("oci-archive:{}", archive.display()))
        .arg(format!("docker://{image}"))
        .output()?;
    anyhow::ensure!(
        copy.status.success(),
        "skopeo copy: {}\n{}",
        String::from_utf8_lossy(&copy.stderr),
        registry.output()
    );
    let containerd = start_containerd(&netns)?;
    let puller = ImagePuller::new(Cri::connect(&containerd.endpoint())?);

    let pulled = puller
        .ensure(&pod(), &container(&image, Some("IfNotPresent")), &[])
        .await
        .map_err(|error| anyhow::anyhow!("{error:?}\n{}", containerd.output()))?;
    assert!(pulled.image_ref.starts_with("sha256:"), "{pulled:?}");
    let reasons: Vec<&str> = pulled.events.iter().map(|e| e.reason).collect();
    assert_eq!(reasons, ["Pulling", "Pulled"]);
    assert_eq!(pulled.events[0].message, format!("Pulling image {image:?}"));
    let message = &pulled.events[1].message;
    assert!(
        message.starts_with(&format!("Successfully pulled image {image:?} in "))
            && message.contains(" including waiting). Image size: ")
            && message.ends_with(" bytes."),
        "{message}"
    );
    assert!(!message.contains("Image size: 0 bytes"), "{message}");

    // Present now: IfNotPresent does not pull again.
    let again = puller.ensure(&pod(), &container(&image, None), &[]).await?;
    assert_eq!(again.image_ref, pulled.image_ref);
    assert_eq!(again.events.len(), 1);
    assert_eq!(
        again.events[0].message,
        format!("Container image {image:?} already present on machine")
    );

    // Never, and the image is not there.
    let missing = format!("{REGISTRY_ADDRESS}/kyb/missing:1");
    let never = puller
        .ensure(&pod(), &container(&missing, Some("Never")), &[])
        .await
        .expect_err("pulled with Never");
    assert_eq!(never.reason, ERR_IMAGE_NEVER_PULL);
    assert_eq!(
        never.message,
        format!("Container image {missing:?} is not present with pull policy of Never")
    );
    assert_eq!(never.events[0].event_type, EventType::Warning);

    // A pull that fails, then backs off.
    let failed = puller
        .ensure(&pod(), &container(&missing, Some("IfNotPresent")), &[])
        .await
        .expect_err("pulled a missing image");
    assert_eq!(failed.reason, ERR_IMAGE_PULL);
    assert!(
        failed
            .message
            .starts_with("rpc error: code = NotFound desc = failed to pull and unpack image"),
        "{}",
        failed.message
    );
    let failed_event = failed.events.last().map(|e| (e.reason, e.message.clone()));
    assert_eq!(
        failed_event,
        Some((
            "Failed",
            format!("Failed to pull image {missing:?}: {}", failed.message)
        ))
    );
    let backing_off = puller
        .ensure(&pod(), &container(&missing, Some("IfNotPresent")), &[])
        .await
        .expect_err("pulled during back-off");
    assert_eq!(backing_off.reason, IMAGE_PULL_BACK_OFF);
    assert_eq!(
        backing_off.message,
        format!("Back-off pulling image {missing:?}")
    );
    assert_eq!(backing_off.events[0].reason, "BackOff");

    let invalid = puller
        .ensure(&pod(), &container("Not A Name", None), &[])
        .await
        .expect_err("pulled an invalid name");
    assert_eq!(invalid.reason, INVALID_IMAGE_NAME);
    assert_eq!(
        invalid.message,
        r#"Failed to apply default image tag "Not A Name": couldn't parse image name "Not A Name": invalid reference format"#
    );
    Ok(())
}

/// `alice`:`s3cret`, bcrypt-hashed (cost 4: quick to check) for the registry's htpasswd file.
const HTPASSWD: &str = "alice:$2b$04$Nh5oCxhvGDXg6mrnyO2NTOqTN33dBk4M3f6Lrjd1uALcp1uSbLJDm";

fn docker_config_secret(registry: &str, user: &str, password: &str) -> Secret {
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let json = format!(r#"{{"auths":{{"{registry}":{{"auth":"{auth}"}}}}}}"#);
    Secret {
        type_: Some("kubernetes.io/dockerconfigjson".into()),
        data: Some(BTreeMap::from([(
            ".dockerconfigjson".to_string(),
            ByteString(json.into_bytes()),
        )])),
        ..Secret::default()
    }
}

#[tokio::test]
async fn pull_secrets_give_the_registry_its_credentials_as_root() -> anyhow::Result<()> {
    let netns = NetNs::create()?;
    let registry = TestRegistry::start_with_htpasswd(&netns, HTPASSWD)?;
    let archive = image_archive("pause")?;
    let image = format!("{REGISTRY_ADDRESS}/private/pause:1.0");
    let copy = netns
        .command("skopeo")
        .args(["--insecure-policy", "copy", "--dest-tls-verify=false"])
        .args(["--dest-creds", "alice:s3cret"])
        .arg(format!("oci-archive:{}", archive.display()))
        .arg(format!("docker://{image}"))
        .output()?;
    anyhow::ensure!(
        copy.status.success(),
        "skopeo copy: {}\n{}",
        String::from_utf8_lossy(&copy.stderr),
        registry.output()
    );
    let containerd = start_containerd(&netns)?;
    let puller = ImagePuller::new(Cri::connect(&containerd.endpoint())?);

    // No secret: the registry refuses.
    let refused = puller
        .ensure(&pod(), &container(&image, Some("Always")), &[])
        .await
        .expect_err("pulled without credentials");
    assert_eq!(refused.reason, ERR_IMAGE_PULL);
    assert!(
        refused.message.contains("401 Unauthorized"),
        "{}",
        refused.message
    );

    // A wrong password for that registry, and a right one for another registry: still
    // refused (another pod: no back-off from the first failure).
    let mut other_pod = pod();
    other_pod.metadata.uid = Some("uid-other".into());
    let wrong = [
        docker_config_secret(REGISTRY_ADDRESS, "alice", "wrong"),
        docker_config_secret("registry.example.com", "alice", "s3cret"),
    ];
    let refused = puller
        .ensure(&other_pod, &container(&image, Some("Always")), &wrong)
        .await
        .expect_err("pulled with a wrong password");
    assert_eq!(refused.reason, ERR_IMAGE_PULL);

    // The right secret.
    let mut third_pod = pod();
    third_pod.metadata.uid = Some("uid-third".into());
    let secret = docker_config_secret(REGISTRY_ADDRESS, "alice", "s3cret");
    let pulled = puller
        .ensure(&third_pod, &container(&image, Some("Always")), &[secret])
        .await
        .map_err(|error| anyhow::anyhow!("{error:?}"))?;
    assert!(pulled.image_ref.starts_with("sha256:"), "{pulled:?}");
    Ok(())
}
