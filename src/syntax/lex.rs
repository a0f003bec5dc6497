//! The one lexical scan of policy text that the hand-written tools share:
//! the parser's pre-checks (`too_deep`, `skip_blank`), the formatter's
//! comment and token scan, and the checker's `# mcppol:` directives.
//!
//! It knows just enough to tell comments, strings and regex literals apart,
//! so that a `#`, a bracket or a quote inside one of them is not taken for
//! something else:
//!
//! - blanks are the grammar's white space (space, tab, `\r`, `\n`);
//! - a comment runs from `#` to the end of the line, without the line's
//!   `\r`;
//! - a string runs from `"` to the next unescaped `"`;
//! - a `/` starts a regex literal only right after `~` or the word
//!   `matches` (comments in between do not count), and runs to the next
//!   unescaped `/`;
//! - a word is an ASCII letter, digit or `_` followed by letters, digits,
//!   `_` and `-`;
//! - anything else is one character of punctuation (brackets included).
//!
//! A `\` in a string or regex escapes the character after it, whatever it
//! is. A string or regex without its closing quote or slash ends at the end
//! of its line (before the `\r` of a `\r\n`). The scan never fails: every
//! text, valid or not, is read to its end.

use super::Span;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `#` to the end of the line.
    Comment,
    /// A `"`-quoted string, quotes included.
    Str,
    /// A `/`-delimited regex literal, slashes included.
    Regex,
    /// Letters, digits, `_` and `-` (not first).
    Word,
    /// One other character: a bracket, an operator, a `.`, ...
    Punct,
}

/// One token and where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: Kind,
    pub span: Span,
}

/// The tokens of a text, in order.
#[derive(Debug, Clone)]
pub(crate) struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    /// Whether the last token (comments aside) lets a `/` start a regex.
    regex_may_start: bool,
}

/// The grammar's white space.
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_word_start(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl<'a> Lexer<'a> {
    /// Tokens from the start of `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Lexer::at(text, 0)
    }

    /// Tokens from `pos` on, as if a new text started there (a `/` right at
    /// `pos` is punctuation).
    pub(crate) fn at(text: &'a str, pos: usize) -> Self {
        Lexer {
            text,
            pos: pos.min(text.len()),
            regex_may_start: false,
        }
    }

    /// The end of a line-bound token starting at `start`: just past the
    /// first unescaped `close` after it, or the end of its line (before a
    /// `\r\n`, or the end of the text).
    fn quoted_end(&self, start: usize, close: u8) -> usize {
        let bytes = self.text.as_bytes();
        let mut pos = start + 1;
        while pos < bytes.len() {
            match bytes[pos] {
                b'\\' => {
                    // Skip the escaped character whole, so that the end
                    // always falls on a character boundary.
                    pos += 1;
                    if let Some(c) = self.text.get(pos..).and_then(|s| s.chars().next()) {
                        pos += c.len_utf8();
                    }
                }
                b if b == close => return pos + 1,
                b'\n' => return pos,
                b'\r' if bytes.get(pos + 1) == Some(&b'\n') => return pos,
                _ => pos += 1,
            }
        }
        bytes.len()
    }

    /// The end of the comment starting at `start`.
    fn comment_end(&self, start: usize) -> usize {
        let line_end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |i| start + i);
        if line_end > start && self.text.as_bytes()[line_end - 1] == b'\r' {
            line_end - 1
        } else {
            line_end
        }
    }

    fn word_end(&self, start: usize) -> usize {
        let bytes = self.text.as_bytes();
        let mut pos = start + 1;
        while pos < bytes.len() && (is_word_start(bytes[pos]) || bytes[pos] == b'-') {
            pos += 1;
        }
        pos
    }
}

