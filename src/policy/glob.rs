//! Target globs: `*` matches any run of characters (also none), `?` exactly
//! one character; everything else is literal. Patterns are sorted by shape
//! at compile time so that the target index can look most of them up by
//! hash instead of trying them one by one.
//!
//! A glob's text is shared (`Arc`): the compiler builds one glob per
//! distinct segment of a file, and every target, index table and key that
//! uses it holds a count on it instead of a copy.

use std::sync::Arc;

/// One compiled glob.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Glob {
    /// No wildcard: equality.
    Literal(Arc<str>),
    /// `*` alone.
    Any,
    /// `abc*`.
    Prefix(Arc<str>),
    /// `*abc`.
    Suffix(Arc<str>),
    /// Anything else.
    Pattern(Arc<[Token]>),
}

/// A piece of a general pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Token {
    Literal(Box<str>),
    Star,
    One,
}

impl Glob {
    pub fn new(pattern: &str) -> Glob {
        // Most patterns are a plain name or one `*` at an end: no token list.
        let wildcards = pattern.bytes().filter(|b| matches!(b, b'*' | b'?')).count();
        match wildcards {
            0 => return Glob::Literal(pattern.into()),
            1 if pattern == "*" => return Glob::Any,
            1 if pattern.ends_with('*') => {
                return Glob::Prefix(pattern[..pattern.len() - 1].into())
            }
            1 if pattern.starts_with('*') => return Glob::Suffix(pattern[1..].into()),
            _ => {}
        }
        let mut tokens: Vec<Token> = Vec::new();
        let mut literal = String::new();
        for c in pattern.chars() {
            match c {
                '*' | '?' => {
                    if !literal.is_empty() {
                        tokens.push(Token::Literal(std::mem::take(&mut literal).into()));
                    }
                    if c == '?' {
                        tokens.push(Token::One);
                    } else if tokens.last() != Some(&Token::Star) {
                        tokens.push(Token::Star);
                    }
                }
                _ => literal.push(c),
            }
        }
        if !literal.is_empty() {
            tokens.push(Token::Literal(literal.into()));
        }
        match tokens.as_slice() {
            [] => Glob::Literal("".into()),
            [Token::Literal(l)] => Glob::Literal(Arc::from(&**l)),
            [Token::Star] => Glob::Any,
            [Token::Literal(l), Token::Star] => Glob::Prefix(Arc::from(&**l)),
            [Token::Star, Token::Literal(l)] => Glob::Suffix(Arc::from(&**l)),
            _ => Glob::Pattern(tokens.into()),
        }
    }

    /// The pattern with its text folded (`names::fold`): what it is as a
    /// loose target; borrowed when folding changes nothing. Folding maps
    /// each character to one character and leaves `*` and `?` as they
    /// are, so the shape does not change. (The compiler folds a segment's
    /// text before making it a glob; the tests check the two agree. The
    /// index folds the glob a literal regex stands for with it.)
    pub fn folded(&self) -> std::borrow::Cow<'_, Glob> {
        use super::names::fold;
        use std::borrow::Cow;
        let same = |s: &str| matches!(fold(s), Cow::Borrowed(_));
        let unchanged = match self {
            Glob::Literal(t) | Glob::Prefix(t) | Glob::Suffix(t) => same(t),
            Glob::Any => true,
            Glob::Pattern(tokens) => tokens.iter().all(|t| match t {
                Token::Literal(l) => same(l),
                _ => true,
            }),
        };
        if unchanged {
            return Cow::Borrowed(self);
        }
        let f = |s: &str| -> Arc<str> { fold(s).into() };
        Cow::Owned(match self {
            Glob::Literal(l) => Glob::Literal(f(l)),
            Glob::Any => Glob::Any,
            Glob::Prefix(p) => Glob::Prefix(f(p)),
            Glob::Suffix(s) => Glob::Suffix(f(s)),
            Glob::Pattern(tokens) => Glob::Pattern(
                tokens
                    .iter()
                    .map(|t| match t {
                        Token::Literal(l) => Token::Literal(fold(l).into()),
                        other => other.clone(),
                    })
                    .collect::<Vec<_>>()
                    .into(),
            ),
        })
    }

    /// Whether the pattern has no wildcard.
    pub fn is_literal(&self) -> bool {
        matches!(self, Glob::Literal(_))
    }

    pub fn matches(&self, text: &str) -> bool {
        match self {
            Glob::Literal(l) => same(l.as_bytes(), text.as_bytes()),
            Glob::Any => true,
            Glob::Prefix(p) => starts_with(text, p),
            Glob::Suffix(s) => ends_with(text, s),
            Glob::Pattern(tokens) => matches_tokens(tokens, text),
        }
    }
}

/// Whether two byte strings are equal, comparing short ones in a few
/// word loads instead of a call to `memcmp` (names are short, and a
/// decision compares a dozen of them).
#[inline]
pub fn same(a: &[u8], b: &[u8]) -> bool {
    #[inline]
    fn word<const N: usize>(s: &[u8], at: usize) -> Option<[u8; N]> {
        s.get(at..)?.first_chunk::<N>().copied()
    }
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        1..=3 => a.first() == b.first() && a.get(n / 2) == b.get(n / 2) && a.last() == b.last(),
        4..=7 => word::<4>(a, 0) == word::<4>(b, 0) && word::<4>(a, n - 4) == word::<4>(b, n - 4),
        8..=16 => word::<8>(a, 0) == word::<8>(b, 0) && word::<8>(a, n - 8) == word::<8>(b, n - 8),
        _ => a == b,
    }
}

