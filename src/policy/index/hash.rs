//! The hash the index files names under: `foldhash`'s fast hasher with a
//! fixed seed (the same tables every run, so a figure measured once holds).
//!
//! The tables are built from the policy at load time and only looked up
//! with request names, so nothing a caller sends can flood them, and a
//! keyed, DoS-resistant hash (SipHash, the std default, was a quarter of a
//! decision's time) buys nothing. What a hash here must do is spread texts
//! that differ only past their first bytes (`*_1t`, `*_2t`; `github-1`,
//! `github-2`) over both the low bits a table picks buckets by and the
//! top bits `hashbrown` keeps as each entry's tag: `foldhash` mixes every
//! byte into the whole word (a test below checks the low bits).

use std::collections::HashMap;
use std::hash::BuildHasher;

/// The hasher state of every table of the index (and of the maps used
/// while building it).
pub type TextHashState = foldhash::fast::FixedState;

/// A hash map for building the index and the compiler's tables of
/// distinct segments (keys from the policy only).
pub type BuildMap<K, V> = HashMap<K, V, TextHashState>;

/// The seed of [`TextHashState`]: any fixed value.
const SEED: u64 = 0x6d63_7070_6f6c_0001;

/// The hash a table files a name under, from its (folded) bytes: the
/// tables are looked up by a request's folded bytes, without making them
/// text.
#[inline]
pub(super) fn text_hash(bytes: &[u8]) -> u64 {
    TextHashState::with_seed(SEED).hash_one(bytes)
}

#[cfg(test)]
mod tests {
    use super::text_hash;
    use std::collections::HashSet;

    /// Texts that differ only past their first bytes still spread over
    /// the low bits a hash table picks buckets by (80,000 such patterns
    /// once made a map of them cluster and fill in quadratic time), and
    /// over the top seven bits `hashbrown` keeps as each entry's tag.
    #[test]
    fn similar_texts_spread_over_low_and_high_bits() {
        let low: HashSet<u64> = (0..1024)
            .map(|i| text_hash(format!("*_{i}t").as_bytes()) & 1023)
            .collect();
        assert!(low.len() > 500, "{} of 1024 buckets", low.len());
        let tags: HashSet<u64> = (0..1024)
            .map(|i| text_hash(format!("github-{i}").as_bytes()) >> 57)
            .collect();
        assert!(tags.len() > 100, "{} of 128 tags", tags.len());
    }
}
