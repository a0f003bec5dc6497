//! Settings: names, values and repeats checked; the defaults filled in.

use std::collections::HashSet;

use super::Compiler;
use crate::diagnostics::{did_you_mean, Diagnostic};
use crate::policy::{DefaultDecision, Settings, Trusted, SETTING_NAMES};
use crate::syntax::{SettingAst, SettingValue, Spanned};

const KEYWORDS: [&str; 4] = ["deny", "ask", "allow", "tools"];

impl Compiler<'_> {
    /// Applies every setting of a policy; reports each bad one.
    pub(super) fn settings(&mut self, asts: &[&SettingAst]) -> Settings {
        let mut settings = Settings::default();
        let mut seen: Vec<(&str, &SettingAst)> = Vec::new();
        for ast in asts {
            let name = ast.name.node.as_str();
            if !SETTING_NAMES.contains(&name) {
                self.unknown_setting(ast);
                continue;
            }
            if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
                let (line, _) = self.source.line_col(first.span.start);
                self.push(
                    Diagnostic::error(
                        self.source,
                        "mcppol::compile::duplicate_setting",
                        ast.name.span,
                        format!("`{name}` is set twice in this policy"),
                    )
                    .with_label("set again here")
                    .with_help(format!("keep one: `{name}` is first set on line {line}")),
                );
                continue;
            }
            seen.push((name, ast));
            match name {
                "default" => {
                    if let Some(v) = self.one_word(ast, &["ask", "deny"]) {
                        settings.default = if v == "deny" {
                            DefaultDecision::Deny
                        } else {
                            DefaultDecision::Ask
                        };
                    }
                }
                "pin_tools" => {
                    if let Some(v) = self.one_word(ast, &["on", "off"]) {
                        settings.pin_tools = v == "on";
                    }
                }
                "allow_new_tools" => {
                    if let Some(v) = self.one_word(ast, &["on", "off"]) {
                        settings.allow_new_tools = v == "on";
                    }
                }
                "scope" => self.scope(ast, &mut settings),
                _ => self.trusted(ast, &mut settings),
            }
        }
        settings
    }

    fn unknown_setting(&mut self, ast: &SettingAst) {
        let name = ast.name.node.as_str();
        let known = SETTING_NAMES.iter().chain(KEYWORDS.iter()).copied();
        let diagnostic = match did_you_mean(name, known) {
            Some(k) if KEYWORDS.contains(&k) => Diagnostic::error(
                self.source,
                "mcppol::compile::unknown_keyword",
                ast.name.span,
                format!("unknown keyword `{name}`"),
            )
            .with_label("not a rule or setting")
            .with_help(format!("did you mean `{k}`?")),
            Some(k) => Diagnostic::error(
                self.source,
                "mcppol::compile::unknown_setting",
                ast.name.span,
                format!("unknown setting `{name}`"),
            )
            .with_label("not a setting")
            .with_help(format!("did you mean `{k}`?")),
            None => Diagnostic::error(
                self.source,
                "mcppol::compile::unknown_setting",
                ast.name.span,
                format!("unknown setting `{name}`"),
            )
            .with_label("not a rule or setting")
            .with_help(format!(
                "a policy holds rules (`deny`, `ask`, `allow`), a `tools {{}}` block and the settings {}",
                SETTING_NAMES.map(|s| format!("`{s}`")).join(", ")
            )),
        };
        self.push(diagnostic);
    }

    fn bad_value(&mut self, setting: &str, value: &Spanned<SettingValue>, allowed: &[&str]) {
        let text = value.node.text();
        let list = allowed
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let help = match did_you_mean(text, allowed.iter().copied()) {
            Some(k) => format!("did you mean `{k}`? `{setting}` takes {list}"),
            None => format!("`{setting}` takes {list}"),
        };
        self.push(
            Diagnostic::error(
                self.source,
                "mcppol::compile::bad_setting_value",
                value.span,
                format!("`{text}` is not a value of `{setting}`"),
            )
            .with_label("not allowed here")
            .with_help(help),
        );
    }

    /// A setting that takes exactly one bare word from `allowed`.
    fn one_word<'s>(&mut self, ast: &'s SettingAst, allowed: &[&str]) -> Option<&'s str> {
        let name = ast.name.node.as_str();
        if let Some(extra) = ast.values.get(1) {
            self.push(
                Diagnostic::error(
                    self.source,
                    "mcppol::compile::bad_setting_value",
                    extra.span,
                    format!("`{name}` takes one value"),
                )
                .with_label("extra value")
                .with_help(format!(
                    "remove it: `{name}` takes one of {}",
                    allowed.join(", ")
                )),
            );
            return None;
        }
        let value = ast.values.first()?;
        match &value.node {
            SettingValue::Word(w) if allowed.contains(&w.as_str()) => Some(w.as_str()),
            _ => {
                self.bad_value(name, value, allowed);
                None
            }
        }
    }

    fn scope(&mut self, ast: &SettingAst, settings: &mut Settings) {
        const KINDS: [&str; 3] = ["tools", "resources", "prompts"];
        let mut seen = HashSet::new();
        let mut tools = false;
        for value in &ast.values {
            let word = match &value.node {
                SettingValue::Word(w) if KINDS.contains(&w.as_str()) => w.as_str(),
                _ => {
                    self.bad_value("scope", value, &KINDS);
                    return;
                }
            };
            if !seen.insert(word) {
                self.push(
                    Diagnostic::error(
                        self.source,
                        "mcppol::compile::bad_setting_value",
                        value.span,
                        format!("`{word}` is named twice in `scope`"),
                    )
                    .with_label("again here")
                    .with_help("name each kind once"),
                );
                return;
            }
            match word {
                "tools" => tools = true,
                "resources" => settings.scope.resources = true,
                _ => settings.scope.prompts = true,
            }
        }
        if !tools {
            self.push(
                Diagnostic::error(
                    self.source,
                    "mcppol::compile::scope_without_tools",
                    ast.span,
                    "`scope` must include `tools`",
                )
                .with_label("tools missing")
                .with_help("tool calls are always governed: write `scope tools, ...`"),
            );
        }
    }

    fn trusted(&mut self, ast: &SettingAst, settings: &mut Settings) {
        if let [only] = ast.values.as_slice() {
            if only.node == SettingValue::Word("all".into()) {
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
                    let help = if w == "all" {
                        "`all` stands alone: write `trusted all`, or list server ids".to_string()
                    } else {
                        format!("server ids are strings: write `\"{w}\"`")
                    };
                    self.push(
                        Diagnostic::error(
                            self.source,
                            "mcppol::compile::bad_setting_value",
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