impl Iterator for Lexer<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        let bytes = self.text.as_bytes();
        while self.pos < bytes.len() && is_blank(bytes[self.pos]) {
            self.pos += 1;
        }
        let start = self.pos;
        let b = *bytes.get(start)?;
        let (kind, end) = match b {
            // A comment leaves the regex state as it was.
            b'#' => (Kind::Comment, self.comment_end(start)),
            b'"' => (Kind::Str, self.quoted_end(start, b'"')),
            b'/' if self.regex_may_start => (Kind::Regex, self.quoted_end(start, b'/')),
            b if is_word_start(b) => (Kind::Word, self.word_end(start)),
            _ => {
                // One character; one byte when `start` is inside one (a
                // lexer started part way), so that the scan never panics.
                let len = self
                    .text
                    .get(start..)
                    .and_then(|s| s.chars().next())
                    .map_or(1, char::len_utf8);
                (Kind::Punct, start + len)
            }
        };
        self.regex_may_start = match kind {
            Kind::Comment => self.regex_may_start,
            Kind::Word => &self.text[start..end] == super::keywords::TestWord::Matches.as_str(),
            // Other ASCII white space (a form feed), which the grammar does
            // not allow, is its own token but, as a blank, keeps the state.
            Kind::Punct if b.is_ascii_whitespace() => self.regex_may_start,
            Kind::Punct => b == b'~',
            Kind::Str | Kind::Regex => false,
        };
        self.pos = end;
        Some(Token {
            kind,
            span: Span::new(start, end),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lex(text: &str) -> Vec<(Kind, &str)> {
        Lexer::new(text)
            .map(|t| (t.kind, &text[t.span.start..t.span.end]))
            .collect()
    }

    #[test]
    fn kinds() {
        use Kind::*;
        assert_eq!(
            lex("deny \"a#b\" ~ /#x/ # one\nwhen args.p matches /a#/ #two"),
            vec![
                (Word, "deny"),
                (Str, "\"a#b\""),
                (Punct, "~"),
                (Regex, "/#x/"),
                (Comment, "# one"),
                (Word, "when"),
                (Word, "args"),
                (Punct, "."),
                (Word, "p"),
                (Word, "matches"),
                (Regex, "/a#/"),
                (Comment, "#two"),
            ]
        );
    }

    #[test]
    fn a_slash_is_a_regex_only_after_a_tilde_or_matches() {
        use Kind::*;
        assert_eq!(lex("a / b"), vec![(Word, "a"), (Punct, "/"), (Word, "b")]);
        assert_eq!(
            lex("matches # c\n /x/ /y"),
            vec![
                (Word, "matches"),
                (Comment, "# c"),
                (Regex, "/x/"),
                (Punct, "/"),
                (Word, "y")
            ]
        );
        assert_eq!(lex("\"s\" /"), vec![(Str, "\"s\""), (Punct, "/")]);
    }

    #[test]
    fn words_take_dashes_but_do_not_start_with_one() {
        use Kind::*;
        assert_eq!(
            lex("-x_1-y.z"),
            vec![(Punct, "-"), (Word, "x_1-y"), (Punct, "."), (Word, "z")]
        );
    }

    #[test]
    fn crlf_stays_out_of_comments_and_unterminated_tokens() {
        use Kind::*;
        assert_eq!(
            lex("# c\r\n\"open\r\n~ /re\r\nx"),
            vec![
                (Comment, "# c"),
                (Str, "\"open"),
                (Punct, "~"),
                (Regex, "/re"),
                (Word, "x")
            ]
        );
    }

    #[test]
    fn escapes_and_unterminated_tokens() {
        use Kind::*;
        assert_eq!(
            lex(r#""a\"b" ~ /\/(/ "end\"#),
            vec![
                (Str, r#""a\"b""#),
                (Punct, "~"),
                (Regex, r"/\/(/"),
                (Str, "\"end\\")
            ]
        );
        assert_eq!(lex("\"x\\é\" y"), vec![(Str, "\"x\\é\""), (Word, "y")]);
    }

    #[test]
    fn non_ascii_text_is_one_token_per_character() {
        use Kind::*;
        assert_eq!(
            lex("é # ü\n\"ß\""),
            vec![(Punct, "é"), (Comment, "# ü"), (Str, "\"ß\"")]
        );
    }

    #[test]
    fn starting_part_way() {
        let text = "a # c\n b";
        let first = Lexer::at(text, 1).next().map(|t| t.span);
        assert_eq!(first, Some(Span::new(2, 5)));
        assert_eq!(Lexer::at(text, 99).next(), None);
        // Inside a character: byte by byte to the next one.
        let spans: Vec<Span> = Lexer::at("éx", 1).map(|t| t.span).collect();
        assert_eq!(spans, vec![Span::new(1, 2), Span::new(2, 3)]);
    }

    proptest! {
        #[test]
        fn tokens_tile_the_non_blank_text(text in "[ \t\r\n#\"/\\\\~a-z_().\\-éü\u{c}]{0,40}") {
            let mut pos = 0;
            for t in Lexer::new(&text) {
                prop_assert!(t.span.start >= pos && t.span.end > t.span.start);
                prop_assert!(text[pos..t.span.start].bytes().all(is_blank));
                prop_assert!(text.get(t.span.start..t.span.end).is_some());
                pos = t.span.end;
            }
            prop_assert!(text[pos..].bytes().all(is_blank));
        }

        #[test]
        fn never_panics(text in "\\PC*", from in 0usize..64) {
            let n = Lexer::new(&text).count();
            prop_assert!(n <= text.len());
            // Started anywhere, even inside a character.
            let m = Lexer::at(&text, from).count();
            prop_assert!(m <= text.len());
        }
    }
}
