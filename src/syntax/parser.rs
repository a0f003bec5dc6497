//! The parse driver: runs the grammar one item at a time so that a bad item
//! is reported and skipped, and the rest of the file is still parsed.

use crate::diagnostics::codes;
use std::sync::Arc;

use pest::Parser as _;

use super::ast::*;
use super::build::{BuildError, Builder};
use super::errors::{error_offset, syntax_error, SYNTAX};
use super::scan::{next_line_start, skip_blank, too_deep, word_at};
use super::{Grammar, Rule};
use crate::diagnostics::{Diagnostic, SourceFile};

/// Files larger than this are refused before parsing.
pub const MAX_FILE_BYTES: usize = 8 * 1024 * 1024;
/// Brackets (`(`, `[`, `{`) may nest this deep.
pub const MAX_NESTING: usize = 64;

/// A builder's error as a diagnostic.
fn build_error(source: &Arc<SourceFile>, e: BuildError) -> Diagnostic {
    Diagnostic::error(source, e.code, e.span, e.message)
        .with_label(e.label)
        .with_help(e.help)
}

/// Whether `word` begins an item (or closes the policy): where the parser
/// resumes after an error.
fn is_item_word(word: &str) -> bool {
    word == "}" || super::keywords::begins_item(word)
}

/// Parses a whole file: the policies that could be read and every syntax
/// error found on the way.
pub fn parse(source: &Arc<SourceFile>) -> (File, Vec<Diagnostic>) {
    let mut parser = Driver {
        source,
        text: &source.text,
        diagnostics: Vec::new(),
        one_pass: true,
        name_uses: Vec::new(),
    };
    let file = parser.file();
    (file, parser.diagnostics)
}

/// Parses item by item only, without first trying the whole file in one
/// pass: the recovery path, for the tests that check it reads a
/// well-formed file as the one pass does.
#[cfg(test)]
pub(super) fn parse_items(source: &Arc<SourceFile>) -> (File, Vec<Diagnostic>) {
    let mut parser = Driver {
        source,
        text: &source.text,
        diagnostics: Vec::new(),
        one_pass: false,
        name_uses: Vec::new(),
    };
    let file = parser.file();
    (file, parser.diagnostics)
}

struct Driver<'a> {
    source: &'a Arc<SourceFile>,
    text: &'a str,
    diagnostics: Vec<Diagnostic>,
    /// Whether to try the whole file in one pass before going item by item.
    one_pass: bool,
    /// Where `let` names stand for values, in text order.
    name_uses: Vec<Span>,
}

/// Parses again with pest's error detail on, which lists the literal tokens
/// it expected (`,`, `when`, ...). Off on the good path: it costs time.
fn detailed(entry: Rule, text: &str) -> Option<pest::error::Error<Rule>> {
    pest::set_error_detail(true);
    let result = Grammar::parse(entry, text).err();
    pest::set_error_detail(false);
    result
}

/// Whether `pos` is the first non-blank character of its line.
fn at_line_start(text: &str, pos: usize) -> bool {
    text[..pos]
        .bytes()
        .rev()
        .take_while(|b| *b != b'\n')
        .all(|b| b == b' ' || b == b'\t' || b == b'\r')
}

/// pest's `file` rule and the builder over the whole text: the file, if it
/// has no syntax error and every value in it builds.
pub(super) fn pest_whole_file(text: &str) -> Option<File> {
    let pair = Grammar::parse(Rule::file, text).ok()?.next()?;
    let builder = Builder::at(0);
    let mut file = File::default();
    for policy in pair.into_inner() {
        if policy.as_rule() == Rule::let_item {
            file.lets.push(builder.let_item(policy).ok()?);
            continue;
        }
        if policy.as_rule() != Rule::policy {
            continue;
        }
        let span = builder.span(&policy);
        let mut name = None;
        let mut items = Vec::new();
        for part in policy.into_inner() {
            match part.as_rule() {
                Rule::policy_open => name = builder.policy_open(part),
                Rule::item => items.push(builder.item(part).ok()??),
                _ => {}
            }
        }
        file.policies.push(PolicyAst {
            name: name?,
            items,
            span,
        });
    }
    file.name_uses = builder.take_names();
    Some(file)
}

