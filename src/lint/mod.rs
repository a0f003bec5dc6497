//! The checker's warnings: lints that run on a file that parsed and compiled
//! without errors. One lint (or one family of lints) a file; this module
//! holds the registry, the runner and the in-file silencing.
//!
//! A lint never changes what a policy means; it points at rules that do not
//! do what they seem to (a rule that can never decide, a test whose
//! fail-closed side is reversed, a regex that loose matching does not help)
//! and, given the servers' `tools/list` results, at rules that name tools or
//! arguments the servers do not have. Each warning has a stable code
//! `mcppol::lint::NAME`, points at the offending entry and says how to fix
//! it; `# mcppol: allow(NAME)` silences it (see [`silence`]).

mod ask_without_approver;
mod duplicate;
mod folded_regex;
mod inexact_allow;
mod line_break;
pub mod listing;
mod matches_nothing;
mod missed_path;
mod odd_limit;
mod path_test;
mod patterns;
mod relative_root;
#[cfg(feature = "cli")]
pub mod sarif;
mod schema;
mod scheme_server;
mod shadowed;
pub mod silence;
mod tainted;
mod trust_all;
mod unknown_tool;
mod unmatched_tools_entry;
mod untrusted_annotation;
mod unused_let;

use std::collections::HashMap;
use std::sync::Arc;

use crate::diagnostics::{Diagnostic, SourceFile};
use crate::policy::{Policy, Rule};
use crate::syntax::{self, Item, PolicyAst, RuleAst, Span};

pub use listing::{Listing, ListingError};

/// One lint: its name (what `# mcppol: allow(NAME)` takes) and its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lint {
    /// What `# mcppol: allow(NAME)` takes: `shadowed_allow`.
    pub name: &'static str,
    /// The diagnostic code: `mcppol::lint::shadowed_allow`.
    pub code: &'static str,
    /// One line on what it reports (SARIF's `shortDescription`).
    pub summary: &'static str,
}

macro_rules! lints {
    ($($konst:ident = $name:literal : $summary:literal;)*) => {
        $(
            pub const $konst: Lint = Lint {
                name: $name,
                code: concat!("mcppol::lint::", $name),
                summary: $summary,
            };
        )*
        /// Every lint, in the order the docs list them.
        pub const LINTS: &[Lint] = &[$($konst),*];
    };
}

lints! {
    SHADOWED_ALLOW = "shadowed_allow": "an allow rule that a deny or ask rule always overrides";
    SHADOWED_ASK = "shadowed_ask": "an ask rule that a deny rule always overrides";
    DUPLICATE_RULE = "duplicate_rule": "a rule written twice";
    INEXACT_ALLOW = "inexact_allow": "an allow glob, regex or bare name, which never allows a new tool";
    TAINTED_WIDENS = "tainted_widens": "`tainted` where it widens access";
    REVERSED_PATH_TEST = "reversed_path_test": "`inside` in a deny or ask rule, `escapes` in an allow rule";
    FOLDED_REGEX = "folded_regex": "a deny, ask or exclude regex that needs case or punctuation loose matching folds away";
    LINE_BREAK_IN_ALLOW = "line_break_in_allow": "a `matches` regex where a match allows that lets a line break through: a class that matches `\n`, `.` under `s`, `^` or `$` under `m`";
    MATCHES_NOTHING = "matches_nothing": "a target pattern that matches no name";
    RELATIVE_ROOT = "relative_root": "a path root that is not absolute";
    SCHEME_AS_SERVER = "scheme_as_server": "a resource target whose URI scheme is read as the server id";
    TRUST_ALL_ANNOTATIONS = "trust_all_annotations": "`trusted all` together with rules that decide on annotations";
    ASK_WITHOUT_APPROVER = "ask_without_approver": "an `ask` rule on resource reads or prompt gets, which never have an approver: always a deny";
    UNTRUSTED_ANNOTATION = "untrusted_annotation": "an annotation test in an allow rule that is never true for a server that is not trusted";
    UNKNOWN_TOOL = "unknown_tool": "a target that matches no tool of a listed server";
    UNKNOWN_ARGUMENT = "unknown_argument": "an argument selector that no matched tool's inputSchema has";
    ARGUMENT_TYPE = "argument_type": "a test the argument's declared type contradicts";
    PATH_NOT_STRING = "path_not_string": "a path test on an argument that is not a string";
    MISSED_PATH_ARGUMENT = "missed_path_argument": "a deny or ask rule that tests a path argument its tools take under other names";
    UNMATCHED_TOOLS_ENTRY = "unmatched_tools_entry": "a `tools {}` pattern that no tool of its listed server meets: an exclude that hides nothing, an include that shows nothing";
    UNUSED_LET = "unused_let": "a `let` whose name nothing uses";
    ODD_LIMIT = "odd_limit": "a `limit` of 0 calls (a deny rule in disguise) or of more than 1000 calls a second (never binds)";
    UNKNOWN_LINT = "unknown_lint": "`# mcppol: allow(...)` names a lint that does not exist";
    BAD_DIRECTIVE = "bad_directive": "a `# mcppol:` comment that cannot be read";
    UNUSED_ALLOW = "unused_allow": "`# mcppol: allow(...)` names a lint that nothing there raises";
}

