//! Field paths as Kubernetes prints them: `spec.containers[0].ports[1].name`,
//! `metadata.annotations[example.com/key]`.

use std::fmt;

/// A path to a field of an object, built from the root down.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path(String);

impl Path {
    /// A root path; `""` is the whole object.
    pub fn new(root: &str) -> Path {
        Path(root.to_string())
    }

    /// The path of a named child field.
    pub fn child(&self, name: &str) -> Path {
        if self.0.is_empty() {
            Path(name.to_string())
        } else {
            Path(format!("{}.{name}", self.0))
        }
    }

    /// The path of a list element.
    pub fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }

    /// The path of a map entry.
    pub fn key(&self, k: &str) -> Path {
        Path(format!("{}[{k}]", self.0))
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_paths() {
        let p = Path::new("spec")
            .child("containers")
            .index(2)
            .child("ports");
        assert_eq!(p.to_string(), "spec.containers[2].ports");
        assert_eq!(
            Path::new("metadata").child("labels").key("a/b").to_string(),
            "metadata.labels[a/b]"
        );
        assert_eq!(Path::new("").child("x").to_string(), "x");
        assert_eq!(Path::new("").to_string(), "");
    }
}
