//! Decoding an `EncryptionConfiguration` document (YAML or JSON) into its fields, strictly,
//! as kube-apiserver's strict decoder does: `kind` and `apiVersion` must name
//! `apiserver.config.k8s.io/v1` `EncryptionConfiguration`, a value of the wrong JSON type
//! is an error naming its Go struct field, and unknown fields are refused
//! (`strict decoding error: unknown field "resources[0].foo"`). `null` is the zero value,
//! as in Go. Validation of the decoded values is [`crate::validation`]'s job.

use serde_json::{Map, Value};

/// The configuration's group and version.
pub const API_VERSION: &str = "apiserver.config.k8s.io/v1";
/// The configuration's kind.
pub const KIND: &str = "EncryptionConfiguration";

/// The decoded document: `resources[]`.
#[derive(Debug, Default)]
pub(crate) struct RawConfig {
    pub resources: Vec<RawResourceConfig>,
}

/// One `resources[]` entry.
#[derive(Debug, Default)]
pub(crate) struct RawResourceConfig {
    pub resources: Vec<String>,
    pub providers: Vec<RawProvider>,
}

/// One `providers[]` entry. Each field is `Some` when present and not null, as Go's
/// pointer fields are non-nil.
#[derive(Debug, Default)]
pub(crate) struct RawProvider {
    pub aesgcm: Option<RawKeys>,
    pub aescbc: Option<RawKeys>,
    pub secretbox: Option<RawKeys>,
    pub identity: bool,
    pub kms: bool,
}

/// The `keys` of an `aesgcm`, `aescbc` or `secretbox` provider.
#[derive(Debug, Default)]
pub(crate) struct RawKeys {
    pub keys: Vec<RawKey>,
}

/// One key: its name and its base64 secret (not decoded yet).
#[derive(Default)]
pub(crate) struct RawKey {
    pub name: String,
    pub secret: String,
}

impl std::fmt::Debug for RawKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Like Kubernetes' `Key.String()`: never print the secret.
        write!(f, "Name: {}, Secret: [REDACTED]", self.name)
    }
}

/// Parses YAML (or JSON, which YAML reads too) and decodes it. The error is the message
/// Kubernetes' decoder would give (without the file name, which the caller adds).
pub(crate) fn decode(data: &[u8]) -> Result<RawConfig, String> {
    let document: Value = serde_saphyr::from_slice(data).map_err(|e| e.to_string())?;
    let Value::Object(top) = &document else {
        return Err("Object 'Kind' is missing".into());
    };
    let kind = top.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind.is_empty() {
        return Err("Object 'Kind' is missing".into());
    }
    let api_version = top
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if api_version.is_empty() {
        return Err("Object 'apiVersion' is missing".into());
    }
    if api_version != API_VERSION || kind != KIND {
        return Err(format!(
            "no kind {} is registered for version {}",
            kyb_apimachinery::gofmt::quote(kind),
            kyb_apimachinery::gofmt::quote(api_version)
        ));
    }
    let mut decoder = Decoder::default();
    let config = decoder.config(top)?;
    if decoder.unknown.is_empty() {
        Ok(config)
    } else {
        Err(format!(
            "strict decoding error: {}",
            decoder.unknown.join(", ")
        ))
    }
}

/// Walks the document, remembering unknown fields (reported together at the end, as the
/// strict decoder does) and failing on the first value of the wrong type.
#[derive(Default)]
struct Decoder {
    unknown: Vec<String>,
}

/// Where a value sits: its field path (`resources[0].providers`), the JSON-name path Go's
/// type errors print (`resources.providers`) and the Go struct holding it.
#[derive(Clone)]
struct At<'a> {
    path: String,
    go_path: String,
    go_struct: &'a str,
}

impl<'a> At<'a> {
    fn field(&self, name: &str, go_struct: &'a str) -> At<'a> {
        At {
            path: join(&self.path, name),
            go_path: join(&self.go_path, name),
            go_struct,
        }
    }

    fn index(&self, i: usize) -> At<'a> {
        At {
            path: format!("{}[{i}]", self.path),
            go_path: self.go_path.clone(),
            go_struct: self.go_struct,
        }
    }

    /// Go's `UnmarshalTypeError` text.
    fn type_error(&self, found: &Value, go_type: &str) -> String {
        format!(
            "json: cannot unmarshal {} into Go struct field {}.{} of type {go_type}",
            json_type(found),
            self.go_struct,
            self.go_path
        )
    }
}

fn join(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_string()
    } else {
        format!("{base}.{name}")
    }
}