/// Up to seven bytes as a little-endian word padded with zeros (longer
/// texts give their first eight), in a few overlapping loads: a copy of a
/// length not known at compile time would call `memcpy`, a loop a step a
/// byte. Folding, hashing and the index's affix heads read short texts so.
#[inline]
pub fn short_word(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let at = |i: usize| u64::from(bytes.get(i).copied().unwrap_or(0));
    let u32_at = |i: usize| {
        bytes
            .get(i..)
            .and_then(|b| b.first_chunk::<4>())
            .map_or(0, |w| u64::from(u32::from_le_bytes(*w)))
    };
    match n {
        0 => 0,
        // The middle byte may be the first or last one again: or-ing a
        // byte into its own place changes nothing.
        1..=3 => at(0) | (at(n / 2) << (8 * (n / 2))) | (at(n - 1) << (8 * (n - 1))),
        4..=7 => u32_at(0) | (u32_at(n - 4) << (8 * (n - 4))),
        _ => bytes
            .first_chunk::<8>()
            .map_or(0, |w| u64::from_le_bytes(*w)),
    }
}

/// `text.starts_with(prefix)`, through [`same`].
#[inline]
pub fn starts_with(text: &str, prefix: &str) -> bool {
    starts_with_bytes(text.as_bytes(), prefix.as_bytes())
}

/// `text.ends_with(suffix)`, through [`same`].
#[inline]
pub fn ends_with(text: &str, suffix: &str) -> bool {
    ends_with_bytes(text.as_bytes(), suffix.as_bytes())
}

/// [`starts_with`] on bytes.
#[inline]
pub fn starts_with_bytes(text: &[u8], prefix: &[u8]) -> bool {
    text.get(..prefix.len())
        .is_some_and(|head| same(head, prefix))
}

/// [`ends_with`] on bytes.
#[inline]
pub fn ends_with_bytes(text: &[u8], suffix: &[u8]) -> bool {
    text.len()
        .checked_sub(suffix.len())
        .and_then(|at| text.get(at..))
        .is_some_and(|tail| same(tail, suffix))
}

/// Wildcard matching with one back-track point: on a mismatch the last `*`
/// takes one more character. Linear in practice, never exponential.
fn matches_tokens(tokens: &[Token], text: &str) -> bool {
    let mut ti = 0;
    let mut si = 0;
    // (token after the last star, text position that star has reached)
    let mut star: Option<(usize, usize)> = None;
    loop {
        if let Some(token) = tokens.get(ti) {
            let advanced = match token {
                Token::Star => {
                    star = Some((ti + 1, si));
                    ti += 1;
                    continue;
                }
                Token::One => text[si..].chars().next().map(|c| si + c.len_utf8()),
                Token::Literal(l) => text[si..].starts_with(&**l).then(|| si + l.len()),
            };
            if let Some(next) = advanced {
                si = next;
                ti += 1;
                continue;
            }
        } else if si == text.len() {
            return true;
        }
        match star {
            Some((after, reached)) => match text[reached..].chars().next() {
                Some(c) => {
                    let next = reached + c.len_utf8();
                    star = Some((after, next));
                    ti = after;
                    si = next;
                }
                None => return false,
            },
            None => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn shapes() {
        assert_eq!(Glob::new("get_*"), Glob::Prefix("get_".into()));
        assert_eq!(Glob::new("*_repo"), Glob::Suffix("_repo".into()));
        assert_eq!(Glob::new("**"), Glob::Any);
        assert!(matches!(Glob::new("a*b"), Glob::Pattern(_)));
        assert!(Glob::new("plain").is_literal());
    }

    #[test]
    fn wildcards() {
        assert!(Glob::new("a*b?d").matches("axxbcd"));
        assert!(Glob::new("a*b?d").matches("abcd"));
        assert!(!Glob::new("a*b?d").matches("abd"));
        assert!(Glob::new("*a*a*a*").matches("banana_a"));
        assert!(Glob::new("?é").matches("xé"));
        assert!(Glob::new("file:///etc/*").matches("file:///etc/passwd"));
        assert!(!Glob::new("file:///etc/*").matches("file:///etcetera"));
    }

    fn oracle(pattern: &str) -> regex::Regex {
        let mut re = String::from("^(?s:");
        for c in pattern.chars() {
            match c {
                '*' => re.push_str(".*"),
                '?' => re.push('.'),
                c => re.push_str(&regex::escape(&c.to_string())),
            }
        }
        re.push_str(")$");
        regex::Regex::new(&re).expect("oracle regex")
    }

    proptest! {
        #[test]
        fn same_starts_with_and_ends_with_agree_with_std(a in "[ab]{0,20}", b in "[ab]{0,20}") {
            prop_assert_eq!(same(a.as_bytes(), b.as_bytes()), a == b);
            prop_assert_eq!(starts_with(&a, &b), a.starts_with(&b));
            prop_assert_eq!(ends_with(&a, &b), a.ends_with(&b));
        }

        /// The compiler folds a segment's text and makes a glob of it; the
        /// index folded the glob: the two agree, shape and all.
        #[test]
        fn folding_the_text_or_the_glob_agree(pattern in "[aAb_.*?é-]{0,8}|İ\\*") {
            use super::super::names::fold;
            use std::borrow::Cow;
            let glob = Glob::new(&pattern);
            let folded = glob.folded();
            prop_assert_eq!(&*folded, &Glob::new(&fold(&pattern)));
            prop_assert_eq!(
                matches!(folded, Cow::Borrowed(_)),
                matches!(fold(&pattern), Cow::Borrowed(_))
            );
        }

        #[test]
        fn agrees_with_a_regex_oracle(pattern in "[ab*?é]{0,8}", text in "[abé]{0,10}") {
            prop_assert_eq!(Glob::new(&pattern).matches(&text), oracle(&pattern).is_match(&text));
        }
    }
}
