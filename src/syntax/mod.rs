//! Text to AST: the pest grammar, driven one item at a time so that every
//! syntax error in a file is reported, each with its span.

mod ast;
mod build;
mod errors;
pub(crate) mod lex;
mod parser;
mod scan;

pub use ast::*;
pub use parser::{parse, MAX_FILE_BYTES, MAX_NESTING};

/// The pest parser generated from `grammar/mcppol.pest`.
#[derive(pest_derive::Parser)]
#[grammar = "../grammar/mcppol.pest"]
pub struct Grammar;
