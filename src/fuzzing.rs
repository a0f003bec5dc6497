//! The narrow internals the fuzz targets (`fuzz/`) check and the public
//! API does not reach: lexical path canonicalization, the RFC 8785 digest
//! of any JSON value, what a compiled policy means with its spans left
//! out, the Claude Code hook's entry point, one proxy session over
//! in-memory streams, the `tools/call` params reader's one pass next to
//! its serde_json reference ([`params`]); and the compile step on its own ([`parse`],
//! [`compile`]), which the load bench times apart from parsing. Compiled
//! only with the `fuzzing` feature (never a default); not API, and hidden
//! from the docs.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::diagnostics::{LoadError, Severity, SourceFile};
use crate::policy::Trusted;
use crate::{LoadOptions, PolicySet};

pub use crate::fingerprint::{digest, is_fingerprint};
pub use crate::paths::{
    canonical_cwd, canonical_root, canonicalize, inside, is_within, resolve_on_machine, Links,
    PathError,
};
pub use crate::uri::{normalize as normalize_uri, UriError};

/// A shell command line read into its simple commands: the number of
/// commands and written files, or why it cannot be seen through (the
/// `runs`, `runs only` and `writes inside` tests fail on it).
pub fn read_command_line(line: &str) -> Result<(usize, usize), String> {
    crate::shell::read(line)
        .map(|read| (read.commands.len(), read.writes.len()))
        .map_err(|why| why.to_string())
}

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

/// One `mcppol proxy` session over byte streams the caller holds (no child
/// process): what `mcppol proxy` runs between its stdin and stdout and the
/// server's pipes, with no audit file, no hooks, no approver command (an
/// `ask` goes to the host by elicitation when the host declared it) and the
/// first listing approved.
#[cfg(all(feature = "cli", feature = "pipeline"))]
pub mod proxy {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::io::{AsyncRead, AsyncWrite};

    use crate::pipeline::Baseline;
    use crate::proxy::{serve as serve_session, EndedBy, Session};
    use crate::store::Store;

    /// A session's settings.
    pub struct Options {
        /// The server's id, as the policy's rules name it.
        pub server_id: String,
        /// The policy of the store that governs.
        pub policy_name: String,
        /// The longest JSON-RPC line read from either side.
        pub max_line_bytes: usize,
        /// The most requests in flight each way.
        pub max_pending: usize,
        /// How long the server has to answer a governed request.
        pub call_timeout: Duration,
    }

    /// Which side ended the session first.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Ended {
        /// The host closed its input.
        Host,
        /// The server's output ended or broke the line bound.
        Server,
    }

    /// Runs one session until `host_in` or `server_out` ends, and returns
    /// once every answer due has been written to `host_out` and it is
    /// closed. `server_in` is what the proxy writes the server;
    /// `server_out` what the server writes the proxy.
    pub async fn serve<HR, HW, SW, SR>(
        store: Arc<Store>,
        options: Options,
        host_in: HR,
        host_out: HW,
        server_in: SW,
        server_out: SR,
    ) -> Ended
    where
        HR: AsyncRead + Unpin + Send + 'static,
        HW: AsyncWrite + Unpin + Send + 'static,
        SW: AsyncWrite + Unpin + Send + 'static,
        SR: AsyncRead + Unpin + Send + 'static,
    {
        let session = Session {
            server_id: options.server_id,
            store,
            policy_name: options.policy_name,
            baseline: Baseline::FirstListing,
            audit: None,
            approver: None,
            hooks: Vec::new(),
            max_line_bytes: options.max_line_bytes,
            max_pending: options.max_pending,
            call_timeout: options.call_timeout,
            shape: Some(crate::pipeline::DEFAULT_MAX_RESULT_BYTES),
            protected: crate::protected::Protected::new(),
            state: None,
        };
        serve_session(
            session,
            host_in,
            host_out,
            server_in,
            server_out,
            |by| async move {
                match by {
                    EndedBy::Host => Ended::Host,
                    EndedBy::Server => Ended::Server,
                }
            },
        )
        .await
    }
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
