//! Name folding for loose matching: lower-case, and `-`, `.` and `_` made
//! equal, so `Delete-Repo` and `delete_repo` fold to the same text.
//!
//! Folding maps each character to exactly one character, so a `?` in a
//! folded pattern still lines up with one character of a folded name and
//! loose matching only ever adds matches to exact matching. A character
//! whose lower case is more than one character (`İ` lower-cases to `i` and
//! a combining dot) is kept as it is.
//!
//! [`Names`] is a request's server and name folded once, as the index
//! reads them ([`Query`]). Short ASCII names fold eight bytes at a time
//! (`fold_ascii_into`; why: docs/performance.md).

use std::borrow::Cow;
use std::ops::Deref;

use super::index::Query;

/// Folds a tool, server or pattern name. Borrows when nothing changes (the
/// common case: names that are already lower-case snake_case).
pub fn fold(name: &str) -> Cow<'_, str> {
    if is_folded(name) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '-' | '.' | '_' => out.push('_'),
            c if c.is_ascii() => out.push(c.to_ascii_lowercase()),
            c => out.push(fold_char(c)),
        }
    }
    Cow::Owned(out)
}

/// A simple one-to-one case fold: the lower case of `c` when that is one
/// character, else `c` itself.
pub fn fold_char(c: char) -> char {
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// Whether folding leaves `name` as it is.
fn is_folded(name: &str) -> bool {
    name.bytes()
        .all(|b| b.is_ascii() && !b.is_ascii_uppercase() && b != b'-' && b != b'.')
}

/// Names up to this many bytes fold on the stack.
const INLINE: usize = 64;

/// Room on the stack for one folded name (see [`fold_name`]).
pub type FoldBuf = [u8; INLINE];

/// A folded request name. Deciding folds the server and tool names of
/// every request; this keeps that free of allocation unless a name is
/// longer than 64 bytes or not ASCII. The index reads the folded bytes
/// (hashing and comparing them); only the few patterns that need the
/// folded name as text (general globs, regexes) check them as UTF-8.
#[derive(Debug, Clone)]
pub enum Folded<'a> {
    /// Already folded: the name itself.
    Borrowed(&'a str),
    /// Folded into the caller's buffer on the stack (ASCII only).
    Inline(&'a [u8]),
    /// Long or non-ASCII names.
    Owned(String),
}

impl Folded<'_> {
    /// Whether folding left the name as it was.
    pub fn is_unchanged(&self) -> bool {
        matches!(self, Folded::Borrowed(_))
    }

    /// The folded name's bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match self {
            Folded::Borrowed(s) => s.as_bytes(),
            Folded::Inline(b) => b,
            Folded::Owned(s) => s.as_bytes(),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Folded::Borrowed(s) => s,
            // ASCII bytes: always valid UTF-8.
            Folded::Inline(b) => text(b),
            Folded::Owned(s) => s,
        }
    }
}

/// Folded bytes as text: a folded name is UTF-8 (ASCII folds to ASCII,
/// anything else is folded as text), so this never gives the fallback.
#[inline]
pub fn text(folded: &[u8]) -> &str {
    std::str::from_utf8(folded).unwrap_or_default()
}

impl Deref for Folded<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

/// Folds like [`fold`], without allocating for short ASCII names: those
/// fold into `buf`.
#[inline(always)]
pub fn fold_name<'a>(name: &'a str, buf: &'a mut FoldBuf) -> Folded<'a> {
    let bytes = name.as_bytes();
    match fold_ascii_into(bytes, buf) {
        Some(false) => Folded::Borrowed(name),
        Some(true) => match buf.get(..bytes.len()) {
            Some(folded) => Folded::Inline(folded),
            None => owned(name),
        },
        None => owned(name),
    }
}

const ONES: u64 = u64::from_le_bytes([1; 8]);
const HIGH: u64 = ONES * 0x80;

/// Folds the eight ASCII bytes of `w` at once: `(folded, changed)`, where
/// `changed` has a high bit set for each byte folding changed. Each byte
/// is tested for a range by adding to it: with no high bit set in `w` no
/// addition carries into the next byte.
#[inline(always)]
fn fold_word(w: u64) -> (u64, u64) {
    let upper = w.wrapping_add(ONES * (0x80 - b'A' as u64))
        & !w.wrapping_add(ONES * (0x80 - b'Z' as u64 - 1))
        & HIGH;
    let punct = w.wrapping_add(ONES * (0x80 - b'-' as u64))
        & !w.wrapping_add(ONES * (0x80 - b'.' as u64 - 1))
        & HIGH;
    // 0xff in each byte that is `-` or `.`.
    let mask = (punct >> 7).wrapping_mul(0xff);
    let folded = (w.wrapping_add(upper >> 2) & !mask) | ((ONES * u64::from(b'_')) & mask);
    (folded, upper | punct)
}

