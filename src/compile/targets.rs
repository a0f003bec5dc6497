//! Targets and regexes: patterns split into segments, folded for loose
//! lists, regexes compiled with size limits.

use super::Compiler;
use crate::diagnostics::Diagnostic;
use crate::policy::glob::Glob;
use crate::policy::names::fold;
use crate::policy::{CompiledRegex, IndexedTarget, NameMatcher, RegexError, Target};
use crate::syntax::{Span, TargetAst};

/// Compiled regexes may use this many bytes each; larger ones are refused.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// All the distinct regexes of one file may hold this many bytes together
/// (64 times what one may). Identical regexes are compiled once and count
/// once.
pub const REGEX_BUDGET: usize = 64 * REGEX_SIZE_LIMIT;

impl Compiler<'_> {
    /// Compiles a regex (or shares the one already compiled from the same
    /// text) or reports why it cannot be used.
    pub(super) fn regex(&mut self, source: &str, span: Span) -> Option<CompiledRegex> {
        if let Some(re) = self.regexes.get(source) {
            return Some(re.clone());
        }
        if self.regex_bytes > REGEX_BUDGET {
            // Already reported once; compiling more would only add to it.
            return None;
        }
        match CompiledRegex::new(source, REGEX_SIZE_LIMIT) {
            Ok(re) => {
                self.regex_bytes = self.regex_bytes.saturating_add(re.memory_usage());
                if self.regex_bytes > REGEX_BUDGET {
                    let mib = REGEX_BUDGET >> 20;
                    self.push(
                        Diagnostic::error(
                            self.source,
                            "mcppol::compile::regex_budget",
                            span,
                            format!(
                                "the file's regexes compile to more than {mib} MiB together; this one crosses the limit",
                            ),
                        )
                        .with_label("over the budget")
                        .with_help(
                            "use fewer distinct regexes (identical ones are compiled once) or smaller ones: \
                             `\\w` and `\\d` cover all of Unicode and a counted repetition (`{20}`) multiplies that; \
                             `[a-z0-9_]` or `(?-u:\\w)` is far smaller",
                        ),
                    );
                    return None;
                }
                self.regexes.insert(source.into(), re.clone());
                Some(re)
            }
            Err(RegexError::TooBig(limit)) => {
                self.push(
                    Diagnostic::error(
                        self.source,
                        "mcppol::compile::regex_too_big",
                        span,
                        format!("this regex compiles to more than {limit} bytes"),
                    )
                    .with_label("too big")
                    .with_help("use a simpler regex: large counted repetitions (`{1000}`) multiply its size"),
                );
                None
            }
            Err(RegexError::Invalid(detail)) => {
                let last = detail
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("invalid regex")
                    .trim()
                    .trim_start_matches("error: ")
                    .to_string();
                self.push(
                    Diagnostic::error(
                        self.source,
                        "mcppol::compile::invalid_regex",
                        span,
                        format!("invalid regex: {last}"),
                    )
                    .with_label("here")
                    .with_help("regexes use Rust `regex` syntax; write `\\/` for a slash"),
                );
                None
            }
        }
    }

    /// One target of a rule or of the visibility block. `loose` folds the
    /// segments (deny, ask, exclude).
    pub(super) fn target(&mut self, ast: &TargetAst, loose: bool) -> Option<Target> {
        // A segment is folded for a loose list; most are already folded, and
        // then nothing is copied.
        let glob = |s: &str| -> Glob {
            if loose {
                Glob::new(&fold(s))
            } else {
                Glob::new(s)
            }
        };
        let source_text = &self.source.text;
        let text = source_text
            .get(ast.span().start..ast.span().end)
            .unwrap_or_default()
            .to_string();
        match ast {
            TargetAst::Any(span) => Some(Target {
                text,
                span: *span,
                exact: false,
                matcher: IndexedTarget {
                    server: Glob::Any,
                    name: NameMatcher::Glob(Glob::Any),
                },
            }),
            TargetAst::Pattern(p) => {
                let (server, name, has_server) = match p.node.split_once('/') {
                    Some((s, n)) => (glob(s), glob(n), true),
                    None => (Glob::Any, glob(&p.node), false),
                };
                let exact = has_server && server.is_literal() && name.is_literal();
                Some(Target {
                    text,
                    span: p.span,
                    exact,
                    matcher: IndexedTarget {
                        server,
                        name: NameMatcher::Glob(name),
                    },
                })
            }
            TargetAst::Regex {
                server,
                regex,
                span,
            } => {
                let re = self.regex(&regex.node, regex.span)?;
                Some(Target {
                    text,
                    span: *span,
                    exact: false,
                    matcher: IndexedTarget {
                        server: glob(&server.node),
                        name: NameMatcher::Regex(re),
                    },
                })
            }
        }
    }
}
