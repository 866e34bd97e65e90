//! Expression source text: size and nesting limits checked before parsing, locating
//! identifiers for error positions, and cel-go's error layout.
//!
//! The CEL parser recurses once per nesting level and per link of an operator chain, so a
//! hostile expression could exhaust the stack (which aborts the process: it cannot be
//! caught). [`prescan`] bounds both before the parser runs; the parser itself then runs on
//! a thread with a large stack (see `program`).
//!
//! Errors are laid out as cel-go does:
//!
//! ```text
//! ERROR: <input>:1:5: undeclared reference to 'foo' (in container '')
//!  | 1 + foo
//!  | ....^
//! ```

use crate::error::{CompileError, CompileErrorKind};

/// Largest expression accepted, in code points (cel-go's default limit).
pub const MAX_CODE_POINTS: usize = 100_000;
/// Deepest bracket nesting (`(`, `[`, `{`) accepted.
pub const MAX_NESTING: usize = 100;
/// Most operator tokens accepted in one expression (each can add a level to the parse).
pub const MAX_OPERATORS: usize = 20_000;

/// Checks the limits that keep the parser's recursion bounded.
pub fn prescan(source: &str) -> Result<(), CompileError> {
    let code_points = source.chars().count();
    if code_points > MAX_CODE_POINTS {
        return Err(CompileError::new(
            CompileErrorKind::Syntax,
            format!(
                "compilation failed: expression code point size exceeds limit: size: {code_points}, limit {MAX_CODE_POINTS}"
            ),
        ));
    }
    let mut depth = 0usize;
    let mut operators = 0usize;
    for token in Tokens::new(source) {
        match token.kind {
            TokenKind::Open => {
                depth += 1;
                operators += 1;
                if depth > MAX_NESTING {
                    return Err(recursion_error(source, token.start));
                }
            }
            TokenKind::Close => depth = depth.saturating_sub(1),
            TokenKind::Operator => operators += 1,
            TokenKind::Ident | TokenKind::Other => {}
        }
        if operators > MAX_OPERATORS {
            return Err(recursion_error(source, token.start));
        }
    }
    Ok(())
}

fn recursion_error(source: &str, offset: usize) -> CompileError {
    let (line, col) = line_col(source, offset);
    CompileError::new(
        CompileErrorKind::Syntax,
        format!(
            "compilation failed: {}",
            format_error(
                source,
                line,
                col,
                &format!("expression recursion limit exceeded: {MAX_NESTING}")
            )
        ),
    )
}

