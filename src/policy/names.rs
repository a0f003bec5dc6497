//! Name folding for loose matching: lower-case, and `-`, `.` and `_` made
//! equal, so `Delete-Repo` and `delete_repo` fold to the same text.
//!
//! Folding maps each character to exactly one character, so a `?` in a
//! folded pattern still lines up with one character of a folded name and
//! loose matching only ever adds matches to exact matching. A character
//! whose lower case is more than one character (`İ` lower-cases to `i` and
//! a combining dot) is kept as it is.

use std::borrow::Cow;
use std::ops::Deref;

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

/// A folded request name. Deciding folds the server and tool names of
/// every request; this keeps that free of allocation unless a name is
/// longer than 64 bytes or not ASCII.
#[derive(Debug, Clone)]
pub enum Folded<'a> {
    /// Already folded: the name itself.
    Borrowed(&'a str),
    /// Folded into a buffer on the stack (ASCII only).
    Inline { buf: [u8; INLINE], len: usize },
    /// Long or non-ASCII names.
    Owned(String),
}

impl Folded<'_> {
    /// Whether folding left the name as it was.
    pub fn is_unchanged(&self) -> bool {
        matches!(self, Folded::Borrowed(_))
    }

    pub fn as_str(&self) -> &str {
        match self {
            Folded::Borrowed(s) => s,
            // ASCII bytes: always valid UTF-8.
            Folded::Inline { buf, len } => std::str::from_utf8(&buf[..*len]).unwrap_or_default(),
            Folded::Owned(s) => s,
        }
    }
}

impl Deref for Folded<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

/// Folds like [`fold`], without allocating for short ASCII names.
#[inline]
pub fn fold_name(name: &str) -> Folded<'_> {
    let bytes = name.as_bytes();
    // The smallest buffer that holds the name: most names fit in 16 or 32
    // bytes, and a fixed-size pass over a small buffer is a few vector
    // operations.
    let inline = match bytes.len() {
        0..=16 => fold_fixed::<16>(bytes),
        17..=32 => fold_fixed::<32>(bytes),
        33..=INLINE => fold_fixed::<INLINE>(bytes),
        _ => None,
    };
    match inline {
        Some(None) => Folded::Borrowed(name),
        Some(Some(buf)) => Folded::Inline {
            buf,
            len: bytes.len(),
        },
        None => match fold(name) {
            std::borrow::Cow::Borrowed(same) => Folded::Borrowed(same),
            std::borrow::Cow::Owned(folded) => Folded::Owned(folded),
        },
    }
}

/// Folds an ASCII name of at most `N` bytes in one pass over an `N`-byte
/// buffer (the zeros after the name fold to zeros): `Some(None)` when
/// folding changes nothing, `Some(Some(folded))` when it does, `None` for
/// a name with a byte past ASCII.
#[inline]
fn fold_fixed<const N: usize>(bytes: &[u8]) -> Option<Option<[u8; INLINE]>> {
    let mut buf = [0u8; N];
    buf.get_mut(..bytes.len())?.copy_from_slice(bytes);
    let (mut diff, mut high) = (0u8, 0u8);
    for b in &mut buf {
        let f = fold_ascii(*b);
        diff |= f ^ *b;
        high |= *b;
        *b = f;
    }
    if high >= 0x80 {
        return None;
    }
    if diff == 0 {
        return Some(None);
    }
    let mut out = [0u8; INLINE];
    out.get_mut(..N)?.copy_from_slice(&buf);
    Some(Some(out))
}

/// Folds one ASCII byte, without branches (so a name folds a vector of
/// bytes at a time).
#[inline]
fn fold_ascii(b: u8) -> u8 {
    let upper = u8::from(b.wrapping_sub(b'A') < 26);
    let punct = b == b'-' || b == b'.';
    if punct {
        b'_'
    } else {
        b | (upper << 5)
    }
}

#[cfg(test)]
mod tests {
    use super::{fold, fold_name, Folded};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn fold_name_agrees_with_fold_on_any_text(name in "[ -~]{0,70}|.{0,10}") {
            let folded = fold_name(&name);
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
            assert_eq!(fold_name(name).as_str(), fold(name), "{name}");
        }
        assert!(matches!(fold_name("get_user"), Folded::Borrowed(_)));
        assert!(matches!(fold_name("Get-User"), Folded::Inline { .. }));
        assert!(matches!(fold_name(&long), Folded::Owned(_)));
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
            assert_eq!(fold_name(&c).as_str(), fold(&c), "{b}");
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
