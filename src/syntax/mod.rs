//! Text to AST: the pest grammar, driven one item at a time so that every
//! syntax error in a file is reported, each with its span.

mod ast;
mod build;
mod errors;
mod hidden;
pub mod keywords;
pub(crate) mod lets;
pub(crate) mod lex;
mod parser;
mod scan;

pub use ast::*;
pub(crate) use hidden::shown_text;
pub use parser::{parse, MAX_FILE_BYTES};

// The parser's tests: its two ways through a file agree (on fixtures,
// generated policies, token soup and mutations), and the editor grammar
// knows every keyword.
#[cfg(test)]
mod differential_tests;
#[cfg(test)]
mod editor_grammar_tests;

/// The pest parser generated from `grammar/mcppol.pest`.
#[derive(pest_derive::Parser)]
#[grammar = "../grammar/mcppol.pest"]
pub struct Grammar;