impl Driver<'_> {
    fn file(&mut self) -> File {
        let mut file = File::default();
        if self.text.len() > MAX_FILE_BYTES {
            self.diagnostics.push(
                Diagnostic::error(
                    self.source,
                    codes::PARSE_FILE_TOO_LARGE,
                    Span::new(0, 0),
                    format!(
                        "the file is {} bytes, more than the {MAX_FILE_BYTES} a policy file may have",
                        self.text.len()
                    ),
                )
                .with_help("split the policies over several files"),
            );
            return file;
        }
        // What a reviewer sees must be what is parsed: hidden characters
        // and line breaks the grammar does not see are refused, and the
        // rest of the file is still read for its other errors.
        self.diagnostics.extend(super::hidden::check(self.source));
        if let Some(span) = too_deep(self.text, MAX_NESTING) {
            self.diagnostics.push(
                Diagnostic::error(
                    self.source,
                    codes::PARSE_TOO_DEEP,
                    span,
                    format!("brackets nest more than {MAX_NESTING} deep"),
                )
                .with_label("too deep from here")
                .with_help("flatten the condition: `and` and `or` take any number of terms"),
            );
            return file;
        }
        // The common case, a file without syntax errors, is read in one pass;
        // only a file with an error is driven item by item to report them all.
        if self.one_pass {
            if let Some(file) = pest_whole_file(self.text) {
                return file;
            }
        }
        let mut pos = 0;
        loop {
            pos = skip_blank(self.text, pos);
            if pos >= self.text.len() {
                break;
            }
            if word_at(self.text, pos) == "policy" {
                pos = self.policy(pos, &mut file);
            } else if word_at(self.text, pos) == "let" {
                pos = self.file_let(pos, &mut file);
            } else {
                let word = super::scan::token_at(self.text, pos).unwrap_or("");
                self.diagnostics.push(
                    Diagnostic::error(
                        self.source,
                        SYNTAX,
                        Span::new(pos, pos + word.len()),
                        format!("unexpected `{word}`: expected `policy` or `let`"),
                    )
                    .with_label("outside any policy")
                    .with_help("every rule and setting belongs inside `policy NAME { ... }`"),
                );
                pos = next_line_start(self.text, pos, |w| w == "policy");
            }
        }
        file.name_uses = std::mem::take(&mut self.name_uses);
        file
    }

    /// `let NAME = VALUE` outside any policy, at `pos`.
    fn file_let(&mut self, pos: usize, file: &mut File) -> usize {
        let restart = |w: &str| w == "policy" || w == "let";
        let pair = match Grammar::parse(Rule::let_item, &self.text[pos..]) {
            Ok(mut pairs) => pairs.next(),
            Err(e) => {
                let e = detailed(Rule::let_item, &self.text[pos..]).unwrap_or(e);
                self.diagnostics.push(syntax_error(self.source, pos, &e));
                return self.resume(pos, pos + error_offset(&e), restart);
            }
        };
        let Some(pair) = pair else {
            return next_line_start(self.text, pos, restart);
        };
        let builder = Builder::at(pos);
        let end = builder.span(&pair).end;
        match builder.let_item(pair) {
            Ok(item) => file.lets.push(item),
            Err(e) => self.diagnostics.push(build_error(self.source, e)),
        }
        end
    }

    /// Parses `policy NAME { ... }` at `pos`; returns where parsing goes on.
    fn policy(&mut self, pos: usize, file: &mut File) -> usize {
        let open = match Grammar::parse(Rule::policy_open, &self.text[pos..]) {
            Ok(mut pairs) => pairs.next(),
            Err(e) => {
                self.diagnostics.push(syntax_error(self.source, pos, &e));
                return next_line_start(self.text, pos, |w| w == "policy");
            }
        };
        let Some(open) = open else {
            return next_line_start(self.text, pos, |w| w == "policy");
        };
        let builder = Builder::at(pos);
        let open_span = builder.span(&open);
        let Some(name) = builder.policy_open(open) else {
            return open_span.end;
        };
        let mut items = Vec::new();
        let mut at = open_span.end;
        loop {
            at = skip_blank(self.text, at);
            let rest = &self.text[at..];
            if rest.is_empty() || word_at(self.text, at) == "policy" {
                self.unclosed(open_span, "policy", name.node.as_str());
                break;
            }
            if rest.starts_with('}') {
                at += 1;
                break;
            }
            if rest.starts_with(';') {
                at += 1;
                continue;
            }
            at = if word_at(self.text, at) == "tools" {
                self.tools_block(at, &mut items)
            } else {
                self.item(at, &mut items)
            };
        }
        file.policies.push(PolicyAst {
            name,
            items,
            span: Span::new(pos, at),
        });
        at
    }

    fn unclosed(&mut self, open: Span, what: &str, name: &str) {
        self.diagnostics.push(
            Diagnostic::error(
                self.source,
                codes::PARSE_UNCLOSED,
                open,
                format!("`{what} {name}` is never closed"),
            )
            .with_label("opened here")
            .with_help("add a `}` after its last entry"),
        );
    }

    /// Where to go on after an error at `error_at` in the item that starts at
    /// `start`.
    fn resume(&self, start: usize, error_at: usize, words: impl Fn(&str) -> bool) -> usize {
        let word = if self.text[error_at..].starts_with('}') {
            "}"
        } else {
            word_at(self.text, error_at)
        };
        // An entry cut short by the `}` that closes its block (`policy p {
        // allow }`) ends there: skipping to the next line would take the
        // `}` along and report the block as never closed as well.
        let closes_block = word == "}" && words(word);
        if error_at > start && (closes_block || at_line_start(self.text, error_at) && words(word)) {
            error_at
        } else {
            next_line_start(self.text, error_at.max(start), words)
        }
    }

    /// One rule or setting at `pos`.
    fn item(&mut self, pos: usize, items: &mut Vec<Item>) -> usize {
        let pair = match Grammar::parse(Rule::item, &self.text[pos..]) {
            Ok(mut pairs) => pairs.next(),
            Err(e) => {
                let e = detailed(Rule::item, &self.text[pos..]).unwrap_or(e);
                self.diagnostics.push(syntax_error(self.source, pos, &e));
                return self.resume(pos, pos + error_offset(&e), is_item_word);
            }
        };
        let Some(pair) = pair else {
            return next_line_start(self.text, pos, is_item_word);
        };
        let builder = Builder::at(pos);
        let end = builder.span(&pair).end;
        let built = builder.item(pair);
        self.name_uses.extend(builder.take_names());
        match built {
            Ok(Some(item)) => {
                let unknown_word = match &item {
                    Item::Setting(s) => !is_item_word(&s.name.node),
                    _ => false,
                };
                items.push(item);
                if unknown_word {
                    // A misspelt keyword (`alow "x" when ...`): the compiler names
                    // it; skip the rest of the entry rather than report its tail.
                    return next_line_start(self.text, pos, is_item_word).max(end);
                }
                end
            }
            Ok(None) => end,
            Err(e) => {
                self.diagnostics.push(build_error(self.source, e));
                end
            }
        }
    }

    /// `tools { include ...; exclude ... }` at `pos`.
    fn tools_block(&mut self, pos: usize, items: &mut Vec<Item>) -> usize {
        let open = match Grammar::parse(Rule::tools_open, &self.text[pos..]) {
            Ok(mut pairs) => pairs.next(),
            Err(e) => {
                self.diagnostics.push(syntax_error(self.source, pos, &e));
                return self.resume(pos, pos + error_offset(&e), is_item_word);
            }
        };
        let Some(open) = open else {
            return next_line_start(self.text, pos, is_item_word);
        };
        let open_span = Builder::at(pos).span(&open);
        let mut entries = Vec::new();
        let mut at = open_span.end;
        let entry_words = |w: &str| matches!(w, "include" | "exclude" | "}");
        loop {
            at = skip_blank(self.text, at);
            let rest = &self.text[at..];
            let word = word_at(self.text, at);
            if rest.is_empty() || (is_item_word(word) && word != "}") {
                self.unclosed(open_span, "tools", "{");
                break;
            }
            if rest.starts_with('}') {
                at += 1;
                break;
            }
            if rest.starts_with(';') {
                at += 1;
                continue;
            }
            match Grammar::parse(Rule::visibility_entry, rest) {
                Ok(mut pairs) => {
                    let Some(pair) = pairs.next() else { break };
                    let builder = Builder::at(at);
                    let end = builder.span(&pair).end;
                    let built = builder.visibility_entry(pair);
                    self.name_uses.extend(builder.take_names());
                    match built {
                        Ok(entry) => entries.push(entry),
                        Err(e) => self.diagnostics.push(build_error(self.source, e)),
                    }
                    at = end;
                }
                Err(e) => {
                    let e = detailed(Rule::visibility_entry, rest).unwrap_or(e);
                    self.diagnostics.push(syntax_error(self.source, at, &e));
                    at = self.resume(at, at + error_offset(&e), |w| {
                        entry_words(w) || is_item_word(w)
                    });
                }
            }
        }
        items.push(Item::Tools(ToolsBlock {
            entries,
            span: Span::new(pos, at),
        }));
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> (File, Vec<Diagnostic>) {
        parse(&SourceFile::new("t.mcppol", text))
    }

    #[test]
    fn the_language_page_example_parses() {
        let text = include_str!("../../tests/fixtures/ok/language_example.mcppol");
        let (file, diags) = parse_text(text);
        assert!(diags.is_empty(), "{:?}", diags);
        assert_eq!(file.policies.len(), 1);
        assert_eq!(file.policies[0].items.len(), 20);
    }

    #[test]
    fn every_bad_item_is_reported_and_the_rest_still_parses() {
        let text = "policy p {\n  deny \"a\" \"b\"\n  allow \"c\" when args.x ==\n  ask \"d\"\n}\n";
        let (file, diags) = parse_text(text);
        assert_eq!(diags.len(), 2, "{diags:?}");
        assert_eq!(file.policies[0].items.len(), 1);
    }

    #[test]
    fn unclosed_policy_is_named() {
        let (_, diags) = parse_text("policy p {\n deny \"x\"\n");
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].code, "mcppol::parse::unclosed");
    }

    #[test]
    fn not_not_keeps_parity() {
        let (file, diags) = parse_text("policy p { deny * when not not not tainted }");
        assert!(diags.is_empty());
        let Item::Rule(rule) = &file.policies[0].items[0] else {
            panic!("not a rule")
        };
        let cond = &rule.condition.as_ref().map(|c| &c.condition);
        assert!(
            matches!(cond, Some(Cond::Not(inner, _)) if matches!(**inner, Cond::Tainted { .. }))
        );
    }
}
