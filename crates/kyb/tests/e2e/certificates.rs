//! CertificateSigningRequests as users drive them: kubectl create/get/delete with
//! Kubernetes' validation errors, `kubectl certificate approve|deny`, the signing
//! controller issuing a certificate that authenticates as the requestor, the approval and
//! subject-restriction admission checks, and a node's client request approved by the
//! approving controller after its SubjectAccessReview.

use crate::cluster::Cluster;
use crate::poll::blocking_wait_for;
use base64::Engine as _;
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
use serde_json::{Value, json};
use std::process::Output;

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A PEM certificate request for `cn` in `orgs`, and its key (PEM).
fn request(cn: &str, orgs: &[&str]) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    if let Some(org) = orgs.first() {
        name.push(DnType::OrganizationName, *org);
    }
    name.push(DnType::CommonName, cn);
    params.distinguished_name = name;
    let csr = params.serialize_request(&key).unwrap().pem().unwrap();
    (csr, key.serialize_pem())
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn csr(name: &str, request: &str, signer: &str, usages: &[&str]) -> Value {
    json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": b64(request.as_bytes()),
            "signerName": signer,
            "usages": usages,
            "expirationSeconds": 3600,
            "username": "someone-else",
        },
    })
}

/// `kubectl create -f -` of `object` with `kubeconfig`: its output and success.
fn create_as(cluster: &Cluster, kubeconfig: Option<&std::path::Path>, object: &Value) -> Output {
    use std::io::Write;
    let mut command = cluster.kubectl_command(&["create", "-f", "-"]);
    if let Some(kubeconfig) = kubeconfig {
        command.env("KUBECONFIG", kubeconfig);
    }
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(object.to_string().as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn get(cluster: &Cluster, name: &str) -> Value {
    serde_json::from_str(&cluster.kubectl_ok(&["get", "csr", name, "-o", "json"])).unwrap()
}

fn certificate(csr: &Value) -> Option<String> {
    let data = csr["status"]["certificate"].as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()?;
    String::from_utf8(bytes).ok().filter(|c| !c.is_empty())
}

#[test]
fn requests_are_validated_approved_signed_and_denied_with_kubectl() {
    let cluster = Cluster::start();
    // carol may create and read requests; dave may also update approvals, but not approve.
    cluster.kubectl_ok(&[
        "create",
        "clusterrole",
        "csr-requester",
        "--verb=create,get,list,watch",
        "--resource=certificatesigningrequests",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "carol-csr",
        "--clusterrole=csr-requester",
        "--user=carol",
        "--user=dave",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "clusterrole",
        "csr-approval-updater",
        "--verb=get,update",
        "--resource=certificatesigningrequests/approval",
    ]);
    cluster.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "dave-approval",
        "--clusterrole=csr-approval-updater",
        "--user=dave",
    ]);
    let carol = cluster.user_kubeconfig("carol", &["dev"]);
    let dave = cluster.user_kubeconfig("dave", &[]);

    // Validation, with Kubernetes' messages.
    let (good, key) = request("carol", &["dev"]);
    let client = ["client auth"];
    let refused = |object: &Value, expected: &str| {
        let output = create_as(&cluster, Some(&carol), object);
        assert!(!output.status.success(), "accepted: {object}");
        assert!(text(&output).contains(expected), "{}", text(&output));
    };
    let signer = "kubernetes.io/kube-apiserver-client";
    refused(
        &csr("bad-pem", "not a request", signer, &client),
        "spec.request: Invalid value: []byte{0x6e, 0x6f, 0x74, 0x20, 0x61, 0x20, 0x72, 0x65, 0x71, 0x75, 0x65, 0x73, 0x74}: PEM block type must be CERTIFICATE REQUEST",
    );
    refused(
        &csr("no-signer", &good, "", &client),
        "spec.signerName: Required value",
    );
    refused(
        &csr("bad-signer", &good, "nodomain", &client),
        "spec.signerName: Invalid value: \"nodomain\": must be a fully qualified domain and path of the form 'example.com/signer-name'",
    );
    refused(
        &csr("bad-usage", &good, signer, &["client auth", "flying"]),
        "spec.usages[1]: Unsupported value: \"flying\": supported values: \"any\", \"cert sign\"",
    );
    refused(
        &csr("no-usages", &good, signer, &[]),
        "spec.usages: Required value",
    );
    let mut short = csr("short", &good, signer, &client);
    short["spec"]["expirationSeconds"] = json!(599);
    refused(
        &short,
        "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)",
    );
    // CertificateSubjectRestriction: no system:masters through the client signer.
    let (masters, _) = request("mallory", &["system:masters"]);
    refused(
        &csr("masters", &masters, signer, &client),
        "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed",
    );
    // A well-formed signer name nobody serves is accepted, as in Kubernetes.
    let output = create_as(
        &cluster,
        Some(&carol),
        &csr(
            "unknown-signer",
            &good,
            "kubernetes.io/unknown-signer",
            &client,
        ),
    );
    assert!(output.status.success(), "{}", text(&output));

    // The requestor is whoever created it.
    let output = create_as(
        &cluster,
        Some(&carol),
        &csr("carol", &good, signer, &client),
    );
    assert!(output.status.success(), "{}", text(&output));
    let created = get(&cluster, "carol");
    assert_eq!(created["spec"]["username"], "carol");
    assert_eq!(
        created["spec"]["groups"],
        json!(["dev", "system:authenticated"])
    );
    let listed = cluster.kubectl_ok(&["get", "csr", "carol"]);
    let rows = crate::cluster::rows(&listed);
    assert_eq!(
        rows[0],
        [
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ]
    );
    assert_eq!(rows[1][2..], [signer, "carol", "60m", "Pending"]);

    // A denied request; then approval without `approve` on the signer is refused.
    let (denied_request, _) = request("carol", &["dev"]);
    let output = create_as(
        &cluster,
        Some(&carol),
        &csr("denied", &denied_request, signer, &client),
    );
    assert!(output.status.success(), "{}", text(&output));
    cluster.kubectl_ok(&["certificate", "deny", "denied"]);
    let output = cluster.kubectl_as(&dave, &["certificate", "approve", "carol"]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains(
            "certificatesigningrequests.certificates.k8s.io \"carol\" is forbidden: user not permitted to approve requests with signerName \"kubernetes.io/kube-apiserver-client\""
        ),
        "{}",
        text(&output)
    );
    let output = cluster.kubectl_as(&carol, &["certificate", "approve", "carol"]);
    assert!(!output.status.success(), "{}", text(&output));

    // Approved by the admin: signed, and the certificate authenticates as carol.
    cluster.kubectl_ok(&["certificate", "approve", "carol"]);
    let cert = blocking_wait_for("carol's certificate", || {
        certificate(&get(&cluster, "carol"))
    });
    let signed = get(&cluster, "carol");
    assert_eq!(signed["status"]["conditions"][0]["type"], "Approved");
    assert_eq!(
        signed["status"]["conditions"][0]["reason"],
        "KubectlApprove"
    );
    let mine = cluster.certificate_kubeconfig(
        "carol",
        &kyb_pki::Credentials {
            cert_pem: cert,
            key_pem: key,
        },
    );
    let output = cluster.kubectl_as(&mine, &["auth", "whoami", "-o", "json"]);
    assert!(output.status.success(), "{}", text(&output));
    let review: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(review["status"]["userInfo"]["username"], "carol");
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        json!(["dev", "system:authenticated"])
    );
    // Signed after the denial was recorded: the denied one never is.
    let denied = get(&cluster, "denied");
    assert_eq!(denied["status"]["conditions"][0]["type"], "Denied");
    assert_eq!(certificate(&denied), None);
    let rows = crate::cluster::rows(&cluster.kubectl_ok(&["get", "csr"]));
    let condition = |name: &str| {
        rows.iter()
            .find(|r| r[0] == name)
            .map(|r| r[5].clone())
            .unwrap()
    };
    assert_eq!(condition("carol"), "Approved,Issued");
    assert_eq!(condition("denied"), "Denied");

    // A certificate, once set, is not replaced.
    let mut replaced = signed.clone();
    let ca = std::fs::read(cluster.kubeconfig().with_file_name("pki").join("ca.crt")).unwrap();
    replaced["status"]["certificate"] = json!(b64(&ca));
    let (code, body) = cluster.http(
        "PUT",
        "/apis/certificates.k8s.io/v1/certificatesigningrequests/carol/status",
        "application/json",
        replaced.to_string().as_bytes(),
    );
    assert_eq!(code, 422, "{body}");
    assert!(
        body.contains(
            "status.certificate: Forbidden: updates may not modify existing certificate content"
        ),
        "{body}"
    );

    // Deleted by name.
    cluster.kubectl_ok(&["delete", "csr", "denied", "unknown-signer"]);
    let output = cluster.kubectl(&["get", "csr", "denied"]);
    assert!(text(&output).contains("NotFound"), "{}", text(&output));
}

