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

/// Whether the loose target `outer` (of a deny or ask rule, already folded)
/// matches every name that `inner` matches. `inner_loose` says whether
/// `inner` is itself folded (an ask rule) or exact (an allow rule).
pub(crate) fn target_covers(outer: &Target, inner: &Target, inner_loose: bool) -> bool {
    let folded = |g: &Glob| if inner_loose { g.clone() } else { fold_glob(g) };
    if !glob_covers(&outer.matcher.server, &folded(&inner.matcher.server)) {
        return false;
    }
    match (&outer.matcher.name, &inner.matcher.name) {
        (NameMatcher::Glob(o), NameMatcher::Glob(i)) => glob_covers(o, &folded(i)),
        (NameMatcher::Glob(Glob::Any), NameMatcher::Regex(_)) => true,
        (NameMatcher::Regex(re), NameMatcher::Glob(Glob::Literal(l))) => {
            re.is_match(l) || re.is_match(&fold(l))
        }
        (NameMatcher::Regex(o), NameMatcher::Regex(i)) => o.as_str() == i.as_str(),
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