/// How Go's decoder names the JSON type of a value in its errors.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl Decoder {
    fn config(&mut self, top: &Map<String, Value>) -> Result<RawConfig, String> {
        let at = At {
            path: String::new(),
            go_path: String::new(),
            go_struct: "EncryptionConfiguration",
        };
        let mut config = RawConfig::default();
        for (name, value) in top {
            match name.as_str() {
                "kind" | "apiVersion" => {}
                "resources" => {
                    let at = at.field(name, "EncryptionConfiguration");
                    for (i, item) in array(value, &at, "[]v1.ResourceConfiguration")?
                        .iter()
                        .enumerate()
                    {
                        let entry = self.resource_config(item, &at, i)?;
                        config.resources.push(entry);
                    }
                }
                _ => self.unknown(&at, name),
            }
        }
        Ok(config)
    }

    fn resource_config(
        &mut self,
        value: &Value,
        parent: &At<'_>,
        i: usize,
    ) -> Result<RawResourceConfig, String> {
        let mut entry = RawResourceConfig::default();
        let Some(fields) = object(value, parent, "v1.ResourceConfiguration")? else {
            return Ok(entry);
        };
        let at = parent.index(i);
        for (name, value) in fields {
            let field = at.field(name, "ResourceConfiguration");
            match name.as_str() {
                "resources" => {
                    for item in array(value, &field, "[]string")? {
                        entry.resources.push(string(item, &field)?);
                    }
                }
                "providers" => {
                    for (j, item) in array(value, &field, "[]v1.ProviderConfiguration")?
                        .iter()
                        .enumerate()
                    {
                        let provider = self.provider(item, &field, j)?;
                        entry.providers.push(provider);
                    }
                }
                _ => self.unknown(&at, name),
            }
        }
        Ok(entry)
    }

    fn provider(
        &mut self,
        value: &Value,
        parent: &At<'_>,
        j: usize,
    ) -> Result<RawProvider, String> {
        let mut provider = RawProvider::default();
        let Some(fields) = object(value, parent, "v1.ProviderConfiguration")? else {
            return Ok(provider);
        };
        let at = parent.index(j);
        for (name, value) in fields {
            let field = at.field(name, "ProviderConfiguration");
            match name.as_str() {
                "aesgcm" => provider.aesgcm = self.keys(value, &field, "v1.AESConfiguration")?,
                "aescbc" => provider.aescbc = self.keys(value, &field, "v1.AESConfiguration")?,
                "secretbox" => {
                    provider.secretbox = self.keys(value, &field, "v1.SecretboxConfiguration")?;
                }
                "identity" => {
                    provider.identity = match object(value, &field, "v1.IdentityConfiguration")? {
                        None => false,
                        Some(fields) => {
                            for name in fields.keys() {
                                self.unknown(&field, name);
                            }
                            true
                        }
                    };
                }
                // Refused when the providers are built; its fields are not looked at.
                "kms" => {
                    provider.kms = object(value, &field, "v1.KMSConfiguration")?.is_some();
                }
                _ => self.unknown(&at, name),
            }
        }
        Ok(provider)
    }

    fn keys(
        &mut self,
        value: &Value,
        at: &At<'_>,
        go_type: &str,
    ) -> Result<Option<RawKeys>, String> {
        let go_struct = go_type.trim_start_matches("v1.");
        let Some(fields) = object(value, at, go_type)? else {
            return Ok(None);
        };
        let mut keys = RawKeys::default();
        for (name, value) in fields {
            match name.as_str() {
                "keys" => {
                    let field = at.field(name, go_struct);
                    for (k, item) in array(value, &field, "[]v1.Key")?.iter().enumerate() {
                        keys.keys.push(self.key(item, &field, k)?);
                    }
                }
                _ => self.unknown(at, name),
            }
        }
        Ok(Some(keys))
    }

    fn key(&mut self, value: &Value, parent: &At<'_>, k: usize) -> Result<RawKey, String> {
        let mut key = RawKey::default();
        let Some(fields) = object(value, parent, "v1.Key")? else {
            return Ok(key);
        };
        let at = parent.index(k);
        for (name, value) in fields {
            let field = at.field(name, "Key");
            match name.as_str() {
                "name" => key.name = string(value, &field)?,
                "secret" => key.secret = string(value, &field)?,
                _ => self.unknown(&at, name),
            }
        }
        Ok(key)
    }

    fn unknown(&mut self, at: &At<'_>, name: &str) {
        self.unknown.push(format!(
            "unknown field {}",
            kyb_apimachinery::gofmt::quote(&join(&at.path, name))
        ));
    }
}

/// The elements of an array field; null is the empty list.
fn array<'v>(value: &'v Value, at: &At<'_>, go_type: &str) -> Result<&'v [Value], String> {
    match value {
        Value::Null => Ok(&[]),
        Value::Array(items) => Ok(items),
        other => Err(at.type_error(other, go_type)),
    }
}

/// The fields of an object; `None` for null (Go's nil pointer, or the zero struct).
fn object<'v>(
    value: &'v Value,
    at: &At<'_>,
    go_type: &str,
) -> Result<Option<&'v Map<String, Value>>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Object(fields) => Ok(Some(fields)),
        other => Err(at.type_error(other, go_type)),
    }
}

