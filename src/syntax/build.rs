//! pest pairs to AST nodes. Spans are shifted by `base`, the offset in the
//! file of the text the grammar was run on.

use pest::iterators::Pair;
use serde_json::Value;

use super::ast::*;
use super::keywords::{
    Clause, KindWord, MistakenClause, Predicate, TaintedArg, TestWord, Visibility,
};
use super::Rule;
use crate::diagnostics::codes;

/// A problem found while turning pairs into nodes: the grammar accepted the
/// text (it reads some mistakes loosely on purpose, to name them here), but
/// a value in it cannot be used.
#[derive(Debug)]
pub(super) struct BuildError {
    pub span: Span,
    pub message: String,
    pub code: &'static str,
    pub label: &'static str,
    pub help: String,
}

impl BuildError {
    fn new(code: &'static str, span: Span, message: String, help: impl Into<String>) -> Self {
        BuildError {
            span,
            message,
            code,
            label: "here",
            help: help.into(),
        }
    }

    fn label(mut self, label: &'static str) -> Self {
        self.label = label;
        self
    }
}

/// The old form, a span and a message: a value out of range.
impl From<(Span, String)> for BuildError {
    fn from((span, message): (Span, String)) -> Self {
        BuildError::new(
            codes::PARSE_SYNTAX,
            span,
            message,
            "the text has the right form but this value is out of range: correct it",
        )
    }
}

pub(super) struct Builder {
    pub base: usize,
    /// Where a `let` name stood for a value, as built.
    pub names: std::cell::RefCell<Vec<Span>>,
}

type Result<T> = std::result::Result<T, BuildError>;

// `let` and the shell tests, built in a file of their own.
mod names;

