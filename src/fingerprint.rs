//! Tool fingerprints and the lock file of approved fingerprints.
//!
//! A fingerprint is the SHA-256 of the RFC 8785 (JCS) canonical JSON of the
//! object made of the tool's `name`, `title`, `description`, `inputSchema`,
//! `outputSchema`, `annotations`, `execution` and `_meta` (those present and
//! no others), written `sha256:` and 64 lower-case hex digits.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The fields of a tool definition that its fingerprint covers.
pub const FINGERPRINT_FIELDS: [&str; 8] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "execution",
    "_meta",
];

/// Why a fingerprint or lock file could not be made or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FingerprintError {
    /// The definition is not a JSON object (it is the named kind).
    #[error("a tool definition is a JSON object, not {0}")]
    NotAnObject(&'static str),
    /// The definition has no string `name`.
    #[error("the tool definition has no string `name`")]
    NoName,
    /// RFC 8785 canonicalization failed.
    #[error("the JSON cannot be put in canonical form: {0}")]
    Canonical(String),
    /// The lock file is not one.
    #[error("bad lock file: {0}")]
    Lock(String),
    /// A server id holds `/`.
    #[error(
        "server id `{0}` holds `/`: a server id never does, so `server/tool` splits one way only"
    )]
    BadServer(String),
}

/// Whether `id` can be a server id: not empty and without `/`.
pub fn is_server_id(id: &str) -> bool {
    !id.is_empty() && !id.contains('/')
}

/// How a JSON value's kind reads in a message: `a string`, `null`, ...
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `sha256:` and the hex digest of the canonical form of `value`.
pub fn digest(value: &Value) -> Result<String, FingerprintError> {
    let canonical = serde_json_canonicalizer::to_string(value)
        .map_err(|e| FingerprintError::Canonical(e.to_string()))?;
    let hash = Sha256::digest(canonical.as_bytes());
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    for byte in hash.iter() {
        let _ = write!(out, "{byte:02x}");
    }
    Ok(out)
}

