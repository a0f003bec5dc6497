//! AST to compiled policy. Every semantic error of a file is reported, not
//! just the first; a file with any error yields no policy.

mod conditions;
mod limits;
mod settings;
mod targets;
mod values;

use crate::diagnostics::codes;
use std::collections::HashMap;
use std::sync::Arc;

use smallvec::SmallVec;
use smol_str::SmolStr;

use crate::diagnostics::{Diagnostic, LoadError, Severity, SourceFile};
use crate::model::HostPredicates;
use crate::policy::compiled_regex::DeferredBudget;
use crate::policy::{
    BuildMap, CompiledRegex, Cond, FoldedTarget, IndexBuilder, List, Policy, PolicySet, Rule,
    RuleList, SettingSpans, VisPattern, Visibility,
};
use crate::syntax::{self, Effect, Item, PolicyAst, RuleAst, SettingAst, Span, TargetKind};

pub use targets::{REGEX_BUDGET, REGEX_SIZE_LIMIT};

use conditions::Polarity;

/// How a file is loaded.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The host's predicates. When given, `host.NAME` must name one of them
    /// (else a load error); when not, `host.NAME` is accepted and fails
    /// closed when evaluated.
    pub host: Option<HostPredicates>,
}

/// Parses and compiles one file.
pub fn load(source: Arc<SourceFile>, options: &LoadOptions) -> Result<PolicySet, LoadError> {
    load_with(source, options, Regexes::Now)
}

/// When a file's condition regexes are compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
// Only the hooks (feature `cli`) defer them.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) enum Regexes {
    /// All of them while loading, within their limits and the file's
    /// budget: an error if one does not fit.
    Now,
    /// Each the first time a request reaches it (still within its limit
    /// and the file's budget, else its test is unknown and fails closed):
    /// only for a text already loaded once with [`Regexes::Now`], such as
    /// a hook's checked policy. Target regexes are compiled now either way.
    Deferred,
}

/// Parses and compiles one file, its condition regexes compiled as
/// `regexes` says.
pub(crate) fn load_with(
    source: Arc<SourceFile>,
    options: &LoadOptions,
    regexes: Regexes,
) -> Result<PolicySet, LoadError> {
    let (file, mut diagnostics) = syntax::parse(&source);
    let (policies, compile_diagnostics) = compile_with(&file, &source, options, regexes);
    diagnostics.extend(compile_diagnostics);
    if diagnostics.iter().any(|d| d.severity == Severity::Error) {
        diagnostics.sort_by_key(|d| d.span.start);
        return Err(LoadError::new(diagnostics));
    }
    Ok(PolicySet { policies, source })
}

/// Compiles a parsed file: its policies and the errors found.
pub fn compile(
    file: &syntax::File,
    source: &Arc<SourceFile>,
    options: &LoadOptions,
) -> (Vec<Arc<Policy>>, Vec<Diagnostic>) {
    compile_with(file, source, options, Regexes::Now)
}

fn compile_with(
    file: &syntax::File,
    source: &Arc<SourceFile>,
    options: &LoadOptions,
    regexes: Regexes,
) -> (Vec<Arc<Policy>>, Vec<Diagnostic>) {
    let mut compiler = Compiler {
        source,
        options,
        diagnostics: Vec::new(),
        regexes: HashMap::new(),
        regex_bytes: 0,
        deferred: match regexes {
            Regexes::Now => None,
            Regexes::Deferred => Some(Deferred {
                budget: DeferredBudget::new(REGEX_BUDGET),
                regexes: HashMap::new(),
            }),
        },
        segments: BuildMap::default(),
        name_values: Vec::new(),
    };
    let mut policies: Vec<Arc<Policy>> = Vec::new();
    // The file as written out: every `let` name replaced by its value.
    let (expanded, name_errors, name_values) = syntax::lets::expand(file, source);
    compiler.name_values = name_values;
    if !name_errors.is_empty() {
        compiler.diagnostics.extend(name_errors);
        return (policies, compiler.diagnostics);
    }
    let file = &expanded;
    if let Some(span) = rule_past_the_limit(file) {
        compiler.push(
            Diagnostic::error(
                source,
                codes::COMPILE_TOO_MANY_RULES,
                span,
                format!(
                    "the file holds more than {} rules, the most a policy file may",
                    crate::limits::MAX_RULES
                ),
            )
            .with_label("one rule too many")
            .with_help("split the policies over several files, or join rules that share a target"),
        );
        return (policies, compiler.diagnostics);
    }
    for ast in &file.policies {
        if let Some(first) = policies.iter().find(|p| p.name == ast.name.node) {
            let (line, _) = source.line_col(first.span.start);
            compiler.push(
                Diagnostic::error(
                    source,
                    codes::COMPILE_DUPLICATE_POLICY,
                    ast.name.span,
                    format!("policy `{}` is defined twice in this file", ast.name.node),
                )
                .with_label("defined again here")
                .with_help(format!("rename one: the first is on line {line}")),
            );
            continue;
        }
        policies.push(Arc::new(compiler.policy(ast)));
    }
    (policies, compiler.diagnostics)
}

