//! The static tokens file (`--tokens FILE`):
//!
//! ```json
//! {"tokens": [
//!   {"sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
//!    "principal": "dana", "assigns": {"team": "infra"}},
//!   {"token": "a-long-random-token-for-ci", "principal": "ci"}
//! ]}
//! ```
//!
//! `sha256` is the lower- or upper-case hex SHA-256 digest of the token
//! (`printf %s TOKEN | sha256sum`), so the file holds no secret; `token`,
//! the token itself, is accepted for a quick test. A token is found by
//! comparing its digest with every entry's in constant time.

use std::path::Path;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::{check_principal, AuthError, Principal};

/// The most entries a tokens file may have.
pub const MAX_TOKENS: usize = 10_000;

/// The shortest plain `token` accepted (a short one is guessed).
const MIN_TOKEN_CHARS: usize = 16;

/// The largest tokens file read.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The tokens of a tokens file, by digest.
pub struct TokenFile {
    entries: Vec<Entry>,
}

struct Entry {
    digest: [u8; 32],
    principal: Principal,
}

impl std::fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The digests are left out.
        f.debug_struct("TokenFile")
            .field("tokens", &self.entries.len())
            .finish()
    }
}

impl TokenFile {
    /// Reads a tokens file (bounded, regular files only).
    ///
    /// # Errors
    ///
    /// A message naming the file and what is wrong with it.
    pub fn read(path: &Path) -> Result<TokenFile, String> {
        let text = crate::io::read_text(path, MAX_FILE_BYTES, "tokens file")?;
        TokenFile::parse(&text).map_err(|e| format!("`{}`: {e}", path.display()))
    }

    /// Parses a tokens file's text.
    ///
    /// # Errors
    ///
    /// What is wrong, naming the entry (by its index and principal, never
    /// its token).
    pub fn parse(text: &str) -> Result<TokenFile, String> {
        let root: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let list = root
            .get("tokens")
            .and_then(Value::as_array)
            .ok_or("no `tokens` list: write {\"tokens\": [{\"sha256\": \"HEX\", \"principal\": \"NAME\"}]}")?;
        if list.len() > MAX_TOKENS {
            return Err(format!(
                "{} tokens: the most a file may have is {MAX_TOKENS}",
                list.len()
            ));
        }
        let mut entries: Vec<Entry> = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            let entry = entry(item).map_err(|e| format!("tokens[{i}]: {e}"))?;
            if let Some(other) = entries.iter().position(|o| o.digest == entry.digest) {
                return Err(format!(
                    "tokens[{i}] has the same token as tokens[{other}]: one token names one principal"
                ));
            }
            entries.push(entry);
        }
        Ok(TokenFile { entries })
    }

    /// How many tokens the file has.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the file has no tokens (then every request is refused).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The principal `token` names.
    ///
    /// # Errors
    ///
    /// [`AuthError::UnknownToken`] when no entry has it.
    pub fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        // Every entry is compared, each in constant time: how long it takes
        // says nothing about which entry, or which bytes, came close.
        let mut found = None;
        for entry in &self.entries {
            if constant_time_eq(&entry.digest, &digest) {
                found = Some(&entry.principal);
            }
        }
        found.cloned().ok_or(AuthError::UnknownToken)
    }
}

fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

const FIELDS: &[&str] = &["sha256", "token", "principal", "assigns"];

fn entry(item: &Value) -> Result<Entry, String> {
    let Some(item) = item.as_object() else {
        return Err("not an object".into());
    };
    if let Some(key) = item.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        let hint = crate::diagnostics::did_you_mean(key, FIELDS.iter().copied())
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        return Err(format!(
            "unknown field `{}`{hint}; an entry has {}",
            crate::escape::escape(key),
            FIELDS.join(", ")
        ));
    }
    let name = match item.get("principal") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err("no `principal` string".into()),
    };
    check_principal(&name)?;
    let assigns = match item.get("assigns") {
        None => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => return Err(format!("principal `{name}`: `assigns` is not an object")),
    };
    let digest = match (item.get("sha256"), item.get("token")) {
        (Some(Value::String(hex)), None) => {
            parse_digest(hex).map_err(|e| format!("principal `{name}`: {e}"))?
        }
        (None, Some(Value::String(token))) => {
            if token.chars().count() < MIN_TOKEN_CHARS {
                return Err(format!(
                    "principal `{name}`: a `token` shorter than {MIN_TOKEN_CHARS} characters is \
                     easy to guess (generate one: `openssl rand -hex 32`)"
                ));
            }
            if super::bearer(Some(&format!("Bearer {token}"))).is_err() {
                return Err(format!(
                    "principal `{name}`: the `token` cannot be sent as a bearer token (visible ASCII only)"
                ));
            }
            Sha256::digest(token.as_bytes()).into()
        }
        (Some(_), Some(_)) => {
            return Err(format!(
                "principal `{name}`: give `sha256` or `token`, not both"
            ))
        }
        _ => {
            return Err(format!(
                "principal `{name}`: no `sha256` (the token's hex SHA-256 digest) or `token` string"
            ))
        }
    };
    Ok(Entry {
        digest,
        principal: Principal { name, assigns },
    })
}

