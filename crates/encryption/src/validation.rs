//! Validation of a decoded `EncryptionConfiguration`, with kube-apiserver's rules and
//! messages: at least one resource entry, resource names and wildcards (no capitals, no
//! bare `*`, no `events.k8s.io` or `extensions` groups, no `resource.*`, no duplicates or
//! overlapping wildcards within one list), exactly one provider per `providers[]` element,
//! and keys (name, base64 secret of an accepted length). Each failure is a [`FieldError`]
//! printed as Kubernetes prints `field.Error`s.

use crate::decode::{RawConfig, RawKey, RawProvider};
use crate::resources::GroupResource;
use base64::Engine as _;
use std::fmt;

/// Key sizes in bytes that AES accepts (`aesgcm`, `aescbc`).
pub(crate) const AES_KEY_SIZES: &[usize] = &[16, 24, 32];
/// Key size in bytes of `secretbox`.
pub(crate) const SECRETBOX_KEY_SIZES: &[usize] = &[32];

/// One validation failure: the field and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The field path, `resources[0].providers[1].aesgcm.keys[0].secret`.
    pub field: String,
    pub kind: FieldErrorKind,
    /// The explanation (`secrets must be base64 encoded`).
    pub detail: String,
}

/// Kubernetes' `field.ErrorType`s that this validation produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// `Required value`.
    Required,
    /// `Invalid value: <value>`, with the value as Go prints it (`"REDACTED"` for secrets).
    Invalid(String),
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FieldErrorKind::Required => write!(f, "{}: Required value", self.field)?,
            FieldErrorKind::Invalid(value) => write!(f, "{}: Invalid value: {value}", self.field)?,
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Prints errors as Kubernetes' aggregate error does: one alone, several as `[a, b]`,
/// repeated messages once.
pub(crate) fn aggregate<T: fmt::Display>(errors: &[T]) -> String {
    let mut seen: Vec<String> = Vec::with_capacity(errors.len());
    for error in errors {
        let message = error.to_string();
        if !seen.contains(&message) {
            seen.push(message);
        }
    }
    match seen.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

fn required(field: String, detail: String) -> FieldError {
    FieldError {
        field,
        kind: FieldErrorKind::Required,
        detail,
    }
}

fn invalid(field: String, value: String, detail: &str) -> FieldError {
    FieldError {
        field,
        kind: FieldErrorKind::Invalid(value),
        detail: detail.to_string(),
    }
}

const REDACTED: &str = "\"REDACTED\"";
const DUPLICATE_RESOURCE: &str = "the same resource cannot be specified multiple times";
const OVERLAP: &str = "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked";
const CAPITALS: &str = "resource name should not contain capital letters";
const STAR_RESOURCE: &str =
    "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources";
const NON_REST_RESOURCE: &str = "resources which do not have REST API/s cannot be encrypted";
const EVENTS_GROUP: &str = "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file";
const EXTENSIONS_GROUP: &str =
    "'extensions' group has been removed and cannot be used for encryption";
const ACROSS_GROUPS: &str = "encrypting the same resource across groups is not supported";
const NO_PROVIDER: &str = "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity";
const MORE_THAN_ONE_PROVIDER: &str = "more than one provider specified in a single element, should split into different list elements";
const BASE64: &str = "secrets must be base64 encoded";

/// Every validation failure of the configuration, in Kubernetes' order.
pub(crate) fn validate(config: &RawConfig) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if config.resources.is_empty() {
        errors.push(required(
            "resources".into(),
            "at least one resources is required".into(),
        ));
        return errors;
    }
    for (i, entry) in config.resources.iter().enumerate() {
        let resources_path = format!("resources[{i}].resources");
        let providers_path = format!("resources[{i}].providers");
        if entry.resources.is_empty() {
            let detail = format!("at least one {resources_path} is required");
            errors.push(required(resources_path.clone(), detail));
        }
        validate_overlap(&entry.resources, &resources_path, &mut errors);
        validate_names(&entry.resources, &resources_path, &mut errors);
        if entry.providers.is_empty() {
            let detail = format!("at least one {providers_path} is required");
            errors.push(required(providers_path.clone(), detail));
        }
        for (j, provider) in entry.providers.iter().enumerate() {
            let path = format!("{providers_path}[{j}]");
            validate_single_provider(provider, &path, &mut errors);
            // The first provider set, in Kubernetes' order, is the one whose keys are checked.
            if provider.kms {
                // kms is refused when the providers are built.
            } else if let Some(aesgcm) = &provider.aesgcm {
                validate_keys(
                    &aesgcm.keys,
                    &format!("{path}.aesgcm.keys"),
                    AES_KEY_SIZES,
                    &mut errors,
                );
            } else if let Some(aescbc) = &provider.aescbc {
                validate_keys(
                    &aescbc.keys,
                    &format!("{path}.aescbc.keys"),
                    AES_KEY_SIZES,
                    &mut errors,
                );
            } else if let Some(secretbox) = &provider.secretbox {
                validate_keys(
                    &secretbox.keys,
                    &format!("{path}.secretbox.keys"),
                    SECRETBOX_KEY_SIZES,
                    &mut errors,
                );
            }
        }
    }
    errors
}

