//! The files of configMap, secret, downwardAPI and projected volumes (kubelet's
//! `MakePayload`/`CollectData`): keys or `items` mapped to paths with their modes, missing
//! objects and keys handled as `optional` says, with kubelet's messages.

use super::atomic_writer::{FileProjection, Payload};
use super::downward_api::{self, Allocatable};
use crate::sources::SourceError;
use k8s_openapi::api::core::v1::{ConfigMap, DownwardAPIVolumeFile, KeyToPath, Pod, Secret};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The default file mode of configMap, secret, downwardAPI and projected volumes.
pub const DEFAULT_MODE: i32 = 0o644;

/// The files of a ConfigMap as the API returned it: a missing one is an empty volume when
/// `optional`, an error (`configmap "x" not found`) otherwise.
pub fn config_map_files(
    object: Result<Arc<ConfigMap>, SourceError>,
    items: Option<&[KeyToPath]>,
    default_mode: i32,
    optional: bool,
) -> Result<Payload, String> {
    match object {
        Ok(object) => config_map_payload(items, &object, default_mode, optional),
        Err(SourceError::NotFound(_)) if optional => Ok(Payload::new()),
        Err(e) => Err(e.to_string()),
    }
}

/// The files of a Secret as the API returned it, as [`config_map_files`].
pub fn secret_files(
    object: Result<Arc<Secret>, SourceError>,
    items: Option<&[KeyToPath]>,
    default_mode: i32,
    optional: bool,
) -> Result<Payload, String> {
    match object {
        Ok(object) => secret_payload(items, &object, default_mode, optional),
        Err(SourceError::NotFound(_)) if optional => Ok(Payload::new()),
        Err(e) => Err(e.to_string()),
    }
}

/// A ConfigMap's files: every key (`data` and `binaryData`), or just `items`.
pub fn config_map_payload(
    items: Option<&[KeyToPath]>,
    config_map: &ConfigMap,
    default_mode: i32,
    optional: bool,
) -> Result<Payload, String> {
    let mut all: BTreeMap<&str, &[u8]> = BTreeMap::new();
    for (k, v) in config_map.data.iter().flatten() {
        all.insert(k, v.as_bytes());
    }
    for (k, v) in config_map.binary_data.iter().flatten() {
        all.insert(k, &v.0);
    }
    map_keys(items, &all, default_mode, optional, |key| {
        format!("configmap references non-existent config key: {key}")
    })
}

/// A Secret's files: every key of `data`, or just `items`.
pub fn secret_payload(
    items: Option<&[KeyToPath]>,
    secret: &Secret,
    default_mode: i32,
    optional: bool,
) -> Result<Payload, String> {
    let all: BTreeMap<&str, &[u8]> = secret
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.0.as_slice()))
        .collect();
    map_keys(items, &all, default_mode, optional, |key| {
        format!("references non-existent secret key: {key}")
    })
}

fn map_keys(
    items: Option<&[KeyToPath]>,
    all: &BTreeMap<&str, &[u8]>,
    default_mode: i32,
    optional: bool,
    missing: impl Fn(&str) -> String,
) -> Result<Payload, String> {
    let mode = |m: Option<i32>| m.unwrap_or(default_mode) as u32;
    let mut payload = Payload::new();
    match items {
        None | Some([]) => {
            for (key, data) in all {
                payload.insert(
                    key.to_string(),
                    FileProjection {
                        data: data.to_vec(),
                        mode: mode(None),
                    },
                );
            }
        }
        Some(items) => {
            for item in items {
                let Some(data) = all.get(item.key.as_str()) else {
                    if optional {
                        continue;
                    }
                    return Err(missing(&item.key));
                };
                payload.insert(
                    item.path.clone(),
                    FileProjection {
                        data: data.to_vec(),
                        mode: mode(item.mode),
                    },
                );
            }
        }
    }
    Ok(payload)
}

/// A downwardAPI volume's files; the errors of all items, as Go's aggregate error shows
/// them.
pub fn downward_api_payload(
    items: &[DownwardAPIVolumeFile],
    pod: &Pod,
    allocatable: &Allocatable,
    default_mode: i32,
) -> Result<Payload, String> {
    let mut payload = Payload::new();
    let mut errors = vec![];
    for item in items {
        let value = if let Some(field) = &item.field_ref {
            downward_api::field_value(pod, field)
        } else if let Some(resource) = &item.resource_field_ref {
            downward_api::resource_value(pod, resource, allocatable)
        } else {
            Ok(String::new())
        };
        match value {
            Ok(value) => {
                let path = item
                    .path
                    .split('/')
                    .filter(|p| !p.is_empty() && *p != ".")
                    .collect::<Vec<_>>()
                    .join("/");
                payload.insert(
                    path,
                    FileProjection {
                        data: value.into_bytes(),
                        mode: item.mode.unwrap_or(default_mode) as u32,
                    },
                );
            }
            Err(e) => errors.push(e),
        }
    }
    match errors.len() {
        0 => Ok(payload),
        _ => Err(aggregate(&errors)),
    }
}

/// Go's `utilerrors.NewAggregate(...).Error()`: one message as it is, several in brackets.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use k8s_openapi::ByteString;

    fn items(pairs: &[(&str, &str, Option<i32>)]) -> Vec<KeyToPath> {
        pairs
            .iter()
            .map(|(k, p, m)| KeyToPath {
                key: k.to_string(),
                path: p.to_string(),
                mode: *m,
            })
            .collect()
    }

    #[test]
    fn config_maps_map_all_keys_or_items_with_modes() {
        let cm = ConfigMap {
            data: Some(BTreeMap::from([("a".into(), "1".into())])),
            binary_data: Some(BTreeMap::from([("b".into(), ByteString(vec![0, 1]))])),
            ..Default::default()
        };
        let all = config_map_payload(None, &cm, 0o644, false).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all["b"].data, vec![0, 1]);
        assert_eq!(all["a"].mode, 0o644);

        let some = items(&[("a", "dir/x", Some(0o400))]);
        let mapped = config_map_payload(Some(&some), &cm, 0o600, false).unwrap();
        assert_eq!(mapped.keys().collect::<Vec<_>>(), vec!["dir/x"]);
        assert_eq!(mapped["dir/x"].mode, 0o400);

        let missing = items(&[("a", "x", None), ("nope", "y", None)]);
        assert_eq!(
            config_map_payload(Some(&missing), &cm, 0o644, false).unwrap_err(),
            "configmap references non-existent config key: nope"
        );
        let optional = config_map_payload(Some(&missing), &cm, 0o644, true).unwrap();
        assert_eq!(optional.keys().collect::<Vec<_>>(), vec!["x"]);
        assert_eq!(optional["x"].mode, 0o644);
    }

    #[test]
    fn secrets_map_keys_and_report_missing_ones() {
        let secret = Secret {
            data: Some(BTreeMap::from([(
                "pw".into(),
                ByteString(b"s3cr3t".to_vec()),
            )])),
            ..Default::default()
        };
        let all = secret_payload(None, &secret, 0o640, false).unwrap();
        assert_eq!(all["pw"].data, b"s3cr3t");
        assert_eq!(all["pw"].mode, 0o640);
        let missing = items(&[("user", "u", None)]);
        assert_eq!(
            secret_payload(Some(&missing), &secret, 0o644, false).unwrap_err(),
            "references non-existent secret key: user"
        );
    }

    #[test]
    fn aggregate_errors_as_go_prints_them() {
        assert_eq!(aggregate(&["a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "b".into()]), "[a, b]");
    }
}
