//! Who a request is from: the user an authenticator found (or anonymous), as Kubernetes'
//! `user.Info` (name, uid, groups, extra).

use serde_json::{Value, json};
use std::collections::BTreeMap;

pub const AUTHENTICATED: &str = "system:authenticated";
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
pub const ANONYMOUS: &str = "system:anonymous";

/// An authenticated (or anonymous) user.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    /// Extra attributes (a bound service-account token's pod, impersonated extras).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    pub fn anonymous() -> User {
        User {
            name: ANONYMOUS.to_string(),
            groups: vec![UNAUTHENTICATED.to_string()],
            ..User::default()
        }
    }

    /// The user a verified client certificate names (CN user, O groups).
    pub fn from_certificate(identity: &kyb_pki::Identity) -> User {
        let mut groups = identity.groups.clone();
        groups.push(AUTHENTICATED.to_string());
        User {
            name: identity.user.clone(),
            groups,
            ..User::default()
        }
    }

    /// The identity the API server uses for its own writes (bootstrap objects, status it
    /// keeps), as Kubernetes' loopback client does.
    pub fn apiserver() -> User {
        User {
            name: "system:apiserver".to_string(),
            uid: String::new(),
            groups: vec!["system:masters".to_string(), AUTHENTICATED.to_string()],
            extra: BTreeMap::new(),
        }
    }

    /// `authentication.k8s.io/v1` UserInfo.
    pub fn to_json(&self) -> Value {
        let mut info = json!({"username": self.name, "groups": self.groups});
        if !self.uid.is_empty() {
            info["uid"] = self.uid.clone().into();
        }
        if !self.extra.is_empty() {
            info["extra"] = json!(self.extra);
        }
        info
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}