/// The span of the first rule past [`crate::limits::MAX_RULES`], if the
/// file has one: such a file is not compiled at all.
fn rule_past_the_limit(file: &syntax::File) -> Option<Span> {
    file.policies
        .iter()
        .flat_map(|p| p.items.iter())
        .filter_map(|i| match i {
            Item::Rule(r) => Some(r.span),
            Item::Limit(l) => Some(l.span),
            _ => None,
        })
        .nth(crate::limits::MAX_RULES)
}

/// A file's deferred condition regexes: each distinct text made once,
/// all sharing the file's budget.
struct Deferred {
    budget: Arc<DeferredBudget>,
    regexes: HashMap<Box<str>, CompiledRegex>,
}

pub(crate) struct Compiler<'a, 'f> {
    source: &'a Arc<SourceFile>,
    options: &'a LoadOptions,
    diagnostics: Vec<Diagnostic>,
    /// The file's regexes by source text: each distinct one compiled once.
    regexes: HashMap<Box<str>, CompiledRegex>,
    /// Heap bytes the distinct regexes hold together.
    regex_bytes: usize,
    /// The condition regexes compiled on first use ([`Regexes::Deferred`]).
    deferred: Option<Deferred>,
    /// The file's target segments (`github`, `get_*`) by their text in the
    /// syntax tree: each distinct one is folded and made a glob once, and
    /// every target that writes it shares that glob.
    segments: BuildMap<&'f str, targets::Segment>,
    /// Where `let` names stand and their values, for `explain`.
    name_values: Vec<syntax::lets::NameValue>,
}

