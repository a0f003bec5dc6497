//! pest pairs to AST nodes. Spans are shifted by `base`, the offset in the
//! file of the text the grammar was run on.

use pest::iterators::Pair;
use serde_json::Value;

use super::ast::*;
use super::keywords::{KindWord, TestWord, Visibility};
use super::Rule;

/// A problem found while turning pairs into nodes (the grammar accepted the
/// text, but a value in it is out of range).
pub(super) type BuildError = (Span, String);

pub(super) struct Builder {
    pub base: usize,
}

type Result<T> = std::result::Result<T, BuildError>;

impl Builder {
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
                Rule::setting => return Ok(Some(Item::Setting(self.setting(inner)?))),
                Rule::tools_block => return self.tools_block(inner).map(|t| Some(Item::Tools(t))),
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
                Rule::condition_clause => condition = Some(self.condition_clause(inner)?),
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

    fn target(&self, pair: Pair<'_, Rule>) -> Result<TargetAst> {
        let span = self.span(&pair);
        let mut inner = pair.into_inner();
        let first = inner.next().ok_or((span, "empty target".to_string()))?;
        if first.as_rule() == Rule::any_target {
            return Ok(TargetAst::Any(span));
        }
        let pattern = self.string(&first)?;
        match inner.next() {
            Some(regex) => Ok(TargetAst::Regex {
                server: Spanned::new(pattern, self.span(&first)),
                regex: Spanned::new(regex_source(regex.as_str()), self.span(&regex)),
                span,
            }),
            // The string's own span: the target's may run on over the
            // blanks pest skipped looking for a `~`.
            None => Ok(TargetAst::Pattern(Spanned::new(pattern, self.span(&first)))),
        }
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
        let mut parts = Vec::new();
        for inner in pair.into_inner() {
            match inner.as_rule() {
                Rule::conjunction => parts.push(self.condition(inner)?),
                Rule::negation => parts.push(self.negation(inner)?),
                _ => {}
            }
        }
        match (parts.len(), is_or) {
            (1, _) => parts.pop().ok_or((span, "empty condition".to_string())),
            (_, true) => Ok(Cond::Or(parts, span)),
            (_, false) => Ok(Cond::And(parts, span)),
        }
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
            Rule::tainted => {
                let mut ignore = Vec::new();
                for list in pair
                    .into_inner()
                    .filter(|p| p.as_rule() == Rule::string_list)
                {
                    for s in list.into_inner() {
                        ignore.push(Spanned::new(self.string(&s)?, self.span(&s)));
                    }
                }
                Ok(Cond::Tainted { ignore, span })
            }
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
            _ => Err((span, "a condition is missing".to_string())),
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
            let word = test
                .into_inner()
                .find(|p| p.as_rule() == Rule::ident)
                .map(|w| self.spanned_str(&w))
                .ok_or((span, "incomplete test".to_string()))?;
            return Ok(Cond::UnknownTest {
                selector,
                word,
                span,
            });
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
                        list: Spanned::new(self.literal(&value)?, self.span(&value)),
                        span,
                    }),
                    TestWord::Matches => Ok(Cond::Matches {
                        selector,
                        regex: Spanned::new(regex_source(value.as_str()), self.span(&value)),
                        span,
                    }),
                    TestWord::Inside | TestWord::Escapes => Ok(Cond::Path {
                        selector,
                        inside: word == TestWord::Inside,
                        root: Spanned::new(self.string(&value)?, self.span(&value)),
                        span,
                    }),
                }
            }
            _ => Err((span, "incomplete test".to_string())),
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
            Rule::number => serde_json::from_str(inner.as_str())
                .map_err(|e| (span, format!("bad number `{}`: {e}", inner.as_str()))),
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
            _ => Err((span, "a value is missing".to_string())),
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
            .map_err(|e| (self.span(pair), format!("bad string: {e}")))
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