/// `%#v` of a Go `[]string`: `[]string{"secrets", "*."}`.
fn go_string_slice(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| kyb_apimachinery::gofmt::quote(s))
        .collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// Duplicates and wildcards that mask other names of the same list. The pairs are
/// examined as kube-apiserver does, so the same lists draw the same errors.
fn validate_overlap(resources: &[String], path: &str, errors: &mut Vec<FieldError>) {
    if resources.len() < 2 {
        return;
    }
    let parsed: Vec<GroupResource<'_>> =
        resources.iter().map(|r| GroupResource::parse(r)).collect();
    let (mut duplicate, mut overlap) = (false, false);
    for (i, a) in parsed.iter().enumerate() {
        for (j, b) in parsed.iter().enumerate() {
            if i == j {
                continue;
            }
            if a == b && !duplicate {
                duplicate = true;
                continue;
            }
            if overlap {
                continue;
            }
            if a.is_any() {
                overlap = true;
                continue;
            }
            if a.group == b.group && (a.resource == "*" || b.resource == "*") {
                overlap = true;
            }
        }
    }
    if duplicate {
        errors.push(invalid(
            path.to_string(),
            go_string_slice(resources),
            DUPLICATE_RESOURCE,
        ));
    }
    if overlap {
        errors.push(invalid(
            path.to_string(),
            go_string_slice(resources),
            OVERLAP,
        ));
    }
}

/// Each resource name on its own; the first rule a name breaks is reported.
fn validate_names(resources: &[String], path: &str, errors: &mut Vec<FieldError>) {
    for (j, name) in resources.iter().enumerate() {
        let gr = GroupResource::parse(name);
        let detail = if name.to_lowercase() != *name {
            CAPITALS
        } else if name == "*" {
            STAR_RESOURCE
        } else if matches!(
            name.as_str(),
            "apiserveripinfo" | "serviceipallocations" | "servicenodeportallocations"
        ) {
            NON_REST_RESOURCE
        } else if gr.group == "events.k8s.io" {
            EVENTS_GROUP
        } else if gr.group == "extensions" {
            EXTENSIONS_GROUP
        } else if gr.group == "*" && gr.resource != "*" {
            ACROSS_GROUPS
        } else {
            continue;
        };
        errors.push(invalid(
            format!("{path}[{j}]"),
            kyb_apimachinery::gofmt::quote(name),
            detail,
        ));
    }
}

/// `%#v` of Kubernetes' internal `ProviderConfiguration`: which providers are set. (Go
/// prints the addresses of the ones set; they are shown as `(set)` here.)
fn go_provider(provider: &RawProvider) -> String {
    let pointer = |set: bool, ty: &str| {
        if set {
            format!("(*apiserver.{ty})(set)")
        } else {
            format!("(*apiserver.{ty})(nil)")
        }
    };
    format!(
        "apiserver.ProviderConfiguration{{AESGCM:{}, AESCBC:{}, Secretbox:{}, Identity:{}, KMS:{}}}",
        pointer(provider.aesgcm.is_some(), "AESConfiguration"),
        pointer(provider.aescbc.is_some(), "AESConfiguration"),
        pointer(provider.secretbox.is_some(), "SecretboxConfiguration"),
        pointer(provider.identity, "IdentityConfiguration"),
        pointer(provider.kms, "KMSConfiguration"),
    )
}

fn validate_single_provider(provider: &RawProvider, path: &str, errors: &mut Vec<FieldError>) {
    let found = [
        provider.kms,
        provider.aesgcm.is_some(),
        provider.aescbc.is_some(),
        provider.secretbox.is_some(),
        provider.identity,
    ]
    .into_iter()
    .filter(|set| *set)
    .count();
    let detail = match found {
        0 => NO_PROVIDER,
        1 => return,
        _ => MORE_THAN_ONE_PROVIDER,
    };
    errors.push(invalid(path.to_string(), go_provider(provider), detail));
}

