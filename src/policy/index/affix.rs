//! Prefixes (or suffixes), each with a value: every key a text starts
//! (ends) with, found with one binary search and a walk along links.
//!
//! Frozen, the keys are sorted at their end, each with a link to the
//! longest other key it starts (ends) with. All the keys a text starts
//! with are then the greatest key not after the text and the keys on its
//! chain of links no longer than what the two share. A set of up to
//! [`LINEAR_AFFIXES`] keys is compared one by one instead (cheaper than
//! searching), reading each key's first (last) eight bytes from a compact
//! array of heads first.

use std::sync::Arc;

use super::super::glob::{ends_with_bytes, short_word, starts_with_bytes};
use super::hash::BuildMap;

/// Sets of up to this many affixes are tried one by one.
pub(super) const LINEAR_AFFIXES: usize = 24;

/// [`AffixEntry::parent`] of a key that no other key is an affix of.
const NO_PARENT: u32 = u32::MAX;

/// Which end of a text a set of affixes is matched at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    /// Prefixes.
    Start,
    /// Suffixes.
    End,
}

impl End {
    /// Up to eight bytes of `text` at this end, as a word whose first byte
    /// is the byte at the end (the first byte, or the last), then the
    /// next inward; zero past the text. Two texts agree on their first
    /// (last) `n <= 8` bytes when their heads do under [`low_bytes`]`(n)`.
    #[inline]
    pub(super) fn head(self, text: &[u8]) -> u64 {
        match self {
            End::Start => short_word(text),
            End::End => match text.last_chunk::<8>() {
                Some(word) => u64::from_be_bytes(*word),
                // The bytes reversed, the last one lowest.
                None => short_word(text)
                    .swap_bytes()
                    .checked_shr(8 * (8 - text.len() as u32))
                    .unwrap_or(0),
            },
        }
    }

    fn cmp(self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        match self {
            End::Start => a.cmp(b),
            End::End => a.iter().rev().cmp(b.iter().rev()),
        }
    }

    /// How many bytes `a` and `b` share at this end.
    fn common(self, a: &[u8], b: &[u8]) -> usize {
        match self {
            End::Start => a.iter().zip(b).take_while(|(x, y)| x == y).count(),
            End::End => a
                .iter()
                .rev()
                .zip(b.iter().rev())
                .take_while(|(x, y)| x == y)
                .count(),
        }
    }
}

/// A word with its low `n` bytes set (all of them for `n >= 8`).
#[inline]
fn low_bytes(n: usize) -> u64 {
    let n = n.min(8) as u32;
    u64::MAX.checked_shr(64 - 8 * n).unwrap_or(0)
}

/// A key's first (last) bytes for the linear scan, kept beside the
/// others (16 bytes, four to a cache line): most keys are told apart, and
/// those of at most eight bytes matched, without reading the key itself
/// (another cache line each).
#[derive(Debug, Clone, Copy)]
struct Head {
    /// [`End::head`] of the key.
    word: u64,
    /// The key's length (`u32::MAX` past that: such a key matches no
    /// text the index is asked about, which are bounded far below).
    len: u32,
}

impl Head {
    fn of(end: End, key: &[u8]) -> Self {
        Head {
            word: end.head(key),
            len: u32::try_from(key.len()).unwrap_or(u32::MAX),
        }
    }
}

/// Affixes being filed: each key once, with its value.
#[derive(Debug, Clone)]
pub(super) struct AffixesBuilder<T> {
    end: End,
    entries: Vec<(Arc<str>, T)>,
    /// Where each key is in `entries`, once there are more than a few
    /// (a few are found by comparing them).
    at: Option<BuildMap<Arc<str>, usize>>,
}

impl<T> AffixesBuilder<T> {
    pub(super) fn new(end: End) -> Self {
        AffixesBuilder {
            end,
            entries: Vec::new(),
            at: None,
        }
    }

    /// How many keys are filed.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Every key with its value, in the order first filed.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &T)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Every value, to change in place.
    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    /// Sorts the keys at their end and links each to its longest affix
    /// among them.
    pub(super) fn freeze(self) -> Affixes<T> {
        let end = self.end;
        let mut entries = self.entries;
        entries.sort_unstable_by(|a, b| end.cmp(a.0.as_bytes(), b.0.as_bytes()));
        let mut linked: Vec<AffixEntry<T>> = Vec::with_capacity(entries.len());
        // The chain of keys that are affixes of the current one, longest on top.
        let mut chain: Vec<usize> = Vec::new();
        for (key, value) in entries {
            while let Some(&top) = chain.last() {
                let t = linked[top].key.as_bytes();
                if t.len() <= key.len() && end.common(t, key.as_bytes()) == t.len() {
                    break;
                }
                chain.pop();
            }
            let parent = chain.last().map_or(NO_PARENT, |&p| p as u32);
            chain.push(linked.len());
            linked.push(AffixEntry { key, parent, value });
        }
        let heads = linked
            .iter()
            .map(|e| Head::of(end, e.key.as_bytes()))
            .collect();
        Affixes {
            end,
            entries: linked,
            heads,
        }
    }
}

