//! What replicas share besides budget counters (`--state redis://`): the
//! grants `allow always` records, the taint of sessions and principals,
//! and each server's approved fingerprints (the first listing any replica
//! read).
//!
//! This module holds what does not need Redis (the taint store's trait,
//! the keys and the versioned values), so that the gateway builds without
//! the `redis-state` feature; `redis.rs` (with the feature) is the store.
//!
//! Every key is under the budgets' namespace ([`KEY_PREFIX`], `mcppol:v1:`)
//! and names its subject by digest, never by its text: a principal, a
//! session id or a tool name of any length or content makes a short key of
//! safe characters. Every value carries its own version ([`VALUE_VERSION`]):
//! a value of another version reads as missing for a grant (asked again)
//! and as unknown for taint (tainted), never as an allow.

#[cfg(feature = "redis-state")]
mod redis;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::pipeline::{ApprovedListings, GrantKey, Grants, StateFuture, StateUnavailable};

#[cfg(feature = "redis-state")]
pub(crate) use redis::{RedisApproved, RedisGrants, RedisTaint};

/// The namespace of every key mcppol keeps in a shared store, with the
/// layout's version (the budgets' own).
pub(crate) const KEY_PREFIX: &str = "mcppol:v1:";

/// The version every value starts with (`v1:`).
#[cfg_attr(not(feature = "redis-state"), allow(dead_code))]
pub(crate) const VALUE_VERSION: &str = "v1:";

/// The grants and taint every replica naming one store shares.
#[derive(Clone)]
#[cfg_attr(not(feature = "redis-state"), allow(dead_code))]
pub(crate) struct SharedState {
    /// Every session's and server's grants.
    pub(crate) grants: Arc<dyn Grants>,
    /// Sessions' and principals' taint.
    pub(crate) taint: Arc<dyn TaintSets>,
    /// Each server's approved fingerprints (its first listing).
    pub(crate) approved: Arc<dyn ApprovedListings>,
}

/// Sets of server ids kept for a while under a key: the taint a session or
/// a principal has seen, as replicas share it.
pub(crate) trait TaintSets: Send + Sync + 'static {
    /// Adds `servers` to the set at `key` (never removes any) and keeps it
    /// `ttl` from now.
    fn add<'a>(&'a self, key: &'a str, servers: &'a [String], ttl: Duration)
        -> StateFuture<'a, ()>;
    /// The set at `key` (empty when there is none). `Err` when it cannot be
    /// read, or holds a value of another version: the taint is unknown.
    fn read<'a>(&'a self, key: &'a str) -> StateFuture<'a, Vec<String>>;
}

/// `TAG:` and the first 16 bytes of the text's SHA-256 in hex, or `TAG-`
/// without one (the budgets' scheme, `budget::who`).
pub(crate) fn who(tag: &str, name: Option<&str>) -> String {
    match name {
        None => format!("{tag}-"),
        Some(name) => format!("{tag}:{}", digest16(name.as_bytes())),
    }
}

