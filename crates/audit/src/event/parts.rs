//! The structured members of an event the server fills in: the user (`user` and
//! `impersonatedUser`, `authentication.k8s.io/v1` `UserInfo`) and the object reference
//! (`objectRef`), with their Go member order and `omitempty` rules.

use std::collections::BTreeMap;

use super::json;

/// A user, as the server's authentication produced it.
#[derive(Clone, Copy, Debug)]
pub struct UserInfo<'a> {
    pub username: &'a str,
    pub uid: &'a str,
    pub groups: &'a [String],
    /// Extra attributes (a bound service-account token's pod, ...), keys sorted.
    pub extra: &'a BTreeMap<String, Vec<String>>,
}

/// Appends a `UserInfo` object: every member is omitted when empty.
pub(crate) fn write_user(out: &mut String, user: &UserInfo<'_>) {
    let start = out.len();
    out.push('{');
    json::optional_string(out, "username", user.username);
    json::optional_string(out, "uid", user.uid);
    if !user.groups.is_empty() {
        json::key(out, "groups");
        json::strings(out, user.groups);
    }
    if !user.extra.is_empty() {
        json::key(out, "extra");
        out.push('{');
        for (i, (k, values)) in user.extra.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json::string(out, k);
            out.push(':');
            json::strings(out, values);
        }
        out.push('}');
    }
    out.push('}');
    drop_leading_comma(out, start);
}

/// Removes the comma the first member of an object written at `start` was given.
fn drop_leading_comma(out: &mut String, start: usize) {
    if out.get(start..start + 2) == Some("{,") {
        out.remove(start + 1);
    }
}

/// What an event's `objectRef` names. Empty members are omitted.
#[derive(Clone, Copy, Debug, Default)]
pub struct ObjectRef<'a> {
    pub resource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    /// The API group, empty for the core group.
    pub api_group: &'a str,
    /// The API version alone (`v1`), without the group.
    pub api_version: &'a str,
    pub resource_version: &'a str,
    pub subresource: &'a str,
}

/// An owned [`ObjectRef`], kept by the event builder.
#[derive(Clone, Debug, Default)]
pub(crate) struct StoredObjectRef {
    pub(crate) resource: String,
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) uid: String,
    pub(crate) api_group: String,
    pub(crate) api_version: String,
    pub(crate) resource_version: String,
    pub(crate) subresource: String,
}

impl StoredObjectRef {
    pub(crate) fn of(r: &ObjectRef<'_>) -> StoredObjectRef {
        StoredObjectRef {
            resource: r.resource.to_string(),
            namespace: r.namespace.to_string(),
            name: r.name.to_string(),
            uid: r.uid.to_string(),
            api_group: r.api_group.to_string(),
            api_version: r.api_version.to_string(),
            resource_version: r.resource_version.to_string(),
            subresource: r.subresource.to_string(),
        }
    }

    /// Fills the members that are still empty from `r`.
    pub(crate) fn complete(&mut self, r: &ObjectRef<'_>) {
        let fill = |field: &mut String, value: &str| {
            if field.is_empty() && !value.is_empty() {
                value.clone_into(field);
            }
        };
        fill(&mut self.resource, r.resource);
        fill(&mut self.namespace, r.namespace);
        fill(&mut self.name, r.name);
        fill(&mut self.uid, r.uid);
        fill(&mut self.api_group, r.api_group);
        fill(&mut self.api_version, r.api_version);
        fill(&mut self.resource_version, r.resource_version);
        fill(&mut self.subresource, r.subresource);
    }

    /// Appends the `ObjectReference` object in Go's member order.
    pub(crate) fn write(&self, out: &mut String) {
        let start = out.len();
        out.push('{');
        json::optional_string(out, "resource", &self.resource);
        json::optional_string(out, "namespace", &self.namespace);
        json::optional_string(out, "name", &self.name);
        json::optional_string(out, "uid", &self.uid);
        json::optional_string(out, "apiGroup", &self.api_group);
        json::optional_string(out, "apiVersion", &self.api_version);
        json::optional_string(out, "resourceVersion", &self.resource_version);
        json::optional_string(out, "subresource", &self.subresource);
        out.push('}');
        drop_leading_comma(out, start);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_members_are_omitted_when_empty() {
        let extra = BTreeMap::new();
        let groups = [
            "system:masters".to_string(),
            "system:authenticated".to_string(),
        ];
        let mut out = String::new();
        write_user(
            &mut out,
            &UserInfo {
                username: "admin",
                uid: "",
                groups: &groups,
                extra: &extra,
            },
        );
        assert_eq!(
            out,
            r#"{"username":"admin","groups":["system:masters","system:authenticated"]}"#
        );

        let extra = BTreeMap::from([
            (
                "authentication.kubernetes.io/pod-name".to_string(),
                vec!["web-0".to_string()],
            ),
            ("a".to_string(), vec![]),
        ]);
        let mut out = String::from("x");
        write_user(
            &mut out,
            &UserInfo {
                username: "",
                uid: "u1",
                groups: &[],
                extra: &extra,
            },
        );
        assert_eq!(
            out,
            r#"x{"uid":"u1","extra":{"a":[],"authentication.kubernetes.io/pod-name":["web-0"]}}"#
        );

        let mut out = String::new();
        write_user(
            &mut out,
            &UserInfo {
                username: "",
                uid: "",
                groups: &[],
                extra: &BTreeMap::new(),
            },
        );
        assert_eq!(out, "{}");
    }

    #[test]
    fn object_ref_order_and_completion() {
        let mut r = StoredObjectRef::of(&ObjectRef {
            resource: "pods",
            namespace: "default",
            api_version: "v1",
            subresource: "status",
            ..ObjectRef::default()
        });
        r.complete(&ObjectRef {
            name: "web",
            namespace: "other",
            resource_version: "7",
            ..ObjectRef::default()
        });
        let mut out = String::new();
        r.write(&mut out);
        assert_eq!(
            out,
            r#"{"resource":"pods","namespace":"default","name":"web","apiVersion":"v1","resourceVersion":"7","subresource":"status"}"#
        );
    }
}
