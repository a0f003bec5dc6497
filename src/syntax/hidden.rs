//! What a reviewer sees is what decides: characters that display
//! differently from how the parser reads them are refused before parsing.
//!
//! - **Line separators the parser does not see.** A comment ends at `\n`
//!   only, so a lone carriage return, U+2028, U+2029, NEL (U+0085), a
//!   vertical tab or a form feed inside a comment would hide the rest of the
//!   line from the parser while every viewer shows it on a line of its own.
//!   Outside strings they are errors (`mcppol::parse::line_separator`); a
//!   `\r` right before `\n` stays a line end. Inside a JSON string U+2028,
//!   U+2029 and NEL are plain characters of the string.
//! - **Invisible and bidirectional-control characters** (U+061C,
//!   U+200B-U+200F, U+202A-U+202E, U+2060-U+2064, U+2066-U+2069, U+FEFF,
//!   the tag characters U+E0000-U+E007F, the other default-ignorable and
//!   format (Cf) characters, and control characters) are errors anywhere,
//!   strings, regexes and comments included (`mcppol::parse::hidden_character`):
//!   they can reorder or hide text on screen ("Trojan Source").
//!
//! Because the parser refuses such a file, `fmt` (which formats only what
//! parses) and every diagnostic agree with it.

use std::sync::Arc;

use super::lex::{Kind, Lexer};
use super::Span;
use crate::diagnostics::{codes, Diagnostic, SourceFile};

/// At most this many characters are reported one by one; the rest in one
/// closing diagnostic.
const MAX_REPORTED: usize = 32;

/// What is wrong with a character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Problem {
    /// Shown as a line break, not read as one.
    LineBreak,
    /// Invisible, or changes how the text around it is shown.
    Hidden,
}

/// Where a character stands, for the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Comment,
    Str,
    Regex,
    Elsewhere,
}

impl Place {
    fn phrase(self) -> &'static str {
        match self {
            Place::Comment => "in a comment",
            Place::Str => "in a string",
            Place::Regex => "in a regex",
            Place::Elsewhere => "between tokens",
        }
    }
}

