//! Name and string-format checks of Kubernetes (apimachinery's `util/validation`): DNS
//! labels and subdomains, qualified names (label keys), label values, config keys,
//! environment variable names, port names, path segments. Each `*_errors` function returns
//! Kubernetes' messages word for word (empty when valid); the `is_*` functions wrap them
//! as a `Result` for callers that only need a yes or no with an explanation.

/// Maximum length of a DNS-1123 label.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Maximum length of a DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Maximum length of a DNS-1035 label.
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;
/// Maximum length of the name part of a qualified name, and of a label value.
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_US_FMT: &str =
    "_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_US_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const CONFIG_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_KEY_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
const ENV_VAR_FMT: &str = "[-._a-zA-Z][-._a-zA-Z0-9]*";
const ENV_VAR_MSG: &str = "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit";
const RELAXED_ENV_VAR_MSG: &str = "a valid environment variable name must consist only of printable ASCII characters other than '='";
const HTTP_HEADER_FMT: &str = "[-A-Za-z0-9]+";
const HTTP_HEADER_MSG: &str = "a valid HTTP header must consist of alphanumeric characters or '-'";
const PERCENT_FMT: &str = "[0-9]+%";
const PERCENT_MSG: &str =
    "a valid percent string must be a numeric string followed by an ending '%'";
const C_IDENTIFIER_FMT: &str = "[A-Za-z_][A-Za-z0-9_]*";
const C_IDENTIFIER_MSG: &str = "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_'";

/// "must be no more than N characters".
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// A regex-mismatch explanation, as apimachinery's `RegexError`.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut s = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        s.push('\'');
        s.push_str(e);
        s.push_str("', ");
    }
    s.push_str("regex used for validation is '");
    s.push_str(fmt);
    s.push_str("')");
    s
}

