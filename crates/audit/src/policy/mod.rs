//! The `audit.k8s.io/v1` `Policy` (kube-apiserver's `--audit-policy-file`): loading,
//! validation, and evaluation against a request.
//!
//! Loading follows kube-apiserver: decode (YAML or JSON; unknown fields are warnings),
//! require `apiVersion: audit.k8s.io/v1`, validate, refuse a policy without rules. Each
//! rule's `omitStages` is joined with the policy's once, at load time. Evaluation walks
//! the rules in order and the first that matches decides; no match is level `None`.

mod document;
mod matcher;
mod validate;

use std::path::Path;

use kyb_apimachinery::field::FieldError;
use serde_json::Value;

use crate::attributes::RequestAttributes;
use crate::level::{Level, Stage, StageSet};
use matcher::{CompiledRule, GroupResourcesMatcher, PathPattern, ResourcePattern, StringSet};

/// The only group version kube-apiserver 1.33 reads policies in.
pub const POLICY_API_VERSION: &str = "audit.k8s.io/v1";

/// What the policy decided for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleDecision {
    /// How much to record; `None` means no event at all.
    pub level: Level,
    /// Stages for which no event is written (the rule's joined with the policy's).
    pub omit_stages: StageSet,
    /// Whether request and response objects are logged without `metadata.managedFields`.
    pub omit_managed_fields: bool,
}

impl RuleDecision {
    /// Record nothing.
    pub const NONE: RuleDecision = RuleDecision {
        level: Level::None,
        omit_stages: StageSet::EMPTY,
        omit_managed_fields: false,
    };

    /// Whether an event is written for `stage`.
    pub fn records(&self, stage: Stage) -> bool {
        self.level != Level::None && !self.omit_stages.contains(stage)
    }
}

/// Why a policy could not be loaded. The texts are kube-apiserver's.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error(
        "failed to read file path {}: {source}",
        kyb_apimachinery::gofmt::quote(path)
    )]
    Read {
        path: String,
        source: std::io::Error,
    },
    /// The text is not YAML or JSON, or a field has the wrong type.
    #[error("failed decoding: {0}")]
    Decode(String),
    /// `apiVersion`/`kind` are missing or not `audit.k8s.io/v1` `Policy`.
    #[error("unknown group version field {group}/{version}, Kind={kind} in policy")]
    UnknownGroupVersion {
        group: String,
        version: String,
        kind: String,
    },
    /// Validation failed; each error names its field.
    #[error("{}", aggregate(.0))]
    Invalid(Vec<FieldError>),
    /// The policy has no rules.
    #[error("loaded illegal policy with 0 rules")]
    NoRules,
    /// A policy file failed to load.
    #[error("{source}: from file {path}")]
    File {
        path: String,
        source: Box<PolicyError>,
    },
}

/// `[a, b]` for several messages (duplicates once), the message alone for one, as
/// Kubernetes' error aggregates print.
fn aggregate(errors: &[FieldError]) -> String {
    let mut messages: Vec<String> = Vec::with_capacity(errors.len());
    for message in errors.iter().map(ToString::to_string) {
        if !messages.contains(&message) {
            messages.push(message);
        }
    }
    if messages.len() == 1 {
        messages.concat()
    } else {
        format!("[{}]", messages.join(", "))
    }
}

/// A loaded, validated and compiled audit policy.
#[derive(Debug, Clone)]
pub struct Policy {
    rules: Vec<CompiledRule>,
    omit_stages: StageSet,
    omit_managed_fields: bool,
    warnings: Vec<String>,
}