fn digest16(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The key of a grant: `mcppol:v1:grant:WHO:WHAT`, WHO the principal (as
/// [`who`] writes it, `p`), WHAT the digest of the server, tool and
/// fingerprint together (as a JSON array, so no two triples share a text).
#[cfg_attr(not(feature = "redis-state"), allow(dead_code))]
pub(crate) fn grant_key(key: &GrantKey) -> String {
    let what = json!([key.server, key.tool, key.fingerprint]).to_string();
    format!(
        "{KEY_PREFIX}grant:{}:{}",
        who("p", key.principal.as_deref()),
        digest16(what.as_bytes())
    )
}

/// The pattern of every grant key of one principal (`Some`), or of all
/// (`None`), for a scan.
#[cfg_attr(not(feature = "redis-state"), allow(dead_code))]
pub(crate) fn grant_pattern(principal: Option<Option<&str>>) -> String {
    match principal {
        Some(p) => format!("{KEY_PREFIX}grant:{}:*", who("p", p)),
        None => format!("{KEY_PREFIX}grant:*"),
    }
}

/// The key of a session's taint (`s`) or a principal's (`p`).
pub(crate) fn taint_key(tag: &str, name: Option<&str>) -> String {
    format!("{KEY_PREFIX}taint:{}", who(tag, name))
}

/// The key of a server's approved fingerprints (a hash):
/// `mcppol:v1:approved:` and the digest of the server id.
#[cfg_attr(not(feature = "redis-state"), allow(dead_code))]
pub(crate) fn approved_key(server: &str) -> String {
    format!("{KEY_PREFIX}approved:{}", digest16(server.as_bytes()))
}

/// The field of the approved hash that says which version wrote it (its
/// value is [`VALUE_VERSION`]); a tool's field is `t:` and its name, so
/// no tool name is this field, and a listing of no tools is stored too.
#[cfg_attr(not(feature = "redis-state"), allow(dead_code))]
pub(crate) const APPROVED_MARK: &str = "listed";

/// A listing as the approved hash's fields and values, flat: the mark,
/// then `t:NAME`, `v1:FINGERPRINT` for each tool.
#[cfg_attr(not(feature = "redis-state"), allow(dead_code))]
pub(crate) fn encode_approved(listing: &[(String, String)]) -> Vec<String> {
    let mut flat = Vec::with_capacity(2 + 2 * listing.len());
    flat.push(APPROVED_MARK.to_string());
    flat.push(VALUE_VERSION.to_string());
    for (name, fingerprint) in listing {
        flat.push(format!("t:{name}"));
        flat.push(format!("{VALUE_VERSION}{fingerprint}"));
    }
    flat
}

/// The approved hash read back (fields and values, flat): the tools'
/// fingerprints by name. A tool whose value is of another version is left
/// out (not approved); a hash without this version's mark is `Err` (it
/// was not written by this layout: nothing is approved).
#[cfg_attr(not(feature = "redis-state"), allow(dead_code))]
pub(crate) fn decode_approved(
    key: &str,
    flat: &[String],
) -> Result<HashMap<String, String>, StateUnavailable> {
    let mut marked = false;
    let mut tools = HashMap::new();
    for pair in flat.chunks(2) {
        let [field, value] = pair else {
            return Err(StateUnavailable(format!("{key} is not a hash")));
        };
        if field == APPROVED_MARK {
            marked = value == VALUE_VERSION;
        } else if let (Some(name), Some(fingerprint)) =
            (field.strip_prefix("t:"), value.strip_prefix(VALUE_VERSION))
        {
            tools.insert(name.to_string(), fingerprint.to_string());
        }
    }
    if marked {
        Ok(tools)
    } else {
        Err(StateUnavailable(format!(
            "{key} holds approved fingerprints of another version (delete the key to approve the next listing)"
        )))
    }
}

/// A grant's value: the version, then the grant as JSON (what `list`
/// shows), with its expiry in milliseconds since the Unix epoch.
#[cfg_attr(not(feature = "redis-state"), allow(dead_code))]
pub(crate) fn encode_grant(key: &GrantKey, expires: Duration) -> String {
    let grant = json!({
        "principal": key.principal,
        "server": key.server,
        "tool": key.tool,
        "fingerprint": key.fingerprint,
        "expires_ms": u64::try_from(expires.as_millis()).unwrap_or(u64::MAX),
    });
    format!("{VALUE_VERSION}{grant}")
}

/// A grant's value read back: `None` for a value of another version or
/// shape (which counts as no grant).
#[cfg_attr(not(feature = "redis-state"), allow(dead_code))]
pub(crate) fn decode_grant(text: &str) -> Option<(GrantKey, Duration)> {
    let body = text.strip_prefix(VALUE_VERSION)?;
    let v: Value = serde_json::from_str(body).ok()?;
    let text_of = |k: &str| v.get(k).and_then(Value::as_str).map(String::from);
    let principal = match v.get("principal")? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        _ => return None,
    };
    let key = GrantKey {
        principal,
        server: text_of("server")?,
        tool: text_of("tool")?,
        fingerprint: text_of("fingerprint")?,
    };
    let expires = Duration::from_millis(v.get("expires_ms")?.as_u64()?);
    Some((key, expires))
}

/// A taint set's member: the version, then the server id.
#[cfg_attr(not(feature = "redis-state"), allow(dead_code))]
pub(crate) fn encode_server(server: &str) -> String {
    format!("{VALUE_VERSION}{server}")
}

/// A member read back: `None` for one of another version.
#[cfg_attr(not(feature = "redis-state"), allow(dead_code))]
pub(crate) fn decode_server(member: &str) -> Option<&str> {
    member.strip_prefix(VALUE_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(principal: Option<&str>, server: &str, tool: &str) -> GrantKey {
        GrantKey {
            principal: principal.map(String::from),
            server: server.into(),
            tool: tool.into(),
            fingerprint: "sha256:ab".into(),
        }
    }

    #[test]
    fn keys_are_namespaced_and_name_their_subject_by_digest() {
        let k = grant_key(&key(Some("ann"), "gh", "merge"));
        assert!(k.starts_with("mcppol:v1:grant:p:"), "{k}");
        assert!(!k.contains("ann") && !k.contains("merge"), "{k}");
        // `:` in names cannot make two grants share a key.
        assert_ne!(
            grant_key(&key(Some("ann"), "a:b", "c")),
            grant_key(&key(Some("ann"), "a", "b:c"))
        );
        assert_ne!(
            grant_key(&key(None, "gh", "merge")),
            grant_key(&key(Some("ann"), "gh", "merge"))
        );
        assert!(grant_key(&key(None, "gh", "merge")).starts_with("mcppol:v1:grant:p-:"));
        let ann = grant_pattern(Some(Some("ann")));
        assert!(k.starts_with(ann.trim_end_matches('*')), "{ann}");
        assert_eq!(grant_pattern(None), "mcppol:v1:grant:*");
        assert_eq!(taint_key("s", None), "mcppol:v1:taint:s-");
        let t = taint_key("p", Some("ann"));
        assert_eq!(t.len(), "mcppol:v1:taint:p:".len() + 32, "{t}");
    }

    #[test]
    fn values_carry_their_version_and_another_reads_as_missing() {
        let k = key(Some("ann"), "gh", "merge");
        let text = encode_grant(&k, Duration::from_millis(1_234));
        assert!(text.starts_with("v1:{"), "{text}");
        assert_eq!(
            decode_grant(&text),
            Some((k.clone(), Duration::from_millis(1_234)))
        );
        let v2 = text.replacen("v1:", "v2:", 1);
        assert_eq!(decode_grant(&v2), None);
        assert_eq!(decode_grant("v1:not json"), None);
        assert_eq!(
            decode_grant(
                r#"v1:{"principal":1,"server":"a","tool":"b","fingerprint":"c","expires_ms":1}"#
            ),
            None
        );
        let none = encode_grant(&key(None, "gh", "merge"), Duration::ZERO);
        assert_eq!(decode_grant(&none).map(|(k, _)| k.principal), Some(None));

        assert_eq!(encode_server("fs"), "v1:fs");
        assert_eq!(decode_server("v1:fs"), Some("fs"));
        assert_eq!(decode_server("v1:"), Some(""));
        assert_eq!(decode_server("v2:fs"), None);
        assert_eq!(decode_server("fs"), None);
    }

    #[test]
    fn approved_listings_round_trip_and_another_version_is_not_approved() {
        let key = approved_key("gh");
        assert_eq!(key.len(), "mcppol:v1:approved:".len() + 32, "{key}");
        assert!(!key.contains("gh"), "{key}");
        let listing = vec![
            ("listed".to_string(), "sha256:aa".to_string()),
            ("b".to_string(), "sha256:bb".to_string()),
        ];
        let flat = encode_approved(&listing);
        assert_eq!(&flat[..4], ["listed", "v1:", "t:listed", "v1:sha256:aa"]);
        let read = decode_approved(&key, &flat).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read, listing.into_iter().collect::<HashMap<_, _>>());
        // No tools is a listing too.
        let empty = decode_approved(&key, &encode_approved(&[]));
        assert_eq!(empty.map(|m| m.len()).ok(), Some(0));
        // A tool of another version is not approved; a hash of another
        // version (or none) is unreadable.
        let mut other = flat.clone();
        other[5] = "v2:sha256:bb".into();
        let read = decode_approved(&key, &other).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.keys().collect::<Vec<_>>(), ["listed"]);
        let mut v2 = flat.clone();
        v2[1] = "v2:".into();
        assert!(decode_approved(&key, &v2).is_err());
        assert!(decode_approved(&key, &flat[2..]).is_err());
        assert!(decode_approved(&key, &flat[..3]).is_err());
    }
}