/// "must be between LO and HI, inclusive".
pub fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            is_lower_alnum(f)
                && is_lower_alnum(l)
                && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?`
fn matches_label_with_underscore(s: &str) -> bool {
    let rest = s.strip_prefix('_').unwrap_or(s);
    let b = rest.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            is_lower_alnum(f)
                && is_lower_alnum(l)
                && b.iter()
                    .all(|&c| is_lower_alnum(c) || c == b'-' || c == b'_')
        }
        _ => false,
    }
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            f.is_ascii_lowercase()
                && is_lower_alnum(l)
                && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_qualified_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Checks a DNS-1123 label (RFC 1123): at most 63 lower case alphanumerics or '-'.
pub fn dns1123_label_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Checks a DNS-1123 subdomain: dot-separated labels, at most 253 characters.
pub fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Checks a DNS-1123 subdomain that may also hold underscores (DNS search domains).
pub fn dns1123_subdomain_with_underscore_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !value.split('.').all(matches_label_with_underscore) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_US_MSG,
            DNS1123_SUBDOMAIN_US_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Checks a wildcard DNS-1123 subdomain (`*.example.com`).
pub fn wildcard_dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !value
        .strip_prefix("*.")
        .is_some_and(matches_dns1123_subdomain)
    {
        errs.push(regex_error(
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character",
            "\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
            &["*.example.com"],
        ));
    }
    errs
}

/// Checks a DNS-1035 label: like a DNS-1123 label but starting with a letter.
pub fn dns1035_label_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    if !matches_dns1035_label(value) {
        errs.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Checks a qualified name (a label key): an optional DNS subdomain prefix and '/', then a
/// name of at most 63 alphanumerics, '-', '_' or '.'.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for m in dns1123_subdomain_errors(prefix) {
                    errs.push(format!("prefix part {m}"));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !matches_qualified_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Checks the name part of a qualified name (a label key without its prefix): at most 63
/// alphanumerics, '-', '_' or '.', starting and ending alphanumeric.
pub fn qualified_part_errors(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(max_len_error(QUALIFIED_NAME_MAX_LENGTH));
    }
    if !matches_qualified_part(name) {
        errs.push(regex_error(
            QUALIFIED_NAME_MSG,
            QUALIFIED_NAME_FMT,
            &["MyName", "my.name", "123-abc"],
        ));
    }
    errs
}

/// Checks a label value: empty, or at most 63 alphanumerics, '-', '_' or '.'.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(max_len_error(QUALIFIED_NAME_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

fn chdir_prefix_errors(value: &str) -> Option<String> {
    if value == "." {
        Some("must not be '.'".to_string())
    } else if value == ".." {
        Some("must not be '..'".to_string())
    } else if value.starts_with("..") {
        Some("must not start with '..'".to_string())
    } else {
        None
    }
}

/// Checks a ConfigMap or Secret key.
pub fn config_map_key_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let ok = !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'));
    if !ok {
        errs.push(regex_error(
            CONFIG_KEY_MSG,
            CONFIG_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errs.extend(chdir_prefix_errors(value));
    errs
}

/// Checks an environment variable name with the strict (pre-1.32) rule.
pub fn env_var_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let b = value.as_bytes();
    let ok = match b.first() {
        Some(&f) => {
            (f.is_ascii_alphabetic() || matches!(f, b'-' | b'.' | b'_'))
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'))
        }
        None => false,
    };
    if !ok {
        errs.push(regex_error(
            ENV_VAR_MSG,
            ENV_VAR_FMT,
            &["my.env-name", "MY_ENV.NAME", "MyEnvName1"],
        ));
    }
    errs.extend(chdir_prefix_errors(value));
    errs
}

/// Checks an environment variable name with the relaxed rule Kubernetes 1.33 uses:
/// printable ASCII other than '='.
pub fn relaxed_env_var_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.is_empty() {
        errs.push("environment variable name must be non-empty".to_string());
    }
    if value.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        errs.push(RELAXED_ENV_VAR_MSG.to_string());
    }
    errs
}

/// Checks a named port (IANA service name syntax): 1-15 of [-a-z0-9], at least one letter,
/// no leading, trailing or doubled hyphen.
pub fn port_name_errors(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(max_len_error(15));
    }
    if port.is_empty() || !port.bytes().all(|c| is_lower_alnum(c) || c == b'-') {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !port.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

/// Checks a port number: 1-65535.
pub fn port_number_errors(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec![inclusive_range_error(1, 65535)]
    }
}

/// Checks an HTTP header name.
pub fn http_header_name_errors(value: &str) -> Vec<String> {
    if !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-')
    {
        Vec::new()
    } else {
        vec![regex_error(
            HTTP_HEADER_MSG,
            HTTP_HEADER_FMT,
            &["X-Header-Name"],
        )]
    }
}

/// Checks a percentage string such as `25%`.
pub fn percent_errors(value: &str) -> Vec<String> {
    let ok = value
        .strip_suffix('%')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()));
    if ok {
        Vec::new()
    } else {
        vec![regex_error(PERCENT_MSG, PERCENT_FMT, &["1%", "93%"])]
    }
}

/// Checks a C identifier.
pub fn c_identifier_errors(value: &str) -> Vec<String> {
    let b = value.as_bytes();
    let ok = match b.first() {
        Some(&f) => {
            (f.is_ascii_alphabetic() || f == b'_')
                && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
        }
        None => false,
    };
    if ok {
        Vec::new()
    } else {
        vec![regex_error(
            C_IDENTIFIER_MSG,
            C_IDENTIFIER_FMT,
            &["my_name", "MY_NAME", "MyName"],
        )]
    }
}

/// Checks that a name can be used as a URL path segment (RBAC objects).
pub fn path_segment_name_errors(name: &str, prefix: bool) -> Vec<String> {
    if !prefix {
        for bad in [".", ".."] {
            if name == bad {
                return vec![format!("may not be '{bad}'")];
            }
        }
    }
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(**bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// A generated-name prefix may end in '-': check it as if the dash were a letter.
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        format!("{}a", &name[..name.len() - 1])
    } else {
        name.to_string()
    }
}

/// Kubernetes' `NameIsDNSSubdomain` (prefix: the name is a generateName prefix).
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        dns1123_subdomain_errors(&mask_trailing_dash(name))
    } else {
        dns1123_subdomain_errors(name)
    }
}

/// Kubernetes' `NameIsDNSLabel`.
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        dns1123_label_errors(&mask_trailing_dash(name))
    } else {
        dns1123_label_errors(name)
    }
}

/// Kubernetes' `NameIsDNS1035Label`.
pub fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        dns1035_label_errors(&mask_trailing_dash(name))
    } else {
        dns1035_label_errors(name)
    }
}

fn as_result(errs: Vec<String>) -> Result<(), String> {
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("; "))
    }
}

/// Whether `s` is a DNS-1123 subdomain (most object names).
pub fn is_dns1123_subdomain(s: &str) -> Result<(), String> {
    as_result(dns1123_subdomain_errors(s))
}

/// Whether `s` is a DNS-1123 label (namespace names, container names).
pub fn is_dns1123_label(s: &str) -> Result<(), String> {
    as_result(dns1123_label_errors(s))
}

/// Whether `s` is a DNS-1035 label (service names).
pub fn is_dns1035_label(s: &str) -> Result<(), String> {
    as_result(dns1035_label_errors(s))
}

/// Whether `s` is a qualified name (label keys, annotation keys, finalizers).
pub fn is_qualified_name(s: &str) -> Result<(), String> {
    as_result(qualified_name_errors(s))
}

/// Whether `s` is a valid label value.
pub fn is_valid_label_value(s: &str) -> Result<(), String> {
    as_result(label_value_errors(s))
}

/// Whether `s` is a valid ConfigMap or Secret key.
pub fn is_config_map_key(s: &str) -> Result<(), String> {
    as_result(config_map_key_errors(s))
}

/// Whether `s` can be a URL path segment (RBAC object names).
pub fn is_valid_path_segment_name(s: &str) -> Result<(), String> {
    as_result(path_segment_name_errors(s, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels() {
        assert!(dns1123_label_errors("my-name").is_empty());
        assert!(dns1123_label_errors("123-abc").is_empty());
        assert_eq!(
            dns1123_label_errors("My_Name"),
            vec![
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(dns1123_label_errors("a.b"), vec!["must not contain dots"]);
        assert_eq!(
            dns1123_label_errors(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
        assert!(!dns1123_label_errors("").is_empty());
        assert!(!dns1123_label_errors("-a").is_empty());
        assert!(!dns1123_label_errors("a-").is_empty());
    }

    #[test]
    fn dns_subdomains() {
        assert!(dns1123_subdomain_errors("example.com").is_empty());
        assert!(dns1123_subdomain_errors("a").is_empty());
        assert_eq!(dns1123_subdomain_errors("Foo").len(), 1);
        assert!(!dns1123_subdomain_errors("a..b").is_empty());
        assert!(!dns1123_subdomain_errors(".a").is_empty());
        assert_eq!(dns1123_subdomain_errors(&"a".repeat(254)).len(), 1);
        assert_eq!(
            dns1123_subdomain_errors(&format!("-{}", "a".repeat(254))).len(),
            2
        );
        assert!(
            dns1123_subdomain_errors(&format!("{}.{}", "a".repeat(63), "b".repeat(63))).is_empty()
        );
        assert!(dns1123_subdomain_with_underscore_errors("_sip._tcp.example.com").is_empty());
    }

    #[test]
    fn dns1035() {
        assert!(dns1035_label_errors("my-svc").is_empty());
        assert_eq!(
            dns1035_label_errors("1svc"),
            vec![
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
    }

    #[test]
    fn qualified_names() {
        assert!(qualified_name_errors("app").is_empty());
        assert!(qualified_name_errors("example.com/My_Name.x").is_empty());
        assert_eq!(
            qualified_name_errors("/a"),
            vec!["prefix part must be non-empty"]
        );
        assert_eq!(
            qualified_name_errors("a/b/c"),
            vec![
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ]
        );
        assert_eq!(qualified_name_errors("a/").len(), 2);
        assert_eq!(
            qualified_name_errors("Example.com/a"),
            vec![format!(
                "prefix part {}",
                dns1123_subdomain_errors("Example.com")[0]
            )]
        );
        assert_eq!(
            qualified_name_errors(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters"]
        );
    }

    #[test]
    fn label_values() {
        assert!(label_value_errors("").is_empty());
        assert!(label_value_errors("a.b_c-d").is_empty());
        assert_eq!(label_value_errors("-a").len(), 1);
        assert_eq!(
            label_value_errors(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
    }

    #[test]
    fn config_keys_and_env() {
        assert!(config_map_key_errors("key.name").is_empty());
        assert_eq!(config_map_key_errors(".."), vec!["must not be '..'"]);
        assert_eq!(config_map_key_errors("a b").len(), 1);
        assert!(relaxed_env_var_name_errors("1 weird-Name.x").is_empty());
        assert_eq!(relaxed_env_var_name_errors("A=B").len(), 1);
        assert_eq!(relaxed_env_var_name_errors("é").len(), 1);
        assert!(env_var_name_errors("MY_VAR").is_empty());
        assert!(!env_var_name_errors("1VAR").is_empty());
    }

    #[test]
    fn ports_and_misc() {
        assert!(port_name_errors("http").is_empty());
        assert_eq!(
            port_name_errors("80"),
            vec!["must contain at least one letter (a-z)"]
        );
        assert_eq!(port_name_errors("-a--b").len(), 2);
        assert_eq!(
            port_number_errors(0),
            vec!["must be between 1 and 65535, inclusive"]
        );
        assert!(percent_errors("25%").is_empty());
        assert!(!percent_errors("%").is_empty());
        assert_eq!(
            path_segment_name_errors("..", false),
            vec!["may not be '..'"]
        );
        assert_eq!(path_segment_name_errors("a/b%", false).len(), 2);
        assert!(name_is_dns_subdomain("gen-", true).is_empty());
        assert!(!name_is_dns_subdomain("gen-", false).is_empty());
        assert!(is_dns1123_label("ok").is_ok());
        assert!(is_qualified_name("a/b/c").is_err());
    }
}