impl Policy {
    /// Reads a policy file (`--audit-policy-file`).
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let display = path.display().to_string();
        let text = std::fs::read(path).map_err(|source| PolicyError::Read {
            path: display.clone(),
            source,
        })?;
        Policy::parse(&text).map_err(|source| PolicyError::File {
            path: display,
            source: Box::new(source),
        })
    }

    /// Parses a policy from YAML or JSON text.
    pub fn parse(text: &[u8]) -> Result<Policy, PolicyError> {
        let value = document::parse_text(text).map_err(PolicyError::Decode)?;
        Policy::from_value(&value)
    }

    /// Builds a policy from its JSON form.
    pub fn from_value(value: &Value) -> Result<Policy, PolicyError> {
        let doc = document::read_policy(value).map_err(PolicyError::Decode)?;
        let (group, version) = match doc.api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", doc.api_version.as_str()),
        };
        if doc.api_version != POLICY_API_VERSION || doc.kind != "Policy" {
            return Err(PolicyError::UnknownGroupVersion {
                group: group.to_string(),
                version: version.to_string(),
                kind: doc.kind,
            });
        }
        let errors = validate::validate(&doc);
        if !errors.is_empty() {
            return Err(PolicyError::Invalid(errors));
        }
        if doc.rules.is_empty() {
            return Err(PolicyError::NoRules);
        }
        Ok(compile(doc))
    }

    /// The decision for one request: the first rule that matches, else level `None`
    /// with the policy's own `omitStages` and `omitManagedFields`. Allocates nothing.
    pub fn evaluate(&self, attributes: &RequestAttributes<'_>) -> RuleDecision {
        match self.rules.iter().find(|rule| rule.matches(attributes)) {
            Some(rule) => RuleDecision {
                level: rule.level,
                omit_stages: rule.omit_stages,
                omit_managed_fields: rule.omit_managed_fields.unwrap_or(self.omit_managed_fields),
            },
            None => RuleDecision {
                level: Level::None,
                omit_stages: self.omit_stages,
                omit_managed_fields: self.omit_managed_fields,
            },
        }
    }

    /// Fields of the document the policy type does not have (`unknown field
    /// "rules[0].foo"`). Kubernetes loads such a policy leniently and logs "Audit policy
    /// contains errors, falling back to lenient decoding: strict decoding error: …".
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The number of rules.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }
}

fn stages(names: &[String]) -> StageSet {
    names.iter().filter_map(|s| Stage::parse(s)).collect()
}