impl<T: Default> AffixesBuilder<T> {
    /// The value of `key`, made (default) if the key is new.
    pub(super) fn entry(&mut self, key: &Arc<str>) -> &mut T {
        let found = if self.entries.len() <= LINEAR_AFFIXES {
            self.entries.iter().position(|(k, _)| k == key)
        } else {
            let entries = &self.entries;
            self.at
                .get_or_insert_with(|| {
                    entries
                        .iter()
                        .enumerate()
                        .map(|(i, (k, _))| (Arc::clone(k), i))
                        .collect()
                })
                .get(&**key)
                .copied()
        };
        let at = match found {
            Some(at) => at,
            None => {
                self.entries.push((Arc::clone(key), T::default()));
                let at = self.entries.len() - 1;
                if let Some(map) = &mut self.at {
                    map.insert(Arc::clone(key), at);
                }
                at
            }
        };
        &mut self.entries[at].1
    }
}

#[derive(Debug, Clone)]
struct AffixEntry<T> {
    key: Arc<str>,
    /// The longest other key this key starts (ends) with.
    parent: u32,
    value: T,
}

/// Frozen affixes: sorted at their end, each key linked to its longest
/// affix among them.
#[derive(Debug, Clone)]
pub(super) struct Affixes<T> {
    end: End,
    entries: Vec<AffixEntry<T>>,
    /// The keys' heads, in `entries` order.
    heads: Vec<Head>,
}

impl<T> Affixes<T> {
    /// How many keys there are.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The same keys with each value mapped.
    pub(super) fn map<U>(self, mut f: impl FnMut(T) -> U) -> Affixes<U> {
        Affixes {
            end: self.end,
            entries: self
                .entries
                .into_iter()
                .map(|e| AffixEntry {
                    key: e.key,
                    parent: e.parent,
                    value: f(e.value),
                })
                .collect(),
            heads: self.heads,
        }
    }

    /// Calls `each` with the value of every key `text` starts (ends) with.
    #[inline]
    pub(super) fn each<'s>(&'s self, text: &[u8], mut each: impl FnMut(&'s T)) {
        if self.entries.len() <= LINEAR_AFFIXES {
            self.each_linear(text, each);
            return;
        }
        let end = self.end;
        let after = self
            .entries
            .partition_point(|e| end.cmp(e.key.as_bytes(), text).is_le());
        let Some(mut i) = after.checked_sub(1) else {
            return;
        };
        let shared = self
            .entries
            .get(i)
            .map_or(0, |e| end.common(e.key.as_bytes(), text));
        while let Some(e) = self.entries.get(i) {
            if e.key.len() <= shared {
                each(&e.value);
            }
            if e.parent == NO_PARENT {
                break;
            }
            i = e.parent as usize;
        }
    }