/// The fingerprint of one `tools/list` entry.
pub fn fingerprint(tool: &Value) -> Result<String, FingerprintError> {
    let Value::Object(fields) = tool else {
        return Err(FingerprintError::NotAnObject(kind_of(tool)));
    };
    if !fields.get("name").is_some_and(Value::is_string) {
        return Err(FingerprintError::NoName);
    }
    let covered: Map<String, Value> = fields
        .iter()
        .filter(|(k, _)| FINGERPRINT_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    digest(&Value::Object(covered))
}

/// Whether `s` has the form `sha256:` + 64 lower-case hex digits.
pub fn is_fingerprint(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

pub use crate::model::ToolApproval;

/// A lock file: `{"version": 1, "tools": {"server/tool": "sha256:..."}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// The format's version: 1.
    pub version: u32,
    /// `"server/tool"` to its approved `sha256:` fingerprint.
    pub tools: BTreeMap<String, String>,
}

impl Lock {
    /// An empty lock file of the current version.
    pub fn new() -> Self {
        Lock {
            version: 1,
            tools: BTreeMap::new(),
        }
    }

    /// Reads and validates a lock file's text.
    pub fn parse(text: &str) -> Result<Lock, FingerprintError> {
        let lock: Lock =
            serde_json::from_str(text).map_err(|e| FingerprintError::Lock(e.to_string()))?;
        if lock.version != 1 {
            return Err(FingerprintError::Lock(format!(
                "version {} is not supported (this mcppol reads version 1)",
                lock.version
            )));
        }
        for (key, fp) in &lock.tools {
            // The key splits at its first `/`: a server id never holds one.
            match key.split_once('/') {
                Some((server, tool)) if is_server_id(server) && !tool.is_empty() => {}
                _ => {
                    return Err(FingerprintError::Lock(format!(
                        "`{key}` is not `server/tool` (a server id, `/`, a tool name)"
                    )))
                }
            }
            if !is_fingerprint(fp) {
                return Err(FingerprintError::Lock(format!(
                    "the fingerprint of `{key}` is not `sha256:` and 64 lower-case hex digits"
                )));
            }
        }
        Ok(lock)
    }

    /// Where `server/tool` stands, given its current fingerprint (`None`
    /// when it is not known: a locked tool then counts as changed, since it
    /// cannot be shown to be unchanged).
    ///
    /// A server id with `/` in it is never approved: its key would read as
    /// another server's tool.
    pub fn approval(&self, server: &str, tool: &str, current: Option<&str>) -> ToolApproval {
        if !is_server_id(server) {
            return ToolApproval::New;
        }
        let key = format!("{server}/{tool}");
        match self.tools.get(&key) {
            None => ToolApproval::New,
            Some(approved) if Some(approved.as_str()) == current => ToolApproval::Approved,
            Some(_) => ToolApproval::Changed,
        }
    }

    /// Adds every tool of one server's listing.
    pub fn add_listing(&mut self, server: &str, tools: &[Value]) -> Result<(), FingerprintError> {
        if !is_server_id(server) {
            return Err(FingerprintError::BadServer(server.to_string()));
        }
        for tool in tools {
            let name = tool
                .get("name")
                .and_then(Value::as_str)
                .ok_or(FingerprintError::NoName)?;
            self.tools
                .insert(format!("{server}/{name}"), fingerprint(tool)?);
        }
        Ok(())
    }

    /// The lock as pretty JSON with sorted keys.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read_file() -> Value {
        json!({"name": "read_file", "description": "Read a file.",
               "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
               "annotations": {"readOnlyHint": true}})
    }

    #[test]
    fn matches_the_conformance_value() {
        assert_eq!(
            fingerprint(&read_file()).ok().as_deref(),
            Some("sha256:acf46222ee141be6a379bb9de638abbd6bae73c0b78779d1a4950e7c93b6580b")
        );
    }

    #[test]
    fn key_order_does_not_count_but_whitespace_does() {
        let reordered: Value = serde_json::from_str(
            r#"{"annotations": {"readOnlyHint": true}, "inputSchema": {"required": ["path"], "properties": {"path": {"type": "string"}}, "type": "object"}, "description": "Read a file.", "name": "read_file"}"#,
        )
        .unwrap_or_default();
        assert_eq!(fingerprint(&reordered).ok(), fingerprint(&read_file()).ok());
        let mut spaced = read_file();
        spaced["description"] = json!("Read a file. ");
        assert_ne!(fingerprint(&spaced).ok(), fingerprint(&read_file()).ok());
    }

    #[test]
    fn fields_outside_the_list_do_not_count() {
        let mut extra = read_file();
        extra["icons"] = json!([{"src": "x.png"}]);
        assert_eq!(fingerprint(&extra).ok(), fingerprint(&read_file()).ok());
        let mut meta = read_file();
        meta["_meta"] = json!({"v": 2});
        assert_ne!(fingerprint(&meta).ok(), fingerprint(&read_file()).ok());
    }

    #[test]
    fn lock_states() {
        let mut lock = Lock::new();
        lock.add_listing("fs", &[read_file()]).ok();
        let fp = fingerprint(&read_file()).ok();
        assert_eq!(
            lock.approval("fs", "read_file", fp.as_deref()),
            ToolApproval::Approved
        );
        assert_eq!(
            lock.approval("fs", "read_file", Some("sha256:00")),
            ToolApproval::Changed
        );
        assert_eq!(
            lock.approval("fs", "read_file", None),
            ToolApproval::Changed
        );
        assert_eq!(
            lock.approval("fs", "write_file", fp.as_deref()),
            ToolApproval::New
        );
        assert!(Lock::parse(&lock.to_json_pretty()).is_ok());
        assert!(Lock::parse(r#"{"version": 2, "tools": {}}"#).is_err());
        assert!(Lock::parse(r#"{"version": 1, "tools": {"fs/x": "md5:1"}}"#).is_err());
    }

    #[test]
    fn server_ids_never_hold_a_slash() {
        let fp = fingerprint(&read_file()).unwrap_or_default();
        let mut lock = Lock::new();
        assert!(matches!(
            lock.add_listing("a/b", &[read_file()]),
            Err(FingerprintError::BadServer(_))
        ));
        assert!(lock.tools.is_empty());
        // `a/b/c` is server `a`, tool `b/c`, and nothing else.
        let text = format!(r#"{{"version": 1, "tools": {{"a/b/c": "{fp}"}}}}"#);
        let lock = Lock::parse(&text).unwrap();
        assert_eq!(lock.approval("a", "b/c", Some(&fp)), ToolApproval::Approved);
        assert_eq!(lock.approval("a/b", "c", Some(&fp)), ToolApproval::New);
        for key in ["/x", "x/", "x"] {
            let text = format!(r#"{{"version": 1, "tools": {{"{key}": "{fp}"}}}}"#);
            assert!(Lock::parse(&text).is_err(), "{key}");
        }
    }
}