/// Folds an ASCII name of at most 64 bytes into `out`, eight bytes at a
/// time (the last eight overlapping the ones before: no partial word is
/// copied): `Some(false)` when folding changes nothing, `Some(true)` when
/// it does, `None` for a longer name or one with a byte past ASCII.
#[inline(always)]
fn fold_ascii_into(bytes: &[u8], out: &mut FoldBuf) -> Option<bool> {
    let n = bytes.len();
    if n > INLINE {
        return None;
    }
    if n < 8 {
        // One word, zero-padded (a zero byte folds to itself).
        let w = super::glob::short_word(bytes);
        let (folded, diff) = fold_word(w);
        out.get_mut(..8)?.copy_from_slice(&folded.to_le_bytes());
        return (w & HIGH == 0).then_some(diff != 0);
    }
    let (mut changed, mut high) = (0u64, 0u64);
    let mut at = 0;
    while at < n {
        let start = at.min(n - 8);
        let w = u64::from_le_bytes(*bytes.get(start..)?.first_chunk::<8>()?);
        let (folded, diff) = fold_word(w);
        changed |= diff;
        high |= w;
        out.get_mut(start..start + 8)?
            .copy_from_slice(&folded.to_le_bytes());
        at += 8;
    }
    (high & HIGH == 0).then_some(changed != 0)
}

fn owned(name: &str) -> Folded<'_> {
    match fold(name) {
        Cow::Borrowed(same) => Folded::Borrowed(same),
        Cow::Owned(folded) => Folded::Owned(folded),
    }
}

/// A request's names as each kind of list matches them: folded once, by
/// the evaluator for every request and by [`crate::Policy::is_visible`].
pub(crate) struct Names<'r> {
    /// The server id as sent.
    pub server: &'r str,
    /// The name as matched (a resource's normalized URI).
    pub name: &'r str,
    /// The server id folded.
    pub folded_server: Folded<'r>,
    /// The name folded.
    pub folded_name: Folded<'r>,
}

impl<'r> Names<'r> {
    /// `name` is the request's name as matched: for a resource, its
    /// normalized URI. Short ASCII names fold into `bufs`.
    pub fn new(server: &'r str, name: &'r str, bufs: &'r mut [FoldBuf; 2]) -> Self {
        let [server_buf, name_buf] = bufs;
        Names {
            server,
            name,
            folded_server: fold_name(server, server_buf),
            folded_name: fold_name(name, name_buf),
        }
    }

    /// The names as the index reads them.
    pub fn query(&self) -> Query<'_> {
        Query {
            server: self.server,
            name: self.name,
            folded_server: self.folded_server.bytes(),
            folded_name: self.folded_name.bytes(),
            server_unfolded: self.folded_server.is_unchanged(),
            name_unfolded: self.folded_name.is_unchanged(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{fold, fold_name, Folded};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn fold_name_agrees_with_fold_on_any_text(name in "[ -~]{0,70}|.{0,10}") {
            let mut buf = [0; 64];
            let folded = fold_name(&name, &mut buf);
            prop_assert_eq!(folded.as_str(), fold(&name));
        }
    }

    #[test]
    fn fold_name_agrees_with_fold() {
        let long = "Long-Name.".repeat(10);
        for name in [
            "delete_repo",
            "Delete-Repo",
            "DELETE.REPO",
            "ÉCRIRE",
            "a",
            "",
            &long,
        ] {
            assert_eq!(fold_name(name, &mut [0; 64]).as_str(), fold(name), "{name}");
        }
        let mut buf = [0; 64];
        assert!(matches!(
            fold_name("get_user", &mut buf),
            Folded::Borrowed(_)
        ));
        assert!(matches!(
            fold_name("Get-User", &mut buf),
            Folded::Inline(..)
        ));
        assert!(matches!(fold_name(&long, &mut buf), Folded::Owned(_)));
    }

    #[test]
    fn every_character_folds_to_one_character() {
        use crate::policy::glob::Glob;
        let one = Glob::new(&fold("a?b"));
        for c in (0..=char::MAX as u32).filter_map(char::from_u32) {
            let name = format!("a{c}b");
            assert_eq!(fold(&name).chars().count(), 3, "{c:?}");
            assert!(one.matches(&fold(&name)), "{c:?}");
        }
    }

    #[test]
    fn every_ascii_byte_folds_as_fold_does() {
        for b in 0u8..128 {
            let c = char::from(b).to_string();
            assert_eq!(fold_name(&c, &mut [0; 64]).as_str(), fold(&c), "{b}");
        }
    }

    /// The word-at-a-time fold, at every length it runs at and every
    /// position in the word (the last word overlaps the one before).
    #[test]
    fn every_ascii_byte_folds_as_fold_does_in_a_word() {
        for len in [8, 9, 12, 15, 16, 17, 31, 33, 63, 64] {
            for at in 0..len {
                for b in 0u8..128 {
                    let mut name = vec![b'x'; len];
                    name[at] = b;
                    name[len - 1 - at] = b'Z';
                    let name = String::from_utf8(name).unwrap();
                    assert_eq!(
                        fold_name(&name, &mut [0; 64]).as_str(),
                        fold(&name),
                        "{name:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn folds_case_and_punctuation() {
        assert_eq!(fold("Delete-Repo"), "delete_repo");
        assert_eq!(fold("DELETE.REPO"), "delete_repo");
        assert_eq!(fold("delete_repo"), "delete_repo");
        assert_eq!(fold("ÉCRIRE"), "écrire");
        // One character stays one character.
        assert_eq!(fold("aİb"), "aİb");
        assert_eq!(fold("ẞ"), "ß");
        assert!(matches!(fold("get_user_2"), std::borrow::Cow::Borrowed(_)));
    }
}
