//! pest errors to diagnostics, with friendly names for grammar rules.

use crate::diagnostics::codes;
use std::collections::BTreeSet;
use std::sync::Arc;

use pest::error::{Error, ErrorVariant, InputLocation};

use super::lex::{Kind, Lexer, Token};
use super::scan::token_at;
use super::{Rule, Span};
use crate::diagnostics::{Diagnostic, SourceFile};

pub(super) const SYNTAX: &str = codes::PARSE_SYNTAX;

/// What a user calls the thing a grammar rule stands for.
fn rule_name(grammar_rule: Rule) -> Option<&'static str> {
    Some(match grammar_rule {
        Rule::EOI => "the end of the file",
        Rule::policy | Rule::policy_open | Rule::kw_policy => "`policy`",
        Rule::ident | Rule::setting_name => "a name",
        Rule::item | Rule::rule | Rule::setting | Rule::effect => "a rule or a setting",
        Rule::setting_value => "a setting value",
        Rule::tools_block | Rule::tools_open | Rule::kw_tools => "`tools`",
        Rule::visibility_entry | Rule::visibility_kind => "`include` or `exclude`",
        Rule::rule_id => "a rule id",
        Rule::target_kind => "`resource` or `prompt`",
        Rule::target | Rule::any_target => {
            "a target (`\"server/tool\"`, `*` or `\"server\" ~ /regex/`)"
        }
        Rule::condition_clause => "`when` or `unless`",
        Rule::kw_when | Rule::kw_unless => "`when` or `unless`",
        Rule::condition
        | Rule::conjunction
        | Rule::negation
        | Rule::group
        | Rule::test
        | Rule::unknown_test
        | Rule::selector => "a condition",
        Rule::tainted | Rule::kw_tainted | Rule::tainted_arg => "`tainted`",
        Rule::mistaken_clause => "`when` or `unless`",
        Rule::exists_test | Rule::kw_exists => "`exists`",
        Rule::comparison | Rule::compare_op => "a comparison (`==`, `!=`, `<`, ...)",
        Rule::membership | Rule::kw_in => "`in`",
        Rule::regex_match | Rule::kw_matches => "`matches`",
        Rule::path_test | Rule::kw_inside | Rule::kw_escapes => "`inside` or `escapes`",
        Rule::let_item | Rule::kw_let => "`let`",
        Rule::limit_rule | Rule::kw_limit => "`limit`",
        Rule::limit_count => "a count (a whole number)",
        Rule::kw_per => "`per`",
        Rule::limit_word => "`second`, `minute`, `hour`, `day`, `principal` or `session`",
        Rule::name_ref => "a name given by `let`",
        Rule::shell_test | Rule::kw_runs | Rule::kw_only | Rule::kw_writes => {
            "`runs only`, `runs` or `writes inside`"
        }
        Rule::step => "a selector step (`.key`, `[0]`, `[\"key\"]`)",
        Rule::index => "a list index",
        Rule::literal
        | Rule::number
        | Rule::kw_true
        | Rule::kw_false
        | Rule::kw_null
        | Rule::object
        | Rule::member => "a value",
        Rule::list | Rule::string_list => "a list `[...]`",
        Rule::string => "a string",
        Rule::regex => "a regex `/.../`",
        Rule::kw_and => "`and`",
        Rule::kw_or => "`or`",
        Rule::kw_not => "`not`",
        // Pieces too small to name: the rule around them is named instead.
        Rule::file
        | Rule::item_end
        | Rule::setting_word
        | Rule::reserved_item_word
        | Rule::effect_word
        | Rule::test_word
        | Rule::name_keyword
        | Rule::WHITESPACE
        | Rule::not_newline
        | Rule::primary
        | Rule::string_char
        | Rule::string_escape
        | Rule::regex_char
        | Rule::regex_char_or_slash
        | Rule::ident_char
        | Rule::number_char => return None,
    })
}

