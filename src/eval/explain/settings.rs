//! Where a policy's settings are written, and the `tools {}` block's
//! patterns, for the steps that no rule decides.

use crate::policy::glob::Glob;
use crate::policy::names::fold;
use crate::policy::Policy;
use crate::syntax::{self, Item, Span};

/// Where the settings are written, for steps that no rule decides.
pub(super) struct SettingSpans {
    /// The `tools {}` block's patterns: include (exact) or exclude (loose),
    /// as written, with a matcher each.
    pub(super) visibility: Vec<VisPattern>,
    pub(super) default: Option<Span>,
    pub(super) pin_tools: Option<Span>,
    pub(super) scope: Option<Span>,
    pub(super) allow_new_tools: Option<Span>,
}

impl SettingSpans {
    pub(super) fn of(policy: &Policy) -> Self {
        let mut spans = SettingSpans {
            visibility: Vec::new(),
            default: None,
            pin_tools: None,
            scope: None,
            allow_new_tools: None,
        };
        let (file, _) = syntax::parse(&policy.source);
        let Some(ast) = file
            .policies
            .iter()
            .find(|p| p.name.node == policy.name && p.name.span == policy.name_span)
        else {
            return spans;
        };
        for item in &ast.items {
            if let Item::Tools(block) = item {
                if spans.visibility.is_empty() {
                    for entry in &block.entries {
                        for target in &entry.targets {
                            if let Some(p) =
                                VisPattern::new(target, entry.include, &policy.source.text)
                            {
                                spans.visibility.push(p);
                            }
                        }
                    }
                }
            }
            if let Item::Setting(s) = item {
                let slot = match s.name.node.as_str() {
                    "default" => &mut spans.default,
                    "pin_tools" => &mut spans.pin_tools,
                    "scope" => &mut spans.scope,
                    "allow_new_tools" => &mut spans.allow_new_tools,
                    _ => continue,
                };
                *slot = Some(s.span);
            }
        }
        spans
    }
}

/// One pattern of the `tools {}` block.
pub(super) struct VisPattern {
    pub(super) include: bool,
    pub(super) text: String,
    pub(super) span: Span,
    pub(super) server: Glob,
    pub(super) name: Option<Glob>,
    pub(super) regex: Option<crate::policy::CompiledRegex>,
}

impl VisPattern {
    fn new(target: &syntax::TargetAst, include: bool, source: &str) -> Option<Self> {
        let span = target.span();
        let text = source.get(span.start..span.end)?.to_string();
        let prep = |s: &str| -> String {
            if include {
                s.to_string()
            } else {
                fold(s).into_owned()
            }
        };
        let (server, name, regex) = match target {
            syntax::TargetAst::Any(_) => (Glob::Any, Some(Glob::Any), None),
            syntax::TargetAst::Pattern(p) => match p.node.split_once('/') {
                Some((s, n)) => (Glob::new(&prep(s)), Some(Glob::new(&prep(n))), None),
                None => (Glob::Any, Some(Glob::new(&prep(&p.node))), None),
            },
            syntax::TargetAst::Regex { server, regex, .. } => (
                Glob::new(&prep(&server.node)),
                None,
                Some(
                    crate::policy::CompiledRegex::new(
                        &regex.node,
                        crate::compile::REGEX_SIZE_LIMIT,
                    )
                    .ok()?,
                ),
            ),
        };
        Some(VisPattern {
            include,
            text,
            span,
            server,
            name,
            regex,
        })
    }

    pub(super) fn matches(&self, server: &str, name: &str) -> bool {
        let (s, n) = if self.include {
            (
                std::borrow::Cow::Borrowed(server),
                std::borrow::Cow::Borrowed(name),
            )
        } else {
            (fold(server), fold(name))
        };
        self.server.matches(&s)
            && match (&self.name, &self.regex) {
                (Some(g), _) => g.matches(&n),
                (None, Some(re)) => re.is_match(name) || re.is_match(&n),
                (None, None) => false,
            }
    }
}
