//! Image references as Docker's distribution library reads them
//! (`[domain/]path[:tag][@digest]`): validation with its error wording, the default tag
//! kubelet applies, the registry an image comes from (for pull secrets) and the default
//! `imagePullPolicy`.

/// A parsed image reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The registry host (`docker.io` when the name has none).
    pub domain: String,
    /// The repository path in the registry (`library/busybox`).
    pub path: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl Reference {
    /// The repository with its registry (`docker.io/library/busybox`).
    pub fn repository(&self) -> String {
        format!("{}/{}", self.domain, self.path)
    }
}

const DEFAULT_DOMAIN: &str = "docker.io";
const LEGACY_DEFAULT_DOMAIN: &str = "index.docker.io";

fn is_alphanumeric_lower(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
fn is_path_component(s: &str) -> bool {
    let bytes = s.as_bytes();
    if bytes.is_empty() || !is_alphanumeric_lower(bytes[0] as char) {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        if is_alphanumeric_lower(c) {
            i += 1;
            continue;
        }
        // A separator: ".", "_", "__" or one or more "-", then an alphanumeric.
        let start = i;
        match c {
            '.' => i += 1,
            '_' => {
                i += 1;
                if bytes.get(i) == Some(&b'_') {
                    i += 1;
                }
            }
            '-' => {
                while bytes.get(i) == Some(&b'-') {
                    i += 1;
                }
            }
            _ => return false,
        }
        if i == start
            || !bytes
                .get(i)
                .is_some_and(|&b| is_alphanumeric_lower(b as char))
        {
            return false;
        }
    }
    true
}

/// `[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.…)*(?::[0-9]+)?`
fn is_domain(s: &str) -> bool {
    let (host, port) = match s.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (s, None),
    };
    if let Some(port) = port
        && (port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()))
    {
        return false;
    }
    !host.is_empty()
        && host.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// `[\w][\w.-]{0,127}`
fn is_tag(s: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && word(bytes[0])
        && bytes.iter().all(|&b| word(b) || b == b'.' || b == b'-')
}

/// `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
fn is_digest(s: &str) -> bool {
    let Some((algorithm, hex)) = s.split_once(':') else {
        return false;
    };
    let algorithm_ok = algorithm.split(['-', '_', '+', '.']).all(|part| {
        part.as_bytes()
            .first()
            .is_some_and(|b| b.is_ascii_alphabetic())
            && part.bytes().all(|b| b.is_ascii_alphanumeric())
    });
    algorithm_ok && hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The name, tag and digest of `s` when it matches the reference grammar.
fn split(s: &str) -> Option<(&str, Option<&str>, Option<&str>)> {
    let (rest, digest) = match s.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (s, None),
    };
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    if digest.is_some_and(|d| !is_digest(d)) || tag.is_some_and(|t| !is_tag(t)) {
        return None;
    }
    let components: Vec<&str> = name.split('/').collect();
    let valid = match components.split_first() {
        Some((first, rest)) if !rest.is_empty() => {
            (is_domain(first) || is_path_component(first))
                && rest.iter().all(|c| is_path_component(c))
        }
        Some((only, _)) => is_path_component(only),
        None => false,
    };
    valid.then_some((name, tag, digest))
}

/// Parses `image` as Docker's `ParseNormalizedNamed` does; the error is its message
/// (`invalid reference format`, `repository name must be lowercase`, …).
pub fn parse_normalized(image: &str) -> Result<Reference, String> {
    if image.len() == 64
        && image
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        return Err(format!(
            "invalid repository name ({image}), cannot specify 64-byte hexadecimal strings"
        ));
    }
    let Some((name, tag, digest)) = split(image) else {
        if image.is_empty() {
            return Err("repository name must have at least one component".into());
        }
        // The distribution library's check: the lowercased name would have matched.
        return Err(if split(&image.to_lowercase()).is_some() {
            "invalid reference format: repository name must be lowercase".into()
        } else {
            "invalid reference format".into()
        });
    };
    if name.len() > 255 {
        return Err("repository name must not be more than 255 characters".into());
    }
    let (domain, path) = domain_split(name);
    if path.to_lowercase() != path {
        return Err("invalid reference format: repository name must be lowercase".into());
    }
    let (domain, path) = match domain {
        None => (DEFAULT_DOMAIN.to_string(), path.to_string()),
        Some(domain) => (domain.to_string(), path.to_string()),
    };
    let domain = if domain == LEGACY_DEFAULT_DOMAIN {
        DEFAULT_DOMAIN.to_string()
    } else {
        domain
    };
    let path = if domain == DEFAULT_DOMAIN && !path.contains('/') {
        format!("library/{path}")
    } else {
        path
    };
    Ok(Reference {
        domain,
        path,
        tag: tag.map(str::to_string),
        digest: digest.map(str::to_string),
    })
}