/// What a user calls a literal token the grammar tried: only punctuation
/// that closes or separates says more than the rule names do.
fn token_name(token: &str) -> Option<String> {
    matches!(token, "," | "}" | ")" | "]" | ":" | "(").then(|| format!("`{token}`"))
}

/// Drops expectations that only add noise next to more telling ones.
fn prune(expected: &mut BTreeSet<String>) {
    if expected.contains("a value") {
        expected.remove("a string");
        expected.remove("a list `[...]`");
    }
    if expected.len() > 2 {
        expected.remove("a name");
        expected.remove("the end of the file");
    }
    if expected.remove("`when` or `unless`") {
        expected.insert("`when`".to_string());
        expected.insert("`unless`".to_string());
    }
}

/// The position the error is reported at, in the text the grammar ran on.
pub(super) fn error_offset(error: &Error<Rule>) -> usize {
    match error.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    }
}

/// One pest error (on `text[base..]`) as a diagnostic on the whole file.
pub(super) fn syntax_error(
    source: &Arc<SourceFile>,
    base: usize,
    error: &Error<Rule>,
) -> Diagnostic {
    let text = &source.text;
    let at = base + error_offset(error);
    let mut expected = BTreeSet::new();
    if let ErrorVariant::ParsingError { positives, .. } = &error.variant {
        expected.extend(
            positives
                .iter()
                .filter_map(|r| rule_name(*r))
                .map(String::from),
        );
    }
    if let Some(attempts) = error.parse_attempts() {
        for token in attempts.expected_tokens() {
            // Literal tokens display as themselves; ranges and built-ins
            // (`a..z`, `BUILTIN_RULE`) say nothing a user can act on.
            let token = token.to_string();
            if !token.contains("..") && token != "BUILTIN_RULE" {
                expected.extend(token_name(&token));
            }
        }
    }
    if let ErrorVariant::CustomError { message } = &error.variant {
        return Diagnostic::error(source, SYNTAX, Span::new(at, at), message.clone())
            .with_label("the parser stopped here")
            .with_help("simplify this entry");
    }
    if let Some(unclosed) = unclosed_string(source, at) {
        return unclosed;
    }
    prune(&mut expected);
    let expected: Vec<String> = expected.into_iter().collect();
    let expected_text = match expected.as_slice() {
        [] => "something else".to_string(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    };
    let found = found_token(text, at);
    if let Some(bad) = found.filter(|t| t.starts_with('"')) {
        if let Err(e) = serde_json::from_str::<String>(bad) {
            let why = e.to_string();
            let why = why.split(" at line").next().unwrap_or(&why).to_string();
            return Diagnostic::error(
                source,
                SYNTAX,
                Span::new(at, at + bad.len()),
                format!("bad string {bad}: {why}"),
            )
            .with_label("not a valid string")
            .with_help(r#"strings are JSON strings: escape only \" \\ \/ \b \f \n \r \t and \uXXXX, and close them on the same line"#);
        }
    }
    let (message, span) = match found {
        // `policy p { allow }`: the rule broke off before its target.
        Some("}") if expected.iter().any(|e| e.starts_with("a target")) => (
            "a rule with no target: give it one before the `}`".to_string(),
            Span::new(at, at + 1),
        ),
        Some(tok) => (
            format!("unexpected `{tok}`: expected {expected_text}"),
            Span::new(at, at + tok.len()),
        ),
        None => (
            format!("unexpected end of file: expected {expected_text}"),
            Span::new(at, at),
        ),
    };
    Diagnostic::error(source, SYNTAX, span, message)
        .with_label(format!("expected {expected_text}"))
        .with_help(help_for(&expected))
}

/// Whether a string token as the lexer cut it ends with its own closing
/// quote (the lexer ends an unclosed one at the end of its line).
fn is_closed_string(token: &str) -> bool {
    let mut chars = token.chars().skip(1);
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '"' => return chars.next().is_none(),
            _ => {}
        }
    }
    false
}

