//! One shell word as the shell would see it after quote removal, or
//! unknown where its value is only known when the command runs.

use brush_parser::word::{TildeExpr, WordPiece, WordPieceWithSource};
use brush_parser::ParserOptions;

use super::{Opaque, Reader};

/// A word of a command after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    /// Its text is fixed: quotes removed, escapes applied.
    Plain(String),
    /// Its text depends on the run and it may become any number of words
    /// (none too): an unquoted variable or substitution, a glob, a brace
    /// expansion.
    Unknown,
    /// One word whose text depends on the run: a variable or substitution
    /// in double quotes (`"$X"`), an ANSI-C quoted string.
    OneUnknown,
}

impl Word {
    /// The text, when fixed.
    pub fn plain(&self) -> Option<&str> {
        match self {
            Word::Plain(s) => Some(s),
            Word::Unknown | Word::OneUnknown => None,
        }
    }
}

/// How much of a word is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Shape {
    /// All of it.
    Known,
    /// That it is one word, not its text.
    One,
    /// Nothing: it may become any number of words.
    Many,
}

/// Whether unquoted text would be expanded by the shell (globs, brace
/// expansion, extended globs): its value is then the file system's.
fn expands(text: &str) -> bool {
    text.contains(['*', '?', '[', '('])
        || (text.contains('{') && text.contains('}') && (text.contains(',') || text.contains("..")))
}

impl Reader {
    /// Reads `raw` (a word as the parser cut it, quotes included) into its
    /// value; command substitutions in it are read as commands.
    pub(super) fn word(&mut self, raw: &str, depth: usize) -> Result<Word, Opaque> {
        let pieces = brush_parser::word::parse(raw, &ParserOptions::default())
            .map_err(|_| Opaque::new("a word the parser cannot read"))?;
        let mut text = String::new();
        Ok(match self.pieces(raw, &pieces, false, &mut text, depth)? {
            Shape::Known => Word::Plain(text),
            Shape::One => Word::OneUnknown,
            Shape::Many => Word::Unknown,
        })
    }

    /// Appends the value of `pieces` to `out`, and says how much of it is
    /// known. Substitutions are read as commands either way.
    pub(super) fn pieces(
        &mut self,
        raw: &str,
        pieces: &[WordPieceWithSource],
        quoted: bool,
        out: &mut String,
        depth: usize,
    ) -> Result<Shape, Opaque> {
        let mut known = Shape::Known;
        // An expansion in double quotes stays one word (but `"$@"` and
        // `"${a[@]}"` become as many words as there are values).
        let expanded = |source: &str| {
            if quoted && !source.contains('@') {
                Shape::One
            } else {
                Shape::Many
            }
        };
        for piece in pieces {
            match &piece.piece {
                WordPiece::Text(s) => {
                    if !quoted && expands(s) {
                        known = known.max(Shape::Many);
                    }
                    out.push_str(s);
                }
                WordPiece::SingleQuotedText(s) => out.push_str(s),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    known = known.max(self.pieces(raw, inner, true, out, depth)?);
                }
                WordPiece::EscapeSequence(s) => {
                    let escaped = s.strip_prefix('\\').unwrap_or(s);
                    // In double quotes a backslash escapes only `$`, `` ` ``,
                    // `"` and `\`; elsewhere it stays.
                    if quoted && !escaped.starts_with(['$', '`', '"', '\\']) {
                        out.push('\\');
                    }
                    // An escaped line break joins the lines.
                    if escaped != "\n" {
                        out.push_str(escaped);
                    }
                }
                WordPiece::TildeExpansion(tilde) => {
                    // Kept as written: a path test refuses a leading `~`,
                    // and no pattern word names a home folder by its value.
                    out.push('~');
                    match tilde {
                        TildeExpr::Home => {}
                        TildeExpr::UserHome(user) => out.push_str(user),
                        _ => known = known.max(Shape::One),
                    }
                }
                WordPiece::CommandSubstitution(inner)
                | WordPiece::BackquotedCommandSubstitution(inner) => {
                    self.nested(inner, depth)?;
                    known = known.max(expanded(""));
                }
                WordPiece::ParameterExpansion(_) | WordPiece::ArithmeticExpression(_) => {
                    // `${X:-$(cmd)}` and `$(( $(cmd) ))` run commands the
                    // parser keeps as text: refused rather than half read.
                    let source = raw.get(piece.start_index..piece.end_index).unwrap_or(raw);
                    if source.contains("$(") || source.contains('`') || source.contains("<(") {
                        return Err(Opaque::new(
                            "a command substitution inside a parameter or arithmetic expansion",
                        ));
                    }
                    known = known.max(expanded(source));
                }
                WordPiece::AnsiCQuotedText(_) => known = known.max(Shape::One),
            }
        }
        Ok(known)
    }
}