fn parse_digest(hex: &str) -> Result<[u8; 32], String> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return Err(format!(
            "`sha256` has {} characters: a SHA-256 digest in hex has 64",
            bytes.len()
        ));
    }
    let mut digest = [0u8; 32];
    for (i, pair) in bytes.chunks(2).enumerate() {
        let text = std::str::from_utf8(pair).map_err(|_| "`sha256` is not hex".to_string())?;
        digest[i] = u8::from_str_radix(text, 16).map_err(|_| "`sha256` is not hex".to_string())?;
    }
    Ok(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(token: &str) -> String {
        Sha256::digest(token.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    #[test]
    fn a_digest_or_a_token_names_its_principal() {
        let text = serde_json::json!({"tokens": [
            {"sha256": hex("dana-token-0123456789"), "principal": "dana", "assigns": {"team": "infra"}},
            {"sha256": hex("ci-token-0123456789abc").to_uppercase(), "principal": "ci"},
            {"token": "plain-token-0123456789", "principal": "eve"},
        ]})
        .to_string();
        let file = TokenFile::parse(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.len(), 3);
        let dana = file
            .verify("dana-token-0123456789")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dana.name, "dana");
        assert_eq!(dana.assigns, serde_json::json!({"team": "infra"}));
        let ci = file
            .verify("ci-token-0123456789abc")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (ci.name.as_str(), ci.assigns.clone()),
            ("ci", serde_json::json!({}))
        );
        assert_eq!(
            file.verify("plain-token-0123456789").map(|p| p.name),
            Ok("eve".into())
        );
        assert_eq!(
            file.verify("dana-token-012345678"),
            Err(AuthError::UnknownToken)
        );
        assert_eq!(file.verify(""), Err(AuthError::UnknownToken));
    }

    #[test]
    fn bad_files_say_what_is_wrong_without_the_token() {
        let digest = hex("x");
        for (text, want) in [
            ("[]".to_string(), "no `tokens` list"),
            (r#"{"tokens": [{"principal": "a"}]}"#.into(), "no `sha256`"),
            (
                r#"{"tokens": [{"token": "short", "principal": "a"}]}"#.into(),
                "easy to guess",
            ),
            (
                r#"{"tokens": [{"sha256": "abc", "principal": "a"}]}"#.into(),
                "has 3 characters",
            ),
            (
                format!(
                    r#"{{"tokens": [{{"sha256": "{}", "principal": "a"}}]}}"#,
                    "g".repeat(64)
                ),
                "not hex",
            ),
            (
                format!(r#"{{"tokens": [{{"sha256": "{digest}", "principal": ""}}]}}"#),
                "principal is empty",
            ),
            (
                format!(
                    r#"{{"tokens": [{{"sha256": "{digest}", "principal": "a", "asigns": {{}}}}]}}"#
                ),
                "did you mean `assigns`",
            ),
            (
                format!(
                    r#"{{"tokens": [{{"sha256": "{digest}", "principal": "a", "assigns": 1}}]}}"#
                ),
                "not an object",
            ),
            (
                format!(
                    r#"{{"tokens": [{{"sha256": "{digest}", "principal": "a"}}, {{"sha256": "{digest}", "principal": "b"}}]}}"#
                ),
                "the same token as tokens[0]",
            ),
            (
                r#"{"tokens": [{"token": "a-long-token-with a-space", "principal": "a"}]}"#.into(),
                "visible ASCII",
            ),
        ] {
            let e = TokenFile::parse(&text).err().unwrap_or_default();
            assert!(e.contains(want), "{text}: {e}");
            assert!(!e.contains("short") || want == "easy to guess", "{e}");
        }
    }
}
