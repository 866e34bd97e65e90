//! ConfigMaps, Secrets and ServiceAccounts: key syntax, the 1 MiB size limit, the
//! required keys of each Secret type, `stringData` folded into `data`, and the
//! `immutable: true` rules.

use serde_json::{Map, Value, json};

use crate::Ctx;
use crate::meta::immutable;
use kyb_apimachinery::base64;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, default_str, field, field_at};
use kyb_apimachinery::names;

/// Maximum total size of a Secret's or ConfigMap's data.
pub(crate) const MAX_SIZE: usize = 1024 * 1024;
const IMMUTABLE_MSG: &str = "field is immutable when `immutable` is set";
const REDACTED: &str = "<secret contents redacted>";

/// Secret defaults: `type: Opaque`, and `stringData` merged into `data` (base64), as the
/// API server's conversion does before anything is stored.
pub(crate) fn default_secret(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    default_str(o, "type", "Opaque");
    if let Some(Value::Object(sd)) = o.remove("stringData") {
        let data = o.entry("data").or_insert_with(|| Value::Object(Map::new()));
        if !data.is_object() {
            *data = Value::Object(Map::new());
        }
        if let Some(d) = data.as_object_mut() {
            for (k, v) in sd {
                let s = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                d.insert(k, Value::String(base64::encode(s.as_bytes())));
            }
        }
    }
}

fn validate_keys(map: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Value::Object(m) = map {
        for k in m.keys() {
            for msg in names::config_map_key_errors(k) {
                errs.push(FieldError::invalid(&path.key(k), k.as_str(), msg));
            }
        }
    }
    errs
}

/// Decodes a base64 `[]byte` field; the error is reported at `path`.
fn decode(v: &Value, path: &Path) -> Result<Vec<u8>, FieldError> {
    match v {
        Value::String(s) => base64::decode(s).map_err(|e| FieldError::invalid(path, REDACTED, e)),
        Value::Null => Ok(Vec::new()),
        _ => Err(FieldError::invalid(
            path,
            REDACTED,
            "must be a base64-encoded string",
        )),
    }
}

/// `ValidateSecret`.
pub(crate) fn validate_secret(secret: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let data_path = Path::new("data");
    let data = field(secret, "data");
    errs.extend(validate_keys(data, &data_path));
    let mut decoded: Map<String, Value> = Map::new();
    let mut total = 0usize;
    if let Value::Object(m) = data {
        for (k, v) in m {
            match decode(v, &data_path.key(k)) {
                Ok(bytes) => {
                    total += bytes.len();
                    decoded.insert(
                        k.clone(),
                        Value::from(String::from_utf8_lossy(&bytes).into_owned()),
                    );
                }
                Err(e) => errs.push(e),
            }
        }
    }
    if total > MAX_SIZE {
        errs.push(FieldError::too_long(&data_path, MAX_SIZE));
    }
    let has = |k: &str| decoded.contains_key(k);
    match secret.str("type") {
        "kubernetes.io/service-account-token" => {
            let name = field_at(
                secret,
                &[
                    "metadata",
                    "annotations",
                    "kubernetes.io/service-account.name",
                ],
            );
            if name.as_str().is_none_or(str::is_empty) {
                errs.push(FieldError::required(
                    &Path::new("metadata")
                        .child("annotations")
                        .key("kubernetes.io/service-account.name"),
                    "",
                ));
            }
        }
        t @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = if t == "kubernetes.io/dockercfg" {
                ".dockercfg"
            } else {
                ".dockerconfigjson"
            };
            match decoded.get(key).and_then(Value::as_str) {
                None if !has(key) => errs.push(FieldError::required(&data_path.key(key), "")),
                Some(s) => match serde_json::from_str::<Value>(s) {
                    Ok(Value::Object(_)) => {}
                    Ok(_) => errs.push(FieldError::invalid(
                        &data_path.key(key),
                        REDACTED,
                        "json: cannot unmarshal non-object into Go value of type map[string]interface {}",
                    )),
                    Err(e) => errs.push(FieldError::invalid(&data_path.key(key), REDACTED, e.to_string())),
                },
                None => {}
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errs.push(FieldError::required(&data_path.key("username"), ""));
            errs.push(FieldError::required(&data_path.key("password"), ""));
        }
        "kubernetes.io/ssh-auth"
            if decoded
                .get("ssh-privatekey")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty) =>
        {
            errs.push(FieldError::required(&data_path.key("ssh-privatekey"), ""));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    errs.push(FieldError::required(&data_path.key(key), ""));
                }
            }
        }
        _ => {}
    }
    errs
}

fn immutable_rules(new: &Value, old: &Value, keys: &[&str]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if old.opt_flag("immutable") == Some(true) {
        if new.opt_flag("immutable") != Some(true) {
            errs.push(FieldError::forbidden(
                &Path::new("immutable"),
                IMMUTABLE_MSG,
            ));
        }
        for key in keys {
            if !kyb_apimachinery::equality::semantic_eq_field(new, old, key) {
                errs.push(FieldError::forbidden(&Path::new(key), IMMUTABLE_MSG));
            }
        }
    }
    errs
}

