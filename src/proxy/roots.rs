//! Pinned roots: the proxy answers a server's `roots/list` with each root
//! the host gave intersected with the policy's pinned folders. A wider
//! root narrows to the pinned folders inside it, a narrower one stays as
//! it is, and one outside every pinned folder (or not a `file:` URI) is
//! dropped, and the drop is logged.

use serde_json::{json, Value};

use crate::paths::{canonicalize, is_within};

/// The roots to give the server, and the host roots dropped (their URIs).
pub(crate) fn pin(host_roots: &[Value], pinned: &[String]) -> (Vec<Value>, Vec<String>) {
    let mut out: Vec<Value> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut dropped = Vec::new();
    for root in host_roots {
        let uri = root.get("uri").and_then(Value::as_str).unwrap_or("");
        let Some(path) = file_path(uri) else {
            dropped.push(uri.to_string());
            continue;
        };
        let mut kept = false;
        for pin in pinned {
            let narrowed = if is_within(&path, pin) {
                path.clone()
            } else if is_within(pin, &path) {
                pin.clone()
            } else {
                continue;
            };
            kept = true;
            if seen.contains(&narrowed) {
                continue;
            }
            let mut entry = json!({ "uri": file_uri(&narrowed) });
            if narrowed == path {
                if let Some(name) = root.get("name") {
                    entry["name"] = name.clone();
                }
            }
            seen.push(narrowed);
            out.push(entry);
        }
        if !kept {
            dropped.push(uri.to_string());
        }
    }
    (out, dropped)
}

/// The canonical path of a `file:` URI (`file:///p` or
/// `file://localhost/p`), percent-decoded; `None` for anything else.
pub(crate) fn file_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let decoded = percent_decode(rest)?;
    canonicalize(&decoded, None).ok()
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A `file://` URI for a canonical absolute path.
pub(crate) fn file_uri(path: &str) -> String {
    let mut uri = String::from("file://");
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(uris: &[&str]) -> Vec<Value> {
        uris.iter()
            .map(|u| json!({"uri": u, "name": "h"}))
            .collect()
    }

    #[test]
    fn wider_roots_narrow_and_outside_ones_drop() {
        let pinned = vec!["/srv/work".to_string(), "/srv/docs".to_string()];
        let (out, dropped) = pin(
            &roots(&[
                "file:///",
                "file:///srv/work/a",
                "file:///etc",
                "https://x/y",
                "file:///srv/work/../../etc",
            ]),
            &pinned,
        );
        let uris: Vec<&str> = out.iter().map(|r| r["uri"].as_str().unwrap()).collect();
        assert_eq!(
            uris,
            ["file:///srv/work", "file:///srv/docs", "file:///srv/work/a"]
        );
        // A root kept as it is keeps its name; a narrowed one has none.
        assert_eq!(out[2]["name"], "h");
        assert!(out[0].get("name").is_none());
        assert_eq!(
            dropped,
            ["file:///etc", "https://x/y", "file:///srv/work/../../etc"]
        );
    }

    #[test]
    fn file_uris_round_trip_with_percent_encoding() {
        assert_eq!(file_path("file:///a%20b/c").as_deref(), Some("/a b/c"));
        assert_eq!(file_path("file://localhost/x/").as_deref(), Some("/x"));
        assert_eq!(file_path("file://host/x"), None);
        assert_eq!(file_path("file:///bad%zz"), None);
        assert_eq!(file_uri("/a b/c"), "file:///a%20b/c");
    }
}
