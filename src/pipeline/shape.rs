//! Shaping a result for a model, and a server's instructions.
//!
//! Text loses bidi controls, zero-width characters and Unicode tag
//! characters (each flagged); media outside the allow-list and unknown
//! blocks become placeholders; links are kept as text, never fetched;
//! the whole result is capped (default 100 KiB) with a closing notice;
//! `provenance` says where it came from and what changed.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::types::{Provenance, ShapeFlag, ToolResult};

/// The default cap of a shaped result.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 100 * 1024;
/// The cap of a server's instructions.
pub const MAX_INSTRUCTIONS_BYTES: usize = 4 * 1024;

const IMAGE_TYPES: [&str; 5] = [
    "image/jpeg",
    "image/png",
    "image/gif",
    "image/webp",
    "image/jpg",
];
const AUDIO_TYPES: [&str; 8] = [
    "audio/wav",
    "audio/x-wav",
    "audio/wave",
    "audio/mpeg",
    "audio/mp3",
    "audio/ogg",
    "audio/webm",
    "audio/flac",
];

/// Which class a character to remove is in.
pub fn invisible_class(c: char) -> Option<ShapeFlag> {
    match c {
        '\u{061C}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}' => Some(ShapeFlag::Bidi),
        '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' => Some(ShapeFlag::ZeroWidth),
        '\u{E0000}'..='\u{E007F}' => Some(ShapeFlag::TagChars),
        _ => None,
    }
}

/// `text` without invisible characters; the classes removed go in `flags`.
pub fn clean_text(text: &str, flags: &mut BTreeSet<ShapeFlag>) -> String {
    if !text.chars().any(|c| invisible_class(c).is_some()) {
        return text.to_string();
    }
    text.chars()
        .filter(|&c| match invisible_class(c) {
            Some(f) => {
                flags.insert(f);
                false
            }
            None => true,
        })
        .collect()
}

fn clean_value(v: &mut Value, flags: &mut BTreeSet<ShapeFlag>) {
    match v {
        Value::String(s) if s.chars().any(|c| invisible_class(c).is_some()) => {
            *s = clean_text(s, flags);
        }
        Value::Array(items) => items.iter_mut().for_each(|i| clean_value(i, flags)),
        Value::Object(map) => map.values_mut().for_each(|i| clean_value(i, flags)),
        _ => {}
    }
}

fn text_block(text: String) -> Value {
    json!({"type": "text", "text": text})
}

fn mime(block: &Value) -> String {
    block
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// One block, shaped (before the cap).
fn shape_block(block: &Value, flags: &mut BTreeSet<ShapeFlag>) -> Value {
    let text_of = |b: &Value, key: &str| b.get(key).and_then(Value::as_str).map(String::from);
    match block.get("type").and_then(Value::as_str) {
        Some("text") => text_block(clean_text(
            &text_of(block, "text").unwrap_or_default(),
            flags,
        )),
        Some("image") if IMAGE_TYPES.contains(&mime(block).as_str()) => {
            json!({"type": "image", "data": block.get("data").cloned().unwrap_or(Value::Null), "mimeType": mime(block)})
        }
        Some("audio") if AUDIO_TYPES.contains(&mime(block).as_str()) => {
            json!({"type": "audio", "data": block.get("data").cloned().unwrap_or(Value::Null), "mimeType": mime(block)})
        }
        Some(kind @ ("image" | "audio")) => {
            flags.insert(ShapeFlag::MediaDropped);
            text_block(format!("[{kind} of type {:?} removed]", mime(block)))
        }
        Some("resource_link") => {
            let uri = clean_text(&text_of(block, "uri").unwrap_or_default(), flags);
            let name = clean_text(&text_of(block, "name").unwrap_or_default(), flags);
            text_block(format!("[link: {name} <{uri}>]"))
        }
        Some("resource") => {
            let res = block.get("resource").cloned().unwrap_or(Value::Null);
            let uri = clean_text(&text_of(&res, "uri").unwrap_or_default(), flags);
            match text_of(&res, "text") {
                Some(t) => text_block(format!("[resource {uri}]\n{}", clean_text(&t, flags))),
                None => {
                    flags.insert(ShapeFlag::MediaDropped);
                    text_block(format!("[binary resource {uri} removed]"))
                }
            }
        }
        _ => {
            flags.insert(ShapeFlag::UnsupportedContent);
            text_block("[unsupported content removed]".to_string())
        }
    }
}

fn size(v: &Value) -> usize {
    serde_json::to_vec(v).map(|b| b.len()).unwrap_or(usize::MAX)
}

/// Cuts `s` to at most `max` bytes on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Shapes a result for a model: `server` is where it came from, `cap` the
/// most bytes of content (counted as encoded JSON).
pub fn shape_result(result: ToolResult, server: &str, cap: usize) -> ToolResult {
    let mut flags = BTreeSet::new();
    let mut content = Vec::new();
    let mut used = 0usize;
    let mut truncated = false;
    for block in &result.content {
        let shaped = shape_block(block, &mut flags);
        let n = size(&shaped);
        if used + n <= cap {
            used += n;
            content.push(shaped);
            continue;
        }
        // The crossing block: a text block is cut, anything else dropped.
        truncated = true;
        if let Some(text) = shaped.get("text").and_then(Value::as_str) {
            let overhead = size(&text_block(String::new()));
            let room = cap.saturating_sub(used + overhead);
            // JSON escaping can make text longer than its bytes: cut until it fits.
            let mut piece = cut(text, room).to_string();
            while !piece.is_empty() && used + size(&text_block(piece.clone())) > cap {
                let shorter =
                    cut(&piece, piece.len().saturating_sub(piece.len() / 8 + 1)).to_string();
                piece = shorter;
            }
            if !piece.is_empty() {
                content.push(text_block(piece));
            }
        }
        break;
    }
    let mut structured = result.structured_content;
    if let Some(s) = structured.as_mut() {
        clean_value(s, &mut flags);
        if truncated || used + size(s) > cap {
            truncated = true;
            structured = None;
        }
    }
    if truncated {
        flags.insert(ShapeFlag::Truncated);
        content.push(text_block(format!(
            "[mcppol: the result was cut at {cap} bytes; the rest was dropped]"
        )));
    }
    ToolResult {
        content,
        structured_content: structured,
        is_error: result.is_error,
        meta: None,
        extra: result.extra,
        provenance: Some(Provenance {
            server: server.to_string(),
            truncated,
            flags,
        }),
    }
}

/// A server's instructions for a model: invisible characters removed,
/// capped at [`MAX_INSTRUCTIONS_BYTES`], and, unless the server is
/// trusted, prefixed with a line naming it.
pub fn shape_instructions(server: &str, text: &str, trusted: bool) -> String {
    let mut flags = BTreeSet::new();
    let clean = clean_text(text, &mut flags);
    let body = cut(&clean, MAX_INSTRUCTIONS_BYTES);
    if trusted {
        body.to_string()
    } else {
        format!("Instructions from MCP server \"{server}\" (not verified):\n{body}")
    }
}
