//! Settings: names, values and repeats checked; the defaults filled in.

use crate::diagnostics::codes;
use std::collections::HashSet;

use super::Compiler;
use crate::diagnostics::{did_you_mean, Diagnostic};
use crate::paths;
use crate::policy::{DefaultDecision, Settings, Trusted};
use crate::syntax::keywords::{
    Block, DefaultValue, Effect, ScopeKind, Setting, Switch, TrustedWord,
};
use crate::syntax::{SettingAst, SettingValue, Spanned};

/// The words a misspelt setting may have meant instead: the rule keywords
/// and `tools`.
fn item_keywords() -> impl Iterator<Item = &'static str> + Clone {
    Effect::names().chain([Block::Tools.as_str()])
}

impl<'f> Compiler<'_, 'f> {
    /// Applies every setting of a policy; reports each bad one.
    pub(super) fn settings(&mut self, asts: &[&SettingAst]) -> Settings {
        let mut settings = Settings::default();
        let mut seen: Vec<(Setting, &SettingAst)> = Vec::new();
        for ast in asts {
            let name = ast.name.node.as_str();
            let Some(setting) = Setting::from_name(name) else {
                self.unknown_setting(ast);
                continue;
            };
            if let Some((_, first)) = seen.iter().find(|(n, _)| *n == setting) {
                let (line, _) = self.source.line_col(first.span.start);
                self.push(
                    Diagnostic::error(
                        self.source,
                        codes::COMPILE_DUPLICATE_SETTING,
                        ast.name.span,
                        format!("`{name}` is set twice in this policy"),
                    )
                    .with_label("set again here")
                    .with_help(format!("keep one: `{name}` is first set on line {line}")),
                );
                continue;
            }
            seen.push((setting, ast));
            match setting {
                Setting::Default => {
                    if let Some(v) =
                        self.one_word(ast, DefaultValue::from_name, DefaultValue::names())
                    {
                        settings.default = match v {
                            DefaultValue::Deny => DefaultDecision::Deny,
                            DefaultValue::Ask => DefaultDecision::Ask,
                        };
                    }
                }
                Setting::PinTools => {
                    if let Some(v) = self.one_word(ast, Switch::from_name, Switch::names()) {
                        settings.pin_tools = v == Switch::On;
                    }
                }
                Setting::AllowNewTools => {
                    if let Some(v) = self.one_word(ast, Switch::from_name, Switch::names()) {
                        settings.allow_new_tools = v == Switch::On;
                    }
                }
                Setting::ResolveLinks => {
                    if let Some(v) = self.one_word(ast, Switch::from_name, Switch::names()) {
                        settings.resolve_links = Some(v == Switch::On);
                    }
                }
                Setting::Scope => self.scope(ast, &mut settings),
                Setting::Trusted => self.trusted(ast, &mut settings),
                Setting::Roots => settings.roots = self.roots(ast),
            }
        }
        settings
    }

    fn unknown_setting(&mut self, ast: &SettingAst) {
        let name = ast.name.node.as_str();
        let known = Setting::names().chain(item_keywords());
        // A word another policy language uses (`permit`) is no misspelling,
        // but means one keyword just as surely.
        let meant = did_you_mean(name, known)
            .or_else(|| crate::syntax::keywords::effect_synonym(name).map(|e| e.as_str()));
        let diagnostic = match meant {
            Some(k) if item_keywords().any(|w| w == k) => Diagnostic::error(
                self.source,
                codes::COMPILE_UNKNOWN_KEYWORD,
                ast.name.span,
                format!("unknown keyword `{name}`"),
            )
            .with_label("not a rule or setting")
            .with_help(format!("did you mean `{k}`?")),
            Some(k) => Diagnostic::error(
                self.source,
                codes::COMPILE_UNKNOWN_SETTING,
                ast.name.span,
                format!("unknown setting `{name}`"),
            )
            .with_label("not a setting")
            .with_help(format!("did you mean `{k}`?")),
            None => Diagnostic::error(
                self.source,
                codes::COMPILE_UNKNOWN_SETTING,
                ast.name.span,
                format!("unknown setting `{name}`"),
            )
            .with_label("not a rule or setting")
            .with_help(format!(
                "a policy holds rules (`deny`, `ask`, `allow`), a `tools {{}}` block and the settings {}",
                Setting::names()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
        self.push(diagnostic);
    }

    fn bad_value(
        &mut self,
        setting: &str,
        value: &Spanned<SettingValue>,
        allowed: impl Iterator<Item = &'static str> + Clone,
    ) {
        let text = value.node.text();
        let list = allowed
            .clone()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let help = match did_you_mean(text, allowed) {
            Some(k) => format!("did you mean `{k}`? `{setting}` takes {list}"),
            None => format!("`{setting}` takes {list}"),
        };
        self.push(
            Diagnostic::error(
                self.source,
                codes::COMPILE_BAD_SETTING_VALUE,
                value.span,
                format!("`{text}` is not a value of `{setting}`"),
            )
            .with_label("not allowed here")
            .with_help(help),
        );
    }

    /// A setting that takes exactly one bare word of a keyword group.
    fn one_word<K>(
        &mut self,
        ast: &SettingAst,
        parse: impl Fn(&str) -> Option<K>,
        allowed: impl Iterator<Item = &'static str> + Clone,
    ) -> Option<K> {
        let name = ast.name.node.as_str();
        if let Some(extra) = ast.values.get(1) {
            self.push(
                Diagnostic::error(
                    self.source,
                    codes::COMPILE_BAD_SETTING_VALUE,
                    extra.span,
                    format!("`{name}` takes one value"),
                )
                .with_label("extra value")
                .with_help(format!(
                    "remove it: `{name}` takes one of {}",
                    allowed.collect::<Vec<_>>().join(", ")
                )),
            );
            return None;
        }
        let value = ast.values.first()?;
        match &value.node {
            SettingValue::Word(w) if parse(w).is_some() => parse(w),
            _ => {
                self.bad_value(name, value, allowed);
                None
            }
        }
    }

    fn scope(&mut self, ast: &SettingAst, settings: &mut Settings) {
        let mut seen = HashSet::new();
        let mut tools = false;
        for value in &ast.values {
            let kind = match &value.node {
                SettingValue::Word(w) => ScopeKind::from_name(w),
                SettingValue::Str(_) => None,
            };
            let Some(word) = kind else {
                self.bad_value(Setting::Scope.as_str(), value, ScopeKind::names());
                return;
            };
            if !seen.insert(word) {
                self.push(
                    Diagnostic::error(
                        self.source,
                        codes::COMPILE_BAD_SETTING_VALUE,
                        value.span,
                        format!("`{word}` is named twice in `scope`"),
                    )
                    .with_label("again here")
                    .with_help("name each kind once"),
                );
                return;
            }
            match word {
                ScopeKind::Tools => tools = true,
                ScopeKind::Resources => settings.scope.resources = true,
                ScopeKind::Prompts => settings.scope.prompts = true,
            }
        }
        if !tools {
            self.push(
                Diagnostic::error(
                    self.source,
                    codes::COMPILE_SCOPE_WITHOUT_TOOLS,
                    ast.span,
                    "`scope` must include `tools`",
                )
                .with_label("tools missing")
                .with_help("tool calls are always governed: write `scope tools, ...`"),
            );
        }
    }

    /// `roots "/srv/work", ...`: absolute paths, canonicalized as path
    /// roots are; `None` (with an error each) if any is not.
    fn roots(&mut self, ast: &SettingAst) -> Option<Box<[String]>> {
        let mut roots: Vec<String> = Vec::new();
        let mut ok = true;
        for value in &ast.values {
            let problem = match &value.node {
                SettingValue::Word(w) => Some((
                    format!("`{w}` is not a value of `roots`"),
                    format!("roots are absolute paths in quotes: `roots \"/srv/{w}\"`"),
                )),
                SettingValue::Str(s) if !s.starts_with('/') => Some((
                    format!("root `{}` is not an absolute path", s.escape_debug()),
                    "write the whole path from `/`, such as \"/srv/work\": a root is never taken relative to a working folder".to_string(),
                )),
                SettingValue::Str(s) => match paths::canonical_root(s) {
                    Ok(root) => {
                        if !roots.contains(&root) {
                            roots.push(root);
                        }
                        None
                    }
                    Err(why) => Some((
                        format!("`{}` cannot be a root: {why}", s.escape_debug()),
                        "write an absolute path such as \"/srv/work\"".to_string(),
                    )),
                },
            };
            if let Some((message, help)) = problem {
                ok = false;
                self.push(
                    Diagnostic::error(self.source, codes::COMPILE_BAD_ROOTS, value.span, message)
                        .with_label("not a root")
                        .with_help(help),
                );
            }
        }
        ok.then(|| roots.into_boxed_slice())
    }

    fn trusted(&mut self, ast: &SettingAst, settings: &mut Settings) {
        if let [only] = ast.values.as_slice() {
            if only.node == SettingValue::Word(TrustedWord::All.as_str().into()) {
                settings.trusted = Trusted::All;
                return;
            }
        }
        let mut servers = HashSet::new();
        for value in &ast.values {
            match &value.node {
                SettingValue::Str(s) => {
                    servers.insert(s.clone().into_boxed_str());
                }
                SettingValue::Word(w) => {
                    let help = if TrustedWord::from_name(w).is_some() {
                        "`all` stands alone: write `trusted all`, or list server ids".to_string()
                    } else {
                        format!("server ids are strings: write `\"{w}\"`")
                    };
                    self.push(
                        Diagnostic::error(
                            self.source,
                            codes::COMPILE_BAD_SETTING_VALUE,
                            value.span,
                            format!("`{w}` is not a value of `trusted`"),
                        )
                        .with_label("not a server id")
                        .with_help(help),
                    );
                    return;
                }
            }
        }
        settings.trusted = Trusted::Servers(servers);
    }
}
