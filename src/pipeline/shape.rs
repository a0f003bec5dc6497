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
use crate::escape::cut_at as cut;

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

/// A string in `v` at `key` cleaned in place; whether it changed.
#[cfg(feature = "cli")]
fn clean_in_place(v: &mut Value, key: &str, flags: &mut BTreeSet<ShapeFlag>) {
    if let Some(Value::String(s)) = v.get_mut(key) {
        if s.chars().any(|c| invisible_class(c).is_some()) {
            *s = clean_text(s, flags);
        }
    }
}

/// One block of a relayed result shaped in place: text cleaned, media
/// outside the allow-list and unknown blocks replaced by a placeholder;
/// every other key of the block kept as it came.
#[cfg(feature = "cli")]
fn shape_block_in_place(block: &mut Value, flags: &mut BTreeSet<ShapeFlag>) {
    let kind = block.get("type").and_then(Value::as_str).map(String::from);
    match kind.as_deref() {
        Some("text") => clean_in_place(block, "text", flags),
        Some("image") if IMAGE_TYPES.contains(&mime(block).as_str()) => {}
        Some("audio") if AUDIO_TYPES.contains(&mime(block).as_str()) => {}
        Some(kind @ ("image" | "audio")) => {
            flags.insert(ShapeFlag::MediaDropped);
            *block = text_block(format!("[{kind} of type {:?} removed]", mime(block)));
        }
        Some("resource_link") => {
            for key in ["name", "title", "description"] {
                clean_in_place(block, key, flags);
            }
        }
        Some("resource") => {
            let Some(res) = block.get_mut("resource") else {
                flags.insert(ShapeFlag::UnsupportedContent);
                *block = text_block("[unsupported content removed]".to_string());
                return;
            };
            if res.get("text").is_some_and(Value::is_string) {
                clean_in_place(res, "text", flags);
                return;
            }
            let m = mime(res);
            if IMAGE_TYPES.contains(&m.as_str()) || AUDIO_TYPES.contains(&m.as_str()) {
                return;
            }
            let uri = clean_text(
                res.get("uri").and_then(Value::as_str).unwrap_or_default(),
                flags,
            );
            flags.insert(ShapeFlag::MediaDropped);
            *block = text_block(format!("[binary resource {uri} of type {m:?} removed]"));
        }
        _ => {
            flags.insert(ShapeFlag::UnsupportedContent);
            *block = text_block("[unsupported content removed]".to_string());
        }
    }
}

/// What [`shape_relayed`] did to a result.
#[cfg(feature = "cli")]
#[derive(Debug, Default)]
pub(crate) struct Relayed {
    /// Every change made (empty: the result is as it came).
    pub(crate) flags: BTreeSet<ShapeFlag>,
    /// Why the result was withheld, when it was.
    pub(crate) withheld: Option<String>,
}

/// The fixed result that stands for a withheld one: an error whose text
/// says why, `_meta` kept as it came.
#[cfg(feature = "cli")]
fn withhold(result: &mut Value, why: &str) {
    let meta = result.get("_meta").cloned();
    let mut out = serde_json::Map::new();
    out.insert(
        "content".into(),
        json!([text_block(format!(
            "mcppol withheld this result: {why}. The tool did run; do not retry the same call."
        ))]),
    );
    out.insert("isError".into(), Value::Bool(true));
    if let Some(m) = meta {
        out.insert("_meta".into(), m);
    }
    *result = Value::Object(out);
}