#[test]
fn node_client_requests_are_approved_after_a_subject_access_review() {
    let cluster = Cluster::start();
    // A bootstrapper allowed nodeclient, and one that may only create requests.
    for (binding, role, user) in [
        ("boot-create", "system:node-bootstrapper", "boot"),
        (
            "boot-nodeclient",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            "boot",
        ),
        ("plain-create", "system:node-bootstrapper", "plain"),
    ] {
        cluster.kubectl_ok(&[
            "create",
            "clusterrolebinding",
            binding,
            &format!("--clusterrole={role}"),
            &format!("--user={user}"),
        ]);
    }
    let boot = cluster.user_kubeconfig("boot", &[]);
    let plain = cluster.user_kubeconfig("plain", &[]);
    let signer = "kubernetes.io/kube-apiserver-client-kubelet";
    let usages = ["digital signature", "key encipherment", "client auth"];
    let (unallowed, _) = request("system:node:n2", &["system:nodes"]);
    let output = create_as(
        &cluster,
        Some(&plain),
        &csr("n2", &unallowed, signer, &usages),
    );
    assert!(output.status.success(), "{}", text(&output));
    let (node, key) = request("system:node:n1", &["system:nodes"]);
    let output = create_as(&cluster, Some(&boot), &csr("n1", &node, signer, &usages));
    assert!(output.status.success(), "{}", text(&output));

    let cert = blocking_wait_for("the node's certificate", || {
        certificate(&get(&cluster, "n1"))
    });
    let signed = get(&cluster, "n1");
    assert_eq!(signed["status"]["conditions"][0]["type"], "Approved");
    assert_eq!(signed["status"]["conditions"][0]["reason"], "AutoApproved");
    assert_eq!(
        signed["status"]["conditions"][0]["message"],
        "Auto approving kubelet client certificate after SubjectAccessReview."
    );
    let kubeconfig = cluster.certificate_kubeconfig(
        "n1",
        &kyb_pki::Credentials {
            cert_pem: cert,
            key_pem: key,
        },
    );
    let output = cluster.kubectl_as(&kubeconfig, &["auth", "whoami", "-o", "json"]);
    let review: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(review["status"]["userInfo"]["username"], "system:node:n1");
    // The request of a user without nodeclient stays pending (it was queued first).
    let pending = get(&cluster, "n2");
    assert!(pending["status"]["conditions"].is_null(), "{pending}");
}