/// The registry part of a name (when its first component is a host: it has a `.` or a
/// `:`, is `localhost`, or has capitals), and the rest.
fn domain_split(name: &str) -> (Option<&str>, &str) {
    match name.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.to_lowercase() != first =>
        {
            (Some(first), rest)
        }
        _ => (None, name),
    }
}

/// The image with `:latest` appended when it has neither tag nor digest (kubelet's
/// `applyDefaultImageTag`); the error is kubelet's (its `ParseImageName`'s, since 1.28)
/// `couldn't parse image name "x": invalid reference format`.
pub fn apply_default_tag(image: &str) -> Result<String, String> {
    let reference = parse_normalized(image)
        .map_err(|error| format!("couldn't parse image name {image:?}: {error}"))?;
    if reference.tag.is_none() && reference.digest.is_none() {
        Ok(format!("{image}:latest"))
    } else {
        Ok(image.to_string())
    }
}

/// The `imagePullPolicy` the API gives a container that has none: `Always` for
/// `:latest` or no tag, `IfNotPresent` otherwise (a digest alone included).
pub fn default_pull_policy(image: &str) -> &'static str {
    let tag = split(image).and_then(|(_, tag, digest)| match (tag, digest) {
        (None, None) => Some("latest"),
        (tag, _) => tag,
    });
    if tag == Some("latest") {
        "Always"
    } else {
        "IfNotPresent"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalized_as_docker_does() {
        let r = parse_normalized("busybox").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.repository(), "docker.io/library/busybox");
        assert_eq!(r.tag, None);
        let r = parse_normalized("localhost:5000/team/app:v1.2").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (r.domain.as_str(), r.path.as_str(), r.tag.as_deref()),
            ("localhost:5000", "team/app", Some("v1.2"))
        );
        let digest = format!("sha256:{}", "a".repeat(64));
        let r = parse_normalized(&format!("index.docker.io/nginx@{digest}"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.repository(), "docker.io/library/nginx");
        assert_eq!(r.digest.as_deref(), Some(digest.as_str()));
        assert_eq!(
            parse_normalized("kyb.local/busybox:1.35.0").map(|r| r.domain),
            Ok("kyb.local".to_string())
        );
    }

    #[test]
    fn bad_names_get_the_distribution_librarys_messages() {
        for bad in [
            "",
            "a b",
            "busybox:",
            "-x",
            "x//y",
            "a:b:c",
            "x@sha256:12",
            "x:tag!",
        ] {
            assert!(parse_normalized(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(
            parse_normalized("Busybox"),
            Err("invalid reference format: repository name must be lowercase".into())
        );
        assert_eq!(
            parse_normalized("a b"),
            Err("invalid reference format".into())
        );
        assert_eq!(
            apply_default_tag("UPPER/x y"),
            Err(r#"couldn't parse image name "UPPER/x y": invalid reference format"#.into())
        );
    }

    #[test]
    fn the_default_tag_is_latest() {
        assert_eq!(apply_default_tag("busybox"), Ok("busybox:latest".into()));
        assert_eq!(
            apply_default_tag("localhost:5000/app"),
            Ok("localhost:5000/app:latest".into())
        );
        assert_eq!(apply_default_tag("busybox:1"), Ok("busybox:1".into()));
    }

    #[test]
    fn the_default_pull_policy_follows_the_tag() {
        assert_eq!(default_pull_policy("busybox"), "Always");
        assert_eq!(default_pull_policy("busybox:latest"), "Always");
        assert_eq!(default_pull_policy("localhost:5000/app"), "Always");
        assert_eq!(default_pull_policy("busybox:1.35.0"), "IfNotPresent");
        assert_eq!(
            default_pull_policy(&format!("busybox@sha256:{}", "0".repeat(64))),
            "IfNotPresent"
        );
    }
}
