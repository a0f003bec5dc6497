//! Finding comments in policy text: `#` to the end of the line, outside
//! strings and regex literals (a `/` after `~` or `matches` starts one).

use crate::syntax::Span;

/// The tokens the formatter compares before and after formatting.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Token {
    Word(String),
    Str(String),
    Regex(String),
    Punct(char),
}

/// Scans text into comments and tokens.
pub(crate) struct Scan {
    pub comments: Vec<Span>,
    pub tokens: Vec<Token>,
}

fn word_len(bytes: &[u8], pos: usize) -> usize {
    bytes[pos..]
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'-' || **b == b'.')
        .count()
}

/// Scans the text once.
pub(crate) fn scan(text: &str) -> Scan {
    let bytes = text.as_bytes();
    let mut out = Scan {
        comments: Vec::new(),
        tokens: Vec::new(),
    };
    let mut pos = 0;
    let mut regex_may_start = false;
    while pos < bytes.len() {
        let b = bytes[pos];
        match b {
            b'#' => {
                let start = pos;
                while pos < bytes.len() && bytes[pos] != b'\n' {
                    pos += 1;
                }
                out.comments.push(Span::new(start, pos));
                continue;
            }
            b'"' => {
                let start = pos;
                pos += 1;
                while pos < bytes.len() && bytes[pos] != b'"' && bytes[pos] != b'\n' {
                    pos += if bytes[pos] == b'\\' { 2 } else { 1 };
                }
                pos = (pos + 1).min(bytes.len());
                out.tokens
                    .push(Token::Str(text.get(start..pos).unwrap_or_default().into()));
                regex_may_start = false;
                continue;
            }
            b'/' if regex_may_start => {
                let start = pos;
                pos += 1;
                while pos < bytes.len() && bytes[pos] != b'/' && bytes[pos] != b'\n' {
                    pos += if bytes[pos] == b'\\' { 2 } else { 1 };
                }
                pos = (pos + 1).min(bytes.len());
                out.tokens.push(Token::Regex(
                    text.get(start..pos).unwrap_or_default().into(),
                ));
                regex_may_start = false;
                continue;
            }
            _ => {}
        }
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            let len = word_len(bytes, pos).max(1);
            let word = text.get(pos..pos + len).unwrap_or_default();
            regex_may_start = word == "matches";
            out.tokens.push(Token::Word(word.to_string()));
            pos += len;
            continue;
        }
        if !b.is_ascii_whitespace() {
            regex_may_start = b == b'~';
            let c = text[pos..].chars().next().unwrap_or(' ');
            out.tokens.push(Token::Punct(c));
            pos += c.len_utf8();
            continue;
        }
        pos += 1;
    }
    out
}

/// Normalizes the white space of a JSON literal as written: none inside
/// brackets, one space after `,` and `:`; comments inside it are dropped
/// (the formatter keeps them before the item).
pub(crate) fn normalize_literal(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    while pos < bytes.len() {
        match bytes[pos] {
            b'"' => {
                let start = pos;
                pos += 1;
                while pos < bytes.len() && bytes[pos] != b'"' {
                    pos += if bytes[pos] == b'\\' { 2 } else { 1 };
                }
                pos = (pos + 1).min(bytes.len());
                out.push_str(text.get(start..pos).unwrap_or_default());
            }
            b'#' => {
                while pos < bytes.len() && bytes[pos] != b'\n' {
                    pos += 1;
                }
            }
            b',' => {
                out.push_str(", ");
                pos += 1;
            }
            b':' => {
                out.push_str(": ");
                pos += 1;
            }
            b if b.is_ascii_whitespace() => pos += 1,
            _ => {
                let c = text[pos..].chars().next().unwrap_or(' ');
                out.push(c);
                pos += c.len_utf8();
            }
        }
    }
    // A trailing comma in a list or object: `[1, ]` reads as `[1]`.
    out.replace(", ]", "]").replace(", }", "}")
}

/// Text as written with each run of blanks (and comments) made one space;
/// strings are kept as they are.
pub(crate) fn collapse_blanks(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    let mut blank = false;
    while pos < bytes.len() {
        match bytes[pos] {
            b'"' => {
                let start = pos;
                pos += 1;
                while pos < bytes.len() && bytes[pos] != b'"' {
                    pos += if bytes[pos] == b'\\' { 2 } else { 1 };
                }
                pos = (pos + 1).min(bytes.len());
                if blank && !out.is_empty() {
                    out.push(' ');
                }
                blank = false;
                out.push_str(text.get(start..pos).unwrap_or_default());
            }
            b'#' => {
                while pos < bytes.len() && bytes[pos] != b'\n' {
                    pos += 1;
                }
                blank = true;
            }
            b if b.is_ascii_whitespace() => {
                blank = true;
                pos += 1;
            }
            _ => {
                if blank && !out.is_empty() {
                    out.push(' ');
                }
                blank = false;
                let c = text[pos..].chars().next().unwrap_or(' ');
                out.push(c);
                pos += c.len_utf8();
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_found_outside_strings_and_regexes() {
        let text = "deny \"a#b\" ~ /#x/ # one\nallow x when args.p matches /a#/ #two";
        let s = scan(text);
        let found: Vec<&str> = s.comments.iter().map(|c| &text[c.start..c.end]).collect();
        assert_eq!(found, vec!["# one", "#two"]);
    }

    #[test]
    fn blanks_collapse_outside_strings() {
        assert_eq!(
            collapse_blanks("args.p   insde \"a  b\" # c\n x"),
            "args.p insde \"a  b\" x"
        );
    }

    #[test]
    fn literals_are_normalized() {
        assert_eq!(
            normalize_literal("[ \"a , b\",1,\n  {\"k\" :null} , ]"),
            "[\"a , b\", 1, {\"k\": null}]"
        );
    }
}
