//! The narrow internals the fuzz targets (`fuzz/`) check and the public
//! API does not reach: lexical path canonicalization, the RFC 8785 digest
//! of any JSON value, what a compiled policy means with its spans left
//! out, and the Claude Code hook's entry point; and the compile step on
//! its own ([`parse`], [`compile`]), which the load bench times apart from
//! parsing. Compiled only with the `fuzzing` feature (never a default); not
//! API, and hidden from the docs.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::diagnostics::{LoadError, Severity, SourceFile};
use crate::policy::Trusted;
use crate::{LoadOptions, PolicySet};

pub use crate::fingerprint::{digest, is_fingerprint};
pub use crate::paths::{canonical_root, canonicalize, inside, is_within, PathError};

/// MCP's wire format (line framing, JSON-RPC messages), not API elsewhere.
#[cfg(feature = "pipeline")]
pub mod mcp {
    pub use crate::mcp::framing::{FrameError, LineReader};
    pub use crate::mcp::jsonrpc::{Id, Message};
}

/// The Claude Code hook: one event in, what it prints and its status out;
/// and the taint file's reader.
#[cfg(feature = "cli")]
pub mod claude {
    pub use crate::claude::taint::{parse as parse_taint, HEADER as TAINT_HEADER};
    pub use crate::claude::{run_hook, HookConfig, HookOutput};
}

/// A policy file parsed and not compiled yet (opaque: the syntax tree
/// stays inside the crate).
pub struct Parsed {
    file: crate::syntax::File,
    source: Arc<SourceFile>,
}

/// Parses policy text without compiling it: what [`compile`] takes.
pub fn parse(origin: &str, text: &str) -> Result<Parsed, LoadError> {
    let source = SourceFile::new(origin, text);
    let (file, diagnostics) = crate::syntax::parse(&source);
    if diagnostics.iter().any(|d| d.severity == Severity::Error) {
        return Err(LoadError::new(diagnostics));
    }
    Ok(Parsed { file, source })
}

/// Compiles a parsed file, as [`PolicySet::from_text`] does after parsing.
pub fn compile(parsed: &Parsed, options: &LoadOptions) -> Result<PolicySet, LoadError> {
    let (policies, diagnostics) = crate::compile::compile(&parsed.file, &parsed.source, options);
    if diagnostics.iter().any(|d| d.severity == Severity::Error) {
        return Err(LoadError::new(diagnostics));
    }
    Ok(PolicySet {
        policies,
        source: Arc::clone(&parsed.source),
    })
}

/// What the compiled policies of a set mean, as text, with every span and
/// line left out: two texts that compile to the same rules, settings and
/// visibility give the same string (`fmt` must keep it).
pub fn meaning(set: &PolicySet) -> String {
    let mut out = String::new();
    for p in set.iter() {
        let st = &p.settings;
        let trusted = match &st.trusted {
            Trusted::Servers(set) => {
                let mut v: Vec<&str> = set.iter().map(|s| &**s).collect();
                v.sort_unstable();
                format!("{v:?}")
            }
            other => format!("{other:?}"),
        };
        let _ = writeln!(
            out,
            "policy {} {:?} {:?} {} {} {trusted} {:?}",
            p.name, st.default, st.scope, st.pin_tools, st.allow_new_tools, st.roots
        );
        if let Some(v) = &p.visibility {
            let patterns: Vec<&str> = v
                .patterns
                .iter()
                .map(|pat| p.source.text_of(pat.span))
                .collect();
            let _ = writeln!(out, "tools {patterns:?}");
        }
        for r in p.all_rules() {
            let targets: Vec<String> = r
                .targets
                .iter()
                .map(|t| format!("{:?} {}", t.matcher, t.exact))
                .collect();
            let cond = without_spans(&format!("{:?}", r.condition));
            let _ = writeln!(
                out,
                "{} {} {:?} {:?} {cond}",
                r.id,
                r.effect.as_str(),
                r.kind,
                targets
            );
        }
    }
    out
}

/// `text` (a `Debug` rendering) without its `span: Span { start: N, end: N }`
/// fields.
fn without_spans(text: &str) -> String {
    const OPEN: &str = "span: Span { start: ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        match after.find('}') {
            Some(close) => rest = &after[close + 1..],
            None => {
                rest = after;
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_left_out() {
        assert_eq!(
            without_spans("A { span: Span { start: 1, end: 22 }, x: 1 }"),
            "A { , x: 1 }"
        );
        let a = PolicySet::from_text("a", "policy p { deny \"a/b\" when args.x == 1 }").unwrap();
        let b = PolicySet::from_text(
            "b",
            "\n\npolicy p {\n  deny \"a/b\"\n    when args.x == 1\n}\n",
        )
        .unwrap();
        let c = PolicySet::from_text("c", "policy p { deny \"a/b\" when args.x == 2 }").unwrap();
        assert_eq!(meaning(&a), meaning(&b));
        assert_ne!(meaning(&a), meaning(&c));
    }

    #[test]
    fn parse_then_compile_is_a_load() {
        let text = "policy p { deny \"a/b\" when args.x == 1\n allow \"a/*\" }";
        let parsed = parse("a", text).unwrap();
        let set = compile(&parsed, &LoadOptions::default()).unwrap();
        assert_eq!(
            meaning(&set),
            meaning(&PolicySet::from_text("a", text).unwrap())
        );
        assert!(parse("a", "policy p { deny }").is_err());
        let bad = parse("a", "policy p { deny \"a\" ~ /(/ }").unwrap();
        assert!(compile(&bad, &LoadOptions::default()).is_err());
    }
}