/// The lint of that name.
pub fn by_name(name: &str) -> Option<&'static Lint> {
    LINTS.iter().find(|l| l.name == name)
}

/// The lint with that code.
#[cfg(feature = "cli")]
pub fn by_code(code: &str) -> Option<&'static Lint> {
    LINTS.iter().find(|l| l.code == code)
}

/// What the checker knows beyond the file.
#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    /// The servers' tool listings (`--tools`), for the tool-aware lints.
    pub tools: Option<Listing>,
}

/// Lints one file that parsed and compiled without errors: the warnings
/// that are not silenced in the file, in text order.
pub fn lint(
    file: &syntax::File,
    policies: &[Arc<Policy>],
    source: &Arc<SourceFile>,
    options: &LintOptions,
) -> Vec<Diagnostic> {
    let mut directives = silence::Directives::read(file, source);
    let mut out = directives.diagnostics.clone();
    let used = unused_let::used_names(file, &source.text);
    out.extend(unused_let::check_file(file, source, &used));
    for ast in &file.policies {
        let Some(policy) = policies
            .iter()
            .find(|p| p.span == ast.span && p.name == ast.name.node)
        else {
            continue;
        };
        let mut cx = Ctx::new(source, ast, policy, options.tools.as_ref());
        shadowed::check(&mut cx);
        duplicate::check(&mut cx);
        inexact_allow::check(&mut cx);
        tainted::check(&mut cx);
        path_test::check(&mut cx);
        folded_regex::check(&mut cx);
        line_break::check(&mut cx);
        matches_nothing::check(&mut cx);
        relative_root::check(&mut cx);
        scheme_server::check(&mut cx);
        trust_all::check(&mut cx);
        ask_without_approver::check(&mut cx);
        untrusted_annotation::check(&mut cx);
        unused_let::check(&mut cx, &used);
        odd_limit::check(&mut cx);
        if cx.tools.is_some() {
            unknown_tool::check(&mut cx);
            schema::check(&mut cx);
            missed_path::check(&mut cx);
            unmatched_tools_entry::check(&mut cx);
        }
        for (lint, diagnostic) in cx.out {
            if !directives.silences(lint, ast, diagnostic.span) {
                out.push(diagnostic);
            }
        }
    }
    out.extend(directives.unused(source, options.tools.is_some()));
    out.sort_by_key(|d| (d.span.start, d.code));
    out
}

/// One rule seen both as written and as compiled.
pub(crate) struct RuleView<'a> {
    pub ast: &'a RuleAst,
    pub ir: &'a Rule,
}

/// What a lint sees of one policy, and where it reports.
pub(crate) struct Ctx<'a> {
    pub source: &'a Arc<SourceFile>,
    pub ast: &'a PolicyAst,
    pub policy: &'a Policy,
    /// Every rule in file order.
    pub rules: Vec<RuleView<'a>>,
    pub tools: Option<&'a Listing>,
    out: Vec<(&'static Lint, Diagnostic)>,
}

impl<'a> Ctx<'a> {
    fn new(
        source: &'a Arc<SourceFile>,
        ast: &'a PolicyAst,
        policy: &'a Policy,
        tools: Option<&'a Listing>,
    ) -> Self {
        let by_span: HashMap<Span, &Rule> = policy.all_rules().map(|r| (r.span, r)).collect();
        let rules = ast
            .items
            .iter()
            .filter_map(|item| match item {
                Item::Rule(rule) => by_span.get(&rule.span).map(|ir| RuleView { ast: rule, ir }),
                _ => None,
            })
            .collect();
        Ctx {
            source,
            ast,
            policy,
            rules,
            tools,
            out: Vec::new(),
        }
    }

