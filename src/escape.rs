//! Escaping text that a caller controls before it is printed for people:
//! a tool name, an argument or a URI must not be able to start a new line,
//! move the cursor, hide text or reorder it, and so forge output such as a
//! `decision: allow` line of `mcppol explain`.

use std::borrow::Cow;

/// Whether `c` is shown escaped: control characters (C0, DEL, C1), line and
/// paragraph separators, bidirectional controls, and characters that are
/// invisible or change how their neighbours are drawn.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// `text` with every [`is_hidden`] character written as an escape: `\n`,
/// `\r`, `\t`, else `\u{XXXX}`. Borrowed when there is nothing to escape.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_hidden(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `s` cut to at most `max` bytes on a character boundary: what a person
/// is shown of an argument, and what a model is given of a result.
#[cfg(feature = "pipeline")]
pub(crate) fn cut_at(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(all(feature = "cli", feature = "pipeline"))]
mod arguments;
#[cfg(feature = "cli")]
mod shown;
#[cfg(all(feature = "cli", feature = "pipeline"))]
pub use arguments::show_arguments;
#[cfg(feature = "cli")]
pub use shown::json_text;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(escape("github/get_user é 日本"), Cow::Borrowed(_)));
    }

    #[test]
    fn controls_bidi_and_invisible_characters_are_escaped() {
        assert_eq!(
            escape("a\nb\x1b[8mc\u{202e}d\u{200b}e\u{2028}f\u{85}"),
            "a\\nb\\u{1b}[8mc\\u{202e}d\\u{200b}e\\u{2028}f\\u{85}"
        );
        assert_eq!(escape("\t\r\u{7f}\u{feff}"), "\\t\\r\\u{7f}\\u{feff}");
    }
}
