//! Small scans around the grammar: skipping blanks between items, finding
//! where to resume after an error, and bounding nesting before the
//! recursive parser sees the text (the first and last over [`super::lex`]).

use super::lex::{Kind, Lexer};
use super::Span;

/// The first offset at or after `pos` that is not white space or a comment.
pub(super) fn skip_blank(text: &str, pos: usize) -> usize {
    Lexer::at(text, pos)
        .find(|t| t.kind != Kind::Comment)
        .map_or(text.len().max(pos), |t| t.span.start)
}

/// The word (letters, digits, `_`, `-`) that starts at `pos`, if any.
pub(super) fn word_at(text: &str, pos: usize) -> &str {
    let rest = &text[pos..];
    let len = rest
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_alphanumeric() || *c == '_' || (*i > 0 && *c == '-')))
        .map_or(rest.len(), |(i, _)| i);
    &rest[..len]
}

/// The text to show as "found": the word or the single character at `pos`.
pub(super) fn token_at(text: &str, pos: usize) -> Option<&str> {
    if pos >= text.len() {
        return None;
    }
    let word = word_at(text, pos);
    if !word.is_empty() {
        return Some(word);
    }
    let c = text[pos..].chars().next()?;
    Some(&text[pos..pos + c.len_utf8()])
}

/// Where to resume after a syntax error at `from`: the start of the next line
/// whose first word satisfies `resume` (or the end of the text).
pub(super) fn next_line_start(text: &str, from: usize, resume: impl Fn(&str) -> bool) -> usize {
    let mut pos = from.min(text.len());
    while pos < text.len() {
        let Some(nl) = text[pos..].find('\n') else {
            return text.len();
        };
        pos += nl + 1;
        let start = {
            let mut p = pos;
            while p < text.len() && matches!(text.as_bytes()[p], b' ' | b'\t' | b'\r') {
                p += 1;
            }
            p
        };
        if start >= text.len() {
            return text.len();
        }
        let word = if text.as_bytes()[start] == b'}' {
            "}"
        } else {
            word_at(text, start)
        };
        if resume(word) {
            return start;
        }
    }
    text.len()
}

/// Finds the first place where brackets nest deeper than `max`, so that deeply
/// nested input gets a clear error instead of exhausting the parser's stack.
///
/// Strings, comments and regex literals (a `/` after `~` or `matches`) are
/// skipped, so brackets inside them do not count.
pub(super) fn too_deep(text: &str, max: usize) -> Option<Span> {
    let mut depth = 0usize;
    for t in Lexer::new(text) {
        if t.kind != Kind::Punct {
            continue;
        }
        match text.as_bytes()[t.span.start] {
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Some(t.span);
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanks_and_comments_are_skipped() {
        assert_eq!(skip_blank("  # hi\n  x", 0), 9);
        assert_eq!(skip_blank("", 0), 0);
    }

    #[test]
    fn resumes_at_a_keyword_line() {
        let text = "deny \"a\" when (\n  args.x ==\n  allow \"b\"\n";
        let at = next_line_start(text, 5, |w| w == "allow");
        assert_eq!(&text[at..at + 5], "allow");
    }

    #[test]
    fn nesting_ignores_brackets_in_strings_and_regexes() {
        let deep = format!("{}x{}", "(".repeat(70), ")".repeat(70));
        assert!(too_deep(&deep, 64).is_some());
        let fine = "deny \"((((\" ~ /((((((/ when args.x matches /\\(((/";
        assert_eq!(too_deep(fine, 2), None);
    }
}
