//! `folded_regex`: a deny or ask regex that needs an upper-case letter, or a
//! `-` or `.`, in the tool name.
//!
//! Deny and ask rules match loosely: a regex is tried on the name as sent
//! and on its folded form (lower-case, `-`, `.` and `_` all made `_`). A
//! regex written in folded form therefore catches every spelling. A regex
//! that needs `D` or `-` can only match the folded form if it has them, and
//! it never does: such a rule catches only the spellings that carry exactly
//! that case or punctuation, and a server that names its tool `delete_repo`
//! instead of `Delete-Repo` walks past it.

use super::{Ctx, FOLDED_REGEX};
use crate::syntax::{Effect, Item, Span, TargetAst};

/// What a regex needs that folding removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    Case(char),
    Punct(char),
}

pub(super) fn check(cx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    // Rules' targets, and the `tools {}` block's excludes, which match
    // loosely too.
    let mut loose: Vec<(&'static str, &TargetAst)> = Vec::new();
    for rule in &cx.rules {
        if rule.ir.effect != Effect::Allow {
            loose.extend(
                rule.ast
                    .targets
                    .iter()
                    .map(|t| (rule.ir.effect.as_str(), t)),
            );
        }
    }
    for item in &cx.ast.items {
        if let Item::Tools(block) = item {
            for entry in block.entries.iter().filter(|e| !e.include) {
                loose.extend(entry.targets.iter().map(|t| ("exclude", t)));
            }
        }
    }
    for (effect, target) in loose {
        let TargetAst::Regex { regex, .. } = target else {
            continue;
        };
        let all = needs(&regex.node);
        if let Some((at, need)) = all.first() {
            // The regex literal starts with `/` and `\/` stands for `/`;
            // point at the character when the offsets still line up.
            let start = regex.span.start + 1 + at;
            let span = if regex.node.contains('/') {
                regex.span
            } else {
                Span::new(start, start + 1)
            };
            let mut chars: Vec<String> = Vec::new();
            for (_, n) in &all {
                let c = match n {
                    Need::Case(c) | Need::Punct(c) => format!("`{c}`"),
                };
                if !chars.contains(&c) {
                    chars.push(c);
                }
            }
            found.push((effect, span, regex.node.clone(), *need, chars));
        }
    }
    for (effect, span, source, need, chars) in found {
        let tried = if effect == "exclude" {
            "exclude regexes are".to_string()
        } else {
            format!("{effect} regexes are")
        };
        let also = match chars.len() {
            0 | 1 => String::new(),
            _ => format!(" (it also needs {})", chars[1..].join(", ")),
        };
        let fix = match folded(&source) {
            Some(f) => format!("Write the regex folded: `/{f}/`"),
            None => "Write the regex folded: lower-case letters, and `_` where it wants `-` or `.`"
                .to_string(),
        };
        let (message, label, why) = match need {
            Need::Case(c) => (
                format!("this {effect} regex needs an upper-case `{c}`, which loose matching folds away{also}"),
                format!("`{c}` never appears in a folded name"),
                format!("a name with `{c}` in another case is not matched as sent, nor once folded (folded names are lower-case)"),
            ),
            Need::Punct(c) => (
                format!("this {effect} regex needs a `{c}`, which loose matching folds away{also}"),
                format!("`{c}` never appears in a folded name"),
                format!("a name with `_` (or another of `-`, `.`, `_`) where the regex wants `{c}` is not matched as sent, nor once folded (folding makes `-` and `.` into `_`)"),
            ),
        };
        let help = format!(
            "{tried} tried on the name as sent and on its folded form; {why}, so that spelling escapes the rule. {fix}"
        );
        let diagnostic = cx
            .warning(&FOLDED_REGEX, span, message)
            .with_label(label)
            .with_help(help);
        cx.emit(&FOLDED_REGEX, diagnostic);
    }
}

/// What a bracketed class holds, while it is read.
#[derive(Default)]
struct Class {
    underscore: bool,
    lower: bool,
    /// The first literal `-` or `.`.
    punct: Option<(usize, char)>,
    /// The first upper-case letter.
    upper: Option<(usize, char)>,
}

/// What `source` needs that folding removes, with byte offsets, in order.
/// Conservative: an `(?i)` flag anywhere drops case findings; escapes
/// such as `\D` or `\p{Lu}` are classes, not letters.
pub(crate) fn needs(source: &str) -> Vec<(usize, Need)> {
    let chars: Vec<(usize, char)> = source.char_indices().collect();
    let mut out = Vec::new();
    let mut case_insensitive = false;
    let mut i = 0;
    let mut class: Option<Class> = None;
    while i < chars.len() {
        let (at, c) = chars[i];
        let next = chars.get(i + 1).map(|x| x.1);
        if c == '\\' {
            let Some(e) = next else { break };
            i += 2;
            match e {
                '.' | '-' => note_punct(&mut class, &mut out, at, e),
                'p' | 'P' | 'x' | 'u' | 'U' if chars.get(i).map(|x| x.1) == Some('{') => {
                    while i < chars.len() && chars[i].1 != '}' {
                        i += 1;
                    }
                    i += 1;
                }
                'x' => i += 2,
                _ => {}
            }
            continue;
        }
        if let Some(Class {
            underscore,
            lower,
            punct,
            upper,
        }) = &mut class
        {
            match c {
                ']' => {
                    if let (Some(p), false) = (*punct, *underscore) {
                        out.push((p.0, Need::Punct(p.1)));
                    }
                    if let (Some(u), false) = (*upper, *lower) {
                        out.push((u.0, Need::Case(u.1)));
                    }
                    class = None;
                }
                '_' => *underscore = true,
                '.' => {
                    punct.get_or_insert((at, c));
                }
                '-' => {
                    let prev = i.checked_sub(1).map(|p| chars[p].1);
                    let literal = matches!(prev, Some('[') | Some('^')) || next == Some(']');
                    if literal {
                        punct.get_or_insert((at, c));
                    }
                }
                c if c.is_lowercase() => *lower = true,
                c if c.is_uppercase() => {
                    upper.get_or_insert((at, c));
                }
                _ => {}
            }
            i += 1;
            continue;
        }
        match c {
            '[' => class = Some(Class::default()),
            '(' if next == Some('?') => {
                // Flags `(?i)` / `(?i:` or a group name `(?P<Name>`.
                let mut j = i + 2;
                let mut negated = false;
                while let Some(&(_, f)) = chars.get(j) {
                    match f {
                        ')' | ':' => break,
                        '<' | 'P' => {
                            while j < chars.len() && chars[j].1 != '>' {
                                j += 1;
                            }
                            break;
                        }
                        '-' => negated = true,
                        'i' if !negated => case_insensitive = true,
                        _ => {}
                    }
                    j += 1;
                }
                i = j;
            }
            '{' => {
                while i < chars.len() && chars[i].1 != '}' {
                    i += 1;
                }
            }
            '-' => out.push((at, Need::Punct('-'))),
            c if c.is_uppercase() => out.push((at, Need::Case(c))),
            _ => {}
        }
        i += 1;
    }
    if case_insensitive {
        out.retain(|(_, n)| !matches!(n, Need::Case(_)));
    }
    out.sort_by_key(|(at, _)| *at);
    out
}

fn note_punct(class: &mut Option<Class>, out: &mut Vec<(usize, Need)>, at: usize, c: char) {
    match class {
        Some(class) => {
            class.punct.get_or_insert((at, c));
        }
        None => out.push((at, Need::Punct(c))),
    }
}

/// The regex with literal upper-case letters lowered and literal `-` and
/// `.` made `_` (escapes and classes other than those are kept), when that
/// gives a valid regex that needs nothing folding removes.
fn folded(source: &str) -> Option<String> {
    let found = needs(source);
    let mut out = String::with_capacity(source.len());
    let mut skip_next = false;
    for (at, c) in source.char_indices() {
        if skip_next {
            skip_next = false;
            continue;
        }
        match found.iter().find(|(n, _)| *n == at).map(|(_, n)| *n) {
            Some(Need::Case(c)) => out.extend(c.to_lowercase()),
            Some(Need::Punct(_)) if c == '\\' => {
                out.push('_');
                skip_next = true;
            }
            Some(Need::Punct(_)) => out.push('_'),
            None => out.push(c),
        }
    }
    (regex::Regex::new(&out).is_ok() && needs(&out).is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_case_and_punctuation() {
        assert_eq!(needs("^Delete"), vec![(1, Need::Case('D'))]);
        assert_eq!(needs("delete-repo"), vec![(6, Need::Punct('-'))]);
        assert_eq!(needs(r"a\.b"), vec![(1, Need::Punct('.'))]);
        assert!(needs("^delete_repo$").is_empty());
        assert!(needs(r"(?i)^Delete").is_empty());
        assert!(needs(r"\D\W\p{Lu}[a-z]+.x{2,3}").is_empty());
        assert!(needs("[-_]").is_empty());
        assert_eq!(needs("[.-]x"), vec![(1, Need::Punct('.'))]);
        assert_eq!(needs("[A-Z]"), vec![(1, Need::Case('A'))]);
        assert!(needs("(?P<Name>x)").is_empty());
        assert_eq!(folded(r"^Delete-Repo\.x").unwrap(), "^delete_repo_x");
        assert!(folded("[A-Z]").is_none());
    }
}