impl<'f> Compiler<'_, 'f> {
    fn push(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }

    fn text(&self, span: Span) -> &str {
        self.source
            .text
            .get(span.start..span.end)
            .unwrap_or_default()
    }

    /// The 1-based line of a span's start.
    fn line_of(&self, span: Span) -> u32 {
        u32::try_from(self.source.line_of(span.start)).unwrap_or(u32::MAX)
    }

    fn policy(&mut self, ast: &'f PolicyAst) -> Policy {
        let settings_ast: Vec<_> = ast
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Setting(s) => Some(s),
                _ => None,
            })
            .collect();
        let settings = self.settings(&settings_ast);

        let mut visibility: Option<Visibility> = None;
        let mut lists: [RuleList; 3] = Default::default();
        let mut index: [IndexBuilder; 3] = Default::default();
        // Sized once: the rules of each list, the exact (allow) targets of
        // each kind, which the index keeps as written.
        let (mut rules, mut exact) = ([0usize; 3], [0usize; 3]);
        for item in &ast.items {
            if let Item::Rule(r) = item {
                rules[r.effect.node.index()] += 1;
                if r.effect.node == Effect::Allow {
                    exact[r.kind.index()] += r.targets.len();
                }
            }
        }
        for (list, n) in lists.iter_mut().zip(rules) {
            list.rules.reserve_exact(n);
        }
        for (builder, n) in index.iter_mut().zip(exact) {
            builder.reserve_exact_targets(n);
        }
        let mut named: HashMap<&str, Span> = HashMap::new();
        let mut limits = Vec::new();
        for item in &ast.items {
            match item {
                // Names are replaced by their values before compiling.
                Item::Let(_) => {}
                Item::Tools(block) => {
                    if let Some(first) = &visibility {
                        let (line, _) = self.source.line_col(first.span.start);
                        self.push(
                            Diagnostic::error(
                                self.source,
                                codes::COMPILE_DUPLICATE_TOOLS_BLOCK,
                                block.span,
                                "a policy has one `tools {}` block",
                            )
                            .with_label("second block")
                            .with_help(format!("merge it into the block on line {line}")),
                        );
                        continue;
                    }
                    visibility = Some(self.visibility(block));
                }
                Item::Rule(rule) => {
                    if let Some(id) = &rule.id {
                        self.unique_id(&mut named, id);
                    }
                    self.kind_in_scope(rule, &settings);
                    let list = &mut lists[rule.effect.node.index()];
                    let number = list.rules.len();
                    if let Some(compiled) = self.rule(rule, number, &mut index[rule.kind.index()]) {
                        lists[rule.effect.node.index()].rules.push(compiled);
                    } else {
                        // Keep numbering stable: a placeholder would be wrong
                        // to decide with, but the file does not load anyway.
                        lists[rule.effect.node.index()]
                            .rules
                            .push(placeholder(rule, number));
                    }
                }
                Item::Limit(limit) => {
                    if let Some(id) = &limit.id {
                        self.unique_id(&mut named, id);
                    }
                    let number = limits.len();
                    if let Some(compiled) = self.limit(limit, number) {
                        limits.push(compiled);
                    }
                }
                Item::Setting(_) => {}
            }
        }
        Policy {
            name: ast.name.node.clone(),
            shared_name: SmolStr::new(ast.name.node.as_str()),
            trusted: crate::policy::TrustedIds::of(&settings.trusted),
            settings,
            visibility,
            lists,
            index: index.map(IndexBuilder::build),
            limits,
            source: Arc::clone(self.source),
            span: ast.span,
            name_span: ast.name.span,
            setting_spans: setting_spans(&settings_ast),
        }
    }

    /// Reports an id a rule or budget of the policy already has.
    fn unique_id(&mut self, named: &mut HashMap<&'f str, Span>, id: &'f syntax::Spanned<String>) {
        if let Some(first) = named.get(id.node.as_str()) {
            let (line, _) = self.source.line_col(first.start);
            self.push(
                Diagnostic::error(
                    self.source,
                    codes::COMPILE_DUPLICATE_RULE_ID,
                    id.span,
                    format!("rule id `{}` is used twice", id.node),
                )
                .with_label("used again here")
                .with_help(format!(
                    "rule ids are unique within a policy; the first is on line {line}"
                )),
            );
        } else {
            named.insert(id.node.as_str(), id.span);
        }
    }

    fn kind_in_scope(&mut self, rule: &RuleAst, settings: &crate::policy::Settings) {
        let (in_scope, word) = match rule.kind {
            TargetKind::Tool => return,
            TargetKind::Resource => (settings.scope.resources, "resources"),
            TargetKind::Prompt => (settings.scope.prompts, "prompts"),
        };
        if !in_scope {
            let span = rule.kind_span.unwrap_or(rule.span);
            self.push(
                Diagnostic::error(
                    self.source,
                    codes::COMPILE_KIND_OUT_OF_SCOPE,
                    span,
                    format!("a {} rule in a policy whose scope lacks `{word}`", rule.kind.as_str()),
                )
                .with_label("never applies")
                .with_help(format!(
                    "add `scope tools, {word}` to the policy, or remove the rule: out of scope, every {} is allowed",
                    rule.kind.as_str()
                )),
            );
        }
    }

    /// Compiles rule `number` of its list and files its targets in the
    /// index of its kind (`index`), all of them or, if any part of the rule
    /// does not compile, none.
    fn rule(&mut self, ast: &'f RuleAst, number: usize, index: &mut IndexBuilder) -> Option<Rule> {
        let effect = ast.effect.node;
        let loose = effect != Effect::Allow;
        // Every target is compiled, so that each error is reported.
        let mut targets = Vec::with_capacity(ast.targets.len());
        let mut folded: SmallVec<[Option<FoldedTarget>; 4]> = SmallVec::new();
        let mut failed = false;
        for t in &ast.targets {
            match self.target(t, loose) {
                Some((target, f)) => {
                    targets.push(target);
                    folded.push(f);
                }
                None => failed = true,
            }
        }
        let condition = ast.condition.as_ref().map(|clause| {
            let at = Polarity {
                effect,
                negated: clause.unless,
            };
            let compiled = self.condition(&clause.condition, at);
            if clause.unless {
                compiled.map(|c| Cond::Not(Box::new(c)))
            } else {
                compiled
            }
        });
        let condition = match condition {
            None => None,
            Some(c) => Some(c?),
        };
        if failed {
            return None;
        }
        let list = List::from(effect);
        let at = u32::try_from(number).unwrap_or(u32::MAX);
        for (target, folded) in targets.iter().zip(&folded) {
            match folded {
                Some(f) => index.insert_exact(list, at, &target.matcher, f),
                None => index.insert_loose(list, at, &target.matcher),
            }
        }
        let id = match &ast.id {
            Some(id) => SmolStr::new(id.node.as_str()),
            None => default_id(effect, number),
        };
        Some(Rule {
            id,
            effect,
            kind: ast.kind,
            targets,
            condition,
            span: ast.span,
            line: self.line_of(ast.span),
        })
    }

    fn visibility(&mut self, block: &'f syntax::ToolsBlock) -> Visibility {
        let mut index = IndexBuilder::default();
        let mut patterns = Vec::new();
        for entry in &block.entries {
            for target in &entry.targets {
                if let Some((t, folded)) = self.target(target, !entry.include) {
                    let at = u32::try_from(patterns.len()).unwrap_or(u32::MAX);
                    match &folded {
                        Some(f) => index.insert_exact(List::INCLUDE, at, &t.matcher, f),
                        None => index.insert_loose(List::EXCLUDE, at, &t.matcher),
                    }
                    patterns.push(VisPattern { span: t.span });
                }
            }
        }
        Visibility {
            index: index.build(),
            patterns,
            span: block.span,
        }
    }
}

