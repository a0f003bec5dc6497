//! `let` names replaced by their values: the file the compiler and the
//! checker read is the one the author would have written out by hand, so a
//! policy decides the same with its names as without them.
//!
//! The parser leaves each name where its value goes (a target, a root, an
//! `in`, `runs` or `tainted` list) and records the place in
//! [`File::name_uses`]; here every such place takes the value, keeping the
//! name's span so that a diagnostic about the value points at the name.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::ast::*;
use crate::diagnostics::{codes, did_you_mean, Diagnostic, SourceFile};

/// The most `let`s one file may hold.
pub const MAX_LETS: usize = 1024;
/// The most bytes the names of one file may stand for, written out.
pub const MAX_EXPANDED_BYTES: usize = 8 * 1024 * 1024;

/// The names in scope: a policy's own over its file's.
struct Scope<'f> {
    names: HashMap<&'f str, &'f LetAst>,
}

/// Where a name was used and the value it stands for, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NameValue {
    pub span: Span,
    pub name: Box<str>,
    pub value: Box<str>,
}

/// The file with every name replaced by its value, and the errors found:
/// an unknown name, a name defined twice, a list where a string goes, too
/// many names or too large a result.
pub(crate) fn expand(
    file: &File,
    source: &Arc<SourceFile>,
) -> (File, Vec<Diagnostic>, Vec<NameValue>) {
    let mut out = file.clone();
    let mut diagnostics = Vec::new();
    let total = file.lets.len()
        + file
            .policies
            .iter()
            .flat_map(|p| &p.items)
            .filter(|i| matches!(i, Item::Let(_)))
            .count();
    if total > MAX_LETS {
        let span = file.lets.first().map_or(Span::new(0, 0), |l| l.name.span);
        diagnostics.push(
            Diagnostic::error(
                source,
                codes::COMPILE_NAMES_TOO_LARGE,
                span,
                format!("the file has {total} `let`s, more than the {MAX_LETS} a file may"),
            )
            .with_label("too many names")
            .with_help("use fewer names, or split the policies over several files"),
        );
        return (out, diagnostics, Vec::new());
    }
    if file.lets.is_empty() && file.name_uses.is_empty() && total == 0 {
        return (out, diagnostics, Vec::new());
    }
    let file_lets: Vec<&LetAst> = file.lets.iter().collect();
    let file_names = scope(&file_lets, None, source, &mut diagnostics);
    let mut uses: Vec<usize> = file.name_uses.iter().map(|s| s.start).collect();
    uses.sort_unstable();
    let mut expander = Expander {
        source,
        uses,
        diagnostics,
        bytes: 0,
        too_large: false,
        values: Vec::new(),
    };
    for (policy, ast) in out.policies.iter_mut().zip(&file.policies) {
        let own: Vec<&LetAst> = ast
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Let(l) => Some(l),
                _ => None,
            })
            .collect();
        let mut names = file_names.clone();
        names.extend(scope(
            &own,
            Some(&file_names),
            source,
            &mut expander.diagnostics,
        ));
        let scope = Scope { names };
        for item in &mut policy.items {
            expander.item(item, &scope);
        }
    }
    let Expander {
        mut diagnostics,
        too_large,
        values,
        ..
    } = expander;
    if too_large {
        diagnostics.push(
            Diagnostic::error(
                source,
                codes::COMPILE_NAMES_TOO_LARGE,
                file.name_uses.first().copied().unwrap_or_default(),
                format!(
                    "the file's names written out would exceed {} MiB",
                    MAX_EXPANDED_BYTES / (1024 * 1024)
                ),
            )
            .with_label("from here on")
            .with_help("use shorter lists, or split the policies over several files"),
        );
    }
    (out, diagnostics, values)
}

