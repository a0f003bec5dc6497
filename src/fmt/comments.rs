//! Finding comments and tokens in policy text (over the shared lexer,
//! [`crate::syntax::lex`]), and normalizing the blanks of text as written.

use crate::syntax::lex::{Kind, Lexer};
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

/// Scans the text once. The formatter's words are coarser than the
/// lexer's: a run of words, `-` and `.` written without blanks (`args.p`,
/// `-1`, `1.5`) is one word, and a lone `-` is a word too.
pub(crate) fn scan(text: &str) -> Scan {
    let mut out = Scan {
        comments: Vec::new(),
        tokens: Vec::new(),
    };
    let slice = |span: Span| text.get(span.start..span.end).unwrap_or_default();
    let mut word: Option<Span> = None;
    for t in Lexer::new(text) {
        let dash_or_dot = t.kind == Kind::Punct && matches!(slice(t.span), "-" | ".");
        if let Some(w) = word.as_mut() {
            if (t.kind == Kind::Word || dash_or_dot) && w.end == t.span.start {
                w.end = t.span.end;
                continue;
            }
        }
        if let Some(w) = word.take() {
            out.tokens.push(Token::Word(slice(w).to_string()));
        }
        match t.kind {
            Kind::Comment => out.comments.push(t.span),
            Kind::Str => out.tokens.push(Token::Str(slice(t.span).into())),
            Kind::Regex => out.tokens.push(Token::Regex(slice(t.span).into())),
            Kind::Word => word = Some(t.span),
            Kind::Punct if slice(t.span) == "-" => word = Some(t.span),
            // A form feed is a blank here, as in the grammar's neighbours.
            Kind::Punct if slice(t.span).bytes().all(|b| b.is_ascii_whitespace()) => {}
            Kind::Punct => {
                let c = slice(t.span).chars().next().unwrap_or(' ');
                out.tokens.push(Token::Punct(c));
            }
        }
    }
    if let Some(w) = word {
        out.tokens.push(Token::Word(slice(w).to_string()));
    }
    out
}

/// The tokens of text that parsed, bar comments and the form feeds the
/// grammar does not take for blanks, with whether blanks or a comment come
/// before each.
fn spaced_tokens(text: &str) -> impl Iterator<Item = (bool, &str)> {
    let mut prev_end = 0;
    let mut blank_since = false;
    Lexer::new(text).filter_map(move |t| {
        let slice = text.get(t.span.start..t.span.end).unwrap_or_default();
        let gap = t.span.start > prev_end;
        prev_end = t.span.end;
        let blank = t.kind == Kind::Comment
            || (t.kind == Kind::Punct && slice.bytes().all(|b| b.is_ascii_whitespace()));
        if blank {
            blank_since = true;
            return None;
        }
        let spaced = gap || blank_since;
        blank_since = false;
        Some((spaced, slice))
    })
}

/// Normalizes the white space of a JSON literal as written: none inside
/// brackets, one space after `,` and `:`; comments inside it are dropped
/// (the formatter keeps them before the item).
pub(crate) fn normalize_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (_, token) in spaced_tokens(text) {
        match token {
            "," => out.push_str(", "),
            ":" => out.push_str(": "),
            _ => out.push_str(token),
        }
    }
    // A trailing comma in a list or object: `[1, ]` reads as `[1]`.
    out.replace(", ]", "]").replace(", }", "}")
}

/// Text as written with each run of blanks (and comments) made one space;
/// strings are kept as they are.
pub(crate) fn collapse_blanks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (spaced, token) in spaced_tokens(text) {
        if spaced && !out.is_empty() {
            out.push(' ');
        }
        out.push_str(token);
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