fn compile(doc: document::PolicyDocument) -> Policy {
    let omit_stages = stages(&doc.omit_stages);
    let rules = doc
        .rules
        .into_iter()
        .map(|rule| CompiledRule {
            level: Level::parse(&rule.level).unwrap_or(Level::None),
            omit_stages: omit_stages.union(stages(&rule.omit_stages)),
            omit_managed_fields: rule.omit_managed_fields,
            users: StringSet::of(rule.users),
            user_groups: StringSet::of(rule.user_groups),
            verbs: StringSet::of(rule.verbs),
            namespaces: StringSet::of(rule.namespaces),
            resources: rule
                .resources
                .into_iter()
                .map(|entry| GroupResourcesMatcher {
                    group: entry.group.into_boxed_str(),
                    resources: entry
                        .resources
                        .into_iter()
                        .map(ResourcePattern::new)
                        .collect(),
                    names: StringSet::of(entry.resource_names),
                })
                .collect(),
            non_resource_urls: rule
                .non_resource_urls
                .into_iter()
                .map(PathPattern::new)
                .collect(),
        })
        .collect();
    Policy {
        rules,
        omit_stages,
        omit_managed_fields: doc.omit_managed_fields,
        warnings: doc.warnings,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::attributes::ResourceAttributes;

    fn policy(yaml: &str) -> Policy {
        let text = format!("apiVersion: audit.k8s.io/v1\nkind: Policy\n{yaml}");
        match Policy::parse(text.as_bytes()) {
            Ok(policy) => policy,
            Err(e) => panic!("{e}"),
        }
    }

    struct Request {
        user: &'static str,
        groups: Vec<String>,
        verb: &'static str,
        resource: Option<ResourceAttributes<'static>>,
        path: &'static str,
    }

    impl Request {
        fn resource(verb: &'static str, group: &'static str, resource: &'static str) -> Request {
            Request {
                user: "alice",
                groups: vec!["system:authenticated".to_string()],
                verb,
                resource: Some(ResourceAttributes {
                    group,
                    version: "v1",
                    resource,
                    ..ResourceAttributes::default()
                }),
                path: "/api",
            }
        }

        fn non_resource(verb: &'static str, path: &'static str) -> Request {
            Request {
                user: "alice",
                groups: vec!["system:authenticated".to_string()],
                verb,
                resource: None,
                path,
            }
        }

        fn sub(mut self, subresource: &'static str) -> Request {
            if let Some(r) = &mut self.resource {
                r.subresource = subresource;
            }
            self
        }

        fn ns(mut self, namespace: &'static str) -> Request {
            if let Some(r) = &mut self.resource {
                r.namespace = namespace;
            }
            self
        }

        fn named(mut self, name: &'static str) -> Request {
            if let Some(r) = &mut self.resource {
                r.name = name;
            }
            self
        }

        fn user(mut self, user: &'static str, groups: &[&str]) -> Request {
            self.user = user;
            self.groups = groups.iter().map(|g| g.to_string()).collect();
            self
        }

        fn level(&self, policy: &Policy) -> Level {
            self.decide(policy).level
        }

        fn decide(&self, policy: &Policy) -> RuleDecision {
            policy.evaluate(&RequestAttributes {
                user: self.user,
                groups: &self.groups,
                verb: self.verb,
                resource: self.resource,
                path: self.path,
            })
        }
    }

    #[test]
    fn users_groups_and_verbs() {
        let p = policy(
            "rules:\n- level: RequestResponse\n  users: [bob]\n- level: Request\n  userGroups: [system:nodes]\n- level: None\n  verbs: [get, list, watch]\n- level: Metadata\n",
        );
        let pods = || Request::resource("get", "", "pods");
        assert_eq!(pods().user("bob", &[]).level(&p), Level::RequestResponse);
        assert_eq!(
            pods()
                .user("system:node:n1", &["system:nodes", "system:authenticated"])
                .level(&p),
            Level::Request
        );
        assert_eq!(pods().level(&p), Level::None);
        assert_eq!(
            Request::resource("create", "", "pods").level(&p),
            Level::Metadata
        );
    }

    #[test]
    fn first_match_wins_and_no_match_is_none() {
        let p = policy(
            "rules:\n- level: None\n  resources: [{group: '', resources: [events]}]\n- level: Metadata\n  resources: [{group: ''}]\n- level: RequestResponse\n  resources: [{group: ''}]\n",
        );
        assert_eq!(
            Request::resource("get", "", "events").level(&p),
            Level::None
        );
        assert_eq!(
            Request::resource("get", "", "pods").level(&p),
            Level::Metadata
        );
        assert_eq!(
            Request::resource("get", "apps", "deployments").level(&p),
            Level::None
        );
        assert_eq!(
            Request::non_resource("get", "/healthz").level(&p),
            Level::None
        );
    }

    #[test]
    fn resource_groups_subresources_and_wildcards() {
        let p = policy(
            "rules:\n- level: None\n  resources: [{group: '', resources: [pods/log, '*/status']}]\n- level: Request\n  resources: [{group: apps, resources: ['deployments/*']}]\n- level: RequestResponse\n  resources: [{group: '', resources: [pods]}]\n- level: Metadata\n  resources: [{group: batch, resources: ['*']}]\n",
        );
        assert_eq!(
            Request::resource("get", "", "pods").sub("log").level(&p),
            Level::None
        );
        assert_eq!(
            Request::resource("update", "", "nodes")
                .sub("status")
                .level(&p),
            Level::None
        );
        assert_eq!(
            Request::resource("get", "", "pods").level(&p),
            Level::RequestResponse
        );
        assert_eq!(
            Request::resource("create", "", "pods")
                .sub("exec")
                .level(&p),
            Level::None
        );
        assert_eq!(
            Request::resource("patch", "apps", "deployments")
                .sub("scale")
                .level(&p),
            Level::Request
        );
        assert_eq!(
            Request::resource("get", "apps", "deployments").level(&p),
            Level::Request
        );
        assert_eq!(
            Request::resource("get", "apps", "replicasets").level(&p),
            Level::None
        );
        // `*/status` was listed for the core group only; batch's `*` covers subresources.
        assert_eq!(
            Request::resource("get", "batch", "jobs")
                .sub("status")
                .level(&p),
            Level::Metadata
        );
        assert_eq!(
            Request::resource("get", "batch", "cronjobs").level(&p),
            Level::Metadata
        );
        // The group must match exactly: the core group is "", not a wildcard.
        assert_eq!(
            Request::resource("get", "batch.example.com", "jobs").level(&p),
            Level::None
        );
    }

    #[test]
    fn resource_names_and_namespaces() {
        let p = policy(
            "rules:\n- level: RequestResponse\n  resources: [{group: '', resources: [configmaps], resourceNames: [controller-leader]}]\n- level: Request\n  namespaces: [kube-system, '']\n- level: Metadata\n  namespaces: [default]\n  resources: [{group: ''}]\n",
        );
        let cm = || Request::resource("update", "", "configmaps").ns("default");
        assert_eq!(
            cm().named("controller-leader").level(&p),
            Level::RequestResponse
        );
        assert_eq!(cm().named("other").level(&p), Level::Metadata);
        assert_eq!(cm().ns("kube-system").named("x").level(&p), Level::Request);
        // Cluster-scoped resources have the empty namespace.
        assert_eq!(
            Request::resource("get", "", "nodes").level(&p),
            Level::Request
        );
        assert_eq!(
            Request::resource("get", "", "pods").ns("web").level(&p),
            Level::None
        );
        // Rules with namespaces never match non-resource requests.
        assert_eq!(Request::non_resource("get", "/api").level(&p), Level::None);
    }

    #[test]
    fn non_resource_urls() {
        let p = policy(
            "rules:\n- level: None\n  nonResourceURLs: [/healthz*, /version]\n- level: Metadata\n  nonResourceURLs: ['/apis/*']\n- level: Request\n  nonResourceURLs: ['*']\n",
        );
        assert_eq!(
            Request::non_resource("get", "/healthz").level(&p),
            Level::None
        );
        assert_eq!(
            Request::non_resource("get", "/healthz/etcd").level(&p),
            Level::None
        );
        assert_eq!(
            Request::non_resource("get", "/version").level(&p),
            Level::None
        );
        assert_eq!(
            Request::non_resource("get", "/versions").level(&p),
            Level::Request
        );
        assert_eq!(
            Request::non_resource("get", "/apis/apps").level(&p),
            Level::Metadata
        );
        assert_eq!(
            Request::non_resource("get", "/apis").level(&p),
            Level::Request
        );
        // A resource request never matches a non-resource rule.
        assert_eq!(Request::resource("get", "", "pods").level(&p), Level::None);
    }

    #[test]
    fn omit_stages_and_managed_fields() {
        let p = policy(
            "omitStages: [RequestReceived]\nomitManagedFields: true\nrules:\n- level: Metadata\n  verbs: [get]\n  omitStages: [ResponseStarted]\n  omitManagedFields: false\n- level: Request\n  verbs: [list]\n",
        );
        let get = Request::resource("get", "", "pods").decide(&p);
        assert!(get.omit_stages.contains(Stage::RequestReceived));
        assert!(get.omit_stages.contains(Stage::ResponseStarted));
        assert!(!get.omit_stages.contains(Stage::ResponseComplete));
        assert!(!get.omit_managed_fields);
        assert!(!get.records(Stage::RequestReceived));
        assert!(get.records(Stage::ResponseComplete));
        let list = Request::resource("list", "", "pods").decide(&p);
        assert_eq!(
            list.omit_stages.iter().collect::<Vec<_>>(),
            vec![Stage::RequestReceived]
        );
        assert!(list.omit_managed_fields);
        let none = Request::resource("delete", "", "pods").decide(&p);
        assert_eq!(none.level, Level::None);
        assert!(none.omit_managed_fields);
        assert!(!none.records(Stage::ResponseComplete));
    }

    /// The example policy of the Kubernetes auditing documentation.
    const DOCS_EXAMPLE: &str = r#"
apiVersion: audit.k8s.io/v1 # This is required.
kind: Policy
omitStages:
  - "RequestReceived"
rules:
  - level: RequestResponse
    resources:
    - group: ""
      resources: ["pods"]
  - level: Metadata
    resources:
    - group: ""
      resources: ["pods/log", "pods/status"]
  - level: None
    resources:
    - group: ""
      resources: ["configmaps"]
      resourceNames: ["controller-leader"]
  - level: None
    users: ["system:kube-proxy"]
    verbs: ["watch"]
    resources:
    - group: "" # core API group
      resources: ["endpoints", "services"]
  - level: None
    userGroups: ["system:authenticated"]
    nonResourceURLs:
    - "/api*" # Wildcard matching.
    - "/version"
  - level: Request
    resources:
    - group: "" # core API group
      resources: ["configmaps"]
    namespaces: ["kube-system"]
  - level: Metadata
    resources:
    - group: "" # core API group
      resources: ["secrets", "configmaps"]
  - level: Request
    resources:
    - group: "" # core API group
    - group: "extensions" # Version of group should NOT be included.
  - level: Metadata
    omitStages:
      - "RequestReceived"
"#;

    #[test]
    fn documentation_example() {
        let p = Policy::parse(DOCS_EXAMPLE.as_bytes()).unwrap();
        assert_eq!(p.rule_count(), 9);
        assert!(p.warnings().is_empty());
        assert_eq!(
            Request::resource("create", "", "pods")
                .ns("default")
                .level(&p),
            Level::RequestResponse
        );
        assert_eq!(
            Request::resource("get", "", "pods").sub("log").level(&p),
            Level::Metadata
        );
        // pods/exec is not listed: the core-group catch-all at Request applies.
        assert_eq!(
            Request::resource("create", "", "pods")
                .sub("exec")
                .level(&p),
            Level::Request
        );
        let leader = Request::resource("update", "", "configmaps")
            .ns("kube-system")
            .named("controller-leader");
        assert_eq!(leader.level(&p), Level::None);
        let cm = Request::resource("update", "", "configmaps")
            .ns("kube-system")
            .named("x");
        assert_eq!(cm.level(&p), Level::Request);
        assert_eq!(cm.ns("default").level(&p), Level::Metadata);
        let proxy = Request::resource("watch", "", "endpoints")
            .user("system:kube-proxy", &["system:authenticated"]);
        assert_eq!(proxy.level(&p), Level::None);
        assert_eq!(
            Request::non_resource("get", "/apis/apps/v1").level(&p),
            Level::None
        );
        assert_eq!(
            Request::non_resource("get", "/healthz").level(&p),
            Level::Metadata
        );
        let deployments = Request::resource("list", "apps", "deployments").decide(&p);
        assert_eq!(deployments.level, Level::Metadata);
        assert_eq!(
            deployments.omit_stages.iter().collect::<Vec<_>>(),
            vec![Stage::RequestReceived]
        );
        assert!(!deployments.records(Stage::RequestReceived));
    }

    #[test]
    fn load_errors() {
        let err = |text: &str| Policy::parse(text.as_bytes()).err().map(|e| e.to_string());
        assert_eq!(
            err("kind: Policy\napiVersion: audit.k8s.io/v1beta1\nrules: [{level: None}]\n")
                .as_deref(),
            Some("unknown group version field audit.k8s.io/v1beta1, Kind=Policy in policy")
        );
        assert_eq!(
            err("rules: [{level: None}]\n").as_deref(),
            Some("unknown group version field /, Kind= in policy")
        );
        assert_eq!(
            err("apiVersion: audit.k8s.io/v1\nkind: Policy\n").as_deref(),
            Some("loaded illegal policy with 0 rules")
        );
        assert_eq!(
            err("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Some}, {}]\n")
                .as_deref(),
            Some(
                r#"[rules[0].level: Unsupported value: "Some": supported values: "None", "Metadata", "Request", "RequestResponse", rules[1].level: Required value]"#
            )
        );
        assert!(err("apiVersion: [\n").is_some_and(|e| e.starts_with("failed decoding: ")));
    }

    #[test]
    fn load_from_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.yaml");
        std::fs::write(
            &path,
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  foo: bar\n",
        )
        .unwrap();
        let p = Policy::load(&path).unwrap();
        assert_eq!(p.rule_count(), 1);
        assert_eq!(p.warnings(), [r#"unknown field "rules[0].foo""#]);

        std::fs::write(&path, "apiVersion: audit.k8s.io/v1\nkind: Policy\n").unwrap();
        let e = Policy::load(&path).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "loaded illegal policy with 0 rules: from file {}",
                path.display()
            )
        );
        let missing = dir.path().join("missing.yaml");
        let e = Policy::load(&missing).unwrap_err().to_string();
        assert!(e.starts_with(&format!(
            "failed to read file path \"{}\": ",
            missing.display()
        )));
    }
}
