//! The static token file (`--token-auth-file`): CSV lines `token,user,uid[,"group1,group2"]`,
//! as kube-apiserver reads it. Lines starting with `#` and blank lines are skipped.

use kyb_serving::User;
use std::collections::HashMap;
use std::path::Path;

/// Users by bearer token.
#[derive(Debug, Default, Clone)]
pub struct TokenFile {
    users: HashMap<String, User>,
}

impl TokenFile {
    /// Reads and parses a token file.
    pub fn load(path: &Path) -> Result<TokenFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        TokenFile::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<TokenFile, String> {
        let mut users = HashMap::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields = csv_fields(line);
            let [token, name, uid, rest @ ..] = fields.as_slice() else {
                return Err(format!("line {}: want at least token,user,uid", number + 1));
            };
            if token.is_empty() || name.is_empty() {
                return Err(format!("line {}: empty token or user name", number + 1));
            }
            let mut groups: Vec<String> = rest
                .first()
                .map(|g| {
                    g.split(',')
                        .map(str::trim)
                        .filter(|g| !g.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            groups.push(kyb_serving::user::AUTHENTICATED.to_string());
            let user = User {
                name: name.clone(),
                uid: uid.clone(),
                groups,
                ..User::default()
            };
            if users.insert(token.clone(), user).is_some() {
                return Err(format!("line {}: duplicate token", number + 1));
            }
        }
        Ok(TokenFile { users })
    }

    pub fn get(&self, token: &str) -> Option<&User> {
        self.users.get(token)
    }
}

/// The fields of one CSV line: commas separate, double quotes group (`""` is a quote).
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                if let Some(field) = fields.last_mut() {
                    field.push('"');
                }
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => {
                if let Some(field) = fields.last_mut() {
                    field.push(c);
                }
            }
        }
    }
    fields.into_iter().map(|f| f.trim().to_string()).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_kube_apiserver_token_files() {
        let file =
            TokenFile::parse("# comment\n\nsecret1,alice,1001,\"dev,ops\"\nsecret2,bob,1002\n")
                .unwrap();
        let alice = file.get("secret1").unwrap();
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.uid, "1001");
        assert_eq!(alice.groups, ["dev", "ops", "system:authenticated"]);
        assert_eq!(
            file.get("secret2").unwrap().groups,
            ["system:authenticated"]
        );
        assert!(file.get("nope").is_none());
        assert!(TokenFile::parse("only,two\n").is_err());
        assert!(TokenFile::parse("t,a,1\nt,b,2\n").is_err());
    }
}
