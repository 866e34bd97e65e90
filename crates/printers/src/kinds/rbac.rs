//! RBAC bindings: RoleBinding and ClusterRoleBinding. (Roles and ClusterRoles have no
//! printer of their own and use the generic Name / Created At table.)

use super::{AGE, Column, NAME, Printer, name, owned, string, wide};
use crate::timestamp::age;
use jiff::Timestamp;
use kyb_apimachinery::json::{items, str_at};
use serde_json::Value;

const COLUMNS: &[Column] = &[
    NAME,
    string("Role", "The role granted, as kind/name."),
    AGE,
    wide(string("Users", "Users the role is granted to.")),
    wide(string("Groups", "Groups the role is granted to.")),
    wide(string(
        "ServiceAccounts",
        "Service accounts the role is granted to, as namespace/name.",
    )),
];

pub(crate) static ROLE_BINDING: Printer = Printer {
    columns: COLUMNS,
    cells: binding_cells,
};

pub(crate) static CLUSTER_ROLE_BINDING: Printer = Printer {
    columns: COLUMNS,
    cells: binding_cells,
};

fn binding_cells(binding: &Value, now: Timestamp) -> Vec<Value> {
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut service_accounts = Vec::new();
    for subject in items(binding, &["subjects"]) {
        let subject_name = str_at(subject, &["name"]);
        match str_at(subject, &["kind"]) {
            "ServiceAccount" => service_accounts.push(format!(
                "{}/{subject_name}",
                str_at(subject, &["namespace"])
            )),
            "User" => users.push(subject_name.to_owned()),
            "Group" => groups.push(subject_name.to_owned()),
            _ => {}
        }
    }
    vec![
        name(binding),
        owned(format!(
            "{}/{}",
            str_at(binding, &["roleRef", "kind"]),
            str_at(binding, &["roleRef", "name"])
        )),
        age(binding, now),
        owned(users.join(", ")),
        owned(groups.join(", ")),
        owned(service_accounts.join(", ")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::testing::{ago, now, row};
    use serde_json::json;

    #[test]
    fn role_binding_row() {
        let b = json!({
            "metadata": {"name": "read-pods", "creationTimestamp": ago(600)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
            "subjects": [
                {"kind": "User", "name": "jane"}, {"kind": "User", "name": "joe"},
                {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "name": "ci", "namespace": "build"},
                {"kind": "Robot", "name": "r2"}
            ]
        });
        assert_eq!(
            row(binding_cells(&b, now())),
            json!([
                "read-pods",
                "Role/pod-reader",
                "10m",
                "jane, joe",
                "devs",
                "build/ci"
            ])
        );
    }

    #[test]
    fn cluster_role_binding_without_subjects() {
        let b = json!({"metadata": {"name": "system:basic-user"},
                       "roleRef": {"kind": "ClusterRole", "name": "system:basic-user"}});
        assert_eq!(
            row((CLUSTER_ROLE_BINDING.cells)(&b, now())),
            json!([
                "system:basic-user",
                "ClusterRole/system:basic-user",
                "<unknown>",
                "",
                "",
                ""
            ])
        );
    }
}
