//! A hand-written parser for well-formed files: the fast path of
//! [`super::parse`].
//!
//! It accepts exactly the language of `grammar/mcppol.pest` (rule `file`)
//! and builds the same AST as the pest path (`build.rs`), node for node and
//! span for span. It is a direct transcription of the grammar as pest runs
//! it: ordered choice that commits to the first alternative that matches,
//! greedy repetition, and implicit white space and comments skipped between
//! the elements of a non-atomic rule (so a rule that ends in an optional or
//! repeated part that did not match ends after the blanks before it, as in
//! pest). It reports no errors: on anything it does not accept, or on a
//! value that does not build (a bad `\u` escape, a number or index out of
//! range), it returns `None` and the pest path runs as before, with its
//! diagnostics.
//!
//! It scans the text itself rather than reading the tokens of
//! [`super::lex`]: that lexer is deliberately forgiving (a string without its
//! closing quote ends at the end of its line, `\` escapes any character, a
//! `/` opens a regex only after `~` or `matches`), while this parser must
//! refuse exactly what the grammar refuses, byte for byte.
//!
//! Recursion happens only at brackets (`(`, `[`, `{`) and is bounded by
//! [`MAX_NESTING`]; `not`, `and`, `or` and lists of items are loops.

use serde_json::Value;

use super::ast::*;
use super::build::regex_source;
use super::parser::MAX_NESTING;

/// Parses a whole file, if it is well formed and every value in it builds.
pub(super) fn parse(text: &str) -> Option<File> {
    let mut parser = Fast {
        text,
        bytes: text.as_bytes(),
        depth: 0,
        abort: false,
    };
    let file = parser.file();
    if parser.abort {
        return None;
    }
    file
}

/// `reserved_item_word`, in the grammar's order.
const RESERVED_ITEM_WORDS: &[&str] = &["deny", "ask", "allow", "tools", "policy"];
/// The words `unknown_test` may not start with, in the grammar's order.
const NOT_A_TEST_WORD: &[&str] = &[
    "deny",
    "ask",
    "allow",
    "tools",
    "policy",
    "default",
    "scope",
    "trusted",
    "pin_tools",
    "allow_new_tools",
    "and",
    "or",
    "not",
    "when",
    "unless",
];

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

struct Fast<'a> {
    text: &'a str,
    bytes: &'a [u8],
    /// Brackets open around the current position.
    depth: usize,
    /// A value did not build (or nesting ran too deep): give up.
    abort: bool,
}

type Parsed<T> = Option<(usize, T)>;