/// Where an identifier is referenced: the first token `name` that is (or, with
/// `after_dot`, is not) a free identifier. With `after_dot` the position returned is the
/// dot's, as cel-go reports field selections. 1-based line and column.
pub fn locate(source: &str, name: &str, after_dot: bool) -> (usize, usize) {
    let mut previous: Option<Token> = None;
    for token in Tokens::new(source) {
        if token.kind == TokenKind::Ident && &source[token.start..token.end] == name {
            let dot = previous
                .filter(|p| &source[p.start..p.end] == ".")
                .map(|p| p.start);
            match (after_dot, dot) {
                (true, Some(dot)) => return line_col(source, dot),
                (false, None) => return line_col(source, token.start),
                _ => {}
            }
        }
        previous = Some(token);
    }
    (1, 1)
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let mut line = 1;
    let mut col = 1;
    for (i, c) in source.char_indices() {
        if i >= offset {
            break;
        }
        if c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    (line, col)
}

/// One error in cel-go's layout: location, message, the source line and a caret.
pub fn format_error(source: &str, line: usize, col: usize, message: &str) -> String {
    let mut out = format!("ERROR: <input>:{line}:{col}: {message}");
    if let Some(text) = source.lines().nth(line.saturating_sub(1)) {
        out.push_str("\n | ");
        out.push_str(text);
        out.push_str("\n | ");
        out.push_str(&".".repeat(col.saturating_sub(1)));
        out.push('^');
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenKind {
    Ident,
    Open,
    Close,
    Operator,
    Other,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: TokenKind,
    start: usize,
    end: usize,
}

/// A lexer just precise enough to skip string literals and comments and to find
/// identifiers, brackets and operators.
struct Tokens<'a> {
    source: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Tokens<'a> {
    fn new(source: &'a str) -> Self {
        Tokens {
            source,
            bytes: source.as_bytes(),
            pos: 0,
        }
    }

    /// Skips a string literal whose opening quote is at `self.pos`.
    fn skip_string(&mut self, raw: bool) {
        let quote = self.bytes[self.pos];
        let triple = self.bytes.get(self.pos..self.pos + 3) == Some(&[quote, quote, quote][..]);
        self.pos += if triple { 3 } else { 1 };
        while self.pos < self.bytes.len() {
            let b = self.bytes[self.pos];
            if b == b'\\' && !raw {
                self.pos += 2;
                continue;
            }
            if b == quote {
                if !triple {
                    self.pos += 1;
                    return;
                }
                if self.bytes.get(self.pos..self.pos + 3) == Some(&[quote, quote, quote][..]) {
                    self.pos += 3;
                    return;
                }
            }
            if b == b'\n' && !triple {
                return;
            }
            self.pos += 1;
        }
    }
}

impl Iterator for Tokens<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        loop {
            let b = *self.bytes.get(self.pos)?;
            let start = self.pos;
            match b {
                b' ' | b'\t' | b'\r' | b'\n' => self.pos += 1,
                b'/' if self.bytes.get(self.pos + 1) == Some(&b'/') => {
                    while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                b'\'' | b'"' => {
                    self.skip_string(false);
                    return Some(self.token(TokenKind::Other, start));
                }
                b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                    while self.pos < self.bytes.len()
                        && (self.bytes[self.pos].is_ascii_alphanumeric()
                            || self.bytes[self.pos] == b'_')
                    {
                        self.pos += 1;
                    }
                    let word = &self.source[start..self.pos];
                    let next = self.bytes.get(self.pos).copied();
                    if matches!(next, Some(b'\'' | b'"')) {
                        let lower = word.to_ascii_lowercase();
                        if lower == "r" || lower == "b" || lower == "rb" || lower == "br" {
                            self.skip_string(lower.contains('r'));
                            return Some(self.token(TokenKind::Other, start));
                        }
                    }
                    let kind = if word == "in" {
                        TokenKind::Operator
                    } else {
                        TokenKind::Ident
                    };
                    return Some(self.token(kind, start));
                }
                b'(' | b'[' | b'{' => {
                    self.pos += 1;
                    return Some(self.token(TokenKind::Open, start));
                }
                b')' | b']' | b'}' => {
                    self.pos += 1;
                    return Some(self.token(TokenKind::Close, start));
                }
                b'.' | b'+' | b'-' | b'*' | b'/' | b'%' | b'<' | b'>' | b'=' | b'!' | b'?'
                | b'&' | b'|' => {
                    self.pos += 1;
                    return Some(self.token(TokenKind::Operator, start));
                }
                _ => {
                    // Skip the whole character (it may be multi-byte).
                    let len = self.source[start..]
                        .chars()
                        .next()
                        .map_or(1, char::len_utf8);
                    self.pos += len;
                    return Some(self.token(TokenKind::Other, start));
                }
            }
        }
    }
}

impl Tokens<'_> {
    fn token(&self, kind: TokenKind, start: usize) -> Token {
        Token {
            kind,
            start,
            end: self.pos.min(self.bytes.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn locates_free_identifiers_outside_strings() {
        assert_eq!(locate("'foo' + foo", "foo", false), (1, 9));
        assert_eq!(locate("a.foo + foo", "foo", false), (1, 9));
        assert_eq!(locate("x == 1 &&\n  bar", "bar", false), (2, 3));
        assert_eq!(locate("variables.foo", "foo", true), (1, 10));
        assert_eq!(locate("r'foo\\' + foo", "foo", false), (1, 11));
    }

    #[test]
    fn formats_like_cel_go() {
        assert_eq!(
            format_error(
                "1 + foo",
                1,
                5,
                "undeclared reference to 'foo' (in container '')"
            ),
            "ERROR: <input>:1:5: undeclared reference to 'foo' (in container '')\n | 1 + foo\n | ....^"
        );
    }

    #[test]
    fn limits_nesting_and_size() {
        assert!(prescan(&format!("{}1{}", "(".repeat(50), ")".repeat(50))).is_ok());
        let deep = format!(
            "{}1{}",
            "[".repeat(MAX_NESTING + 1),
            "]".repeat(MAX_NESTING + 1)
        );
        let err = prescan(&deep).unwrap_err();
        assert!(err.detail().contains("recursion limit exceeded"), "{err}");
        // Brackets inside strings do not count.
        assert!(prescan(&format!("'{}'", "(".repeat(500))).is_ok());
        let long = "a".repeat(MAX_CODE_POINTS + 1);
        assert!(
            prescan(&long)
                .unwrap_err()
                .detail()
                .contains("code point size")
        );
        let chain = vec!["a"; MAX_OPERATORS + 2].join("+");
        assert!(prescan(&chain).is_err());
    }
}