/// Where the settings an explanation cites are written (the first of each:
/// a repeat is an error).
fn setting_spans(asts: &[&SettingAst]) -> SettingSpans {
    use crate::syntax::keywords::Setting;
    let mut spans = SettingSpans::default();
    for ast in asts {
        let slot = match crate::syntax::keywords::Setting::from_name(&ast.name.node) {
            Some(Setting::Default) => &mut spans.default,
            Some(Setting::PinTools) => &mut spans.pin_tools,
            Some(Setting::ResolveLinks) => &mut spans.resolve_links,
            Some(Setting::Scope) => &mut spans.scope,
            Some(Setting::Roots) => &mut spans.roots,
            // No step of an explanation is decided by these.
            Some(Setting::Trusted | Setting::AllowNewTools) | None => continue,
        };
        slot.get_or_insert(ast.span);
    }
    spans
}

/// The id of a rule written without one: `<list>:<index>` (`deny:12`),
/// written into a buffer on the stack rather than through `format!` (a
/// file has up to 100,000 of them).
fn default_id(effect: Effect, number: usize) -> SmolStr {
    let mut buf = [0u8; 32];
    let mut len = 0;
    for &b in effect.as_str().as_bytes().iter().chain(b":") {
        if let Some(slot) = buf.get_mut(len) {
            *slot = b;
            len += 1;
        }
    }
    let digits = number.checked_ilog10().map_or(1, |d| d as usize + 1);
    let mut n = number;
    for i in (len..len + digits).rev() {
        if let Some(slot) = buf.get_mut(i) {
            *slot = b'0' + (n % 10) as u8;
        }
        n /= 10;
    }
    len += digits;
    SmolStr::new(std::str::from_utf8(buf.get(..len).unwrap_or_default()).unwrap_or_default())
}

/// A rule that failed to compile, kept only so later rules keep their
/// numbers while the rest of the file is checked.
fn placeholder(ast: &RuleAst, number: usize) -> Rule {
    // Never decides (the file does not load): no line needed.
    Rule {
        id: default_id(ast.effect.node, number),
        effect: ast.effect.node,
        kind: ast.kind,
        targets: Vec::new(),
        condition: None,
        span: ast.span,
        line: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_ids_are_list_and_position() {
        assert_eq!(&*default_id(Effect::Deny, 0), "deny:0");
        assert_eq!(&*default_id(Effect::Ask, 9), "ask:9");
        assert_eq!(&*default_id(Effect::Allow, 10), "allow:10");
        assert_eq!(&*default_id(Effect::Deny, 99_999), "deny:99999");
        assert_eq!(
            *default_id(Effect::Allow, usize::MAX),
            *format!("allow:{}", usize::MAX)
        );
    }
}