fn validate_keys(keys: &[RawKey], path: &str, sizes: &[usize], errors: &mut Vec<FieldError>) {
    if keys.is_empty() {
        errors.push(required(
            path.to_string(),
            "at least one keys is required".into(),
        ));
        return;
    }
    for (k, key) in keys.iter().enumerate() {
        let path = format!("{path}[{k}]");
        if key.name.is_empty() {
            errors.push(required(
                format!("{path}.name"),
                "name is a mandatory field for a key".into(),
            ));
        }
        if key.secret.is_empty() {
            errors.push(required(
                format!("{path}.secret"),
                "secret is a mandatory field for a key".into(),
            ));
            continue;
        }
        match decode_secret(&key.secret) {
            Err(()) => errors.push(invalid(format!("{path}.secret"), REDACTED.into(), BASE64)),
            Ok(secret) if !sizes.contains(&secret.len()) => {
                let sizes: Vec<String> = sizes.iter().map(ToString::to_string).collect();
                let detail = format!(
                    "secret is not of the expected length, got {}, expected one of [{}]",
                    secret.len(),
                    sizes.join(" ")
                );
                errors.push(invalid(format!("{path}.secret"), REDACTED.into(), &detail));
            }
            Ok(_) => {}
        }
    }
}

/// Decodes a key's secret as Go's `base64.StdEncoding` does: the standard alphabet with
/// `=` padding, carriage returns and newlines ignored.
pub(crate) fn decode_secret(secret: &str) -> Result<Vec<u8>, ()> {
    const ENGINE: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical),
    );
    if secret.contains(['\r', '\n']) {
        let compact: String = secret
            .chars()
            .filter(|c| !matches!(c, '\r' | '\n'))
            .collect();
        ENGINE.decode(compact).map_err(|_| ())
    } else {
        ENGINE.decode(secret).map_err(|_| ())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::decode::decode;

    fn errors(body: &str) -> Vec<String> {
        let document = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n{body}"
        );
        let config = decode(document.as_bytes()).unwrap();
        validate(&config).iter().map(ToString::to_string).collect()
    }

    const KEY16: &str = "c2VjcmV0IGlzIHNlY3VyZQ==";
    const KEY32: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    #[test]
    fn a_valid_configuration_has_no_errors() {
        let body = format!(
            "resources:
- resources: [secrets, configmaps, '*.apps', pandas.awesome.bears.example]
  providers:
  - aesgcm: {{keys: [{{name: k1, secret: {KEY16}}}]}}
  - secretbox: {{keys: [{{name: k2, secret: {KEY32}}}]}}
  - identity: {{}}
"
        );
        assert_eq!(errors(&body), Vec::<String>::new());
    }

    #[test]
    fn resources_are_required() {
        assert_eq!(
            errors("resources: []"),
            ["resources: Required value: at least one resources is required"]
        );
        assert_eq!(
            errors("resources:\n- providers: [{identity: {}}]\n- resources: [secrets]\n"),
            [
                "resources[0].resources: Required value: at least one resources[0].resources is required",
                "resources[1].providers: Required value: at least one resources[1].providers is required",
            ]
        );
    }

    #[test]
    fn resource_names_follow_kubernetes_rules() {
        let names = [
            "Secrets",
            "*",
            "serviceipallocations",
            "*.events.k8s.io",
            "deployments.extensions",
            "secrets.*",
        ];
        let body: String = names
            .iter()
            .map(|name| format!("- resources: ['{name}']\n  providers: [{{identity: {{}}}}]\n"))
            .collect();
        assert_eq!(
            errors(&format!("resources:\n{body}")),
            [
                r#"resources[0].resources[0]: Invalid value: "Secrets": resource name should not contain capital letters"#,
                r#"resources[1].resources[0]: Invalid value: "*": use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"#,
                r#"resources[2].resources[0]: Invalid value: "serviceipallocations": resources which do not have REST API/s cannot be encrypted"#,
                r#"resources[3].resources[0]: Invalid value: "*.events.k8s.io": '*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"#,
                r#"resources[4].resources[0]: Invalid value: "deployments.extensions": 'extensions' group has been removed and cannot be used for encryption"#,
                r#"resources[5].resources[0]: Invalid value: "secrets.*": encrypting the same resource across groups is not supported"#,
            ]
        );
        // Every name of a list is checked, after the list's overlap check.
        assert_eq!(
            errors(
                "resources:\n- resources: [secrets, Pods, '*']\n  providers: [{identity: {}}]\n"
            ),
            [
                r#"resources[0].resources: Invalid value: []string{"secrets", "Pods", "*"}: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"#,
                r#"resources[0].resources[1]: Invalid value: "Pods": resource name should not contain capital letters"#,
                r#"resources[0].resources[2]: Invalid value: "*": use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"#,
            ]
        );
    }

    #[test]
    fn duplicates_and_overlaps_within_a_list() {
        assert_eq!(
            errors("resources:\n- resources: [secrets, secrets]\n  providers: [{identity: {}}]\n"),
            [
                r#"resources[0].resources: Invalid value: []string{"secrets", "secrets"}: the same resource cannot be specified multiple times"#
            ]
        );
        assert_eq!(
            errors("resources:\n- resources: [secrets, '*.']\n  providers: [{identity: {}}]\n"),
            [
                r#"resources[0].resources: Invalid value: []string{"secrets", "*."}: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"#
            ]
        );
        // `*.*` overlaps everything, even itself once the duplicate was counted.
        assert_eq!(
            errors("resources:\n- resources: ['*.*', '*.*']\n  providers: [{identity: {}}]\n")
                .len(),
            2
        );
        assert_eq!(
            errors("resources:\n- resources: [deployments.apps, '*.apps']\n  providers: [{identity: {}}]\n").len(),
            1
        );
        // Different groups do not overlap.
        assert!(
            errors("resources:\n- resources: [secrets, '*.apps']\n  providers: [{identity: {}}]\n")
                .is_empty()
        );
    }

    #[test]
    fn one_provider_per_element() {
        let body = format!(
            "resources:
- resources: [secrets]
  providers:
  - {{}}
  - aesgcm: {{keys: [{{name: k, secret: {KEY16}}}]}}
    identity: {{}}
"
        );
        assert_eq!(
            errors(&body),
            [
                "resources[0].providers[0]: Invalid value: apiserver.ProviderConfiguration{AESGCM:(*apiserver.AESConfiguration)(nil), AESCBC:(*apiserver.AESConfiguration)(nil), Secretbox:(*apiserver.SecretboxConfiguration)(nil), Identity:(*apiserver.IdentityConfiguration)(nil), KMS:(*apiserver.KMSConfiguration)(nil)}: provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity",
                "resources[0].providers[1]: Invalid value: apiserver.ProviderConfiguration{AESGCM:(*apiserver.AESConfiguration)(set), AESCBC:(*apiserver.AESConfiguration)(nil), Secretbox:(*apiserver.SecretboxConfiguration)(nil), Identity:(*apiserver.IdentityConfiguration)(set), KMS:(*apiserver.KMSConfiguration)(nil)}: more than one provider specified in a single element, should split into different list elements",
            ]
        );
    }

    #[test]
    fn keys_are_named_base64_and_of_the_right_length() {
        let body = format!(
            "resources:
- resources: [secrets]
  providers:
  - aesgcm:
      keys: []
  - aesgcm:
      keys:
      - secret: {KEY16}
      - name: b
      - name: c
        secret: not base64!
      - name: d
        secret: c2VjcmV0
  - secretbox:
      keys:
      - name: e
        secret: {KEY16}
"
        );
        assert_eq!(
            errors(&body),
            [
                "resources[0].providers[0].aesgcm.keys: Required value: at least one keys is required",
                "resources[0].providers[1].aesgcm.keys[0].name: Required value: name is a mandatory field for a key",
                "resources[0].providers[1].aesgcm.keys[1].secret: Required value: secret is a mandatory field for a key",
                r#"resources[0].providers[1].aesgcm.keys[2].secret: Invalid value: "REDACTED": secrets must be base64 encoded"#,
                r#"resources[0].providers[1].aesgcm.keys[3].secret: Invalid value: "REDACTED": secret is not of the expected length, got 6, expected one of [16 24 32]"#,
                r#"resources[0].providers[2].secretbox.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 16, expected one of [32]"#,
            ]
        );
    }

    #[test]
    fn aggregate_prints_like_kubernetes() {
        assert_eq!(aggregate(&["a"]), "a");
        assert_eq!(aggregate(&["a", "b", "a"]), "[a, b]");
    }

    #[test]
    fn secrets_decode_like_go_std_encoding() {
        assert_eq!(decode_secret("c2VjcmV0").unwrap(), b"secret");
        assert_eq!(decode_secret("c2Vj\ncmV0\r\n").unwrap(), b"secret");
        assert!(
            decode_secret("c2VjcmV0IGlzIHNlY3VyZQ").is_err(),
            "padding is required"
        );
        assert!(decode_secret("c2VjcmV0IGlzIHNlY3VyZQ==").is_ok());
        assert!(
            decode_secret("c2VjcmV0_w==").is_err(),
            "URL alphabet is refused"
        );
    }
}
