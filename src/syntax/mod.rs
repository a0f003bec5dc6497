//! Text to AST: the pest grammar, driven one item at a time so that every
//! syntax error in a file is reported, each with its span.

mod ast;
mod build;
mod errors;
mod fast;
pub(crate) mod lex;
mod parser;
mod scan;

pub use ast::*;
pub use parser::{parse, MAX_FILE_BYTES, MAX_NESTING};

/// The pest parser generated from `grammar/mcppol.pest`.
#[derive(pest_derive::Parser)]
#[grammar = "../grammar/mcppol.pest"]
pub struct Grammar;

/// The two whole-file parsers side by side, for the differential tests: the
/// hand-written fast path and pest's `file` rule with the AST builder. Not
/// part of the API.
#[doc(hidden)]
pub mod differential {
    /// The fast path: `None` unless the text is well formed and builds.
    pub fn fast(text: &str) -> Option<super::File> {
        super::fast::parse(text)
    }

    /// pest's `file` rule and the builder: `None` unless the text is well
    /// formed and builds.
    pub fn pest(text: &str) -> Option<super::File> {
        super::parser::pest_whole_file(text)
    }

    /// Whether brackets nest too deep: such a file is refused before either
    /// parser runs.
    pub fn too_deep(text: &str) -> bool {
        super::scan::too_deep(text, super::MAX_NESTING).is_some()
    }
}
