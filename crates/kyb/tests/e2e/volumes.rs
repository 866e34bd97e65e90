//! PersistentVolumes and claims end to end: a `kyb server` whose
//! persistentvolume-binder-controller binds claims to statically created volumes, driven
//! with kubectl as an administrator would (`kubectl get pv,pvc`, `kubectl describe`).

use crate::cluster::{Cluster, rows};
use crate::poll::blocking_wait_for as until;

/// A PersistentVolume manifest (hostPath, outside /tmp).
fn pv(name: &str, size: &str, class: &str, policy: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1
kind: PersistentVolume
metadata:
  name: {name}
spec:
  capacity:
    storage: {size}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: {policy}
  storageClassName: \"{class}\"
  hostPath:
    path: /mnt/data/{name}
{extra}---
"
    )
}

/// A PersistentVolumeClaim manifest in `default`.
fn pvc(name: &str, size: &str, class: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {name}
  namespace: default
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: {size}
  storageClassName: \"{class}\"
{extra}---
"
    )
}

fn jsonpath(cluster: &Cluster, kind: &str, name: &str, path: &str) -> String {
    let output = cluster.kubectl(&["get", kind, name, "-o", &format!("jsonpath={path}")]);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn wait_phase(cluster: &Cluster, kind: &str, name: &str, phase: &str) {
    until(&format!("{kind} {name} {phase}"), || {
        (jsonpath(cluster, kind, name, "{.status.phase}") == phase).then_some(())
    });
}

/// Waits for `kubectl describe` of the object to mention every one of `texts`.
fn wait_described(cluster: &Cluster, kind: &str, name: &str, texts: &[&str]) -> String {
    until(&format!("{kind} {name} described with {texts:?}"), || {
        let output = cluster.kubectl(&["describe", kind, name]);
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        texts.iter().all(|t| text.contains(t)).then_some(text)
    })
}

fn apply(cluster: &Cluster, manifests: &str) {
    cluster.kubectl_stdin(&["apply", "-f", "-"], manifests);
}

#[test]
fn a_claim_binds_the_smallest_adequate_volume_and_release_follows_the_policy() {
    let cluster = Cluster::start();
    apply(
        &cluster,
        &[
            pv("pv-1g", "1Gi", "manual", "Retain", ""),
            pv("pv-5g", "5Gi", "manual", "Retain", ""),
            pv("pv-10g", "10Gi", "manual", "Delete", ""),
            pv("pv-recycle", "20Gi", "manual", "Recycle", ""),
            pv("pv-external", "30Gi", "manual", "Delete", "").replace(
                "name: pv-external\n",
                "name: pv-external\n  annotations:\n    pv.kubernetes.io/provisioned-by: example.com/nfs\n",
            ),
        ]
        .concat(),
    );
    for name in ["pv-1g", "pv-5g", "pv-10g", "pv-recycle", "pv-external"] {
        wait_phase(&cluster, "pv", name, "Available");
    }
    assert!(!jsonpath(&cluster, "pv", "pv-1g", "{.status.lastPhaseTransitionTime}").is_empty());

    apply(&cluster, &pvc("claim-3g", "3Gi", "manual", ""));
    wait_phase(&cluster, "pvc", "claim-3g", "Bound");
    assert_eq!(
        jsonpath(&cluster, "pvc", "claim-3g", "{.spec.volumeName}"),
        "pv-5g"
    );
    wait_phase(&cluster, "pv", "pv-5g", "Bound");
    let annotations = jsonpath(&cluster, "pvc", "claim-3g", "{.metadata.annotations}");
    assert!(
        annotations.contains(r#""pv.kubernetes.io/bind-completed":"yes""#)
            && annotations.contains(r#""pv.kubernetes.io/bound-by-controller":"yes""#),
        "{annotations}"
    );
    assert_eq!(
        jsonpath(
            &cluster,
            "pvc",
            "claim-3g",
            "{.status.capacity.storage} {.status.accessModes[0]}"
        ),
        "5Gi ReadWriteOnce"
    );
    let uid = jsonpath(&cluster, "pvc", "claim-3g", "{.metadata.uid}");
    assert_eq!(
        jsonpath(
            &cluster,
            "pv",
            "pv-5g",
            "{.spec.claimRef.kind} {.spec.claimRef.apiVersion} {.spec.claimRef.namespace} {.spec.claimRef.name} {.spec.claimRef.uid}"
        ),
        format!("PersistentVolumeClaim v1 default claim-3g {uid}")
    );
    assert!(!jsonpath(&cluster, "pv", "pv-5g", "{.spec.claimRef.resourceVersion}").is_empty());
    assert_eq!(
        jsonpath(
            &cluster,
            "pv",
            "pv-5g",
            "{.metadata.annotations.pv\\.kubernetes\\.io/bound-by-controller}"
        ),
        "yes"
    );

    // kubectl's columns.
    let table = rows(&cluster.kubectl_ok(&["get", "pv"]));
    assert_eq!(
        table[0],
        [
            "NAME",
            "CAPACITY",
            "ACCESS",
            "MODES",
            "RECLAIM",
            "POLICY",
            "STATUS",
            "CLAIM",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "REASON",
            "AGE"
        ]
    );
    let row = table.iter().find(|r| r[0] == "pv-5g").unwrap();
    assert_eq!(
        row[..7],
        [
            "pv-5g",
            "5Gi",
            "RWO",
            "Retain",
            "Bound",
            "default/claim-3g",
            "manual"
        ]
    );
    assert_eq!(row[7], "<unset>");
    let table = rows(&cluster.kubectl_ok(&["get", "pvc"]));
    assert_eq!(
        table[0],
        [
            "NAME",
            "STATUS",
            "VOLUME",
            "CAPACITY",
            "ACCESS",
            "MODES",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "AGE"
        ]
    );
    assert_eq!(
        table[1][..7],
        [
            "claim-3g", "Bound", "pv-5g", "5Gi", "RWO", "manual", "<unset>"
        ]
    );

    // A second claim takes the next fitting volume.
    apply(&cluster, &pvc("claim-7g", "7Gi", "manual", ""));
    wait_phase(&cluster, "pvc", "claim-7g", "Bound");
    assert_eq!(
        jsonpath(&cluster, "pvc", "claim-7g", "{.spec.volumeName}"),
        "pv-10g"
    );
    wait_phase(&cluster, "pv", "pv-10g", "Bound");

    apply(
        &cluster,
        &[
            pvc("claim-15g", "15Gi", "manual", ""),
            pvc("claim-25g", "25Gi", "manual", ""),
        ]
        .concat(),
    );
    wait_phase(&cluster, "pvc", "claim-15g", "Bound");
    wait_phase(&cluster, "pvc", "claim-25g", "Bound");
    wait_phase(&cluster, "pv", "pv-external", "Bound");

    // Deleting the claims: Retain → Released (claimRef kept), Delete → Failed (no deleter
    // here), Recycle → Failed, Delete of an externally provisioned volume → Released, for
    // its provisioner to delete.
    let bound_at = jsonpath(&cluster, "pv", "pv-5g", "{.status.lastPhaseTransitionTime}");
    cluster.kubectl_ok(&[
        "delete",
        "pvc",
        "claim-3g",
        "claim-7g",
        "claim-15g",
        "claim-25g",
    ]);
    wait_phase(&cluster, "pv", "pv-5g", "Released");
    assert_eq!(
        jsonpath(&cluster, "pv", "pv-5g", "{.spec.claimRef.name}"),
        "claim-3g"
    );
    let released_at = jsonpath(&cluster, "pv", "pv-5g", "{.status.lastPhaseTransitionTime}");
    assert!(!released_at.is_empty() && !bound_at.is_empty());
    wait_phase(&cluster, "pv", "pv-10g", "Failed");
    wait_described(
        &cluster,
        "pv",
        "pv-10g",
        &[
            "VolumeFailedDelete",
            "host_path deleter only supports /tmp/.+ but received provided /mnt/data/pv-10g",
        ],
    );
    wait_phase(&cluster, "pv", "pv-recycle", "Failed");
    wait_described(
        &cluster,
        "pv",
        "pv-recycle",
        &[
            "VolumeFailedRecycle",
            "No recycler plugin found for the volume!",
        ],
    );
    wait_phase(&cluster, "pv", "pv-external", "Released");
    let described = wait_described(&cluster, "pv", "pv-external", &["Released"]);
    assert!(!described.contains("VolumeFailedDelete"), "{described}");
    let row = rows(&cluster.kubectl_ok(&["get", "pv", "pv-5g"]))[1].clone();
    assert_eq!(row[4..6], ["Released", "default/claim-3g"]);

    // A released volume is not reused, until an administrator clears its claimRef.
    apply(&cluster, &pvc("again", "3Gi", "manual", ""));
    wait_described(
        &cluster,
        "pvc",
        "again",
        &[
            "ProvisioningFailed",
            r#"storageclass.storage.k8s.io "manual" not found"#,
        ],
    );
    assert_eq!(
        jsonpath(&cluster, "pvc", "again", "{.status.phase}"),
        "Pending"
    );
    cluster.kubectl_ok(&[
        "patch",
        "pv",
        "pv-5g",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/claimRef"}]"#,
    ]);
    wait_phase(&cluster, "pvc", "again", "Bound");
    assert_eq!(
        jsonpath(&cluster, "pvc", "again", "{.spec.volumeName}"),
        "pv-5g"
    );
}

#[test]
fn unmatched_claims_stay_pending_and_say_why() {
    let cluster = Cluster::start();
    apply(
        &cluster,
        &[
            pv("web", "5Gi", "", "Retain", "")
                .replace("name: web\n", "name: web\n  labels:\n    tier: web\n"),
            pv("gold", "5Gi", "gold", "Retain", "").replace(
                "accessModes: [ReadWriteOnce]",
                "accessModes: [ReadWriteMany]",
            ),
            pv(
                "local",
                "5Gi",
                "local",
                "Retain",
                "  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchFields:
        - {key: metadata.name, operator: In, values: [node-a]}
",
            ),
            "apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: nfs
provisioner: example.com/nfs
---
"
            .to_string(),
        ]
        .concat(),
    );
    for name in ["web", "gold", "local"] {
        wait_phase(&cluster, "pv", name, "Available");
    }
    apply(
        &cluster,
        &[
            pvc(
                "wants-db",
                "1Gi",
                "",
                "  selector:\n    matchLabels:\n      tier: db\n",
            ),
            pvc("wants-rwx", "1Gi", "", "").replace(
                "accessModes: [ReadWriteOnce]",
                "accessModes: [ReadWriteMany]",
            ),
            pvc("wants-silver", "1Gi", "silver", ""),
            pvc("wants-nfs", "1Gi", "nfs", ""),
            pvc("wants-local", "1Gi", "local", ""),
        ]
        .concat(),
    );
    for claim in ["wants-db", "wants-rwx"] {
        wait_described(
            &cluster,
            "pvc",
            claim,
            &[
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set",
                "persistentvolume-controller",
            ],
        );
    }
    wait_described(
        &cluster,
        "pvc",
        "wants-silver",
        &[
            "ProvisioningFailed",
            r#"storageclass.storage.k8s.io "silver" not found"#,
        ],
    );
    wait_described(
        &cluster,
        "pvc",
        "wants-nfs",
        &[
            "ExternalProvisioning",
            "Waiting for a volume to be created either by the external provisioner 'example.com/nfs' or manually by the system administrator.",
        ],
    );
    assert_eq!(
        jsonpath(
            &cluster,
            "pvc",
            "wants-nfs",
            "{.metadata.annotations.volume\\.kubernetes\\.io/storage-provisioner}"
        ),
        "example.com/nfs"
    );
    wait_described(
        &cluster,
        "pvc",
        "wants-local",
        &[
            "WaitForFirstConsumer",
            "waiting for first consumer to be created before binding",
        ],
    );
    // Nothing bound: every claim Pending, every volume Available.
    for claim in [
        "wants-db",
        "wants-rwx",
        "wants-silver",
        "wants-nfs",
        "wants-local",
    ] {
        assert_eq!(
            jsonpath(&cluster, "pvc", claim, "{.status.phase}"),
            "Pending"
        );
    }
    for volume in ["web", "gold", "local"] {
        assert_eq!(
            jsonpath(&cluster, "pv", volume, "{.status.phase}"),
            "Available"
        );
    }

    // A pod using the claim, not scheduled yet (there are no nodes).
    apply(
        &cluster,
        "apiVersion: v1
kind: Pod
metadata:
  name: user
  namespace: default
spec:
  containers:
  - name: app
    image: busybox
    volumeMounts:
    - {name: data, mountPath: /data}
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: wants-local}
",
    );
    wait_described(
        &cluster,
        "pvc",
        "wants-local",
        &[
            "WaitForPodScheduled",
            "waiting for pod user to be scheduled",
        ],
    );

    // The scheduler picking a node the volume cannot reach: still no binding.
    cluster.kubectl_ok(&[
        "annotate",
        "pvc",
        "wants-local",
        "volume.kubernetes.io/selected-node=node-b",
    ]);
    wait_described(
        &cluster,
        "pvc",
        "wants-local",
        &["no volume plugin matched name: kubernetes.io/no-provisioner"],
    );
    assert_eq!(
        jsonpath(&cluster, "pvc", "wants-local", "{.status.phase}"),
        "Pending"
    );
    // …and one it can.
    cluster.kubectl_ok(&[
        "annotate",
        "--overwrite",
        "pvc",
        "wants-local",
        "volume.kubernetes.io/selected-node=node-a",
    ]);
    wait_phase(&cluster, "pvc", "wants-local", "Bound");
    assert_eq!(
        jsonpath(&cluster, "pvc", "wants-local", "{.spec.volumeName}"),
        "local"
    );

    // A matching volume appearing later is found.
    apply(
        &cluster,
        &pv("db", "2Gi", "", "Retain", "")
            .replace("name: db\n", "name: db\n  labels:\n    tier: db\n"),
    );
    wait_phase(&cluster, "pvc", "wants-db", "Bound");
    assert_eq!(
        jsonpath(&cluster, "pvc", "wants-db", "{.spec.volumeName}"),
        "db"
    );
}

#[test]
fn prebound_and_named_volumes() {
    let cluster = Cluster::start();
    apply(
        &cluster,
        &[
            pv(
                "reserved",
                "10Gi",
                "",
                "Retain",
                "  claimRef:\n    namespace: default\n    name: mine\n",
            ),
            pv("small", "2Gi", "", "Retain", ""),
            pv("big", "3Gi", "", "Retain", ""),
            pv("tiny", "1Gi", "", "Retain", ""),
        ]
        .concat(),
    );
    for name in ["reserved", "small", "big", "tiny"] {
        wait_phase(&cluster, "pv", name, "Available");
    }
    // The pre-bound volume wins over the smaller free one; another claim never gets it.
    apply(&cluster, &pvc("other", "1Gi", "", ""));
    wait_phase(&cluster, "pvc", "other", "Bound");
    assert_eq!(
        jsonpath(&cluster, "pvc", "other", "{.spec.volumeName}"),
        "tiny"
    );
    apply(&cluster, &pvc("mine", "1Gi", "", ""));
    wait_phase(&cluster, "pvc", "mine", "Bound");
    assert_eq!(
        jsonpath(&cluster, "pvc", "mine", "{.spec.volumeName}"),
        "reserved"
    );
    wait_phase(&cluster, "pv", "reserved", "Bound");
    assert_eq!(
        jsonpath(
            &cluster,
            "pv",
            "reserved",
            "{.metadata.annotations.pv\\.kubernetes\\.io/bound-by-controller}"
        ),
        "",
        "a user's pre-binding is not the controller's"
    );
    assert_eq!(
        jsonpath(&cluster, "pv", "reserved", "{.spec.claimRef.uid}"),
        jsonpath(&cluster, "pvc", "mine", "{.metadata.uid}")
    );

    // A volume whose claimRef already carries a pending claim's UID (as after a crash
    // halfway through binding) is completed for that claim, whatever its size and class.
    apply(&cluster, &pvc("half", "50Gi", "", ""));
    wait_described(&cluster, "pvc", "half", &["FailedBinding"]);
    let uid = jsonpath(&cluster, "pvc", "half", "{.metadata.uid}");
    apply(
        &cluster,
        &pv(
            "half-bound",
            "1Gi",
            "other",
            "Retain",
            &format!("  claimRef:\n    namespace: default\n    name: half\n    uid: {uid}\n"),
        ),
    );
    wait_phase(&cluster, "pvc", "half", "Bound");
    assert_eq!(
        jsonpath(&cluster, "pvc", "half", "{.spec.volumeName}"),
        "half-bound"
    );
    wait_phase(&cluster, "pv", "half-bound", "Bound");

    // A volume bound to a claim that no longer exists (another UID) is Released.
    apply(
        &cluster,
        &pv(
            "orphan",
            "1Gi",
            "",
            "Retain",
            "  claimRef:\n    namespace: default\n    name: half\n    uid: 0000-gone\n",
        ),
    );
    wait_phase(&cluster, "pv", "orphan", "Released");

    // A claim naming its volume gets exactly that one.
    apply(&cluster, &pvc("named", "1Gi", "", "  volumeName: big\n"));
    wait_phase(&cluster, "pvc", "named", "Bound");
    assert_eq!(
        jsonpath(&cluster, "pvc", "named", "{.spec.volumeName}"),
        "big"
    );
    assert_eq!(
        jsonpath(
            &cluster,
            "pvc",
            "named",
            "{.metadata.annotations.pv\\.kubernetes\\.io/bound-by-controller}"
        ),
        ""
    );
    assert_eq!(
        jsonpath(
            &cluster,
            "pv",
            "big",
            "{.metadata.annotations.pv\\.kubernetes\\.io/bound-by-controller}"
        ),
        "yes"
    );
    // …unless it does not fit.
    apply(
        &cluster,
        &pvc("too-big", "5Gi", "", "  volumeName: small\n"),
    );
    wait_described(
        &cluster,
        "pvc",
        "too-big",
        &[
            "VolumeMismatch",
            r#"Cannot bind to requested volume "small": requested PV is too small"#,
        ],
    );
    assert_eq!(
        jsonpath(&cluster, "pvc", "too-big", "{.status.phase}"),
        "Pending"
    );

    // A bound claim whose volume is deleted is Lost.
    cluster.kubectl_ok(&["delete", "pv", "big"]);
    wait_phase(&cluster, "pvc", "named", "Lost");
    wait_described(
        &cluster,
        "pvc",
        "named",
        &[
            "ClaimLost",
            "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
        ],
    );
}

#[test]
fn statefulset_claims_bind_to_precreated_volumes() {
    let cluster = Cluster::start();
    apply(
        &cluster,
        &[
            pv("data-0", "1Gi", "manual", "Retain", ""),
            pv("data-1", "1Gi", "manual", "Retain", ""),
            pv("too-small", "100Mi", "manual", "Retain", ""),
        ]
        .concat(),
    );
    for name in ["data-0", "data-1", "too-small"] {
        wait_phase(&cluster, "pv", name, "Available");
    }
    apply(
        &cluster,
        "apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
  namespace: default
spec:
  serviceName: web
  replicas: 2
  podManagementPolicy: Parallel
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
        volumeMounts:
        - {name: data, mountPath: /data}
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: manual
      resources:
        requests:
          storage: 500Mi
",
    );
    let mut volumes: Vec<String> = ["data-web-0", "data-web-1"]
        .iter()
        .map(|claim| {
            wait_phase(&cluster, "pvc", claim, "Bound");
            jsonpath(&cluster, "pvc", claim, "{.spec.volumeName}")
        })
        .collect();
    volumes.sort();
    assert_eq!(volumes, ["data-0", "data-1"]);
    assert_eq!(
        jsonpath(&cluster, "pv", "too-small", "{.status.phase}"),
        "Available"
    );
}
