//! `$(VAR)` references in commands, arguments and environment values, expanded exactly as
//! Kubernetes' `expansion.Expand` does: a reference to a known variable is replaced by its
//! value, an unknown one is left as written, `$$` is an escaped `$`, and any other `$` is
//! copied.

/// `input` with its `$(NAME)` references replaced through `lookup` (None: left as written).
pub fn expand<'a>(input: &str, lookup: impl Fn(&str) -> Option<&'a str>) -> String {
    let bytes = input.as_bytes();
    let mut out = String::with_capacity(input.len());
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < bytes.len() {
        if bytes[cursor] == b'$' && cursor + 1 < bytes.len() {
            out.push_str(&input[checkpoint..cursor]);
            let rest = &input[cursor + 1..];
            let advance = match bytes[cursor + 1] {
                // An escaped operator.
                b'$' => {
                    out.push('$');
                    1
                }
                b'(' => match rest[1..].find(')') {
                    Some(end) => {
                        let name = &rest[1..1 + end];
                        match lookup(name) {
                            Some(value) => out.push_str(value),
                            None => {
                                out.push_str("$(");
                                out.push_str(name);
                                out.push(')');
                            }
                        }
                        end + 2
                    }
                    // An incomplete reference is copied.
                    None => {
                        out.push_str("$(");
                        1
                    }
                },
                // Not an expression: the operator and the next character are copied.
                _ => {
                    let next = rest.chars().next().unwrap_or('$');
                    out.push('$');
                    out.push(next);
                    next.len_utf8()
                }
            };
            cursor += advance;
            checkpoint = cursor + 1;
        }
        cursor += 1;
    }
    out.push_str(input.get(checkpoint..).unwrap_or_default());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(name: &str) -> Option<&'static str> {
        match name {
            "VAR_A" => Some("A"),
            "VAR_B" => Some("B"),
            "EMPTY" => Some(""),
            _ => None,
        }
    }

    #[test]
    fn expands_as_kubernetes() {
        // Cases from Kubernetes' expansion tests.
        let cases = [
            ("$(VAR_A)", "A"),
            ("___$(VAR_B)___", "___B___"),
            ("$(VAR_A)-$(VAR_A)", "A-A"),
            ("$(VAR_A)$(VAR_B)", "AB"),
            ("$(EMPTY)", ""),
            ("$(UNKNOWN)", "$(UNKNOWN)"),
            ("$$(VAR_A)", "$(VAR_A)"),
            ("$$$(VAR_A)", "$A"),
            ("$$$$(VAR_A)", "$$(VAR_A)"),
            ("$$", "$"),
            ("$", "$"),
            ("foo$", "foo$"),
            ("$(VAR_A", "$(VAR_A"),
            ("$(", "$("),
            ("$()", "$()"),
            ("$VAR_A", "$VAR_A"),
            ("f000-$$VAR_A", "f000-$VAR_A"),
            ("$(VAR_A)$", "A$"),
            ("$é$(VAR_B)", "$éB"),
            ("no refs", "no refs"),
            ("", ""),
        ];
        for (input, expected) in cases {
            assert_eq!(expand(input, vars), expected, "{input}");
        }
    }
}