/// A string left open, when it is what broke the entry: told as such, at
/// the quote that opened it, rather than as whatever the parser met next
/// (a `/` inside what was meant as the next string, or the line's end).
///
/// Two shapes: the string at the error runs to the end of its line; or, on
/// the error's line, a string is glued to the word or `/` after it
/// (`"a/b, "c/d"`: the quote meant to open `"c/d"` closed the first string
/// instead) and the line ends inside a string.
fn unclosed_string(source: &Arc<SourceFile>, at: usize) -> Option<Diagnostic> {
    let text = &source.text;
    let line_start = text.get(..at)?.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text.get(at..)?.find('\n').map_or(text.len(), |i| at + i);
    let tokens: Vec<Token> = Lexer::at(text, line_start)
        .take_while(|t| t.span.start < line_end)
        .collect();
    let piece = |t: &Token| text.get(t.span.start..t.span.end).unwrap_or("");
    let open = |t: &Token| t.kind == Kind::Str && !is_closed_string(piece(t));
    let opened_here = |start: usize, message: String, help: &str| {
        Diagnostic::error(source, SYNTAX, Span::new(start, start + 1), message)
            .with_label("opened here")
            .with_help(help.to_string())
    };
    if let Some(runaway) = tokens.iter().find(|t| open(t) && t.span.start <= at) {
        return Some(opened_here(
            runaway.span.start,
            format!(
                "a string is not closed: `{}` runs to the end of the line",
                piece(runaway).trim_end()
            ),
            r#"end it with `"` on the same line (a string cannot hold a line break: write \n)"#,
        ));
    }
    if !tokens.last().is_some_and(open) {
        return None;
    }
    // What may follow a string with no blank between: a separator or a
    // closing bracket. A word or a `/` glued to its closing quote was meant
    // to be inside the next string.
    let may_follow = |t: &Token| {
        t.kind == Kind::Punct && matches!(piece(t), "," | "]" | ")" | "}" | ":" | "~" | ";")
    };
    let glued = tokens.windows(2).find(|pair| {
        pair[0].kind == Kind::Str
            && matches!(pair[1].kind, Kind::Word | Kind::Punct)
            && !may_follow(&pair[1])
            && pair[0].span.end == pair[1].span.start
            && pair[0].span.start < at
    })?;
    Some(opened_here(
        glued[0].span.start,
        format!(
            "a string is not closed: `{}` ends at the quote meant to open the next one",
            piece(&glued[0])
        ),
        r#"close each string with its own `"`, as in "server/a", "server/b" or inside "/srv""#,
    ))
}

/// Fixed advice for the commonest ways an entry breaks off.
fn help_for(expected: &[String]) -> &'static str {
    let has = |needle: &str| expected.iter().any(|e| e.contains(needle));
    if has("a count") {
        "a budget is `limit ID: TARGET, ... COUNT per UNIT`, such as `limit sends: \"*/send_*\" 20 per hour`"
    } else if has("a value") {
        "write a JSON value: a string in double quotes, a number, true, false, null or a list"
    } else if has("a condition") {
        "a condition is a test such as `args.path inside \"/srv\"`, `annotation.read_only` or `tainted`, joined with `and`, `or`, `not`"
    } else if has("a target") {
        "targets are strings such as \"server/tool\", \"tool\", \"server/get_*\", or `*`, separated by commas"
    } else if has("`when`") {
        "separate targets with commas, and start a condition with `when` or `unless`"
    } else if has("`policy`") {
        "every rule and setting belongs inside `policy NAME { ... }`"
    } else {
        "see the language reference in docs/language.md"
    }
}

/// The token at `at` as the user wrote it: a whole string literal, a word,
/// or one character.
fn found_token(text: &str, at: usize) -> Option<&str> {
    let rest = text.get(at..)?;
    if let Some(body) = rest.strip_prefix('"') {
        let end = body
            .find(['"', '\n'])
            .map_or(rest.len(), |i| i + 2)
            .min(rest.len());
        return rest.get(..end);
    }
    token_at(text, at)
}
