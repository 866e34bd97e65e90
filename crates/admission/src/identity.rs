//! Which users are nodes: `system:node:<name>` in the `system:nodes` group (Kubernetes'
//! default node identifier), shared by NodeRestriction and the Node authorizer.

/// The user-name prefix of node identities.
pub const NODE_USER_PREFIX: &str = "system:node:";
/// The group every node identity belongs to.
pub const NODES_GROUP: &str = "system:nodes";

/// The node name of a node identity: `Some(name)` for a user `system:node:<name>` in the
/// `system:nodes` group (the name may be empty, which both NodeRestriction and the Node
/// authorizer refuse), `None` for every other user.
pub fn node_identity<'a>(user: &'a str, groups: &[String]) -> Option<&'a str> {
    let name = user.strip_prefix(NODE_USER_PREFIX)?;
    groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_need_prefix_and_group() {
        let nodes = vec!["system:authenticated".to_string(), NODES_GROUP.to_string()];
        assert_eq!(node_identity("system:node:a", &nodes), Some("a"));
        assert_eq!(node_identity("system:node:", &nodes), Some(""));
        assert_eq!(node_identity("system:node:a", &[]), None);
        assert_eq!(node_identity("jane", &nodes), None);
        assert_eq!(node_identity("system:nodes:a", &nodes), None);
    }
}
