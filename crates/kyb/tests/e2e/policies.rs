//! ValidatingAdmissionPolicies: CEL validations bound to resources, with parameters,
//! message expressions, namespace selectors, and the Deny, Warn and Audit actions.

use crate::cluster::Cluster;
use std::process::Output;

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

const REPLICAS_POLICY: &str = r#"{
  "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
  "metadata": {"name": "replica-limit"},
  "spec": {
    "failurePolicy": "Fail",
    "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
      "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
    "validations": [{"expression": "object.spec.replicas <= 5"}]
  }
}"#;

const REPLICAS_BINDING: &str = r#"{
  "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
  "metadata": {"name": "replica-limit-everywhere"},
  "spec": {"policyName": "replica-limit", "validationActions": ["Deny"]}
}"#;

#[test]
fn a_policy_denies_deployments_with_more_than_five_replicas() {
    let cluster = Cluster::start();
    cluster.kubectl_stdin(&["create", "-f", "-"], REPLICAS_POLICY);
    cluster.kubectl_stdin(&["create", "-f", "-"], REPLICAS_BINDING);
    let output = cluster.kubectl(&[
        "create",
        "deployment",
        "big",
        "--image=nginx",
        "--replicas=6",
    ]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains("ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-everywhere' denied request: failed expression: object.spec.replicas <= 5"),
        "{}",
        text(&output)
    );
    assert!(
        !cluster
            .kubectl(&["get", "deployment", "big"])
            .status
            .success()
    );
    cluster.kubectl_ok(&[
        "create",
        "deployment",
        "small",
        "--image=nginx",
        "--replicas=5",
    ]);
    // Updates are checked too. (The scale subresource is another resource, which this
    // policy does not list, as in Kubernetes.)
    let output = cluster.kubectl(&[
        "patch",
        "deployment",
        "small",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":9}}"#,
    ]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains("denied request"),
        "{}",
        text(&output)
    );
    assert_eq!(
        cluster.kubectl_ok(&[
            "get",
            "deployment",
            "small",
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        "5"
    );
    // Expressions that do not compile are refused when the policy is written.
    let broken = REPLICAS_POLICY
        .replace("replica-limit", "broken")
        .replace("object.spec.replicas <= 5", "object.spec.replicas <=");
    let path = cluster.write_file("broken.json", &broken);
    let output = cluster.kubectl(&["create", "-f", path.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains("spec.validations[0].expression: Invalid value: \"object.spec.replicas <=\": compilation failed"),
        "{}",
        text(&output)
    );
}

#[test]
fn policies_with_parameters_messages_and_actions() {
    let cluster = Cluster::start();
    cluster.kubectl_ok(&["create", "namespace", "prod"]);
    cluster.kubectl_ok(&["label", "namespace", "prod", "env=prod"]);
    cluster.kubectl_ok(&["create", "namespace", "dev"]);
    cluster.kubectl_ok(&[
        "create",
        "configmap",
        "limits",
        "-n",
        "prod",
        "--from-literal=maxReplicas=3",
    ]);
    let policy = r#"{
      "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
      "metadata": {"name": "param-limit"},
      "spec": {
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
          "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
        "variables": [{"name": "limit", "expression": "int(params.data.maxReplicas)"}],
        "validations": [{
          "expression": "object.spec.replicas <= variables.limit",
          "messageExpression": "'replicas ' + string(object.spec.replicas) + ' exceed the limit of ' + string(variables.limit) + ' in ' + namespaceObject.metadata.name",
          "reason": "Forbidden"
        }],
        "auditAnnotations": [{"key": "replicas", "valueExpression": "string(object.spec.replicas)"}]
      }
    }"#;
    let binding = |name: &str, actions: &str, selector: &str| {
        format!(
            r#"{{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
              "metadata": {{"name": "{name}"}},
              "spec": {{"policyName": "param-limit", "validationActions": {actions},
                "paramRef": {{"name": "limits", "parameterNotFoundAction": "Allow"}},
                "matchResources": {{"namespaceSelector": {selector}}}}}}}"#
        )
    };
    cluster.kubectl_stdin(&["create", "-f", "-"], policy);
    cluster.kubectl_stdin(
        &["create", "-f", "-"],
        &binding(
            "prod-deny",
            r#"["Deny"]"#,
            r#"{"matchLabels": {"env": "prod"}}"#,
        ),
    );
    // In prod: the parameter's limit, the computed message, the validation's reason.
    let output = cluster.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=4",
        "-n",
        "prod",
    ]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains("denied request: replicas 4 exceed the limit of 3 in prod"),
        "{}",
        text(&output)
    );
    // The validation's reason gives the status: 403 Forbidden rather than 422 Invalid.
    let (code, body) = cluster.http(
        "POST",
        "/apis/apps/v1/namespaces/prod/deployments",
        "application/json",
        br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"raw"},"spec":{"replicas":7,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}"#,
    );
    assert_eq!(code, 403, "{body}");
    assert!(body.contains(r#""reason":"Forbidden""#), "{body}");
    cluster.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=3",
        "-n",
        "prod",
    ]);
    // In dev: no parameters there, and the binding allows that.
    cluster.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=9",
        "-n",
        "dev",
    ]);
    // A Warn binding in dev with its own parameters: admitted, with a warning.
    cluster.kubectl_ok(&[
        "create",
        "configmap",
        "limits",
        "-n",
        "dev",
        "--from-literal=maxReplicas=2",
    ]);
    cluster.kubectl_stdin(
        &["create", "-f", "-"],
        &binding(
            "dev-warn",
            r#"["Warn", "Audit"]"#,
            r#"{"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}"#,
        ),
    );
    let output = cluster.kubectl(&[
        "create",
        "deployment",
        "api",
        "--image=nginx",
        "--replicas=4",
        "-n",
        "dev",
    ]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("Warning: Validation failed for ValidatingAdmissionPolicy 'param-limit' with binding 'dev-warn': replicas 4 exceed the limit of 2 in dev"),
        "{}",
        text(&output)
    );
}
