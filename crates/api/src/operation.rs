//! The admission operation of a write (`admission.Operation`): what admission plugins,
//! webhooks and policies match on.

/// An admission operation, as kube-apiserver's admission chain names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    /// Parses `CREATE`/`UPDATE`/`DELETE`/`CONNECT` (any case), as admission reviews spell it.
    pub fn parse(s: &str) -> Option<Operation> {
        [
            Operation::Create,
            Operation::Update,
            Operation::Delete,
            Operation::Connect,
        ]
        .into_iter()
        .find(|op| op.as_str().eq_ignore_ascii_case(s))
    }

    /// The admission spelling (`CREATE`, ...), as AdmissionReviews, policies and some
    /// messages print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for op in [
            Operation::Create,
            Operation::Update,
            Operation::Delete,
            Operation::Connect,
        ] {
            assert_eq!(Operation::parse(op.as_str()), Some(op));
        }
        assert_eq!(Operation::parse("update"), Some(Operation::Update));
        assert_eq!(Operation::parse("PATCH"), None);
        assert_eq!(Operation::Delete.to_string(), "DELETE");
    }
}