    /// [`Affixes::each`] of a few keys: comparing each is cheaper than
    /// searching. The heads tell most apart; a longer key's rest is read
    /// only when its first (last) eight bytes match.
    #[inline]
    fn each_linear<'s>(&'s self, text: &[u8], mut each: impl FnMut(&'s T)) {
        let end = self.end;
        let head = end.head(text);
        // Sorted, the keys that share the text's byte at this end (a
        // head's lowest byte) are one run, found by a binary search; only
        // the empty key, first of all, is outside it.
        if let (Some(h), Some(e)) = (self.heads.first(), self.entries.first()) {
            if h.len == 0 {
                each(&e.value);
            }
        }
        let byte = head as u8;
        let from = self.heads.partition_point(|h| (h.word as u8) < byte);
        for (h, e) in self.heads.iter().zip(&self.entries).skip(from) {
            if h.word as u8 != byte {
                break;
            }
            let len = h.len as usize;
            if len == 0 || len > text.len() || head & low_bytes(len) != h.word {
                continue;
            }
            let hit = len <= 8
                || match end {
                    End::Start => starts_with_bytes(text, e.key.as_bytes()),
                    End::End => ends_with_bytes(text, e.key.as_bytes()),
                };
            if hit {
                each(&e.value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// The heads the short scan reads (eight bytes at an end, a key's
        /// rest only past them) find exactly the keys a text starts or
        /// ends with: keys and texts of 0 to 20 bytes, around the eight
        /// a head holds, in sets searched one by one and by links.
        #[test]
        fn affix_heads_find_exactly_the_keys_at_an_end(
            keys in prop::collection::vec("[ab_]{0,20}", 0..LINEAR_AFFIXES + 4),
            texts in prop::collection::vec("[ab_]{0,20}", 1..8),
        ) {
            for end in [End::Start, End::End] {
                let mut set: AffixesBuilder<Vec<usize>> = AffixesBuilder::new(end);
                for (i, k) in keys.iter().enumerate() {
                    set.entry(&Arc::from(k.as_str())).push(i);
                }
                let set = set.freeze();
                // Texts near each key too: itself, longer at either
                // end, and one byte changed at either end.
                let near = keys.iter().flat_map(|k| {
                    let flip = |at: usize| {
                        let mut b = k.clone().into_bytes();
                        if let Some(c) = b.get_mut(at) {
                            *c = if *c == b'a' { b'b' } else { b'a' };
                        }
                        String::from_utf8(b).unwrap()
                    };
                    [
                        k.clone(),
                        format!("{k}_"),
                        format!("_{k}"),
                        flip(0),
                        flip(k.len().saturating_sub(1)),
                        flip(8),
                        flip(k.len().saturating_sub(9)),
                    ]
                });
                for text in texts.iter().cloned().chain(near) {
                    let text = &text;
                    let mut got: Vec<usize> = Vec::new();
                    set.each(text.as_bytes(), |v| got.extend(v));
                    got.sort_unstable();
                    let want: Vec<usize> = (0..keys.len())
                        .filter(|&i| match end {
                            End::Start => text.starts_with(&keys[i]),
                            End::End => text.ends_with(&keys[i]),
                        })
                        .collect();
                    prop_assert_eq!(got, want, "{:?} {}", end, text);
                }
            }
        }
    }

    /// The word of a few bytes read with overlapping loads is the bytes
    /// padded with zeros, at every length (and the head at each end is
    /// what its definition says).
    #[test]
    fn short_words_are_the_bytes_padded() {
        let bytes: Vec<u8> = (1..=20u8).map(|b| b.wrapping_mul(37)).collect();
        for n in 0..=bytes.len() {
            let text = &bytes[..n];
            let mut padded = [0u8; 8];
            for (to, from) in padded.iter_mut().zip(text) {
                *to = *from;
            }
            assert_eq!(short_word(text), u64::from_le_bytes(padded), "{n}");
            assert_eq!(End::Start.head(text), u64::from_le_bytes(padded), "{n}");
            let mut last = [0u8; 8];
            for (to, from) in last.iter_mut().zip(text.iter().rev()) {
                *to = *from;
            }
            assert_eq!(End::End.head(text), u64::from_le_bytes(last), "{n}");
        }
    }

    /// Both ways of searching: one by one (a few keys) and the sorted
    /// array with its links (more than `LINEAR_AFFIXES`).
    #[test]
    fn affixes_find_every_key_a_text_starts_with() {
        let few = ["", "a", "ab", "abc", "abd", "b", "abcde", "ac", "abcd"];
        let extra: Vec<String> = (0..LINEAR_AFFIXES + 6).map(|i| format!("ab{i}")).collect();
        let many: Vec<&str> = few
            .iter()
            .copied()
            .chain(extra.iter().map(String::as_str))
            .collect();
        for keys in [&few[..], &many[..]] {
            let mut set: AffixesBuilder<u32> = AffixesBuilder::new(End::Start);
            for (i, k) in keys.iter().enumerate() {
                *set.entry(&Arc::from(*k)) = i as u32;
            }
            let set = set.freeze();
            for text in [
                "", "a", "abcdef", "abdx", "ac", "b", "ba", "c", "abc", "ab12x", "ab3",
            ] {
                let mut got: Vec<u32> = Vec::new();
                set.each(text.as_bytes(), |v| got.push(*v));
                got.sort_unstable();
                let want: Vec<u32> = (0..keys.len() as u32)
                    .filter(|&i| text.starts_with(keys[i as usize]))
                    .collect();
                assert_eq!(got, want, "{text}");
            }
            let mut set: AffixesBuilder<u32> = AffixesBuilder::new(End::End);
            for (i, k) in keys.iter().enumerate() {
                *set.entry(&Arc::from(*k)) = i as u32;
            }
            let set = set.freeze();
            for text in ["", "xab", "cba", "dcba", "bcd", "xabcd", "b", "xab12"] {
                let mut got: Vec<u32> = Vec::new();
                set.each(text.as_bytes(), |v| got.push(*v));
                got.sort_unstable();
                let want: Vec<u32> = (0..keys.len() as u32)
                    .filter(|&i| text.ends_with(keys[i as usize]))
                    .collect();
                assert_eq!(got, want, "{text}");
            }
        }
    }
}
