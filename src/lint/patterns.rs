//! Reasoning about targets: whether one target matches every name another
//! does, glob text, and which listed tools a target matches.

use crate::policy::glob::{Glob, Token};
use crate::policy::names::fold;
use crate::policy::{NameMatcher, Target};

/// A glob written back as pattern text.
pub(crate) fn glob_text(glob: &Glob) -> String {
    match glob {
        Glob::Literal(l) => l.to_string(),
        Glob::Any => "*".to_string(),
        Glob::Prefix(p) => format!("{p}*"),
        Glob::Suffix(s) => format!("*{s}"),
        Glob::Pattern(tokens) => tokens
            .iter()
            .map(|t| match t {
                Token::Literal(l) => l.to_string(),
                Token::Star => "*".to_string(),
                Token::One => "?".to_string(),
            })
            .collect(),
    }
}

/// The glob that matches the folded form of every name `glob` matches.
pub(crate) fn fold_glob(glob: &Glob) -> Glob {
    Glob::new(&fold(&glob_text(glob)))
}

/// Whether `outer` certainly matches every text `inner` matches. `false`
/// means "not shown", never "shown not to".
pub(crate) fn glob_covers(outer: &Glob, inner: &Glob) -> bool {
    match (outer, inner) {
        (Glob::Any, _) => true,
        (_, Glob::Literal(l)) => outer.matches(l),
        (o, i) if o == i => true,
        (Glob::Prefix(p), Glob::Prefix(q)) => q.starts_with(&**p),
        (Glob::Suffix(s), Glob::Suffix(t)) => t.ends_with(&**s),
        (Glob::Prefix(p), Glob::Pattern(tokens)) => {
            matches!(tokens.first(), Some(Token::Literal(l)) if l.starts_with(&**p))
        }
        (Glob::Suffix(s), Glob::Pattern(tokens)) => {
            matches!(tokens.last(), Some(Token::Literal(l)) if l.ends_with(&**s))
        }
        _ => false,
    }
}

/// A target as a loose list would see the names it matches: its segments
/// folded (a target of a deny or ask rule already is).
pub(crate) struct FoldedTarget {
    pub server: Glob,
    name: FoldedName,
}

enum FoldedName {
    Glob(Glob),
    /// A regex, with its source.
    Regex(String),
}

impl FoldedTarget {
    /// `loose` when `target` belongs to a deny or ask rule (already folded).
    pub(crate) fn new(target: &Target, loose: bool) -> Self {
        let folded = |g: &Glob| if loose { g.clone() } else { fold_glob(g) };
        FoldedTarget {
            server: folded(&target.matcher.server),
            name: match &target.matcher.name {
                NameMatcher::Glob(g) => FoldedName::Glob(folded(g)),
                NameMatcher::Regex(re) => FoldedName::Regex(re.as_str().to_string()),
            },
        }
    }
}

/// Whether the loose target `outer` (of a deny or ask rule, already folded)
/// matches every name that `inner` matches.
pub(crate) fn target_covers(outer: &Target, inner: &FoldedTarget) -> bool {
    if !glob_covers(&outer.matcher.server, &inner.server) {
        return false;
    }
    match (&outer.matcher.name, &inner.name) {
        (NameMatcher::Glob(o), FoldedName::Glob(i)) => glob_covers(o, i),
        (NameMatcher::Glob(Glob::Any), FoldedName::Regex(_)) => true,
        // A folded literal: the regex is tried on the folded name too.
        (NameMatcher::Regex(re), FoldedName::Glob(Glob::Literal(l))) => re.is_match(l),
        (NameMatcher::Regex(o), FoldedName::Regex(i)) => o.as_str() == i,
        _ => false,
    }
}

/// Whether a target of a rule matches a listed tool. `loose` for deny and
/// ask rules.
pub(crate) fn matches_tool(target: &Target, loose: bool, server: &str, tool: &str) -> bool {
    if loose {
        target.matches(&fold(server), &fold(tool), tool)
    } else {
        target.matches(server, tool, tool)
    }
}

/// A stable text for a target, whatever the spacing it was written with.
pub(crate) fn target_key(target: &Target) -> String {
    let server = glob_text(&target.matcher.server);
    match &target.matcher.name {
        NameMatcher::Glob(g) => format!("{server}/{}", glob_text(g)),
        NameMatcher::Regex(re) => format!("{server}~/{}/", re.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage() {
        assert!(glob_covers(&Glob::new("*"), &Glob::new("a*b")));
        assert!(glob_covers(&Glob::new("get_*"), &Glob::new("get_user_*")));
        assert!(glob_covers(&Glob::new("*_repo"), &Glob::new("delete_repo")));
        assert!(glob_covers(&Glob::new("get*"), &Glob::new("get?x*")));
        assert!(!glob_covers(&Glob::new("get_*"), &Glob::new("*")));
        assert!(!glob_covers(&Glob::new("a*b"), &Glob::new("a*c*b")));
        assert_eq!(fold_glob(&Glob::new("Get-*")), Glob::new("get_*"));
    }
}
