//! JSON text with nothing a terminal could draw out of order (`explain`,
//! the approver's input). Only the command line shows it; what a person is
//! shown of a call's arguments is in `arguments.rs`.

use super::is_hidden;

/// A JSON value's text in which every [`is_hidden`] character that JSON
/// lets through raw (bidi controls, zero-width and tag characters, line
/// separators) is written as a `\uXXXX` escape: the same value for a JSON
/// reader, and nothing a terminal or a dialog could draw out of order.
pub fn json_text(value: &serde_json::Value) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    // JSON escapes the control characters itself; what is left hidden is
    // outside ASCII, so only inside strings, where a `\u` escape is valid.
    if !text.chars().any(is_hidden) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_text_escapes_what_json_lets_through() {
        let v = json!({"t\u{202e}": "a\u{200b}\u{e0041}\n"});
        let text = json_text(&v);
        assert!(text.is_ascii(), "{text}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
    }
}