/// Shapes a `CallToolResult` relayed to a host for its model, changing
/// only what shaping must: invisible characters are stripped from text
/// (text blocks, embedded resource text, link names, `structuredContent`
/// strings), media outside the allow-list and unknown blocks become text
/// placeholders, and the whole is capped at `cap` bytes (the crossing text
/// block cut, later blocks dropped, a closing text block saying so). Every
/// other key, `_meta` above all, stays as it came, and a result with
/// nothing to shape is left untouched.
///
/// A successful result stays valid against the tool's `outputSchema`
/// (`output_schema` gives it when asked): when stripping changed
/// `structuredContent` and it no longer validates, or it alone is over the
/// cap, the result is withheld (an error result that says why).
#[cfg(feature = "cli")]
pub(crate) fn shape_relayed(
    result: &mut Value,
    cap: usize,
    output_schema: impl FnOnce() -> Option<Value>,
) -> Relayed {
    let mut done = Relayed::default();
    let Some(obj) = result.as_object_mut() else {
        return done;
    };
    let is_error = obj.get("isError") == Some(&Value::Bool(true));
    if let Some(Value::Array(blocks)) = obj.get_mut("content") {
        for block in blocks.iter_mut() {
            shape_block_in_place(block, &mut done.flags);
        }
    }
    let mut structured_changed = false;
    if let Some(s) = obj.get_mut("structuredContent") {
        let mut seen = BTreeSet::new();
        clean_value(s, &mut seen);
        structured_changed = !seen.is_empty();
        done.flags.extend(seen);
    }
    // A schema is needed only when shaping touched `structuredContent`
    // of a successful result, or the cap would drop it.
    let structured_size = obj.get("structuredContent").map(size).unwrap_or(0);
    let content_size = obj.get("content").map(size).unwrap_or(0);
    let over = structured_size + content_size > cap;
    let needs_schema = !is_error
        && obj.contains_key("structuredContent")
        && (structured_changed || structured_size > cap);
    let schema = if needs_schema { output_schema() } else { None };
    if let Some(schema) = &schema {
        if structured_size > cap {
            done.flags.insert(ShapeFlag::Truncated);
            done.withheld = Some(format!(
                "its structuredContent takes {structured_size} bytes, over the cap of {cap}, and the tool's outputSchema needs it"
            ));
        } else if structured_changed {
            let checked = match super::schema::compile(Some(schema)) {
                super::schema::SchemaState::Ready(v) => obj
                    .get("structuredContent")
                    .map_or(Ok(()), |s| super::schema::validate(&v, s)),
                super::schema::SchemaState::Unsafe(why) => {
                    Err(format!("the schema is unsafe: {why}"))
                }
                super::schema::SchemaState::Absent => Ok(()),
            };
            if let Err(why) = checked {
                done.withheld = Some(format!(
                    "invisible characters were stripped from its structuredContent, which then no longer matches the tool's outputSchema ({why})"
                ));
            }
        }
    }
    if let Some(why) = done.withheld.clone() {
        withhold(result, &why);
        return done;
    }
    if !over {
        return done;
    }
    // The cap: `structuredContent` is kept when it fits (a schema may need
    // it), else dropped; the content gets what is left.
    let mut room = cap;
    if structured_size > cap {
        obj.remove("structuredContent");
    } else {
        room -= structured_size;
    }
    done.flags.insert(ShapeFlag::Truncated);
    let notice = text_block(format!(
        "[mcppol: the result was cut at {cap} bytes; the rest was dropped]"
    ));
    room = room.saturating_sub(size(&notice));
    let blocks = match obj.get_mut("content") {
        Some(Value::Array(b)) => std::mem::take(b),
        _ => Vec::new(),
    };
    let mut kept = Vec::new();
    let mut used = 2usize; // the list's brackets
    for block in blocks {
        let n = size(&block) + 1;
        if used + n <= room {
            used += n;
            kept.push(block);
            continue;
        }
        // The crossing block: a text block is cut (its other keys kept),
        // anything else dropped.
        if let Some(text) = block.get("text").and_then(Value::as_str).map(String::from) {
            let mut cut_block = block.clone();
            let mut piece = cut(
                &text,
                room.saturating_sub(used + size(&text_block(String::new()))),
            )
            .to_string();
            loop {
                cut_block["text"] = Value::String(piece.clone());
                if piece.is_empty() || used + size(&cut_block) < room {
                    break;
                }
                piece = cut(&piece, piece.len().saturating_sub(piece.len() / 8 + 1)).to_string();
            }
            if !piece.is_empty() {
                kept.push(cut_block);
            }
        }
        break;
    }
    kept.push(notice);
    obj.insert("content".into(), Value::Array(kept));
    done
}

#[cfg(test)]
mod relay_tests {
    use super::*;

    #[test]
    fn a_clean_result_is_left_as_it_came() {
        let raw = json!({"content": [{"type": "text", "text": "hi", "annotations": {"x": 1}}],
                         "_meta": {"a\u{200b}": 1}, "future": true});
        let mut shaped = raw.clone();
        let done = shape_relayed(&mut shaped, 1000, || None);
        assert!(done.flags.is_empty());
        assert_eq!(shaped.to_string(), raw.to_string());
    }

    #[test]
    fn invisible_characters_media_and_size_are_shaped_and_nothing_else() {
        let mut r = json!({"content": [
            {"type": "text", "text": "a\u{202e}b\u{e0041}", "annotations": {"p": 1}},
            {"type": "image", "mimeType": "image/svg+xml", "data": "x"}],
            "_meta": {"k": "\u{200b}"}});
        let done = shape_relayed(&mut r, 10_000, || None);
        assert_eq!(
            r["content"][0],
            json!({"type": "text", "text": "ab", "annotations": {"p": 1}})
        );
        assert_eq!(r["content"][1]["type"], "text");
        assert_eq!(r["_meta"], json!({"k": "\u{200b}"}));
        assert!(done.flags.contains(&ShapeFlag::MediaDropped));
        let mut big = json!({"content": [{"type": "text", "text": "x".repeat(5000)}, {"type": "text", "text": "y"}]});
        shape_relayed(&mut big, 1000, || None);
        assert!(big.to_string().len() <= 1000, "{}", big.to_string().len());
        assert_eq!(big["content"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn structured_content_that_stripping_breaks_is_withheld() {
        let schema =
            json!({"type": "object", "properties": {"c": {"type": "string", "minLength": 2}}});
        let mut r = json!({"content": [], "structuredContent": {"c": "a\u{200b}"}});
        let done = shape_relayed(&mut r, 10_000, || Some(schema.clone()));
        assert!(done.withheld.is_some());
        assert_eq!(r["isError"], true);
        let mut r = json!({"content": [], "structuredContent": {"c": "ab\u{200b}"}});
        let done = shape_relayed(&mut r, 10_000, || Some(schema.clone()));
        assert!(done.withheld.is_none());
        assert_eq!(r["structuredContent"], json!({"c": "ab"}));
    }
}