#[tokio::test]
async fn requests_are_watched_through_approval_signing_and_deletion() {
    use futures::StreamExt as _;
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    use kube::api::{Api, WatchEvent, WatchParams};

    let cluster = Cluster::start();
    let api: Api<CertificateSigningRequest> = Api::all(crate::client::client(&cluster).await);
    let mut events = api
        .watch(&WatchParams::default().timeout(60), "0")
        .await
        .unwrap()
        .boxed();
    let (request, _key) = request("erin", &["dev"]);
    let object = csr(
        "watched",
        &request,
        "kubernetes.io/kube-apiserver-client",
        &["client auth"],
    );
    let output = create_as(&cluster, None, &object);
    assert!(output.status.success(), "{}", text(&output));
    cluster.kubectl_ok(&["certificate", "approve", "watched"]);
    // Seen created, approved, then signed, in that order.
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        let (kind, csr) = match event.unwrap() {
            WatchEvent::Added(csr) => ("ADDED", csr),
            WatchEvent::Modified(csr) => ("MODIFIED", csr),
            WatchEvent::Deleted(csr) => ("DELETED", csr),
            other => panic!("unexpected watch event: {other:?}"),
        };
        if csr.metadata.name.as_deref() != Some("watched") {
            continue;
        }
        let status = csr.status.unwrap_or_default();
        let approved = status
            .conditions
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Approved" && c.status == "True");
        let signed = status.certificate.is_some();
        seen.push((kind, approved, signed));
        if kind == "MODIFIED" && signed {
            break;
        }
    }
    assert_eq!(seen.first(), Some(&("ADDED", false, false)), "{seen:?}");
    assert!(seen.contains(&("MODIFIED", true, false)), "{seen:?}");
    assert_eq!(seen.last(), Some(&("MODIFIED", true, true)), "{seen:?}");
    cluster.kubectl_ok(&["delete", "csr", "watched"]);
    loop {
        match events.next().await.map(Result::unwrap) {
            Some(WatchEvent::Deleted(csr)) if csr.metadata.name.as_deref() == Some("watched") => {
                break;
            }
            Some(_) => {}
            None => panic!("the watch ended before the deletion"),
        }
    }
}