impl Fast<'_> {
    // ------------------------------------------------------------ tokens

    fn at(&self, pos: usize) -> Option<u8> {
        self.bytes.get(pos).copied()
    }

    fn is(&self, pos: usize, b: u8) -> bool {
        self.at(pos) == Some(b)
    }

    /// pest's implicit `(WHITESPACE* (COMMENT WHITESPACE*)*)`.
    fn skip(&self, mut pos: usize) -> usize {
        while let Some(b) = self.at(pos) {
            match b {
                b' ' | b'\t' | b'\r' | b'\n' => pos += 1,
                b'#' => {
                    while let Some(c) = self.at(pos) {
                        if c == b'\n' {
                            break;
                        }
                        pos += 1;
                    }
                }
                _ => break,
            }
        }
        pos
    }

    /// `!ident_char` at `pos`.
    fn boundary(&self, pos: usize) -> bool {
        !self.at(pos).is_some_and(is_ident_char)
    }

    /// An ordered choice of literals: the end of the first that matches.
    fn first_of(&self, pos: usize, words: &[&str]) -> Option<(usize, usize)> {
        let rest = self.bytes.get(pos..)?;
        words
            .iter()
            .position(|w| rest.starts_with(w.as_bytes()))
            .and_then(|i| words.get(i).map(|w| (i, pos + w.len())))
    }

    /// `(w1 | w2 | ...) ~ !ident_char`: which one, and its end.
    fn keyword_of(&self, pos: usize, words: &[&str]) -> Option<(usize, usize)> {
        let (i, end) = self.first_of(pos, words)?;
        self.boundary(end).then_some((i, end))
    }

    /// `WORD ~ !ident_char`.
    fn keyword(&self, pos: usize, word: &str) -> Option<usize> {
        let end = pos + word.len();
        (self.bytes.get(pos..end)? == word.as_bytes() && self.boundary(end)).then_some(end)
    }

    fn ident(&self, pos: usize) -> Option<usize> {
        if !self.at(pos).is_some_and(is_ident_start) {
            return None;
        }
        let mut end = pos + 1;
        while self.at(end).is_some_and(is_ident_char) {
            end += 1;
        }
        Some(end)
    }

    /// `string`: the end of a JSON string literal at `pos`.
    fn string_end(&self, pos: usize) -> Option<usize> {
        if !self.is(pos, b'"') {
            return None;
        }
        let mut p = pos + 1;
        loop {
            match self.at(p)? {
                b'"' => return Some(p + 1),
                b'\\' => match self.at(p + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => p += 2,
                    b'u' => {
                        let hex = self.bytes.get(p + 2..p + 6)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        p += 6;
                    }
                    _ => return None,
                },
                0x00..=0x1f => return None,
                _ => p += 1,
            }
        }
    }

    /// The decoded string between `start` and `end` (quotes included), as
    /// the pest path decodes it.
    fn decode(&mut self, start: usize, end: usize) -> String {
        let Some(literal) = self.text.get(start..end) else {
            self.abort = true;
            return String::new();
        };
        let body = literal
            .get(1..literal.len().saturating_sub(1))
            .unwrap_or("");
        if !body.contains('\\') {
            return body.to_string();
        }
        match serde_json::from_str::<String>(literal) {
            Ok(s) => s,
            Err(_) => {
                self.abort = true;
                String::new()
            }
        }
    }

    /// `string`, decoded.
    fn string(&mut self, pos: usize) -> Parsed<Spanned<String>> {
        let end = self.string_end(pos)?;
        Some((
            end,
            Spanned::new(self.decode(pos, end), Span::new(pos, end)),
        ))
    }

    /// `regex`: `/.../` on one line, `\` escaping any character but a newline.
    fn regex_end(&self, pos: usize) -> Option<usize> {
        if !self.is(pos, b'/') {
            return None;
        }
        let mut p = pos + 1;
        loop {
            match self.at(p)? {
                b'/' => return Some(p + 1),
                b'\n' | b'\r' => return None,
                b'\\' if !matches!(self.at(p + 1), None | Some(b'\n' | b'\r')) => p += 2,
                _ => p += 1,
            }
        }
    }

    fn regex(&self, pos: usize) -> Parsed<Spanned<String>> {
        let end = self.regex_end(pos)?;
        let source = regex_source(self.text.get(pos..end)?);
        Some((end, Spanned::new(source, Span::new(pos, end))))
    }

    /// `number`.
    fn number_end(&self, pos: usize) -> Option<usize> {
        let digits = |mut p: usize| {
            while self.at(p).is_some_and(|b| b.is_ascii_digit()) {
                p += 1;
            }
            p
        };
        let mut p = pos;
        if self.is(p, b'-') {
            p += 1;
        }
        match self.at(p)? {
            b'0' => p += 1,
            b'1'..=b'9' => p = digits(p + 1),
            _ => return None,
        }
        if self.is(p, b'.') && self.at(p + 1).is_some_and(|b| b.is_ascii_digit()) {
            p = digits(p + 1);
        }
        if matches!(self.at(p), Some(b'e' | b'E')) {
            let mut q = p + 1;
            if matches!(self.at(q), Some(b'+' | b'-')) {
                q += 1;
            }
            if self.at(q).is_some_and(|b| b.is_ascii_digit()) {
                p = digits(q);
            }
        }
        Some(p)
    }

    /// `&item_end`: `}`, `;`, a word or the end of the text.
    fn item_end(&self, pos: usize) -> bool {
        match self.at(pos) {
            None => true,
            Some(b) => b == b'}' || b == b';' || is_ident_start(b),
        }
    }

    /// Enters a bracket; `false` (and give up) past the nesting limit.
    fn enter(&mut self) -> bool {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            self.abort = true;
        }
        !self.abort
    }

    // ------------------------------------------------------------- items

    /// `"{" ~ (entry | ";")* ~ "}"` with `open` at the `{`: the entries and
    /// the end after the `}`.
    fn braced<T>(
        &mut self,
        open: usize,
        mut entry: impl FnMut(&mut Self, usize) -> Parsed<T>,
    ) -> Parsed<Vec<T>> {
        let mut entries = Vec::new();
        let mut q = self.skip(open + 1);
        loop {
            let s = self.skip(q);
            if let Some((end, e)) = entry(self, s) {
                entries.push(e);
                q = end;
            } else if self.is(s, b';') {
                q = s + 1;
            } else {
                break;
            }
        }
        let close = self.skip(q);
        self.is(close, b'}').then_some((close + 1, entries))
    }

    /// `("," ~ item)*` after an item that ends at `end`; returns where the
    /// list ends. As pest does: with no further item the end runs past the
    /// blanks after the first; otherwise it is the end of the last item.
    fn rest_of_list<T>(
        &mut self,
        end: usize,
        mut next: impl FnMut(&mut Self, usize) -> Parsed<T>,
        mut push: impl FnMut(T),
    ) -> usize {
        let mut q = self.skip(end);
        loop {
            let s = self.skip(q);
            if !self.is(s, b',') {
                break;
            }
            let Some((item_end, item)) = next(self, self.skip(s + 1)) else {
                break;
            };
            push(item);
            q = item_end;
        }
        q
    }

    /// `OPEN ~ (item ~ ("," ~ item)* ~ ","?)? ~ CLOSE` with `pos` at OPEN:
    /// the end after CLOSE.
    fn bracketed<T>(
        &mut self,
        pos: usize,
        close: u8,
        mut next: impl FnMut(&mut Self, usize) -> Parsed<T>,
        mut push: impl FnMut(T),
    ) -> Option<usize> {
        let mut q = self.skip(pos + 1);
        if let Some((end, first)) = next(self, q) {
            push(first);
            let r = self.rest_of_list(end, &mut next, &mut push);
            let r = self.skip(r);
            q = if self.is(r, b',') { r + 1 } else { r };
        }
        let close_at = self.skip(q);
        self.is(close_at, close).then_some(close_at + 1)
    }

    fn file(&mut self) -> Option<File> {
        let mut file = File::default();
        let mut q = self.skip(0);
        loop {
            let s = self.skip(q);
            match self.policy(s) {
                Some((end, policy)) => {
                    file.policies.push(policy);
                    q = end;
                }
                None => break,
            }
        }
        let q = self.skip(q);
        (q == self.bytes.len()).then_some(file)
    }

    fn policy(&mut self, pos: usize) -> Parsed<PolicyAst> {
        let kw = self.keyword(pos, "policy")?;
        let name_at = self.skip(kw);
        let name_end = self.ident(name_at)?;
        let open = self.skip(name_end);
        if !self.is(open, b'{') {
            return None;
        }
        let name = Spanned::new(
            self.text.get(name_at..name_end)?.to_string(),
            Span::new(name_at, name_end),
        );
        let (end, items) = self.braced(open, Self::item)?;
        let span = Span::new(pos, end);
        Some((end, PolicyAst { name, items, span }))
    }

    /// `(tools_block | rule | setting) ~ ";"?`.
    fn item(&mut self, pos: usize) -> Parsed<Item> {
        let (end, item) = if let Some((end, tools)) = self.tools_block(pos) {
            (end, Item::Tools(tools))
        } else if let Some((end, rule)) = self.rule(pos) {
            (end, Item::Rule(Box::new(rule)))
        } else {
            let (end, setting) = self.setting(pos)?;
            (end, Item::Setting(setting))
        };
        let q = self.skip(end);
        Some((if self.is(q, b';') { q + 1 } else { q }, item))
    }

    fn setting(&mut self, pos: usize) -> Parsed<SettingAst> {
        if self.keyword_of(pos, RESERVED_ITEM_WORDS).is_some() {
            return None;
        }
        let name_end = self.ident(pos)?;
        let name = Spanned::new(
            self.text.get(pos..name_end)?.to_string(),
            Span::new(pos, name_end),
        );
        let at = self.skip(name_end);
        let (end, value) = self.setting_value(at)?;
        let mut values = vec![value];
        let q = self.rest_of_list(end, Self::setting_value, |v| values.push(v));
        let q = self.skip(q);
        if !self.item_end(q) {
            return None;
        }
        let span = Span::new(pos, q);
        Some((q, SettingAst { name, values, span }))
    }

    /// `string | ident`.
    fn setting_value(&mut self, pos: usize) -> Parsed<Spanned<SettingValue>> {
        if let Some((end, s)) = self.string(pos) {
            return Some((end, Spanned::new(SettingValue::Str(s.node), s.span)));
        }
        let end = self.ident(pos)?;
        let word = SettingValue::Word(self.text.get(pos..end)?.to_string());
        Some((end, Spanned::new(word, Span::new(pos, end))))
    }

    fn tools_block(&mut self, pos: usize) -> Parsed<ToolsBlock> {
        let kw = self.keyword(pos, "tools")?;
        let open = self.skip(kw);
        if !self.is(open, b'{') {
            return None;
        }
        let (end, entries) = self.braced(open, Self::visibility_entry)?;
        let span = Span::new(pos, end);
        Some((end, ToolsBlock { entries, span }))
    }

    fn visibility_entry(&mut self, pos: usize) -> Parsed<VisibilityEntry> {
        let (which, kw) = self.keyword_of(pos, &["include", "exclude"])?;
        let (end, targets) = self.targets(self.skip(kw))?;
        let q = self.skip(end);
        let q = if self.is(q, b';') { q + 1 } else { q };
        let entry = VisibilityEntry {
            include: which == 0,
            targets,
            span: Span::new(pos, q),
        };
        Some((q, entry))
    }

    /// `target ~ ("," ~ target)*`.
    fn targets(&mut self, pos: usize) -> Parsed<Vec<TargetAst>> {
        let (end, first) = self.target(pos)?;
        let mut targets = vec![first];
        let q = self.rest_of_list(end, Self::target, |t| targets.push(t));
        Some((q, targets))
    }

    fn target(&mut self, pos: usize) -> Parsed<TargetAst> {
        if self.is(pos, b'*') {
            return Some((pos + 1, TargetAst::Any(Span::new(pos, pos + 1))));
        }
        let end = self.string_end(pos)?;
        let tilde = self.skip(end);
        if self.is(tilde, b'~') {
            let at = self.skip(tilde + 1);
            if let Some((re_end, regex)) = self.regex(at) {
                let server = Spanned::new(self.decode(pos, end), Span::new(pos, end));
                let span = Span::new(pos, re_end);
                return Some((
                    re_end,
                    TargetAst::Regex {
                        server,
                        regex,
                        span,
                    },
                ));
            }
        }
        let pattern = Spanned::new(self.decode(pos, end), Span::new(pos, end));
        Some((end, TargetAst::Pattern(pattern)))
    }

    fn rule(&mut self, pos: usize) -> Parsed<RuleAst> {
        let (which, effect_end) = self.keyword_of(pos, &["deny", "ask", "allow"])?;
        let effect = match which {
            0 => Effect::Deny,
            1 => Effect::Ask,
            _ => Effect::Allow,
        };
        let effect = Spanned::new(effect, Span::new(pos, effect_end));
        let mut q = self.skip(effect_end);
        let mut id = None;
        if let Some(id_end) = self.ident(q) {
            let colon = self.skip(id_end);
            if self.is(colon, b':') {
                id = Some(Spanned::new(
                    self.text.get(q..id_end)?.to_string(),
                    Span::new(q, id_end),
                ));
                q = colon + 1;
            }
        }
        let q = self.skip(q);
        let (mut kind, mut kind_span, mut q) = (TargetKind::Tool, None, q);
        if let Some((which, end)) = self.keyword_of(q, &["resource", "prompt"]) {
            kind = if which == 0 {
                TargetKind::Resource
            } else {
                TargetKind::Prompt
            };
            kind_span = Some(Span::new(q, end));
            q = end;
        }
        let (end, targets) = self.targets(self.skip(q))?;
        let mut q = self.skip(end);
        let mut condition = None;
        if let Some((end, clause)) = self.condition_clause(q) {
            condition = Some(clause);
            q = end;
        }
        let q = self.skip(q);
        if !self.item_end(q) {
            return None;
        }
        let rule = RuleAst {
            effect,
            id,
            kind,
            kind_span,
            targets,
            condition,
            span: Span::new(pos, q),
        };
        Some((q, rule))
    }

    // -------------------------------------------------------- conditions

    fn condition_clause(&mut self, pos: usize) -> Parsed<ConditionClause> {
        let (which, kw) = self.keyword_of(pos, &["when", "unless"])?;
        let (end, condition) = self.condition(self.skip(kw))?;
        let clause = ConditionClause {
            unless: which == 1,
            keyword: Span::new(pos, kw),
            condition,
        };
        Some((end, clause))
    }

    /// `conjunction ~ (kw_or ~ conjunction)*`.
    fn condition(&mut self, pos: usize) -> Parsed<Cond> {
        self.chain(pos, "or", true)
    }

    /// `condition` (or) and `conjunction` (and): a list, or its one member.
    fn chain(&mut self, pos: usize, word: &str, is_or: bool) -> Parsed<Cond> {
        let part = |me: &mut Self, at: usize| {
            if is_or {
                me.chain(at, "and", false)
            } else {
                me.negation(at)
            }
        };
        let (end, first) = part(self, pos)?;
        let mut parts: Vec<Cond> = Vec::new();
        let mut q = self.skip(end);
        let mut first = Some(first);
        loop {
            let s = self.skip(q);
            let Some(kw) = self.keyword(s, word) else {
                break;
            };
            let Some((end, next)) = part(self, self.skip(kw)) else {
                break;
            };
            if let Some(first) = first.take() {
                parts.push(first);
            }
            parts.push(next);
            q = end;
        }
        let span = Span::new(pos, q);
        match first {
            Some(only) => Some((q, only)),
            None if is_or => Some((q, Cond::Or(parts, span))),
            None => Some((q, Cond::And(parts, span))),
        }
    }

    /// `kw_not* ~ primary`; only the parity of the `not`s is kept.
    fn negation(&mut self, pos: usize) -> Parsed<Cond> {
        let mut nots = 0usize;
        let mut q = pos;
        if let Some(end) = self.keyword(pos, "not") {
            nots = 1;
            q = end;
            loop {
                let s = self.skip(q);
                let Some(end) = self.keyword(s, "not") else {
                    break;
                };
                nots += 1;
                q = end;
            }
        }
        let (end, primary) = self.primary(self.skip(q))?;
        let span = Span::new(pos, end);
        Some((
            end,
            if nots % 2 == 1 {
                Cond::Not(Box::new(primary), span)
            } else {
                primary
            },
        ))
    }

    /// `group | tainted | exists_test | test`.
    fn primary(&mut self, pos: usize) -> Parsed<Cond> {
        if self.is(pos, b'(') {
            if let Some(group) = self.group(pos) {
                return Some(group);
            }
            if self.abort {
                return None;
            }
        }
        if let Some(kw) = self.keyword(pos, "tainted") {
            let s = self.skip(kw);
            if let Some((end, ignore)) = self.tainted_ignore(s) {
                let span = Span::new(pos, end);
                return Some((end, Cond::Tainted { ignore, span }));
            }
            let span = Span::new(pos, s);
            return Some((
                s,
                Cond::Tainted {
                    ignore: Vec::new(),
                    span,
                },
            ));
        }
        if let Some(kw) = self.keyword(pos, "exists") {
            if let Some((end, selector)) = self.selector(self.skip(kw)) {
                let span = Span::new(pos, end);
                return Some((end, Cond::Exists { selector, span }));
            }
        }
        self.test(pos)
    }

    /// `"(" ~ condition ~ ")"`: the condition.
    fn group(&mut self, pos: usize) -> Parsed<Cond> {
        if !self.enter() {
            return None;
        }
        let inner = self.condition(self.skip(pos + 1));
        self.depth -= 1;
        let (end, cond) = inner?;
        let close = self.skip(end);
        self.is(close, b')').then_some((close + 1, cond))
    }

    /// `"(" ~ "ignore" ~ ":" ~ string_list ~ ")"`.
    fn tainted_ignore(&mut self, pos: usize) -> Parsed<Vec<Spanned<String>>> {
        if !self.is(pos, b'(') {
            return None;
        }
        let word = self.skip(pos + 1);
        if !self.bytes.get(word..)?.starts_with(b"ignore") {
            return None;
        }
        let colon = self.skip(word + "ignore".len());
        if !self.is(colon, b':') {
            return None;
        }
        let (end, list) = self.string_list(self.skip(colon + 1))?;
        let close = self.skip(end);
        self.is(close, b')').then_some((close + 1, list))
    }

    /// `"[" ~ (string ~ ("," ~ string)* ~ ","?)? ~ "]"`.
    fn string_list(&mut self, pos: usize) -> Parsed<Vec<Spanned<String>>> {
        if !self.is(pos, b'[') {
            return None;
        }
        let mut strings = Vec::new();
        let end = self.bracketed(pos, b']', Self::string, |s| strings.push(s))?;
        Some((end, strings))
    }

    /// `selector ~ (comparison | membership | regex_match | path_test | unknown_test)?`.
    fn test(&mut self, pos: usize) -> Parsed<Cond> {
        let (sel_end, selector) = self.selector(pos)?;
        let s = self.skip(sel_end);
        // comparison
        if let Some((op, op_end)) = self.compare_op(s) {
            let at = self.skip(op_end);
            if let Some((end, value)) = self.literal(at, true) {
                let cond = Cond::Compare {
                    selector,
                    op: Spanned::new(op, Span::new(s, op_end)),
                    value: Spanned::new(value, Span::new(at, end)),
                    span: Span::new(pos, end),
                };
                return Some((end, cond));
            }
        }
        // membership
        if let Some(kw) = self.keyword(s, "in") {
            let at = self.skip(kw);
            if let Some((end, value)) = self.literal(at, true) {
                let cond = Cond::In {
                    selector,
                    list: Spanned::new(value, Span::new(at, end)),
                    span: Span::new(pos, end),
                };
                return Some((end, cond));
            }
        }
        // regex_match
        if let Some(kw) = self.keyword(s, "matches") {
            if let Some((end, regex)) = self.regex(self.skip(kw)) {
                let cond = Cond::Matches {
                    selector,
                    regex,
                    span: Span::new(pos, end),
                };
                return Some((end, cond));
            }
        }
        // path_test
        let path_kw = self
            .keyword(s, "inside")
            .map(|e| (true, e))
            .or_else(|| self.keyword(s, "escapes").map(|e| (false, e)));
        if let Some((inside, kw)) = path_kw {
            if let Some((end, root)) = self.string(self.skip(kw)) {
                let cond = Cond::Path {
                    selector,
                    inside,
                    root,
                    span: Span::new(pos, end),
                };
                return Some((end, cond));
            }
        }
        // unknown_test. The rule is not atomic, so blanks may come between
        // the word and the `!ident_char` of its look-ahead.
        let excluded = self
            .first_of(s, NOT_A_TEST_WORD)
            .is_some_and(|(_, end)| self.boundary(self.skip(end)));
        if !excluded {
            if let Some(word_end) = self.ident(s) {
                let at = self.skip(word_end);
                let value_end = self
                    .string_end(at)
                    .or_else(|| self.regex_end(at))
                    .or_else(|| self.number_end(at))
                    .or_else(|| self.list(at, false).map(|(end, _)| end));
                if let Some(end) = value_end {
                    let word = Spanned::new(
                        self.text.get(s..word_end)?.to_string(),
                        Span::new(s, word_end),
                    );
                    let cond = Cond::UnknownTest {
                        selector,
                        word,
                        span: Span::new(pos, end),
                    };
                    return Some((end, cond));
                }
            }
        }
        if self.abort {
            return None;
        }
        Some((s, Cond::Bare(selector)))
    }

    fn compare_op(&self, pos: usize) -> Option<(CompareOp, usize)> {
        let (i, end) = self.first_of(pos, &["==", "!=", "<=", ">=", "<", ">"])?;
        let op = match i {
            0 => CompareOp::Eq,
            1 => CompareOp::Ne,
            2 => CompareOp::Le,
            3 => CompareOp::Ge,
            4 => CompareOp::Lt,
            _ => CompareOp::Gt,
        };
        Some((op, end))
    }

    /// `selector = ${ ident ~ step* }`: no blanks inside.
    fn selector(&mut self, pos: usize) -> Parsed<SelectorAst> {
        let root_end = self.ident(pos)?;
        let root = Spanned::new(
            self.text.get(pos..root_end)?.to_string(),
            Span::new(pos, root_end),
        );
        let mut steps = Vec::new();
        let mut q = root_end;
        loop {
            match self.at(q) {
                Some(b'.') => {
                    let Some(end) = self.ident(q + 1) else { break };
                    let key = Step::Key(self.text.get(q + 1..end)?.to_string());
                    steps.push(Spanned::new(key, Span::new(q, end)));
                    q = end;
                }
                Some(b'[') => {
                    let at = q + 1;
                    let mut digits = at;
                    while self.at(digits).is_some_and(|b| b.is_ascii_digit()) {
                        digits += 1;
                    }
                    let (step, inner_end) = if digits > at {
                        let index = self.text.get(at..digits)?.parse::<usize>();
                        let Ok(index) = index else {
                            self.abort = true;
                            return None;
                        };
                        (Step::Index(index), digits)
                    } else if let Some((end, key)) = self.string(at) {
                        (Step::Key(key.node), end)
                    } else {
                        break;
                    };
                    if !self.is(inner_end, b']') {
                        break;
                    }
                    steps.push(Spanned::new(step, Span::new(q, inner_end + 1)));
                    q = inner_end + 1;
                }
                _ => break,
            }
        }
        let span = Span::new(pos, q);
        Some((q, SelectorAst { root, steps, span }))
    }

    // ---------------------------------------------------------- literals

    /// `literal`: a JSON value. With `build` off the value is only
    /// recognised (for `unknown_test`, whose value the pest path never
    /// builds) and `Null` is returned.
    fn literal(&mut self, pos: usize, build: bool) -> Parsed<Value> {
        match self.at(pos)? {
            b'"' => {
                let end = self.string_end(pos)?;
                if !build {
                    return Some((end, Value::Null));
                }
                Some((end, Value::String(self.decode(pos, end))))
            }
            b'[' => self.list(pos, build),
            b'{' => self.object(pos, build),
            _ => {
                if let Some(end) = self.number_end(pos) {
                    if !build {
                        return Some((end, Value::Null));
                    }
                    let value = self
                        .text
                        .get(pos..end)
                        .and_then(|n| serde_json::from_str::<Value>(n).ok());
                    let Some(value) = value else {
                        self.abort = true;
                        return None;
                    };
                    return Some((end, value));
                }
                if let Some(end) = self.keyword(pos, "true") {
                    return Some((end, Value::Bool(true)));
                }
                if let Some(end) = self.keyword(pos, "false") {
                    return Some((end, Value::Bool(false)));
                }
                let end = self.keyword(pos, "null")?;
                Some((end, Value::Null))
            }
        }
    }

    /// `"[" ~ (literal ~ ("," ~ literal)* ~ ","?)? ~ "]"`.
    fn list(&mut self, pos: usize, build: bool) -> Parsed<Value> {
        if !self.is(pos, b'[') || !self.enter() {
            return None;
        }
        let parsed = self.list_body(pos, build);
        self.depth -= 1;
        parsed
    }

    fn list_body(&mut self, pos: usize, build: bool) -> Parsed<Value> {
        let mut values = Vec::new();
        let literal = |p: &mut Self, at: usize| p.literal(at, build);
        let end = self.bracketed(pos, b']', literal, |v| values.push(v))?;
        Some((end, Value::Array(values)))
    }

    /// `"{" ~ (member ~ ("," ~ member)* ~ ","?)? ~ "}"`.
    fn object(&mut self, pos: usize, build: bool) -> Parsed<Value> {
        if !self.is(pos, b'{') || !self.enter() {
            return None;
        }
        let parsed = self.object_body(pos, build);
        self.depth -= 1;
        parsed
    }

    fn object_body(&mut self, pos: usize, build: bool) -> Parsed<Value> {
        let mut map = serde_json::Map::new();
        let member = |p: &mut Self, at: usize| p.member(at, build);
        let end = self.bracketed(pos, b'}', member, |(k, v)| {
            map.insert(k, v);
        })?;
        Some((end, Value::Object(map)))
    }

    /// `string ~ ":" ~ literal`.
    fn member(&mut self, pos: usize, build: bool) -> Parsed<(String, Value)> {
        let end = self.string_end(pos)?;
        let colon = self.skip(end);
        if !self.is(colon, b':') {
            return None;
        }
        let (value_end, value) = self.literal(self.skip(colon + 1), build)?;
        let key = if build {
            self.decode(pos, end)
        } else {
            String::new()
        };
        Some((value_end, (key, value)))
    }
}
