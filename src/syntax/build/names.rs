//! Building `let` items, the places where a `let` name stands for a value,
//! and the shell command tests (`runs`, `runs only`, `writes inside`).

use pest::iterators::Pair;

use super::{BuildError, Builder, Result};
use crate::diagnostics::codes;
use crate::syntax::ast::*;
use crate::syntax::Rule;

impl Builder {
    /// A `let` name where a value goes: the name, its place recorded.
    pub(super) fn name_use(&self, pair: &Pair<'_, Rule>) -> Spanned<String> {
        let named = self.spanned_str(pair);
        self.names.borrow_mut().push(named.span);
        named
    }

    /// A string, or a `let` name standing for one.
    pub(super) fn string_or_name(&self, pair: &Pair<'_, Rule>) -> Result<String> {
        if pair.as_rule() == Rule::name_ref {
            return Ok(self.name_use(pair).node);
        }
        self.string(pair)
    }

    /// `let NAME = VALUE`: the value a string or a list of strings.
    pub(in crate::syntax) fn let_item(&self, pair: Pair<'_, Rule>) -> Result<LetAst> {
        let span = self.span(&pair);
        let mut name = None;
        let mut value = None;
        for inner in pair.into_inner() {
            match inner.as_rule() {
                Rule::ident => name = Some(self.spanned_str(&inner)),
                Rule::literal => {
                    let value_span = self.span(&inner);
                    let first = inner.clone().into_inner().next();
                    let read = match first.as_ref().map(Pair::as_rule) {
                        Some(Rule::string) => match &first {
                            Some(s) => Some(LetValue::Str(self.string(s)?)),
                            None => None,
                        },
                        _ => self.string_list(&inner).transpose()?.map(LetValue::List),
                    };
                    let read = read.ok_or_else(|| {
                        BuildError::new(
                            codes::PARSE_BAD_LET,
                            value_span,
                            "a `let` names a string or a list of strings".to_string(),
                            "write `let NAME = \"text\"` or `let NAME = [\"a\", \"b\"]`",
                        )
                        .label("not a string or a list of strings")
                    })?;
                    value = Some(Spanned::new(read, value_span));
                }
                _ => {}
            }
        }
        let (Some(name), Some(value)) = (name, value) else {
            return Err((span, "a `let` needs a name and a value".to_string()).into());
        };
        // A name must be usable where a value goes: not a word of the
        // language.
        let usable =
            <crate::syntax::Grammar as pest::Parser<Rule>>::parse(Rule::name_ref, &name.node)
                .ok()
                .and_then(|mut p| p.next())
                .is_some_and(|p| p.as_str().len() == name.node.len());
        if !usable {
            return Err(BuildError::new(
                codes::PARSE_BAD_LET,
                name.span,
                format!(
                    "`{}` is a word of the language and cannot name a value",
                    name.node
                ),
                format!("choose another name, such as `my_{}`", name.node),
            )
            .label("a keyword"));
        }
        Ok(LetAst { name, value, span })
    }

    /// `runs [only] [...]` or `writes inside "ROOT"` after `selector`.
    pub(super) fn shell_test(
        &self,
        selector: SelectorAst,
        test: Pair<'_, Rule>,
        span: Span,
    ) -> Result<Cond> {
        let mut only = false;
        let mut writes = false;
        for part in test.into_inner() {
            match part.as_rule() {
                Rule::kw_only => only = true,
                Rule::kw_writes => writes = true,
                Rule::string | Rule::name_ref if writes => {
                    return Ok(Cond::Writes {
                        selector,
                        root: Spanned::new(self.string_or_name(&part)?, self.span(&part)),
                        span,
                    });
                }
                Rule::literal | Rule::name_ref => {
                    let list = self.span(&part);
                    let word = if only { "runs only" } else { "runs" };
                    let patterns = self.string_list(&part).ok_or_else(|| {
                        BuildError::new(
                            codes::PARSE_SYNTAX,
                            list,
                            format!("`{word}` takes a list of command patterns"),
                            format!(
                                "write the patterns as strings in brackets: `{word} [\"git status\", \"git diff *\"]`"
                            ),
                        )
                        .label("not a list of strings")
                    })??;
                    return Ok(Cond::Runs {
                        selector,
                        only,
                        patterns,
                        list,
                        span,
                    });
                }
                _ => {}
            }
        }
        Err((span, "incomplete test".to_string()).into())
    }
}
