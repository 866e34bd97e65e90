//! Configuration and accounting in a namespace: Secret, ConfigMap, ServiceAccount and
//! ResourceQuota.

use super::{AGE, NAME, Printer, int, name, owned, string};
use crate::fields::text;
use crate::quantity::quantity;
use crate::timestamp::age;
use jiff::Timestamp;
use kyb_apimachinery::json::{count, map_at, str_at};
use serde_json::Value;

pub(crate) static SECRET: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Type",
            "The kind of secret, which fixes the keys it must hold.",
        ),
        string("Data", "How many keys the secret holds."),
        AGE,
    ],
    cells: secret_cells,
};

fn secret_cells(secret: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(secret),
        text(str_at(secret, &["type"])),
        int(count(secret, &["data"])),
        age(secret, now),
    ]
}

pub(crate) static CONFIG_MAP: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Data",
            "How many keys the config map holds, text and binary.",
        ),
        AGE,
    ],
    cells: config_map_cells,
};

fn config_map_cells(config_map: &Value, now: Timestamp) -> Vec<Value> {
    let keys = count(config_map, &["data"]).saturating_add(count(config_map, &["binaryData"]));
    vec![name(config_map), int(keys), age(config_map, now)]
}

pub(crate) static SERVICE_ACCOUNT: Printer = Printer {
    columns: &[
        NAME,
        string("Secrets", "How many secrets the account lists."),
        AGE,
    ],
    cells: service_account_cells,
};

fn service_account_cells(account: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(account),
        int(count(account, &["secrets"])),
        age(account, now),
    ]
}

pub(crate) static RESOURCE_QUOTA: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Request",
            "Usage against each hard limit on requests and counts (used/hard).",
        ),
        string(
            "Limit",
            "Usage against each hard limit on resource limits (used/hard).",
        ),
        AGE,
    ],
    cells: resource_quota_cells,
};

fn resource_quota_cells(quota: &Value, now: Timestamp) -> Vec<Value> {
    let mut hard: Vec<(&String, &Value)> = map_at(quota, &["status", "hard"])
        .into_iter()
        .flatten()
        .collect();
    hard.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let used = map_at(quota, &["status", "used"]);
    let mut requests = String::new();
    let mut limits = String::new();
    for (resource, hard_value) in hard {
        let column = match resource.split_once('.') {
            Some(("limits", _)) => &mut limits,
            _ => &mut requests,
        };
        if !column.is_empty() {
            column.push_str(", ");
        }
        let used_value = quantity(used.and_then(|u| u.get(resource.as_str())));
        column.push_str(&format!(
            "{resource}: {used_value}/{}",
            quantity(Some(hard_value))
        ));
    }
    vec![name(quota), owned(requests), owned(limits), age(quota, now)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::testing::{ago, now, row};
    use serde_json::json;

    #[test]
    fn secret_config_map_and_service_account_rows() {
        let s = json!({"metadata": {"name": "tls", "creationTimestamp": ago(30)},
                       "type": "kubernetes.io/tls", "data": {"tls.crt": "eA==", "tls.key": "eA=="}});
        assert_eq!(
            row(secret_cells(&s, now())),
            json!(["tls", "kubernetes.io/tls", 2, "30s"])
        );
        assert_eq!(
            row(secret_cells(&json!({}), now())),
            json!(["", "", 0, "<unknown>"])
        );
        let c = json!({"metadata": {"name": "cfg", "creationTimestamp": ago(30)},
                       "data": {"a": "1"}, "binaryData": {"b": "AA=="}});
        assert_eq!(row(config_map_cells(&c, now())), json!(["cfg", 2, "30s"]));
        let a = json!({"metadata": {"name": "default", "creationTimestamp": ago(30)}});
        assert_eq!(
            row(service_account_cells(&a, now())),
            json!(["default", 0, "30s"])
        );
    }

    #[test]
    fn resource_quota_row() {
        let q = json!({
            "metadata": {"name": "compute", "creationTimestamp": ago(600)},
            "status": {
                "hard": {"requests.cpu": "1", "requests.memory": "1Gi", "limits.cpu": "2",
                         "limits.memory": "2048Mi", "pods": "10"},
                "used": {"requests.cpu": "500m", "requests.memory": "512Mi", "limits.cpu": "1000m", "pods": "3"}
            }
        });
        assert_eq!(
            row(resource_quota_cells(&q, now())),
            json!([
                "compute",
                "pods: 3/10, requests.cpu: 500m/1, requests.memory: 512Mi/1Gi",
                "limits.cpu: 1/2, limits.memory: 0/2Gi",
                "10m"
            ])
        );
        assert_eq!(
            row(resource_quota_cells(&json!({}), now())),
            json!(["", "", "", "<unknown>"])
        );
    }
}
