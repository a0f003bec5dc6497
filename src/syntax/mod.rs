//! Text to AST: the pest grammar, driven one item at a time so that every
//! syntax error in a file is reported, each with its span.

mod ast;
mod build;
mod errors;
mod hidden;
pub mod keywords;
pub(crate) mod lex;
mod parser;
mod scan;

pub use ast::*;
pub(crate) use hidden::shown_text;
pub use parser::{parse, MAX_FILE_BYTES, MAX_NESTING};

/// The pest parser generated from `grammar/mcppol.pest`.
#[derive(pest_derive::Parser)]
#[grammar = "../grammar/mcppol.pest"]
pub struct Grammar;

/// The parser's two ways through a file side by side, for the tests: the
/// one pass over the whole file that a well-formed file takes, and the
/// item-by-item driver that recovers after an error. Not part of the API.
#[doc(hidden)]
pub mod differential {
    /// The one pass: `None` unless the text is well formed, builds and
    /// holds no hidden character (which the driver refuses before either
    /// way runs).
    pub fn whole(text: &str) -> Option<super::File> {
        let source = crate::diagnostics::SourceFile::new("t.mcppol", text);
        if !super::hidden::check(&source).is_empty() {
            return None;
        }
        super::parser::pest_whole_file(text)
    }

    /// The item-by-item driver alone: `None` if it reports an error.
    pub fn items(text: &str) -> Option<super::File> {
        let source = crate::diagnostics::SourceFile::new("t.mcppol", text);
        let (file, diagnostics) = super::parser::parse_items(&source);
        diagnostics.is_empty().then_some(file)
    }

    /// Whether brackets nest too deep: such a file is refused before the
    /// grammar runs.
    pub fn too_deep(text: &str) -> bool {
        super::scan::too_deep(text, super::MAX_NESTING).is_some()
    }
}