/// `ValidateSecretUpdate` beyond the checks of a new Secret.
pub(crate) fn validate_secret_update(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = immutable(field(new, "type"), field(old, "type"), &Path::new("type"));
    errs.extend(immutable_rules(new, old, &["data"]));
    errs
}

/// `ValidateConfigMap`.
pub(crate) fn validate_config_map(cm: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let data = field(cm, "data");
    let binary = field(cm, "binaryData");
    let mut total = 0usize;
    if let Value::Object(m) = data {
        for (k, v) in m {
            let p = Path::new("data").key(k);
            for msg in names::config_map_key_errors(k) {
                errs.push(FieldError::invalid(&p, k.as_str(), msg));
            }
            if binary.get(k).is_some() {
                errs.push(FieldError::invalid(
                    &p,
                    k.as_str(),
                    "duplicate of key present in binaryData",
                ));
            }
            total += v.as_str().map_or(0, str::len);
        }
    }
    if let Value::Object(m) = binary {
        for (k, v) in m {
            let p = Path::new("binaryData").key(k);
            for msg in names::config_map_key_errors(k) {
                errs.push(FieldError::invalid(&p, k.as_str(), msg));
            }
            match decode(v, &p) {
                Ok(b) => total += b.len(),
                Err(e) => errs.push(e),
            }
        }
    }
    if total > MAX_SIZE {
        errs.push(FieldError::too_long(&Path::new(""), MAX_SIZE));
    }
    errs
}

/// `ValidateConfigMapUpdate` beyond the checks of a new ConfigMap.
pub(crate) fn validate_config_map_update(
    new: &Value,
    old: &Value,
    _ctx: &Ctx<'_>,
) -> Vec<FieldError> {
    immutable_rules(new, old, &["data", "binaryData"])
}

/// ServiceAccounts keep only the names of their secret references.
pub(crate) fn prepare_service_account(obj: &mut Value) {
    if let Some(list) = obj.get_mut("secrets").and_then(Value::as_array_mut) {
        for s in list {
            let name = s.get("name").cloned();
            *s = match name {
                Some(n) => json!({"name": n}),
                None => json!({}),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx<'static> {
        Ctx { old: None }
    }

    fn msgs(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn secret_defaults_merge_string_data() {
        let mut s = json!({"data": {"a": "eA=="}, "stringData": {"a": "y", "b": "z"}});
        default_secret(&mut s);
        assert_eq!(
            s,
            json!({"type": "Opaque", "data": {"a": "eQ==", "b": "eg=="}})
        );
        default_secret(&mut s);
        assert_eq!(s["data"]["b"], json!("eg=="));
    }

    #[test]
    fn secret_types() {
        let tls = json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}});
        assert_eq!(
            msgs(validate_secret(&tls, &ctx())),
            vec!["data[tls.key]: Required value"]
        );
        let sa = json!({"type": "kubernetes.io/service-account-token"});
        assert_eq!(
            msgs(validate_secret(&sa, &ctx())),
            vec!["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
        );
        let dcj = json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": base64::encode(b"{\"auths\":{}}")}});
        assert!(validate_secret(&dcj, &ctx()).is_empty());
        let bad = json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": base64::encode(b"nope")}});
        assert_eq!(validate_secret(&bad, &ctx()).len(), 1);
        let basic = json!({"type": "kubernetes.io/basic-auth", "data": {}});
        assert_eq!(validate_secret(&basic, &ctx()).len(), 2);
        let keys = json!({"data": {"bad key": "eA==", "ok": "***"}});
        assert_eq!(validate_secret(&keys, &ctx()).len(), 2);
    }

    #[test]
    fn config_maps() {
        let cm = json!({"data": {"a": "1", "b": "2"}, "binaryData": {"b": "eA=="}});
        assert_eq!(
            msgs(validate_config_map(&cm, &ctx())),
            vec![r#"data[b]: Invalid value: "b": duplicate of key present in binaryData"#]
        );
        let big = json!({"data": {"a": "x".repeat(MAX_SIZE + 1)}});
        assert_eq!(
            msgs(validate_config_map(&big, &ctx())),
            vec![": Too long: may not be more than 1048576 bytes"]
        );
    }

    #[test]
    fn immutability() {
        let old = json!({"immutable": true, "data": {"a": "1"}});
        let new = json!({"immutable": false, "data": {"a": "2"}});
        assert_eq!(
            msgs(validate_config_map_update(&new, &old, &ctx())),
            vec![
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set",
            ]
        );
        let s_old = json!({"type": "Opaque"});
        let s_new = json!({"type": "kubernetes.io/tls"});
        assert_eq!(
            msgs(validate_secret_update(&s_new, &s_old, &ctx())),
            vec![r#"type: Invalid value: "kubernetes.io/tls": field is immutable"#]
        );
    }

    #[test]
    fn service_account_secret_refs() {
        let mut sa = json!({"secrets": [{"name": "a", "namespace": "x", "uid": "1"}, 5]});
        prepare_service_account(&mut sa);
        assert_eq!(sa["secrets"], json!([{"name": "a"}, {}]));
    }
}