impl Builder {
    /// A builder for text that starts at `base` in the file.
    pub fn at(base: usize) -> Self {
        Builder {
            base,
            names: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// The name spans recorded so far, taken out.
    pub fn take_names(&self) -> Vec<Span> {
        std::mem::take(&mut *self.names.borrow_mut())
    }

    pub fn span(&self, pair: &Pair<'_, Rule>) -> Span {
        let s = pair.as_span();
        Span::new(self.base + s.start(), self.base + s.end())
    }

    /// A keyword the grammar accepted that the keyword table does not know:
    /// the two disagree (a test checks they do not).
    fn unknown_word(&self, pair: &Pair<'_, Rule>) -> BuildError {
        (
            self.span(pair),
            format!("`{}` is not in the keyword table", pair.as_str()),
        )
            .into()
    }

    fn spanned_str(&self, pair: &Pair<'_, Rule>) -> Spanned<String> {
        Spanned::new(pair.as_str().to_string(), self.span(pair))
    }

    /// `policy NAME {` -> the name.
    pub fn policy_open(&self, pair: Pair<'_, Rule>) -> Option<Spanned<String>> {
        pair.into_inner()
            .find(|p| p.as_rule() == Rule::ident)
            .map(|p| self.spanned_str(&p))
    }

    /// `item` -> a rule or a setting (the visibility block is driven apart).
    pub fn item(&self, pair: Pair<'_, Rule>) -> Result<Option<Item>> {
        for inner in pair.into_inner() {
            match inner.as_rule() {
                Rule::rule => return self.rule(inner).map(|r| Some(Item::Rule(Box::new(r)))),
                Rule::limit_rule => {
                    return self.limit(inner).map(|l| Some(Item::Limit(Box::new(l))))
                }
                Rule::setting => return Ok(Some(Item::Setting(self.setting(inner)?))),
                Rule::tools_block => return self.tools_block(inner).map(|t| Some(Item::Tools(t))),
                Rule::let_item => return self.let_item(inner).map(|l| Some(Item::Let(l))),
                _ => {}
            }
        }
        Ok(None)
    }

    pub fn setting(&self, pair: Pair<'_, Rule>) -> Result<SettingAst> {
        let span = self.span(&pair);
        let mut name = None;
        let mut values = Vec::new();
        for inner in pair.into_inner() {
            match inner.as_rule() {
                Rule::setting_name => name = Some(self.spanned_str(&inner)),
                Rule::setting_value => {
                    let value_span = self.span(&inner);
                    for v in inner.into_inner() {
                        let value = match v.as_rule() {
                            Rule::string => SettingValue::Str(self.string(&v)?),
                            _ => SettingValue::Word(v.as_str().to_string()),
                        };
                        values.push(Spanned::new(value, value_span));
                    }
                }
                _ => {}
            }
        }
        let name = name.ok_or((span, "a setting needs a name".to_string()))?;
        Ok(SettingAst { name, values, span })
    }

    pub fn tools_block(&self, pair: Pair<'_, Rule>) -> Result<ToolsBlock> {
        let span = self.span(&pair);
        let mut entries = Vec::new();
        for inner in pair.into_inner() {
            if inner.as_rule() == Rule::visibility_entry {
                entries.push(self.visibility_entry(inner)?);
            }
        }
        Ok(ToolsBlock { entries, span })
    }

    pub fn visibility_entry(&self, pair: Pair<'_, Rule>) -> Result<VisibilityEntry> {
        let span = self.span(&pair);
        let mut include = true;
        let mut targets = Vec::new();
        for inner in pair.into_inner() {
            match inner.as_rule() {
                Rule::visibility_kind => {
                    include = match Visibility::from_name(inner.as_str()) {
                        Some(Visibility::Include) => true,
                        Some(Visibility::Exclude) => false,
                        None => return Err(self.unknown_word(&inner)),
                    }
                }
                Rule::target => targets.push(self.target(inner)?),
                _ => {}
            }
        }
        Ok(VisibilityEntry {
            include,
            targets,
            span,
        })
    }

    pub fn rule(&self, pair: Pair<'_, Rule>) -> Result<RuleAst> {
        let span = self.span(&pair);
        let mut effect = None;
        let mut id = None;
        let mut kind = TargetKind::Tool;
        let mut kind_span = None;
        let mut targets = Vec::new();
        let mut condition = None;
        for inner in pair.into_inner() {
            match inner.as_rule() {
                Rule::effect => {
                    let e = Effect::from_name(inner.as_str())
                        .ok_or_else(|| self.unknown_word(&inner))?;
                    effect = Some(Spanned::new(e, self.span(&inner)));
                }
                Rule::rule_id => {
                    if let Some(ident) = inner.into_inner().next() {
                        id = Some(self.spanned_str(&ident));
                    }
                }
                Rule::target_kind => {
                    kind = match KindWord::from_name(inner.as_str()) {
                        Some(KindWord::Resource) => TargetKind::Resource,
                        Some(KindWord::Prompt) => TargetKind::Prompt,
                        None => return Err(self.unknown_word(&inner)),
                    };
                    kind_span = Some(self.span(&inner));
                }
                Rule::target => targets.push(self.target(inner)?),
                Rule::condition_clause => {
                    let clause = self.condition_clause(inner)?;
                    if let Some(first) = &condition {
                        return Err(self.second_clause(first, &clause));
                    }
                    condition = Some(clause);
                }
                _ => {}
            }
        }
        let effect = effect.ok_or((span, "a rule needs an effect".to_string()))?;
        Ok(RuleAst {
            effect,
            id,
            kind,
            kind_span,
            targets,
            condition,
            span,
        })
    }

    /// `limit_rule` -> a budget; its count, unit and scope are checked by
    /// the compiler.
    pub fn limit(&self, pair: Pair<'_, Rule>) -> Result<LimitAst> {
        let span = self.span(&pair);
        let mut keyword = None;
        let mut id = None;
        let mut targets = Vec::new();
        let mut count = None;
        let mut words = Vec::new();
        for inner in pair.into_inner() {
            match inner.as_rule() {
                Rule::kw_limit => keyword = Some(self.span(&inner)),
                Rule::rule_id => {
                    if let Some(ident) = inner.into_inner().next() {
                        id = Some(self.spanned_str(&ident));
                    }
                }
                Rule::target => targets.push(self.target(inner)?),
                Rule::limit_count => count = Some(self.spanned_str(&inner)),
                Rule::limit_word => words.push(self.spanned_str(&inner)),
                _ => {}
            }
        }
        let missing = || (span, "a budget needs a count and a window".to_string());
        let mut words = words.into_iter();
        Ok(LimitAst {
            keyword: keyword.unwrap_or(span),
            id,
            targets,
            count: count.ok_or_else(missing)?,
            unit: words.next().ok_or_else(missing)?,
            scope: words.next(),
            span,
        })
    }

    fn target(&self, pair: Pair<'_, Rule>) -> Result<TargetAst> {
        let span = self.span(&pair);
        let mut inner = pair.into_inner();
        let first = inner.next().ok_or((span, "empty target".to_string()))?;
        if first.as_rule() == Rule::any_target {
            return Ok(TargetAst::Any(span));
        }
        if first.as_rule() == Rule::name_ref {
            return Ok(TargetAst::Pattern(self.name_use(&first)));
        }
        let pattern = self.string(&first)?;
        match inner.next() {
            Some(regex) => Ok(TargetAst::Regex {
                server: Spanned::new(pattern, self.span(&first)),
                regex: Spanned::new(self.regex(&regex)?, self.span(&regex)),
                span,
            }),
            // The string's own span: the target's may run on over the
            // blanks pest skipped looking for a `~`.
            None => Ok(TargetAst::Pattern(Spanned::new(pattern, self.span(&first)))),
        }
    }

    /// A rule with a second `when` or `unless`.
    fn second_clause(&self, first: &ConditionClause, second: &ConditionClause) -> BuildError {
        let word = |c: &ConditionClause| {
            if c.unless {
                Clause::Unless
            } else {
                Clause::When
            }
        };
        let (a, b) = (word(first), word(second));
        let help = match (a, b) {
            (Clause::When, Clause::Unless) => {
                "join them into one condition: `when A and not (B)`".to_string()
            }
            (Clause::When, Clause::When) => {
                "join them into one condition: `when A and B`".to_string()
            }
            (Clause::Unless, Clause::When) => {
                "join them into one condition: `when B and not (A)`".to_string()
            }
            (Clause::Unless, Clause::Unless) => {
                "join them into one condition: `unless A or B`".to_string()
            }
        };
        BuildError::new(
            codes::PARSE_MISPLACED_CLAUSE,
            second.keyword,
            format!("a rule has one condition, but `{b}` starts a second one after `{a}`"),
            help,
        )
        .label("second condition")
    }

    /// `tainted`, `tainted(by: [...])` or `tainted(ignore: [...])`.
    fn tainted(&self, pair: Pair<'_, Rule>) -> Result<Cond> {
        let span = self.span(&pair);
        let usage = format!(
            "write `{0}`, `{0}({1}: [\"web\"])` (tainted by one of these servers) or `{0}({2}: [\"docs\"])` (by any server but these)",
            Predicate::Tainted,
            TaintedArg::By,
            TaintedArg::Ignore
        );
        let bad = |at: Span, message: String| {
            BuildError::new(codes::PARSE_BAD_TAINTED, at, message, usage.clone())
        };
        let mut ignore = Vec::new();
        let mut by = None;
        let mut seen = false;
        for arg in pair
            .into_inner()
            .filter(|p| p.as_rule() == Rule::tainted_arg)
        {
            let arg_span = self.span(&arg);
            if seen {
                return Err(bad(
                    arg_span,
                    format!("`{}` takes one argument", Predicate::Tainted),
                ));
            }
            seen = true;
            let mut parts = arg.into_inner();
            let (Some(first), value) = (parts.next(), parts.next()) else {
                return Err(bad(arg_span, "an empty argument".to_string()));
            };
            let (name, value) = match (first.as_rule(), value) {
                (Rule::ident, Some(value)) => (first, value),
                (Rule::ident, None) => {
                    return Err(bad(
                        arg_span,
                        format!("`{}({})` names no list", Predicate::Tainted, first.as_str()),
                    ))
                }
                _ => {
                    return Err(bad(
                        arg_span,
                        format!(
                            "`{}` takes a named list, not `{}` alone",
                            Predicate::Tainted,
                            first.as_str()
                        ),
                    )
                    .label("no name"))
                }
            };
            let Some(which) = TaintedArg::from_name(name.as_str()) else {
                return Err(bad(
                    self.span(&name),
                    format!(
                        "`{}` takes no argument `{}`",
                        Predicate::Tainted,
                        name.as_str()
                    ),
                ));
            };
            let servers = self.string_list(&value).ok_or_else(|| {
                bad(
                    self.span(&value),
                    format!("`{which}` takes a list of server ids as strings"),
                )
            })??;
            match which {
                TaintedArg::Ignore => ignore = servers,
                TaintedArg::By => by = Some(servers),
            }
        }
        Ok(Cond::Tainted { ignore, by, span })
    }

    /// A literal that is a list of strings: its strings, decoded; `None` if
    /// it is another value.
    fn string_list(&self, pair: &Pair<'_, Rule>) -> Option<Result<Vec<Spanned<String>>>> {
        if pair.as_rule() == Rule::name_ref {
            return Some(Ok(vec![self.name_use(pair)]));
        }
        let inner = pair.clone().into_inner().next()?;
        if inner.as_rule() != Rule::list {
            return None;
        }
        let mut out = Vec::new();
        for item in inner.into_inner() {
            let value = item.clone().into_inner().next()?;
            if value.as_rule() != Rule::string {
                return None;
            }
            out.push(match self.string(&value) {
                Ok(s) => Spanned::new(s, self.span(&value)),
                Err(e) => return Some(Err(e)),
            });
        }
        Some(Ok(out))
    }

    fn condition_clause(&self, pair: Pair<'_, Rule>) -> Result<ConditionClause> {
        let span = self.span(&pair);
        let mut unless = false;
        let mut keyword = span;
        let mut condition = None;
        for inner in pair.into_inner() {
            match inner.as_rule() {
                Rule::kw_when => keyword = self.span(&inner),
                Rule::kw_unless => {
                    unless = true;
                    keyword = self.span(&inner);
                }
                Rule::mistaken_clause => {
                    let word = MistakenClause::from_name(inner.as_str())
                        .ok_or_else(|| self.unknown_word(&inner))?;
                    let meant = word.meant();
                    return Err(BuildError::new(
                        codes::PARSE_MISPLACED_CLAUSE,
                        self.span(&inner),
                        format!("a condition starts with `{meant}`, not `{word}`"),
                        format!("write `{meant}` instead of `{word}`"),
                    )
                    .label("not a keyword"));
                }
                Rule::condition => condition = Some(self.condition(inner)?),
                _ => {}
            }
        }
        let condition = condition.ok_or((span, "a condition is missing".to_string()))?;
        Ok(ConditionClause {
            unless,
            keyword,
            condition,
        })
    }

    /// `condition` (or) and `conjunction` (and): a list, or its one member.
    fn condition(&self, pair: Pair<'_, Rule>) -> Result<Cond> {
        let span = self.span(&pair);
        let is_or = pair.as_rule() == Rule::condition;
        let mut terms = pair
            .into_inner()
            .filter(|p| matches!(p.as_rule(), Rule::conjunction | Rule::negation));
        let term = |p: Pair<'_, Rule>| match p.as_rule() {
            Rule::conjunction => self.condition(p),
            _ => self.negation(p),
        };
        let first = terms
            .next()
            .ok_or_else(|| BuildError::from((span, "empty condition".to_string())))?;
        let Some(second) = terms.next() else {
            // One term, the common case: no list to build.
            return term(first);
        };
        let mut parts = vec![term(first)?, term(second)?];
        for p in terms {
            parts.push(term(p)?);
        }
        Ok(if is_or {
            Cond::Or(parts, span)
        } else {
            Cond::And(parts, span)
        })
    }

    /// `not* primary`. `not not X` means `X` (also for a failed predicate),
    /// so only the parity of the `not`s is kept.
    fn negation(&self, pair: Pair<'_, Rule>) -> Result<Cond> {
        let span = self.span(&pair);
        let mut nots = 0usize;
        let mut primary = None;
        for inner in pair.into_inner() {
            match inner.as_rule() {
                Rule::kw_not => nots += 1,
                _ => primary = Some(self.primary(inner)?),
            }
        }
        let primary = primary.ok_or((span, "a condition is missing".to_string()))?;
        Ok(if nots % 2 == 1 {
            Cond::Not(Box::new(primary), span)
        } else {
            primary
        })
    }

    fn primary(&self, pair: Pair<'_, Rule>) -> Result<Cond> {
        let span = self.span(&pair);
        match pair.as_rule() {
            Rule::group => {
                let inner = pair
                    .into_inner()
                    .next()
                    .ok_or((span, "empty parentheses".to_string()))?;
                self.condition(inner)
            }
            Rule::tainted => self.tainted(pair),
            Rule::exists_test => {
                let selector = pair
                    .into_inner()
                    .find(|p| p.as_rule() == Rule::selector)
                    .ok_or((span, "`exists` needs a selector".to_string()))?;
                Ok(Cond::Exists {
                    selector: self.selector(selector)?,
                    span,
                })
            }
            Rule::test => self.test(pair),
            _ => Err((span, "a condition is missing".to_string()).into()),
        }
    }

    fn test(&self, pair: Pair<'_, Rule>) -> Result<Cond> {
        let span = self.span(&pair);
        let mut inner = pair.into_inner();
        let selector = inner
            .next()
            .ok_or((span, "a test needs a selector".to_string()))?;
        let selector = self.selector(selector)?;
        let Some(test) = inner.next() else {
            return Ok(Cond::Bare(selector));
        };
        if test.as_rule() == Rule::unknown_test {
            let mut parts = test.into_inner();
            let (Some(word), Some(value)) = (parts.next(), parts.next()) else {
                return Err((span, "incomplete test".to_string()).into());
            };
            return Ok(Cond::UnknownTest {
                selector,
                word: self.spanned_str(&word),
                value: self.span(&value),
                span,
            });
        }
        if test.as_rule() == Rule::shell_test {
            return self.shell_test(selector, test, span);
        }
        let mut parts = test.into_inner();
        let first = parts.next();
        let second = parts.next();
        match (first, second) {
            (Some(op), Some(value)) if op.as_rule() == Rule::compare_op => {
                let op_node =
                    CompareOp::from_name(op.as_str()).ok_or_else(|| self.unknown_word(&op))?;
                Ok(Cond::Compare {
                    selector,
                    op: Spanned::new(op_node, self.span(&op)),
                    value: Spanned::new(self.literal(&value)?, self.span(&value)),
                    span,
                })
            }
            (Some(kw), Some(value)) => {
                let word =
                    TestWord::from_name(kw.as_str()).ok_or_else(|| self.unknown_word(&kw))?;
                match word {
                    TestWord::In => Ok(Cond::In {
                        selector,
                        list: Spanned::new(
                            if value.as_rule() == Rule::name_ref {
                                Value::String(self.name_use(&value).node)
                            } else {
                                self.literal(&value)?
                            },
                            self.span(&value),
                        ),
                        span,
                    }),
                    TestWord::Matches => Ok(Cond::Matches {
                        selector,
                        regex: Spanned::new(self.regex(&value)?, self.span(&value)),
                        span,
                    }),
                    TestWord::Inside | TestWord::Escapes => Ok(Cond::Path {
                        selector,
                        inside: word == TestWord::Inside,
                        root: Spanned::new(self.string_or_name(&value)?, self.span(&value)),
                        span,
                    }),
                }
            }
            _ => Err((span, "incomplete test".to_string()).into()),
        }
    }

    fn selector(&self, pair: Pair<'_, Rule>) -> Result<SelectorAst> {
        let span = self.span(&pair);
        let mut root = None;
        let mut steps = Vec::new();
        for inner in pair.into_inner() {
            match inner.as_rule() {
                Rule::ident => root = Some(self.spanned_str(&inner)),
                Rule::step => {
                    let step_span = self.span(&inner);
                    let Some(part) = inner.into_inner().next() else {
                        continue;
                    };
                    let step = match part.as_rule() {
                        Rule::index => Step::Index(part.as_str().parse().map_err(|_| {
                            (
                                step_span,
                                format!("list index `{}` is too large", part.as_str()),
                            )
                        })?),
                        Rule::string => Step::Key(self.string(&part)?),
                        _ => Step::Key(part.as_str().to_string()),
                    };
                    steps.push(Spanned::new(step, step_span));
                }
                _ => {}
            }
        }
        let root = root.ok_or((span, "a selector needs a name".to_string()))?;
        Ok(SelectorAst { root, steps, span })
    }

    fn literal(&self, pair: &Pair<'_, Rule>) -> Result<Value> {
        let span = self.span(pair);
        let inner = if pair.as_rule() == Rule::literal {
            pair.clone()
                .into_inner()
                .next()
                .ok_or((span, "a value is missing".to_string()))?
        } else {
            pair.clone()
        };
        match inner.as_rule() {
            Rule::string => Ok(Value::String(self.string(&inner)?)),
            Rule::number => self.number(&inner),
            Rule::kw_true => Ok(Value::Bool(true)),
            Rule::kw_false => Ok(Value::Bool(false)),
            Rule::kw_null => Ok(Value::Null),
            Rule::list => inner
                .into_inner()
                .map(|p| self.literal(&p))
                .collect::<Result<Vec<_>>>()
                .map(Value::Array),
            Rule::object => {
                let mut map = serde_json::Map::new();
                for member in inner.into_inner() {
                    let mut kv = member.into_inner();
                    if let (Some(k), Some(v)) = (kv.next(), kv.next()) {
                        map.insert(self.string(&k)?, self.literal(&v)?);
                    }
                }
                Ok(Value::Object(map))
            }
            _ => Err((span, "a value is missing".to_string()).into()),
        }
    }

    /// A JSON string literal, decoded.
    fn string(&self, pair: &Pair<'_, Rule>) -> Result<String> {
        let literal = pair.as_str();
        // The grammar has checked the literal: without a `\\` its body is
        // the string itself.
        if let Some(body) = literal
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .filter(|body| !body.contains('\\'))
        {
            return Ok(body.to_string());
        }
        serde_json::from_str::<String>(literal)
            .map_err(|e| (self.span(pair), format!("bad string: {e}")).into())
    }

    /// A number token, read loosely by the grammar, checked as JSON.
    fn number(&self, pair: &Pair<'_, Rule>) -> Result<Value> {
        let text = pair.as_str();
        let span = self.span(pair);
        let json_form = text.strip_prefix('-').unwrap_or(text);
        let well_formed = {
            let digits = json_form.split(['.', 'e', 'E']).next().unwrap_or("");
            !(digits.len() > 1 && digits.starts_with('0'))
        };
        match serde_json::from_str::<Value>(text) {
            Ok(value @ Value::Number(_)) if well_formed => Ok(value),
            Ok(_) | Err(_) => {
                let why = match serde_json::from_str::<Value>(text) {
                    Err(e) if e.to_string().contains("out of range") => {
                        " (it is too large)".to_string()
                    }
                    _ => String::new(),
                };
                Err(BuildError::new(
                    codes::PARSE_BAD_NUMBER,
                    span,
                    format!("`{text}` is not a number{why}"),
                    "write numbers as JSON does: `12`, `-3`, `1.5`, `1e6` (no leading zeros, digits on both sides of `.` and after `e`)",
                )
                .label("not a number"))
            }
        }
    }

    /// A regex literal's source, or the error for flags after its closing
    /// `/` (`/force/i`).
    fn regex(&self, pair: &Pair<'_, Rule>) -> Result<String> {
        let literal = pair.as_str();
        let close = literal.rfind('/').unwrap_or(literal.len());
        let flags = &literal[(close + 1).min(literal.len())..];
        if flags.is_empty() {
            return Ok(regex_source(literal));
        }
        let body = &literal[..close + 1];
        let inner = body
            .strip_prefix('/')
            .and_then(|b| b.strip_suffix('/'))
            .unwrap_or(body);
        let span = self.span(pair);
        let flags_at = Span::new(span.start + close + 1, span.end);
        Err(BuildError::new(
            codes::PARSE_REGEX_FLAGS,
            flags_at,
            format!("flags after a regex are not read: `{flags}` follows `{body}`"),
            format!("put them inside, at the start: `/(?{flags}){inner}/`"),
        )
        .label("flags go inside"))
    }
}

/// `/re\/x/` -> `re/x`: drops the delimiters and unescapes `\/`; every other
/// escape is left for the regex engine.
pub(super) fn regex_source(literal: &str) -> String {
    let body = literal
        .strip_prefix('/')
        .and_then(|s| s.strip_suffix('/'))
        .unwrap_or(literal);
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('/') => out.push('/'),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::regex_source;

    #[test]
    fn regex_slashes_are_unescaped_and_other_escapes_kept() {
        assert_eq!(regex_source(r"/^a\/b\s+\\/"), r"^a/b\s+\\");
    }
}