/// The names `lets` define, each once; a second definition (or one that
/// reuses a name of `outer`) is an error.
fn scope<'l>(
    lets: &[&'l LetAst],
    outer: Option<&HashMap<&'l str, &'l LetAst>>,
    source: &Arc<SourceFile>,
    diagnostics: &mut Vec<Diagnostic>,
) -> HashMap<&'l str, &'l LetAst> {
    let mut names: HashMap<&'l str, &'l LetAst> = HashMap::new();
    for l in lets {
        let name = l.name.node.as_str();
        let earlier = names
            .get(name)
            .or_else(|| outer.and_then(|o| o.get(name)))
            .map(|e| e.name.span);
        if let Some(first) = earlier {
            let (line, _) = source.line_col(first.start);
            diagnostics.push(
                Diagnostic::error(
                    source,
                    codes::COMPILE_DUPLICATE_NAME,
                    l.name.span,
                    format!("`{name}` is defined twice"),
                )
                .with_label("defined again here")
                .with_help(format!("rename one: the first is on line {line}")),
            );
            continue;
        }
        names.insert(name, l);
    }
    names
}

struct Expander<'a> {
    source: &'a Arc<SourceFile>,
    /// Where names stand, by start, sorted.
    uses: Vec<usize>,
    diagnostics: Vec<Diagnostic>,
    /// Bytes written out so far.
    bytes: usize,
    too_large: bool,
    /// Each use and its value, as written.
    values: Vec<NameValue>,
}

