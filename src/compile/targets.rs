//! Targets and regexes: patterns split into segments, folded for loose
//! lists, regexes compiled with size limits.

use std::borrow::Cow;

use crate::diagnostics::codes;

use super::Compiler;
use crate::diagnostics::Diagnostic;
use crate::policy::glob::Glob;
use crate::policy::names::fold;
use crate::policy::{CompiledRegex, FoldedTarget, IndexedTarget, NameMatcher, RegexError, Target};
use crate::syntax::{Span, TargetAst};

/// Compiled regexes may use this many bytes each; larger ones are refused.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// All the distinct regexes of one file may hold this many bytes together
/// (64 times what one may). Identical regexes are compiled once and count
/// once.
pub const REGEX_BUDGET: usize = 64 * REGEX_SIZE_LIMIT;

impl<'f> Compiler<'_, 'f> {
    /// A condition's regex: compiled now, or deferred to its first use
    /// when the file is loaded with [`super::Regexes::Deferred`].
    pub(super) fn condition_regex(&mut self, source: &str, span: Span) -> Option<CompiledRegex> {
        let Some(deferred) = &mut self.deferred else {
            return self.regex(source, span);
        };
        let re = deferred
            .regexes
            .entry(source.into())
            .or_insert_with(|| CompiledRegex::deferred(source, REGEX_SIZE_LIMIT, &deferred.budget));
        Some(re.clone())
    }

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
                            codes::COMPILE_REGEX_BUDGET,
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
                        codes::COMPILE_REGEX_TOO_BIG,
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
                        codes::COMPILE_INVALID_REGEX,
                        span,
                        format!("invalid regex: {last}"),
                    )
                    .with_label("here")
                    .with_help(invalid_regex_help(&self.source.text, span)),
                );
                None
            }
        }
    }

    /// One distinct segment of the file, folded and made a glob once.
    fn segment(&mut self, text: &'f str) -> Segment {
        if let Some(seg) = self.segments.get(text) {
            return seg.clone();
        }
        let exact = Glob::new(text);
        let (folded, unchanged) = match fold(text) {
            Cow::Borrowed(_) => (exact.clone(), true),
            Cow::Owned(f) => (Glob::new(&f), false),
        };
        let seg = Segment {
            exact,
            folded,
            unchanged,
        };
        self.segments.insert(text, seg.clone());
        seg
    }

    /// One target of a rule or of the visibility block. `loose` matches the
    /// segments folded (deny, ask, exclude); an exact target (allow,
    /// include) comes with its segments folded too, which is how the index
    /// files it.
    pub(super) fn target(
        &mut self,
        ast: &'f TargetAst,
        loose: bool,
    ) -> Option<(Target, Option<FoldedTarget>)> {
        let (server, name, span, has_server) = match ast {
            TargetAst::Any(span) => (Segment::any(), Ok(Segment::any()), *span, false),
            TargetAst::Pattern(p) => match split_server(&p.node) {
                Some((s, n)) => (self.segment(s), Ok(self.segment(n)), p.span, true),
                None => (Segment::any(), Ok(self.segment(&p.node)), p.span, false),
            },
            TargetAst::Regex {
                server,
                regex,
                span,
            } => {
                let re = self.regex(&regex.node, regex.span)?;
                (self.segment(&server.node), Err(re), *span, true)
            }
        };
        let exact = has_server
            && server.exact.is_literal()
            && matches!(&name, Ok(n) if n.exact.is_literal());
        if loose {
            let matcher = IndexedTarget {
                server: server.folded,
                name: match name {
                    Ok(n) => NameMatcher::Glob(n.folded),
                    Err(re) => NameMatcher::Regex(re),
                },
            };
            return Some((Target::new(span, exact, matcher), None));
        }
        let folded = FoldedTarget {
            server: server.folded,
            name: name.as_ref().ok().map(|n| n.folded.clone()),
            server_unchanged: server.unchanged,
            name_unchanged: name.as_ref().is_ok_and(|n| n.unchanged),
        };
        let matcher = IndexedTarget {
            server: server.exact,
            name: match name {
                Ok(n) => NameMatcher::Glob(n.exact),
                Err(re) => NameMatcher::Regex(re),
            },
        };
        Some((Target::new(span, exact, matcher), Some(folded)))
    }
}

/// `server/name` split at its first `/` (a byte loop: these texts are
/// short, and a `memchr` call costs more than it saves).
fn split_server(text: &str) -> Option<(&str, &str)> {
    let at = text.bytes().position(|b| b == b'/')?;
    Some((text.get(..at)?, text.get(at + 1..)?))
}

/// A target segment as written and folded.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    exact: Glob,
    folded: Glob,
    /// Folding leaves the text as it is.
    unchanged: bool,
}

impl Segment {
    /// `*`, and the server segment of a target that names none.
    fn any() -> Segment {
        Segment {
            exact: Glob::Any,
            folded: Glob::Any,
            unchanged: true,
        }
    }
}

/// The help under an invalid regex. Only a regex glued to more text
/// (`/a(b/c)/`) was likely cut short by a slash meant inside it: the slash
/// advice goes there alone.
fn invalid_regex_help(text: &str, span: Span) -> &'static str {
    let cut_at_slash = text
        .get(span.end..)
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| !c.is_whitespace() && !matches!(c, ',' | ')' | ']' | '}' | ';' | '#'));
    if cut_at_slash {
        "a `/` ends a regex: write `\\/` for a slash inside it (regexes use Rust `regex` syntax)"
    } else {
        "regexes use Rust `regex` syntax (https://docs.rs/regex/latest/regex/#syntax)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slash_advice_is_given_only_to_a_regex_cut_short() {
        let text = "deny \"a\" ~ /a(b/c)/, \"b\" ~ /x(/ ";
        let cut = Span::new(11, 16);
        let whole = Span::new(27, 31);
        assert!(invalid_regex_help(text, cut).contains("\\/"));
        assert!(!invalid_regex_help(text, whole).contains("\\/"));
    }
}