    /// A warning of `lint`, to be finished with a label and help.
    pub fn warning(
        &self,
        lint: &'static Lint,
        span: Span,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic::warning(self.source, lint.code, span, message)
    }

    pub fn emit(&mut self, lint: &'static Lint, mut diagnostic: Diagnostic) {
        // Some grammar spans take the white space after them along.
        let text = self.text(diagnostic.span);
        diagnostic.span.end -= text.len() - text.trim_end().len();
        self.out.push((lint, diagnostic));
    }

    /// The source text of a span.
    pub fn text(&self, span: Span) -> &'a str {
        let text: &'a str = &self.source.text;
        text.get(span.start..span.end).unwrap_or_default()
    }

    /// 1-based line of a byte offset.
    pub fn line(&self, offset: usize) -> usize {
        self.source.line_col(offset).0
    }
}

/// Visits every test of a condition (not the `and`/`or`/`not` around it),
/// with whether it stands under an odd number of `not`s.
pub(crate) fn each_test<'c>(
    cond: &'c syntax::Cond,
    negated: bool,
    f: &mut dyn FnMut(&'c syntax::Cond, bool),
) {
    match cond {
        syntax::Cond::Or(parts, _) | syntax::Cond::And(parts, _) => {
            for part in parts {
                each_test(part, negated, f);
            }
        }
        syntax::Cond::Not(inner, _) => each_test(inner, !negated, f),
        leaf => f(leaf, negated),
    }
}

/// Visits every test of a rule's condition with whether a match there widens
/// access: in an allow rule outside `not`, or in a deny or ask rule under
/// one (`unless` counts as a `not`).
pub(crate) fn each_rule_test<'c>(rule: &'c RuleAst, f: &mut dyn FnMut(&'c syntax::Cond, bool)) {
    let Some(clause) = &rule.condition else {
        return;
    };
    let allow = rule.effect.node == syntax::Effect::Allow;
    each_test(&clause.condition, clause.unless, &mut |cond, negated| {
        f(cond, allow != negated)
    });
}

/// The `unmatched_tools_entry` warnings (not silenced in the file) of one
/// loaded policy against one server's listing: the `tools {}` entries that
/// hide or show none of the tools the server lists. What a pipeline warns
/// of after a server's first listing (the proxy's and the gateway's start),
/// by the same check as `check --tools`.
#[cfg(feature = "pipeline")]
pub(crate) fn unmatched_tools_entries(
    policy: &Policy,
    server: &str,
    tools: &[serde_json::Value],
) -> Vec<Diagnostic> {
    if policy.visibility.is_none() {
        return Vec::new();
    }
    let mut listing = Listing::default();
    if listing
        .add(Some(server), &serde_json::Value::Array(tools.to_vec()))
        .is_err()
    {
        return Vec::new();
    }
    let source = policy.source();
    // The policy was compiled from this text: its spans are the AST's.
    let (file, _) = syntax::parse(source);
    let Some(ast) = file
        .policies
        .iter()
        .find(|a| a.span == policy.span && a.name.node == policy.name())
    else {
        return Vec::new();
    };
    let mut cx = Ctx::new(source, ast, policy, Some(&listing));
    unmatched_tools_entry::check(&mut cx);
    let mut directives = silence::Directives::read(&file, source);
    cx.out
        .into_iter()
        .filter(|(lint, d)| !directives.silences(lint, ast, d.span))
        .map(|(_, d)| d)
        .collect()
}

/// Parses, compiles and (when there is no error) lints one policy text:
/// every diagnostic, in text order. What `mcppol check` does for a file.
pub fn check_text(
    origin: &str,
    text: &str,
    load: &crate::LoadOptions,
    options: &LintOptions,
) -> Vec<Diagnostic> {
    let source = SourceFile::new(origin, text);
    let (file, mut diagnostics) = syntax::parse(&source);
    let (policies, compile_diagnostics) = crate::compile::compile(&file, &source, load);
    diagnostics.extend(compile_diagnostics);
    if !diagnostics
        .iter()
        .any(|d| d.severity == crate::Severity::Error)
    {
        // The checker reads the file as written out, names replaced.
        let (expanded, ..) = syntax::lets::expand(&file, &source);
        diagnostics.extend(lint(&expanded, &policies, &source, options));
    }
    diagnostics.sort_by_key(|d| d.span.start);
    diagnostics
}