/// A string field; null is the empty string.
fn string(value: &Value, at: &At<'_>) -> Result<String, String> {
    match value {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        other => Err(at.type_error(other, "string")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const HEADER: &str = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n";

    fn decode_yaml(body: &str) -> Result<RawConfig, String> {
        decode(format!("{HEADER}{body}").as_bytes())
    }

    #[test]
    fn decodes_yaml() {
        let config = decode_yaml(
            "resources:
- resources: [secrets, '*.apps']
  providers:
  - aesgcm:
      keys:
      - name: key1
        secret: c2VjcmV0IGlzIHNlY3VyZQ==
  - secretbox:
      keys: [{name: key2, secret: abc}]
  - identity: {}
",
        )
        .unwrap();
        assert_eq!(config.resources.len(), 1);
        let entry = &config.resources[0];
        assert_eq!(entry.resources, ["secrets", "*.apps"]);
        assert_eq!(entry.providers.len(), 3);
        let aesgcm = entry.providers[0].aesgcm.as_ref().unwrap();
        assert_eq!(aesgcm.keys[0].name, "key1");
        assert_eq!(aesgcm.keys[0].secret, "c2VjcmV0IGlzIHNlY3VyZQ==");
        assert_eq!(
            entry.providers[1].secretbox.as_ref().unwrap().keys[0].name,
            "key2"
        );
        assert!(entry.providers[2].identity);
        assert!(entry.providers[2].aesgcm.is_none());
    }

    #[test]
    fn decodes_json() {
        let config = decode(
            br#"{"apiVersion":"apiserver.config.k8s.io/v1","kind":"EncryptionConfiguration",
                "resources":[{"resources":["configmaps"],"providers":[{"identity":{}}]}]}"#,
        )
        .unwrap();
        assert_eq!(config.resources[0].resources, ["configmaps"]);
        assert!(config.resources[0].providers[0].identity);
    }

    #[test]
    fn null_is_the_zero_value() {
        let config = decode_yaml(
            "resources:
- resources:
  providers:
  - identity:
  - aesgcm:
      keys:
      - name:
",
        )
        .unwrap();
        let entry = &config.resources[0];
        assert!(entry.resources.is_empty());
        assert!(!entry.providers[0].identity);
        assert_eq!(entry.providers[1].aesgcm.as_ref().unwrap().keys[0].name, "");
    }

    #[test]
    fn kind_and_version_must_be_the_encryption_configuration() {
        assert_eq!(
            decode(b"resources: []").unwrap_err(),
            "Object 'Kind' is missing"
        );
        assert_eq!(
            decode(b"kind: EncryptionConfiguration").unwrap_err(),
            "Object 'apiVersion' is missing"
        );
        assert_eq!(
            decode(b"kind: EncryptionConfig\napiVersion: apiserver.config.k8s.io/v1").unwrap_err(),
            r#"no kind "EncryptionConfig" is registered for version "apiserver.config.k8s.io/v1""#
        );
        assert_eq!(
            decode(b"kind: EncryptionConfiguration\napiVersion: apiserver.config.k8s.io/v1beta1")
                .unwrap_err(),
            r#"no kind "EncryptionConfiguration" is registered for version "apiserver.config.k8s.io/v1beta1""#
        );
        assert_eq!(decode(b"- a").unwrap_err(), "Object 'Kind' is missing");
    }

    #[test]
    fn unknown_fields_are_refused_together() {
        let error = decode_yaml(
            "metadata: {}
resources:
- resources: [secrets]
  provider: []
  providers:
  - aesgcm:
      keys:
      - name: k
        secrets: x
  - identity: {x: 1}
",
        )
        .unwrap_err();
        assert_eq!(
            error,
            r#"strict decoding error: unknown field "metadata", unknown field "resources[0].provider", unknown field "resources[0].providers[0].aesgcm.keys[0].secrets", unknown field "resources[0].providers[1].identity.x""#
        );
    }

    #[test]
    fn wrong_types_name_the_go_struct_field() {
        assert_eq!(
            decode_yaml("resources: secrets\n").unwrap_err(),
            "json: cannot unmarshal string into Go struct field EncryptionConfiguration.resources of type []v1.ResourceConfiguration"
        );
        assert_eq!(
            decode_yaml("resources:\n- resources: secrets\n").unwrap_err(),
            "json: cannot unmarshal string into Go struct field ResourceConfiguration.resources.resources of type []string"
        );
        assert_eq!(
            decode_yaml("resources:\n- resources: [1]\n").unwrap_err(),
            "json: cannot unmarshal number into Go struct field ResourceConfiguration.resources.resources of type string"
        );
        assert_eq!(
            decode_yaml("resources:\n- providers:\n  - aesgcm:\n      keys:\n      - secret: 12\n")
                .unwrap_err(),
            "json: cannot unmarshal number into Go struct field Key.resources.providers.aesgcm.keys.secret of type string"
        );
        assert_eq!(
            decode_yaml("resources:\n- providers:\n  - secretbox: []\n").unwrap_err(),
            "json: cannot unmarshal array into Go struct field ProviderConfiguration.resources.providers.secretbox of type v1.SecretboxConfiguration"
        );
    }

    #[test]
    fn keys_never_print_their_secret() {
        let key = RawKey {
            name: "k".into(),
            secret: "c2VjcmV0".into(),
        };
        assert_eq!(format!("{key:?}"), "Name: k, Secret: [REDACTED]");
    }
}