/// Characters that look like a line break where the parser sees none.
fn shown_as_line_break(c: char) -> bool {
    matches!(
        c,
        '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Invisible, format (Cf), default-ignorable and control characters (tab
/// and line feed aside).
fn is_hidden(c: char) -> bool {
    matches!(c,
        '\u{00}'..='\u{08}'
        | '\u{0E}'..='\u{1F}'
        | '\u{7F}'..='\u{84}'
        | '\u{86}'..='\u{9F}'
        | '\u{AD}'
        | '\u{34F}'
        | '\u{61C}'
        | '\u{600}'..='\u{605}'
        | '\u{6DD}'
        | '\u{70F}'
        | '\u{890}'..='\u{891}'
        | '\u{8E2}'
        | '\u{115F}'..='\u{1160}'
        | '\u{17B4}'..='\u{17B5}'
        | '\u{180B}'..='\u{180F}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}'
        | '\u{3164}'
        | '\u{FE00}'..='\u{FE0F}'
        | '\u{FEFF}'
        | '\u{FFA0}'
        | '\u{FFF0}'..='\u{FFFB}'
        | '\u{110BD}'
        | '\u{110CD}'
        | '\u{13430}'..='\u{1343F}'
        | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// The Unicode name of the characters people meet, for the message.
fn name(c: char) -> Option<&'static str> {
    Some(match c {
        '\r' => "CARRIAGE RETURN",
        '\u{0B}' => "LINE TABULATION",
        '\u{0C}' => "FORM FEED",
        '\u{1B}' => "ESCAPE",
        '\u{85}' => "NEXT LINE",
        '\u{AD}' => "SOFT HYPHEN",
        '\u{34F}' => "COMBINING GRAPHEME JOINER",
        '\u{61C}' => "ARABIC LETTER MARK",
        '\u{180E}' => "MONGOLIAN VOWEL SEPARATOR",
        '\u{200B}' => "ZERO WIDTH SPACE",
        '\u{200C}' => "ZERO WIDTH NON-JOINER",
        '\u{200D}' => "ZERO WIDTH JOINER",
        '\u{200E}' => "LEFT-TO-RIGHT MARK",
        '\u{200F}' => "RIGHT-TO-LEFT MARK",
        '\u{2028}' => "LINE SEPARATOR",
        '\u{2029}' => "PARAGRAPH SEPARATOR",
        '\u{202A}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202B}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202C}' => "POP DIRECTIONAL FORMATTING",
        '\u{202D}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202E}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{2060}' => "WORD JOINER",
        '\u{2061}' => "FUNCTION APPLICATION",
        '\u{2062}' => "INVISIBLE TIMES",
        '\u{2063}' => "INVISIBLE SEPARATOR",
        '\u{2064}' => "INVISIBLE PLUS",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        '\u{FEFF}' => "ZERO WIDTH NO-BREAK SPACE (byte-order mark)",
        '\u{E0001}' => "LANGUAGE TAG",
        '\u{E0020}'..='\u{E007F}' => "a tag character",
        '\u{FE00}'..='\u{FE0F}' => "a variation selector",
        '\u{00}'..='\u{1F}' | '\u{7F}'..='\u{9F}' => "a control character",
        _ => return None,
    })
}

/// Whether the text can hold no such character: ASCII only, every `\r`
/// before a `\n`, no control character but tab and line feed. The common
/// case, checked at memory speed.
fn plainly_clean(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().all(|(i, &b)| match b {
        b'\t' | b'\n' => true,
        b'\r' => bytes.get(i + 1) == Some(&b'\n'),
        0x20..=0x7E => true,
        _ => false,
    })
}

/// The text with every hidden, bidi or control character and every line
/// break the parser does not see replaced by a visible character of the
/// same UTF-8 length (`?`, `¿`, `�`, `�?`), for diagnostic snippets: spans
/// stay valid and nothing on screen is reordered. `None` if there is none.
pub(crate) fn shown_text(text: &str) -> Option<String> {
    if plainly_clean(text) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let crlf = c == '\r' && chars.peek() == Some(&'\n');
        if !crlf && (shown_as_line_break(c) || is_hidden(c)) {
            out.push_str(match c.len_utf8() {
                1 => "?",
                2 => "\u{BF}",
                3 => "\u{FFFD}",
                _ => "\u{FFFD}?",
            });
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// Every such character in the text, as diagnostics.
pub(super) fn check(source: &Arc<SourceFile>) -> Vec<Diagnostic> {
    let text = source.text.as_str();
    if plainly_clean(text) {
        return Vec::new();
    }
    let tokens: Vec<(Kind, Span)> = Lexer::new(text)
        .filter(|t| matches!(t.kind, Kind::Comment | Kind::Str | Kind::Regex))
        .map(|t| (t.kind, t.span))
        .collect();
    let place_of = |at: usize| -> Place {
        let i = tokens.partition_point(|(_, span)| span.end <= at);
        match tokens.get(i) {
            Some((kind, span)) if span.start <= at => match kind {
                Kind::Comment => Place::Comment,
                Kind::Str => Place::Str,
                Kind::Regex => Place::Regex,
                Kind::Word | Kind::Punct => Place::Elsewhere,
            },
            _ => Place::Elsewhere,
        }
    };
    let mut out = Vec::new();
    let mut more = 0usize;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|(_, n)| *n);
        let problem = if c == '\r' && next == Some('\n') {
            None
        } else if shown_as_line_break(c) {
            let place = place_of(at);
            // In a string, U+2028, U+2029 and NEL are the string's own
            // characters (a CR, VT or FF there is a syntax error anyway).
            (place != Place::Str || matches!(c, '\r' | '\u{0B}' | '\u{0C}'))
                .then_some(Problem::LineBreak)
        } else if is_hidden(c) {
            Some(Problem::Hidden)
        } else {
            None
        };
        let Some(problem) = problem else { continue };
        if out.len() == MAX_REPORTED {
            more += 1;
            continue;
        }
        out.push(diagnostic(source, at, c, problem, place_of(at)));
    }
    if more > 0 {
        let at = out.last().map_or(0, |d: &Diagnostic| d.span.start);
        out.push(
            Diagnostic::error(
                source,
                codes::PARSE_HIDDEN_CHARACTER,
                Span::new(at, at),
                format!("and {more} more such characters"),
            )
            .with_label("after this one")
            .with_help("remove them all; only the first ones are shown"),
        );
    }
    out
}

fn diagnostic(
    source: &Arc<SourceFile>,
    at: usize,
    c: char,
    problem: Problem,
    place: Place,
) -> Diagnostic {
    let code_point = format!("U+{:04X}", u32::from(c));
    let named = match name(c) {
        Some(n) => format!("{code_point} ({n})"),
        None => code_point.clone(),
    };
    let span = Span::new(at, at + c.len_utf8());
    match problem {
        Problem::LineBreak => Diagnostic::error(
            source,
            codes::PARSE_LINE_SEPARATOR,
            span,
            format!(
                "{named} {}: editors show a new line here, the parser does not",
                place.phrase()
            ),
        )
        .with_label(format!("{code_point} here"))
        .with_help(match place {
            Place::Comment => {
                "end the line with a line feed (LF or CR LF): as it is, the rest of this line is part of the comment, unseen by the parser"
            }
            Place::Str | Place::Regex | Place::Elsewhere => {
                "end lines with a line feed (LF or CR LF) only"
            }
        }),
        Problem::Hidden => {
            let help = if c == '\u{FEFF}' && at == 0 {
                "save the file as UTF-8 without a byte-order mark".to_string()
            } else {
                match place {
                    Place::Str => format!(
                        "delete it; if the string must hold it, write the escape `\\u{:04x}`",
                        u32::from(c)
                    ),
                    Place::Regex => format!(
                        "delete it; if the regex must match it, write `\\x{{{:X}}}`",
                        u32::from(c)
                    ),
                    Place::Comment | Place::Elsewhere => {
                        "delete it (an editor's \"show invisibles\" option reveals it)".to_string()
                    }
                }
            };
            Diagnostic::error(
                source,
                codes::PARSE_HIDDEN_CHARACTER,
                span,
                format!(
                    "invisible or direction-changing character {named} {}",
                    place.phrase()
                ),
            )
            .with_label(format!("{code_point} here"))
            .with_help(help)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes_of(text: &str) -> Vec<&'static str> {
        check(&SourceFile::new("t.mcppol", text))
            .iter()
            .map(|d| d.code)
            .collect()
    }

    #[test]
    fn plain_text_and_crlf_pass() {
        assert!(codes_of("policy p {\r\n  deny \"x\" # c\r\n}\r\n").is_empty());
        assert!(codes_of("policy p { deny \"é/ü\" }").is_empty());
    }

    #[test]
    fn line_breaks_the_parser_does_not_see_are_refused() {
        for sep in ["\r", "\u{2028}", "\u{2029}", "\u{85}", "\u{0B}", "\u{0C}"] {
            let text = format!("policy p {{ # note{sep}deny \"x\"\n}}");
            assert_eq!(codes_of(&text), [codes::PARSE_LINE_SEPARATOR], "{sep:?}");
        }
        // A line separator inside a string is the string's own.
        assert!(codes_of("policy p { deny \"a\u{2028}b\" }").is_empty());
    }

    #[test]
    fn hidden_characters_are_refused_everywhere() {
        for c in [
            '\u{202E}',
            '\u{200B}',
            '\u{2066}',
            '\u{FEFF}',
            '\u{E0041}',
            '\u{AD}',
            '\u{1B}',
        ] {
            for text in [
                format!("policy p {{ deny \"a{c}b\" }}"),
                format!("policy p {{ deny \"s\" ~ /a{c}/ }}"),
                format!("policy p {{ # {c}\n deny \"x\" }}"),
                format!("policy p {{ deny{c} \"x\" }}"),
            ] {
                assert_eq!(codes_of(&text), [codes::PARSE_HIDDEN_CHARACTER], "{text:?}");
            }
        }
    }

    #[test]
    fn the_message_names_the_character_and_its_place() {
        let d = check(&SourceFile::new("t", "policy p { deny \"a\u{202E}b\" }"));
        assert!(
            d[0].message
                .contains("U+202E (RIGHT-TO-LEFT OVERRIDE) in a string"),
            "{}",
            d[0].message
        );
        assert_eq!(d[0].span, Span::new(18, 21));
    }

    #[test]
    fn snippets_show_hidden_characters_visibly_at_the_same_offsets() {
        assert_eq!(shown_text("policy p {}\r\n"), None);
        let text = "a\u{202E}b\u{E0041}c\u{AD}d\re\r\n";
        let shown = shown_text(text).unwrap();
        assert_eq!(shown, "a\u{FFFD}b\u{FFFD}?c\u{BF}d?e\r\n");
        assert_eq!(shown.len(), text.len());
    }

    #[test]
    fn reports_are_bounded() {
        let text = format!("policy p {{ # {} \n}}", "\u{200B}".repeat(1000));
        let d = check(&SourceFile::new("t", &text));
        assert_eq!(d.len(), MAX_REPORTED + 1);
        assert!(d[MAX_REPORTED].message.contains("968 more"));
    }
}
