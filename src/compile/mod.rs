//! AST to compiled policy. Every semantic error of a file is reported, not
//! just the first; a file with any error yields no policy.

mod conditions;
mod settings;
mod targets;

use crate::diagnostics::codes;
use std::collections::HashMap;
use std::sync::Arc;

use crate::diagnostics::{Diagnostic, LoadError, Severity, SourceFile};
use crate::host::HostPredicates;
use crate::policy::{
    CompiledRegex, Cond, Lookup, Policy, PolicySet, Rule, RuleList, SettingSpans, Target,
    VisPattern, Visibility,
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
    let (file, mut diagnostics) = syntax::parse(&source);
    let (policies, compile_diagnostics) = compile(&file, &source, options);
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
    let mut compiler = Compiler {
        source,
        options,
        diagnostics: Vec::new(),
        regexes: HashMap::new(),
        regex_bytes: 0,
    };
    let mut policies: Vec<Arc<Policy>> = Vec::new();
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
            _ => None,
        })
        .nth(crate::limits::MAX_RULES)
}

pub(crate) struct Compiler<'a> {
    source: &'a Arc<SourceFile>,
    options: &'a LoadOptions,
    diagnostics: Vec<Diagnostic>,
    /// The file's regexes by source text: each distinct one compiled once.
    regexes: HashMap<Box<str>, CompiledRegex>,
    /// Heap bytes the distinct regexes hold together.
    regex_bytes: usize,
}

impl Compiler<'_> {
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

    fn policy(&mut self, ast: &PolicyAst) -> Policy {
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
        let mut index: [Lookup; 3] = Default::default();
        let mut named: HashMap<&str, Span> = HashMap::new();
        for item in &ast.items {
            match item {
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
                    self.kind_in_scope(rule, &settings);
                    let list = &mut lists[rule.effect.node.index()];
                    let number = list.rules.len();
                    if let Some(compiled) = self.rule(rule, number) {
                        let effect = rule.effect.node;
                        let lookup = &mut index[compiled.kind.index()];
                        for target in &compiled.targets {
                            lookup.insert(
                                effect.index(),
                                number as u32,
                                &target.matcher,
                                effect != Effect::Allow,
                            );
                        }
                        lists[effect.index()].rules.push(compiled);
                    } else {
                        // Keep numbering stable: a placeholder would be wrong
                        // to decide with, but the file does not load anyway.
                        lists[rule.effect.node.index()]
                            .rules
                            .push(placeholder(rule, number));
                    }
                }
                Item::Setting(_) => {}
            }
        }
        for lookup in &mut index {
            lookup.freeze();
        }
        let trusted_servers = match &settings.trusted {
            crate::policy::Trusted::Servers(set) => set.iter().cloned().collect(),
            _ => Default::default(),
        };
        Policy {
            name: ast.name.node.clone(),
            shared_name: Arc::from(ast.name.node.as_str()),
            settings,
            visibility,
            lists,
            index,
            trusted_servers,
            source: Arc::clone(self.source),
            span: ast.span,
            name_span: ast.name.span,
            setting_spans: setting_spans(&settings_ast),
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

    fn rule(&mut self, ast: &RuleAst, number: usize) -> Option<Rule> {
        let effect = ast.effect.node;
        let loose = effect != Effect::Allow;
        let targets: Vec<Option<Target>> =
            ast.targets.iter().map(|t| self.target(t, loose)).collect();
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
        let targets: Option<Vec<Target>> = targets.into_iter().collect();
        let condition = match condition {
            None => None,
            Some(c) => Some(c?),
        };
        let id = match &ast.id {
            Some(id) => Arc::from(id.node.as_str()),
            None => Arc::from(format!("{}:{number}", effect.as_str())),
        };
        Some(Rule {
            id,
            effect,
            kind: ast.kind,
            targets: targets?,
            condition,
            span: ast.span,
            line: self.line_of(ast.span),
        })
    }

    fn visibility(&mut self, block: &syntax::ToolsBlock) -> Visibility {
        let mut lookup = Lookup::default();
        let mut patterns = Vec::new();
        for entry in &block.entries {
            for target in &entry.targets {
                if let Some(t) = self.target(target, !entry.include) {
                    // Exclude patterns are list 0 (loose), include list 2 (exact).
                    let list = if entry.include { 2 } else { 0 };
                    lookup.insert(list, patterns.len() as u32, &t.matcher, !entry.include);
                    patterns.push(VisPattern {
                        text: t.text,
                        span: t.span,
                    });
                }
            }
        }
        lookup.freeze();
        Visibility {
            lookup,
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
            Some(Setting::Scope) => &mut spans.scope,
            Some(Setting::Roots) => &mut spans.roots,
            // No step of an explanation is decided by these.
            Some(Setting::Trusted | Setting::AllowNewTools) | None => continue,
        };
        slot.get_or_insert(ast.span);
    }
    spans
}

/// A rule that failed to compile, kept only so later rules keep their
/// numbers while the rest of the file is checked.
fn placeholder(ast: &RuleAst, number: usize) -> Rule {
    // Never decides (the file does not load): no line needed.
    Rule {
        id: Arc::from(format!("{}:{number}", ast.effect.node.as_str())),
        effect: ast.effect.node,
        kind: ast.kind,
        targets: Vec::new(),
        condition: None,
        span: ast.span,
        line: 0,
    }
}
