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
    /// Its text depends on the run: a variable, a substitution, a glob, a
    /// brace expansion, an ANSI-C quoted string.
    Unknown,
}

impl Word {
    /// The text, when fixed.
    pub fn plain(&self) -> Option<&str> {
        match self {
            Word::Plain(s) => Some(s),
            Word::Unknown => None,
        }
    }
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
        let known = self.pieces(&pieces, false, &mut text, depth)?;
        Ok(if known {
            Word::Plain(text)
        } else {
            Word::Unknown
        })
    }

    /// Appends the value of `pieces` to `out`; false when some piece's
    /// value is not fixed. Substitutions are read as commands either way.
    pub(super) fn pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        quoted: bool,
        out: &mut String,
        depth: usize,
    ) -> Result<bool, Opaque> {
        let mut known = true;
        for piece in pieces {
            match &piece.piece {
                WordPiece::Text(s) => {
                    if !quoted && expands(s) {
                        known = false;
                    }
                    out.push_str(s);
                }
                WordPiece::SingleQuotedText(s) => out.push_str(s),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    known &= self.pieces(inner, true, out, depth)?;
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
                        _ => known = false,
                    }
                }
                WordPiece::CommandSubstitution(inner) => {
                    self.nested(inner, depth)?;
                    known = false;
                }
                WordPiece::BackquotedCommandSubstitution(inner) => {
                    self.nested(inner, depth)?;
                    known = false;
                }
                WordPiece::ParameterExpansion(_) | WordPiece::ArithmeticExpression(_) => {
                    // `${X:-$(cmd)}` and `$(( $(cmd) ))` run commands the
                    // parser keeps as text: refused rather than half read.
                    let source = &piece_source(piece);
                    if source.contains("$(") || source.contains('`') || source.contains("<(") {
                        return Err(Opaque::new(
                            "a command substitution inside a parameter or arithmetic expansion",
                        ));
                    }
                    known = false;
                }
                WordPiece::AnsiCQuotedText(_) => known = false,
            }
        }
        Ok(known)
    }
}

/// A piece's text as the parser kept it, for the checks that need it.
fn piece_source(piece: &WordPieceWithSource) -> String {
    match &piece.piece {
        WordPiece::ParameterExpansion(expr) => format!("{expr:?}"),
        WordPiece::ArithmeticExpression(expr) => expr.value.clone(),
        _ => String::new(),
    }
}
