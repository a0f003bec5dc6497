//! Small hand-written scans around the grammar: skipping blanks between
//! items, finding where to resume after an error, and bounding nesting
//! before the recursive parser sees the text.

use super::Span;

/// The first offset at or after `pos` that is not white space or a comment.
pub(super) fn skip_blank(text: &str, mut pos: usize) -> usize {
    let bytes = text.as_bytes();
    while pos < bytes.len() {
        match bytes[pos] {
            b' ' | b'\t' | b'\r' | b'\n' => pos += 1,
            b'#' => {
                while pos < bytes.len() && bytes[pos] != b'\n' {
                    pos += 1;
                }
            }
            _ => break,
        }
    }
    pos
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
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut pos = 0;
    // Whether the last significant token lets a `/` start a regex literal.
    let mut regex_may_start = false;
    while pos < bytes.len() {
        let b = bytes[pos];
        match b {
            b'#' => {
                while pos < bytes.len() && bytes[pos] != b'\n' {
                    pos += 1;
                }
                continue;
            }
            b'"' => {
                pos += 1;
                while pos < bytes.len() && bytes[pos] != b'"' && bytes[pos] != b'\n' {
                    pos += if bytes[pos] == b'\\' { 2 } else { 1 };
                }
                pos += 1;
                regex_may_start = false;
                continue;
            }
            b'/' if regex_may_start => {
                pos += 1;
                while pos < bytes.len() && bytes[pos] != b'/' && bytes[pos] != b'\n' {
                    pos += if bytes[pos] == b'\\' { 2 } else { 1 };
                }
                pos += 1;
                regex_may_start = false;
                continue;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Some(Span::new(pos, pos + 1));
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if b.is_ascii_alphanumeric() || b == b'_' {
            let word = word_at(text, pos);
            regex_may_start = word == "matches";
            pos += word.len().max(1);
            continue;
        }
        if !b.is_ascii_whitespace() {
            regex_may_start = b == b'~';
        }
        pos += 1;
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