impl Expander<'_> {
    fn is_use(&self, span: Span) -> bool {
        self.uses.binary_search(&span.start).is_ok()
    }

    /// The value a name stands for, or `None` (reported) when unknown or
    /// when the file's names have grown too large.
    fn value<'s>(&mut self, name: &Spanned<String>, scope: &'s Scope<'_>) -> Option<&'s LetValue> {
        let Some(found) = scope.names.get(name.node.as_str()) else {
            let known: Vec<&str> = scope.names.keys().copied().collect();
            let help = match did_you_mean(&name.node, known.iter().copied()) {
                Some(k) => format!("did you mean `{k}`?"),
                None => format!(
                    "define it with `let {0} = \"...\"`, or write the value in quotes: `\"{0}\"`",
                    name.node
                ),
            };
            self.diagnostics.push(
                Diagnostic::error(
                    self.source,
                    codes::COMPILE_UNKNOWN_NAME,
                    name.span,
                    format!("unknown name `{}`", name.node),
                )
                .with_label("no `let` names this")
                .with_help(help),
            );
            return None;
        };
        let size = match &found.value.node {
            LetValue::Str(s) => s.len(),
            LetValue::List(items) => items.iter().map(|i| i.node.len() + 1).sum(),
        };
        self.bytes = self.bytes.saturating_add(size);
        // Shown as JSON, whatever the spacing it was written with.
        let quote = |s: &str| Value::String(s.to_string()).to_string();
        let shown = match &found.value.node {
            LetValue::Str(s) => quote(s),
            LetValue::List(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(|i| quote(&i.node))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        self.values.push(NameValue {
            span: name.span,
            name: name.node.clone().into_boxed_str(),
            value: shown.into_boxed_str(),
        });
        if self.bytes > MAX_EXPANDED_BYTES {
            self.too_large = true;
            return None;
        }
        Some(&found.value.node)
    }

    /// The strings a name stands for where a list of strings goes.
    fn strings(
        &mut self,
        name: &Spanned<String>,
        scope: &Scope<'_>,
    ) -> Option<Vec<Spanned<String>>> {
        Some(match self.value(name, scope)? {
            LetValue::Str(s) => vec![Spanned::new(s.clone(), name.span)],
            LetValue::List(items) => items
                .iter()
                .map(|i| Spanned::new(i.node.clone(), name.span))
                .collect(),
        })
    }

    /// The string a name stands for where one string goes.
    fn string(&mut self, name: &Spanned<String>, scope: &Scope<'_>, place: &str) -> Option<String> {
        match self.value(name, scope)? {
            LetValue::Str(s) => Some(s.clone()),
            LetValue::List(_) => {
                self.diagnostics.push(
                    Diagnostic::error(
                        self.source,
                        codes::COMPILE_LIST_FOR_STRING,
                        name.span,
                        format!("`{}` names a list, and {place} takes one string", name.node),
                    )
                    .with_label("a list")
                    .with_help(
                        "name a string here, or write one test per value joined with `or` or `and`",
                    ),
                );
                None
            }
        }
    }

    /// A list of strings some of which may be names.
    fn list(&mut self, items: &mut Vec<Spanned<String>>, scope: &Scope<'_>) {
        if !items.iter().any(|i| self.is_use(i.span)) {
            return;
        }
        let mut out = Vec::with_capacity(items.len());
        for item in items.drain(..) {
            if self.is_use(item.span) {
                out.extend(self.strings(&item, scope).unwrap_or_default());
            } else {
                out.push(item);
            }
        }
        *items = out;
    }

    fn targets(&mut self, targets: &mut Vec<TargetAst>, scope: &Scope<'_>) {
        let named = |t: &TargetAst| matches!(t, TargetAst::Pattern(p) if self.is_use(p.span));
        if !targets.iter().any(named) {
            return;
        }
        let mut out = Vec::with_capacity(targets.len());
        for target in targets.drain(..) {
            match target {
                TargetAst::Pattern(p) if self.is_use(p.span) => {
                    out.extend(
                        self.strings(&p, scope)
                            .unwrap_or_default()
                            .into_iter()
                            .map(TargetAst::Pattern),
                    );
                }
                other => out.push(other),
            }
        }
        *targets = out;
    }

    fn item(&mut self, item: &mut Item, scope: &Scope<'_>) {
        match item {
            Item::Let(_) => {}
            Item::Setting(setting) => {
                // `roots` and `trusted` take strings: a word there that a
                // `let` defines stands for its value.
                if !matches!(setting.name.node.as_str(), "roots" | "trusted") {
                    return;
                }
                let mut out = Vec::with_capacity(setting.values.len());
                for value in setting.values.drain(..) {
                    match &value.node {
                        SettingValue::Word(w) if scope.names.contains_key(w.as_str()) => {
                            let name = Spanned::new(w.clone(), value.span);
                            for s in self.strings(&name, scope).unwrap_or_default() {
                                out.push(Spanned::new(SettingValue::Str(s.node), value.span));
                            }
                        }
                        _ => out.push(value),
                    }
                }
                setting.values = out;
            }
            Item::Tools(block) => {
                for entry in &mut block.entries {
                    self.targets(&mut entry.targets, scope);
                }
            }
            Item::Limit(limit) => self.targets(&mut limit.targets, scope),
            Item::Rule(rule) => {
                self.targets(&mut rule.targets, scope);
                if let Some(clause) = &mut rule.condition {
                    self.cond(&mut clause.condition, scope);
                }
            }
        }
    }

    fn cond(&mut self, cond: &mut Cond, scope: &Scope<'_>) {
        match cond {
            Cond::Or(parts, _) | Cond::And(parts, _) => {
                for part in parts {
                    self.cond(part, scope);
                }
            }
            Cond::Not(inner, _) => self.cond(inner, scope),
            Cond::Tainted { ignore, by, .. } => {
                self.list(ignore, scope);
                if let Some(by) = by {
                    self.list(by, scope);
                }
            }
            Cond::Path { root, inside, .. } => {
                if self.is_use(root.span) {
                    let place = if *inside { "`inside`" } else { "`escapes`" };
                    let value = self.string(root, scope, place);
                    root.node = value.unwrap_or_default();
                }
            }
            Cond::Writes { root, .. } => {
                if self.is_use(root.span) {
                    root.node = self
                        .string(root, scope, "`writes inside`")
                        .unwrap_or_default();
                }
            }
            Cond::In { list, .. } => {
                if let (true, Value::String(name)) = (self.is_use(list.span), &list.node) {
                    let name = Spanned::new(name.clone(), list.span);
                    list.node = match self.value(&name, scope) {
                        Some(LetValue::List(items)) => Value::Array(
                            items
                                .iter()
                                .map(|i| Value::String(i.node.clone()))
                                .collect(),
                        ),
                        Some(LetValue::Str(s)) => Value::String(s.clone()),
                        None => Value::Array(Vec::new()),
                    };
                }
            }
            Cond::Runs { patterns, .. } => self.list(patterns, scope),
            Cond::Exists { .. }
            | Cond::Bare(_)
            | Cond::Compare { .. }
            | Cond::Matches { .. }
            | Cond::UnknownTest { .. } => {}
        }
    }
}

#[cfg(test)]
#[path = "lets/tests.rs"]
mod tests;
