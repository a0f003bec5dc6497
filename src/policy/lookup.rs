//! The decision index: for one kind of request (tool calls, resource reads
//! or prompt gets), the rules of the deny, ask and allow lists that have a
//! target naming a `(server, name)` pair, in file order, found with one hash
//! look-up per table instead of one per list, shape and pattern length.
//!
//! Every target is filed under its segments as folded (the loose matching of
//! deny and ask), so one table per folded server (and one for targets on any
//! server) serves all three lists:
//!
//! - literal names are one hash look-up; at load time each literal's entry
//!   also takes the table's prefix, suffix, `*` and general-glob patterns
//!   that match it, so a name the table knows needs nothing else;
//! - prefix and suffix patterns are searched once, in a sorted array with a
//!   link from each pattern to the longest other pattern it starts (ends)
//!   with: a binary search and a walk along those links finds all of them;
//! - general globs and regexes are tried one by one (only those of the
//!   tables the request reaches).
//!
//! A deny or ask candidate matches as found. An allow (exact) candidate
//! carries its target as written ([`Check`]) and is checked against the
//! names as sent, unless neither the pattern nor the names change when
//! folded, when the table's match is already exact. Folding maps each
//! character to one character, so a name that matches exactly also matches
//! folded: the folded tables never miss an exact match.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use hashbrown::HashTable;
use smallvec::SmallVec;
use smol_str::SmolStr;

use super::glob::{same, short_word, Glob};
use super::names::text;
use super::CompiledRegex;

/// A fast, non-cryptographic string hasher (the Fx hash of rustc and
/// Firefox). The tables are built from the policy at load time and only
/// looked up with request names, so nothing a caller sends can flood them;
/// SipHash, the std default, was a quarter of a decision's time.
#[derive(Debug, Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            self.add(short_word(rest));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A hash map hashed with [`FxHasher`] (the old index, kept as the tests' oracle).
#[cfg(test)]
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// [`FxHasher`] with a final mix, so that every bit of the hash depends on
/// every byte. Fx's low bits barely differ between texts that share their
/// first bytes (`*_1t`, `*_2t`), and a hash table picks buckets by the low
/// bits: 80,000 such patterns made a map of them cluster and fill in
/// quadratic time. Its top bits, which `hashbrown` keeps as each entry's
/// tag, depend on little more than the first five bytes of a word: server
/// ids `github-1` and `github-2` shared a tag, so finding one compared the
/// other (twice the probing at 10,000 rules). The mix folds the high half
/// into the low, multiplies and folds again (as splitmix64 ends).
#[derive(Debug, Default, Clone, Copy)]
pub struct MixedHasher(FxHasher);

impl Hasher for MixedHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.0.write_u8(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.0.write_usize(i);
    }

    #[inline]
    fn finish(&self) -> u64 {
        let h = self.0.finish();
        let h = (h ^ (h >> 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^ (h >> 29)
    }
}

/// The hash the decision tables file a name under: its bytes by
/// [`MixedHasher`] (the tables are looked up by a request's folded bytes,
/// without making them text).
#[inline]
fn text_hash(bytes: &[u8]) -> u64 {
    let mut hasher = MixedHasher::default();
    hasher.write(bytes);
    hasher.finish()
}

/// A hash map hashed with [`MixedHasher`], for building.
pub type BuildMap<K, V> = HashMap<K, V, BuildHasherDefault<MixedHasher>>;
/// What a target's name segment is matched with.
#[derive(Debug, Clone)]
pub enum NameMatcher {
    Glob(Glob),
    Regex(CompiledRegex),
}

/// A target ready for the index: the server segment and the name segment,
/// already folded when the list matches loosely.
#[derive(Debug, Clone)]
pub struct IndexedTarget {
    pub server: Glob,
    pub name: NameMatcher,
}

/// An exact target's segments folded, as the index files it.
#[derive(Debug, Clone)]
pub struct FoldedTarget {
    pub server: Glob,
    /// `None` for a regex (filed under the server, tried as written).
    pub name: Option<Glob>,
    /// Folding changed the server segment as written.
    pub server_unchanged: bool,
    /// Folding changed the name segment as written (false for a regex).
    pub name_unchanged: bool,
}

/// Rule numbers (positions in their list) or pattern positions.
pub type Hits = SmallVec<[u32; 16]>;

/// The candidates filed under one key (a literal name, a prefix, a
/// suffix): most keys have one or two, held without a heap allocation.
type CandList = SmallVec<[Cand; 2]>;

/// The candidates of one request, in file order (deny, ask, allow).
pub type Cands = SmallVec<[Cand; 16]>;

const LIST_SHIFT: u32 = 30;
const NUMBER_MASK: u32 = (1 << LIST_SHIFT) - 1;
const NO_CHECK: u32 = u32::MAX;
const NO_PARENT: u32 = u32::MAX;

/// At most this many patterns other than the literal are merged into a
/// literal name's entry at load time; past it, that name is searched like
/// any other (so a table of many literals and many `*` rules stays linear).
const MERGE_LIMIT: usize = 16;

/// Sets of up to this many affixes are tried one by one.
const LINEAR_AFFIXES: usize = 24;

/// The any-server table and the server-glob tables that match a literal
/// server are merged into that server's own table at load when together
/// they hold at most this many patterns: a request to a server the policy
/// names then searches one table. Past it, they are searched beside it,
/// so a policy of many servers and many shared rules stays linear.
const MERGE_SHARED: usize = 64;

/// Appends candidates (one by one: cheaper than a bulk insert for the one
/// to three a pattern usually has).
#[inline]
fn extend(out: &mut Cands, cands: &[Cand]) {
    for &c in cands {
        out.push(c);
    }
}

/// A rule that may match: its list and position, ordered as the decision
/// procedure tries them, and the exact target an allow rule must check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cand {
    key: u32,
    check: u32,
}

impl Cand {
    fn new(list: usize, number: u32, check: u32) -> Self {
        Cand {
            key: ((list as u32) << LIST_SHIFT) | (number & NUMBER_MASK),
            check,
        }
    }

    /// The list: 0 deny (or exclude), 1 ask, 2 allow (or include).
    pub fn list(self) -> usize {
        (self.key >> LIST_SHIFT) as usize
    }

    /// The rule's position in its list.
    pub fn number(self) -> u32 {
        self.key & NUMBER_MASK
    }
}

/// An exact target as written, checked on the names as sent.
#[derive(Debug, Clone)]
struct Check {
    server: Glob,
    name: NameMatcher,
    /// Both segments literal: the only targets that allow a new tool.
    exact: bool,
    /// Folding leaves the server pattern as it is: for a server id that
    /// folding leaves as it is too, the table's match of the folded server
    /// is exact.
    server_safe: bool,
    /// The same of the name pattern (never for a regex).
    name_safe: bool,
}

impl Check {
    /// Whether the target as written matches the names as sent, given that
    /// the folded target matches the folded names (the table found it):
    /// a segment whose pattern and name folding both leave as they are
    /// matches as found.
    #[inline]
    fn holds(&self, q: &Query<'_>) -> bool {
        ((q.server_unfolded && self.server_safe) || self.server.matches(q.server))
            && ((q.name_unfolded && self.name_safe)
                || match &self.name {
                    NameMatcher::Glob(g) => g.matches(q.name),
                    NameMatcher::Regex(re) => re.is_match(q.name),
                })
    }
}

/// The request's names as the index reads them.
#[derive(Debug, Clone, Copy)]
pub struct Query<'q> {
    /// The server id as sent.
    pub server: &'q str,
    /// The name as sent (a resource's normalized URI).
    pub name: &'q str,
    /// Both folded (UTF-8: see [`super::names::text`]).
    pub folded_server: &'q [u8],
    pub folded_name: &'q [u8],
    /// Folding left the server id as it is.
    pub server_unfolded: bool,
    /// Folding left the name as it is.
    pub name_unfolded: bool,
}

/// Which end of a text a set of affixes is matched at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum End {
    #[default]
    Start,
    End,
}

impl End {
    /// Up to eight bytes of `text` at this end, as a word whose first byte
    /// is the byte at the end (the first byte, or the last), then the
    /// next inward; zero past the text. Two texts agree on their first
    /// (last) `n <= 8` bytes when their heads do under [`low_bytes`]`(n)`.
    #[inline]
    fn head(self, text: &[u8]) -> u64 {
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

#[derive(Debug, Clone)]
struct AffixEntry<T> {
    key: Arc<str>,
    /// The longest other key this key starts (ends) with.
    parent: u32,
    value: T,
}

/// Prefixes (or suffixes), each with a value: sorted at this end, with a
/// link from each key to the longest other key it starts (ends) with. All
/// the keys a text starts with are the greatest key not after the text and
/// the keys on its chain of links no longer than what the two share.
#[derive(Debug, Clone, Default)]
struct Affixes<T> {
    end: End,
    entries: Vec<AffixEntry<T>>,
    /// The keys' heads, in `entries` order (filed with each key, put in
    /// order again by `freeze`).
    heads: Vec<Head>,
    /// Frozen: the keys are sorted at this end.
    sorted: bool,
    /// While building a large set: where each key is in `entries`
    /// (boxed: a frozen set keeps only the fields a search reads close).
    at: Option<Box<BuildMap<Arc<str>, usize>>>,
}

impl<T: Default> Affixes<T> {
    fn new(end: End) -> Self {
        Affixes {
            end,
            entries: Vec::new(),
            heads: Vec::new(),
            sorted: false,
            at: None,
        }
    }

    fn entry(&mut self, key: &Arc<str>) -> &mut T {
        // A few keys are found by comparing them; past that, by a map
        // (built then from the keys so far).
        let found = if self.entries.len() <= LINEAR_AFFIXES {
            self.entries.iter().position(|e| e.key == *key)
        } else {
            let entries = &self.entries;
            self.at
                .get_or_insert_with(|| {
                    Box::new(
                        entries
                            .iter()
                            .enumerate()
                            .map(|(i, e)| (e.key.clone(), i))
                            .collect(),
                    )
                })
                .get(&**key)
                .copied()
        };
        let at = match found {
            Some(at) => at,
            None => {
                self.entries.push(AffixEntry {
                    key: Arc::clone(key),
                    parent: NO_PARENT,
                    value: T::default(),
                });
                self.heads.push(Head::of(self.end, key.as_bytes()));
                self.sorted = false;
                let at = self.entries.len() - 1;
                if let Some(map) = &mut self.at {
                    map.insert(Arc::clone(key), at);
                }
                at
            }
        };
        &mut self.entries[at].value
    }
}

impl<T> Affixes<T> {
    /// Sorts the keys and links each to its longest affix among them.
    fn freeze(&mut self) {
        self.at = None;
        let end = self.end;
        self.entries
            .sort_unstable_by(|a, b| end.cmp(a.key.as_bytes(), b.key.as_bytes()));
        // The chain of keys that are affixes of the current one, longest on top.
        let mut chain: Vec<usize> = Vec::new();
        for i in 0..self.entries.len() {
            let key = self.entries[i].key.as_bytes();
            while let Some(&top) = chain.last() {
                let t = self.entries[top].key.as_bytes();
                if t.len() <= key.len() && end.common(t, key) == t.len() {
                    break;
                }
                chain.pop();
            }
            self.entries[i].parent = chain.last().map_or(NO_PARENT, |&p| p as u32);
            chain.push(i);
        }
        self.heads = self
            .entries
            .iter()
            .map(|e| Head::of(end, e.key.as_bytes()))
            .collect();
        self.sorted = true;
    }

    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Calls `each` with the value of every key `text` starts (ends) with.
    #[inline]
    fn each<'s>(&'s self, text: &[u8], mut each: impl FnMut(&'s T)) {
        if self.entries.len() <= LINEAR_AFFIXES {
            // A few keys: comparing each is cheaper than searching. The
            // heads tell most apart; a longer key's rest is read only
            // when its first (last) eight bytes match.
            let end = self.end;
            let head = end.head(text);
            // Sorted, the keys that share the text's byte at this end (a
            // head's lowest byte) are one run, found by a binary search;
            // only the empty key, first of all, is outside it.
            if self.sorted {
                if let (Some(h), Some(e)) = (self.heads.first(), self.entries.first()) {
                    if h.len == 0 {
                        each(&e.value);
                    }
                }
            }
            let mut try_key = |h: &Head, e: &'s AffixEntry<T>| {
                let len = h.len as usize;
                if len > text.len() || head & low_bytes(len) != h.word {
                    return;
                }
                let hit = len <= 8
                    || match end {
                        End::Start => super::glob::starts_with_bytes(text, e.key.as_bytes()),
                        End::End => super::glob::ends_with_bytes(text, e.key.as_bytes()),
                    };
                if hit {
                    each(&e.value);
                }
            };
            let keys = self.heads.iter().zip(&self.entries);
            if !self.sorted {
                keys.for_each(|(h, e)| try_key(h, e));
                return;
            }
            let byte = head as u8;
            let from = self.heads.partition_point(|h| (h.word as u8) < byte);
            keys.skip(from)
                .take_while(|(h, _)| h.word as u8 == byte)
                .filter(|(h, _)| h.len > 0)
                .for_each(|(h, e)| try_key(h, e));
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
}

/// A literal name's candidates; `complete` when they include every other
/// pattern of the table but regexes that matches the name.
#[derive(Debug, Clone, Default)]
struct Literal {
    cands: CandList,
    complete: bool,
}

/// The targets of one server segment, by the shape of their name segment
/// (folded).
#[derive(Debug, Clone)]
struct Table {
    /// Literal names, hashed by [`text_hash`] (looked up by folded bytes).
    ///
    /// Keys are held in the entry (up to 23 bytes; a longer one is
    /// shared), so a look-up that finds its entry reads no other memory.
    literal: HashTable<(SmolStr, Literal)>,
    prefixes: Affixes<CandList>,
    suffixes: Affixes<CandList>,
    all: Vec<Cand>,
    globs: Vec<(Glob, Cand)>,
    /// Regexes; `true` for a loose one, tried on the name as sent and
    /// folded. An exact one's check tries it.
    regexes: Vec<(CompiledRegex, bool, Cand)>,
    /// The any-server and matching server-glob tables are merged in: this
    /// table alone holds every candidate of its server.
    shared: bool,
    /// The server ids, as written, that fold to this table's server and
    /// that the policy trusts (`trusted "..."`): the search that finds the
    /// table answers that too, without a look-up of its own.
    trusted: Vec<Box<str>>,
    /// While building: the literal names' candidates as filed, moved
    /// into `literal` (sized once) by `freeze`.
    pending: Vec<(Arc<str>, Cand)>,
}

impl Default for Table {
    fn default() -> Self {
        Table {
            literal: HashTable::new(),
            prefixes: Affixes::new(End::Start),
            suffixes: Affixes::new(End::End),
            all: Vec::new(),
            globs: Vec::new(),
            regexes: Vec::new(),
            shared: false,
            trusted: Vec::new(),
            pending: Vec::new(),
        }
    }
}

impl Table {
    fn insert(&mut self, name: &NameMatcher, loose: bool, cand: Cand) {
        match name {
            NameMatcher::Regex(re) => match re.as_glob() {
                // A loose regex matches the name as sent or folded. When
                // its literal is one folding leaves as it is, that is the
                // folded name passing the same test (folding maps each
                // character to one, so a name that starts, ends or is the
                // literal still does folded): the glob, filed as any other.
                Some(glob) if loose && matches!(glob.folded(), Cow::Borrowed(_)) => {
                    self.insert_glob(&glob, cand)
                }
                _ => self.regexes.push((re.clone(), loose, cand)),
            },
            NameMatcher::Glob(glob) => self.insert_glob(glob, cand),
        }
    }

    fn insert_glob(&mut self, glob: &Glob, cand: Cand) {
        match glob {
            // The key is shared with the glob (a count, not a copy).
            Glob::Literal(l) => self.pending.push((Arc::clone(l), cand)),
            Glob::Any => self.all.push(cand),
            Glob::Prefix(p) => self.prefixes.entry(p).push(cand),
            Glob::Suffix(s) => self.suffixes.entry(s).push(cand),
            g @ Glob::Pattern(_) => self.globs.push((g.clone(), cand)),
        }
    }

    /// How many patterns the table holds (a literal name with its
    /// candidates counts once).
    fn patterns(&self) -> usize {
        self.literal.len()
            + self.pending.len()
            + self.prefixes.entries.len()
            + self.suffixes.entries.len()
            + self.all.len()
            + self.globs.len()
            + self.regexes.len()
    }

    /// Files every pattern of `other` here too (before either is frozen).
    fn absorb(&mut self, other: &Table) {
        self.pending.extend(other.pending.iter().cloned());
        for e in &other.prefixes.entries {
            self.prefixes.entry(&e.key).extend_from_slice(&e.value);
        }
        for e in &other.suffixes.entries {
            self.suffixes.entry(&e.key).extend_from_slice(&e.value);
        }
        self.all.extend_from_slice(&other.all);
        self.globs.extend(other.globs.iter().cloned());
        self.regexes.extend(other.regexes.iter().cloned());
    }

    /// Files the literal names' candidates in a map sized once, sorts the
    /// affixes, and merges into each literal name the other patterns that
    /// match it.
    fn freeze(&mut self) {
        self.prefixes.freeze();
        self.suffixes.freeze();
        // Sized once for every name filed (a name filed twice leaves a
        // little room unused).
        let pending = std::mem::take(&mut self.pending);
        let rehash = |(key, _): &(SmolStr, Literal)| text_hash(key.as_bytes());
        self.literal.reserve(pending.len(), rehash);
        for (name, cand) in pending {
            let hash = text_hash(name.as_bytes());
            let entry = self
                .literal
                .entry(hash, |(key, _)| **key == *name, rehash)
                .or_insert_with(|| (SmolStr::new(&*name), Literal::default()));
            entry.into_mut().1.cands.push(cand);
        }
        // Every source of candidates in file order, so that a request
        // served by one of them needs no sort.
        for e in self
            .prefixes
            .entries
            .iter_mut()
            .chain(self.suffixes.entries.iter_mut())
        {
            e.value.sort_unstable_by_key(|c| c.key);
        }
        self.all.sort_unstable_by_key(|c| c.key);
        let (prefixes, suffixes, all, globs) =
            (&self.prefixes, &self.suffixes, &self.all, &self.globs);
        let mut more: Vec<Cand> = Vec::new();
        for (name, entry) in self.literal.iter_mut().map(|(n, e)| (&*n, e)) {
            more.clear();
            prefixes.each(name.as_bytes(), |c| more.extend_from_slice(c));
            suffixes.each(name.as_bytes(), |c| more.extend_from_slice(c));
            more.extend_from_slice(all);
            more.extend(
                globs
                    .iter()
                    .filter(|(g, _)| g.matches(name))
                    .map(|(_, c)| *c),
            );
            if more.len() <= MERGE_LIMIT {
                entry.cands.extend_from_slice(&more);
                entry.complete = true;
            }
            if entry.cands.len() > 1 {
                entry.cands.sort_unstable_by_key(|c| c.key);
                entry.cands.dedup();
            }
        }
    }

    /// Whether `server`, as sent, is one of the trusted ids filed here.
    #[inline]
    fn trusts(&self, server: &str) -> bool {
        self.trusted
            .iter()
            .any(|id| same(id.as_bytes(), server.as_bytes()))
    }

    fn is_empty(&self) -> bool {
        self.literal.is_empty()
            && self.pending.is_empty()
            && self.prefixes.is_empty()
            && self.suffixes.is_empty()
            && self.all.is_empty()
            && self.globs.is_empty()
            && self.regexes.is_empty()
    }

    /// Appends the candidates of this table; `true` when they come from
    /// one source (a literal's entry, one affix, `*`), so are in file
    /// order already.
    #[inline]
    fn collect(&self, q: &Query<'_>, out: &mut Cands) -> bool {
        let name = q.folded_name;
        let mut sources = 0u32;
        let mut add = |out: &mut Cands, cands: &[Cand]| {
            if !cands.is_empty() {
                sources += 1;
                extend(out, cands);
            }
        };
        let found = self
            .literal
            .find(text_hash(name), |(key, _)| same(key.as_bytes(), name));
        let complete = match found {
            Some((_, entry)) => {
                add(out, &entry.cands);
                entry.complete
            }
            None => false,
        };
        if !complete {
            self.prefixes.each(name, |c| add(out, c));
            self.suffixes.each(name, |c| add(out, c));
            add(out, &self.all);
            for (glob, cand) in &self.globs {
                if glob.matches(text(name)) {
                    add(out, std::slice::from_ref(cand));
                }
            }
        }
        for (re, loose, cand) in &self.regexes {
            if !*loose
                || re.is_match(q.name)
                || (q.name.as_bytes() != name && re.is_match(text(name)))
            {
                add(out, std::slice::from_ref(cand));
            }
        }
        sources <= 1
    }
}

/// The index of one kind of request over the deny, ask and allow lists (or
/// of the `tools {}` block: exclude as list 0, include as list 2).
#[derive(Debug, Clone)]
pub struct Lookup {
    /// Literal servers' tables, by folded id (held in the entry, as
    /// [`Table::literal`]'s keys are).
    servers: HashTable<(SmolStr, Table)>,
    any: Table,
    server_prefixes: Affixes<Table>,
    server_suffixes: Affixes<Table>,
    /// General server globs (folded), in the order first seen.
    server_globs: Vec<(Glob, Table)>,
    /// While building: where each server glob is.
    glob_at: BuildMap<Glob, usize>,
    checks: Vec<Check>,
    /// How many candidates each list holds.
    counts: [usize; 3],
    /// While building: the literal servers' tables in the order first
    /// seen (moved into `servers`, sized once, by `freeze`), where each
    /// is, and the last one a target was filed in (the next target
    /// usually names the same server, and the compiler shares one text per
    /// distinct server, so a pointer comparison finds it).
    building: Vec<(Arc<str>, Table)>,
    building_at: BuildMap<Arc<str>, usize>,
    last: usize,
}

impl Default for Lookup {
    fn default() -> Self {
        Lookup {
            servers: HashTable::new(),
            any: Table::default(),
            server_prefixes: Affixes::new(End::Start),
            server_suffixes: Affixes::new(End::End),
            server_globs: Vec::new(),
            glob_at: BuildMap::default(),
            checks: Vec::new(),
            counts: [0; 3],
            building: Vec::new(),
            building_at: BuildMap::default(),
            last: 0,
        }
    }
}

impl Lookup {
    /// Files target of rule `number` of `list` (0 deny, 1 ask, 2 allow).
    /// A loose target's segments are folded already; an exact one's are as
    /// written and are folded here (the compiler, which keeps each distinct
    /// segment folded once, calls [`Lookup::insert_exact`] instead).
    #[cfg(test)]
    pub fn insert(&mut self, list: usize, number: u32, target: &IndexedTarget, loose: bool) {
        if loose {
            self.insert_loose(list, number, target);
            return;
        }
        let server = target.server.folded();
        let name = match &target.name {
            NameMatcher::Glob(g) => Some(g.folded()),
            NameMatcher::Regex(_) => None,
        };
        let folded = FoldedTarget {
            server_unchanged: matches!(server, Cow::Borrowed(_)),
            name_unchanged: matches!(name, Some(Cow::Borrowed(_))),
            server: server.into_owned(),
            name: name.map(Cow::into_owned),
        };
        self.insert_exact(list, number, target, &folded);
    }

    /// Makes room for this many exact targets (kept as written).
    pub fn reserve_exact_targets(&mut self, n: usize) {
        self.checks.reserve_exact(n);
    }

    /// Files a loose target (deny, ask, exclude): its segments are folded.
    pub fn insert_loose(&mut self, list: usize, number: u32, target: &IndexedTarget) {
        if let Some(count) = self.counts.get_mut(list) {
            *count += 1;
        }
        let cand = Cand::new(list, number, NO_CHECK);
        if let Some(table) = self.table(&target.server) {
            table.insert(&target.name, true, cand);
        }
    }

    /// Files an exact target (allow, include), written as `target`, under
    /// its segments folded (`folded`); it is checked as written.
    pub fn insert_exact(
        &mut self,
        list: usize,
        number: u32,
        target: &IndexedTarget,
        folded: &FoldedTarget,
    ) {
        if let Some(count) = self.counts.get_mut(list) {
            *count += 1;
        }
        let exact = target.server.is_literal()
            && matches!(&target.name, NameMatcher::Glob(g) if g.is_literal());
        let check = u32::try_from(self.checks.len()).unwrap_or(NO_CHECK);
        self.checks.push(Check {
            server: target.server.clone(),
            name: target.name.clone(),
            exact,
            server_safe: folded.server_unchanged,
            name_safe: folded.name_unchanged && folded.name.is_some(),
        });
        let cand = Cand::new(list, number, check);
        if let Some(table) = self.table(&folded.server) {
            match (&folded.name, &target.name) {
                (Some(glob), _) => table.insert_glob(glob, cand),
                // A literal regex anchored at an end: filed as its glob
                // folded (a name it matches matches that folded), and
                // checked as written.
                (None, NameMatcher::Regex(re)) => match re.as_glob() {
                    Some(glob) => table.insert_glob(&glob.folded(), cand),
                    None => table.regexes.push((re.clone(), false, cand)),
                },
                (None, NameMatcher::Glob(_)) => {}
            }
        }
    }

    /// The table of a (folded) server segment, made if new. Keys are
    /// shared with the globs (a count, not a copy).
    fn table(&mut self, server: &Glob) -> Option<&mut Table> {
        Some(match server {
            Glob::Literal(s) => {
                let at = match self.building.get(self.last) {
                    Some((key, _)) if Arc::ptr_eq(key, s) => self.last,
                    _ => {
                        let next = self.building.len();
                        let at = *self.building_at.entry(Arc::clone(s)).or_insert(next);
                        if at == next {
                            self.building.push((Arc::clone(s), Table::default()));
                        }
                        at
                    }
                };
                self.last = at;
                &mut self.building.get_mut(at)?.1
            }
            Glob::Any => &mut self.any,
            Glob::Prefix(p) => self.server_prefixes.entry(p),
            Glob::Suffix(s) => self.server_suffixes.entry(s),
            other @ Glob::Pattern(_) => {
                let at = match self.glob_at.get(other) {
                    Some(&at) => at,
                    None => {
                        self.server_globs.push((other.clone(), Table::default()));
                        let at = self.server_globs.len() - 1;
                        self.glob_at.insert(other.clone(), at);
                        at
                    }
                };
                &mut self.server_globs.get_mut(at)?.1
            }
        })
    }

    /// Makes the index ready to search: sorts the affixes and merges each
    /// literal name's candidates.
    pub fn freeze(&mut self) {
        self.glob_at = BuildMap::default();
        self.building_at = BuildMap::default();
        self.server_prefixes.freeze();
        self.server_suffixes.freeze();
        self.merge_shared();
        let building = std::mem::take(&mut self.building);
        let rehash = |(key, _): &(SmolStr, Table)| text_hash(key.as_bytes());
        self.servers.reserve(building.len(), rehash);
        for (server, mut table) in building {
            table.freeze();
            // Each server once: `building` holds each literal server once.
            self.servers.insert_unique(
                text_hash(server.as_bytes()),
                (SmolStr::new(&*server), table),
                rehash,
            );
        }
        self.any.freeze();
        for e in &mut self.server_prefixes.entries {
            e.value.freeze();
        }
        for e in &mut self.server_suffixes.entries {
            e.value.freeze();
        }
        for (_, table) in &mut self.server_globs {
            table.freeze();
        }
    }

    /// Merges into each literal server's table the tables of the patterns
    /// shared with other servers that can reach it (any server, server
    /// prefixes, suffixes and globs), when they hold at most
    /// [`MERGE_SHARED`] patterns together. Load-time only; the server
    /// affixes are sorted already.
    fn merge_shared(&mut self) {
        let Lookup {
            building,
            any,
            server_prefixes,
            server_suffixes,
            server_globs,
            ..
        } = self;
        let mut shared: Vec<&Table> = Vec::new();
        for (server, table) in building.iter_mut() {
            shared.clear();
            if !any.is_empty() {
                shared.push(any);
            }
            server_prefixes.each(server.as_bytes(), |t| shared.push(t));
            server_suffixes.each(server.as_bytes(), |t| shared.push(t));
            shared.extend(
                server_globs
                    .iter()
                    .filter(|(g, _)| g.matches(server))
                    .map(|(_, t)| t),
            );
            if shared.iter().map(|t| t.patterns()).sum::<usize>() > MERGE_SHARED {
                continue;
            }
            for other in &shared {
                table.absorb(other);
            }
            table.shared = true;
        }
    }

    /// Notes that the policy trusts server `id` (exactly as written): the
    /// table of its folded id is made if it has none, so that a server with
    /// no table is one the policy does not trust. Before [`Lookup::freeze`].
    pub fn trust(&mut self, id: &str) {
        let folded = Glob::Literal(Arc::from(super::names::fold(id).as_ref()));
        if let Some(table) = self.table(&folded) {
            table.trusted.push(Box::from(id));
        }
    }

    /// The table of a literal server, by its folded bytes.
    #[inline]
    fn server_table(&self, folded_server: &[u8]) -> Option<&Table> {
        self.servers
            .find(text_hash(folded_server), |(key, _)| {
                same(key.as_bytes(), folded_server)
            })
            .map(|(_, table)| table)
    }

    /// Whether [`Lookup::trust`] was told of `server` (as sent), without
    /// searching for candidates ([`Lookup::candidates`] answers it too).
    pub fn trusts(&self, server: &str) -> bool {
        let mut buf = [0; 64];
        let folded = super::names::fold_name(server, &mut buf);
        self.server_table(folded.bytes())
            .is_some_and(|table| table.trusts(server))
    }

    /// Whether list `list` has no target.
    pub fn list_is_empty(&self, list: usize) -> bool {
        self.counts.get(list).is_none_or(|&n| n == 0)
    }

    /// Every rule of any list with a target that may name the request, in
    /// file order (deny, ask, allow); a rule may appear more than once (one
    /// entry per target), and an allow entry still has to pass
    /// [`Lookup::admits`]. Returns whether the server, as sent, is one that
    /// [`Lookup::trust`] was told of.
    #[inline]
    pub fn candidates(&self, q: &Query<'_>, out: &mut Cands) -> bool {
        let mut trusted = false;
        if let Some(table) = self.server_table(q.folded_server) {
            trusted = table.trusts(q.server);
            let in_order = table.collect(q, out);
            if table.shared {
                if !in_order && out.len() > 1 {
                    out.sort_unstable_by_key(|c| c.key);
                }
                return trusted;
            }
        }
        if !self.any.is_empty() {
            self.any.collect(q, out);
        }
        self.server_prefixes.each(q.folded_server, |t| {
            t.collect(q, out);
        });
        self.server_suffixes.each(q.folded_server, |t| {
            t.collect(q, out);
        });
        for (glob, table) in &self.server_globs {
            if glob.matches(text(q.folded_server)) {
                table.collect(q, out);
            }
        }
        if out.len() > 1 {
            out.sort_unstable_by_key(|c| c.key);
        }
        trusted
    }

    /// Whether candidate `cand` matches the names as sent: always for a
    /// loose one; for an exact one, when its target matches exactly (and,
    /// with `exact_only`, has both segments literal).
    #[inline]
    pub fn admits(&self, cand: Cand, q: &Query<'_>, exact_only: bool) -> bool {
        if cand.check == NO_CHECK {
            return true;
        }
        let Some(check) = self.checks.get(cand.check as usize) else {
            return false;
        };
        if exact_only && !check.exact {
            return false;
        }
        check.holds(q)
    }

    /// Every literal server and how many tables there are (for tests).
    #[cfg(test)]
    fn tables(&self) -> usize {
        self.servers.len()
            + self.building.len()
            + 1
            + self.server_prefixes.entries.len()
            + self.server_suffixes.entries.len()
            + self.server_globs.len()
    }
}

/// The rule numbers of `list` among `cands` that `admit` accepts, each once,
/// in file order.
pub fn hits_of(cands: &[Cand], list: usize, mut admit: impl FnMut(Cand) -> bool) -> Hits {
    let mut hits = Hits::new();
    for &c in cands {
        if c.list() == list && hits.last() != Some(&c.number()) && admit(c) {
            hits.push(c.number());
        }
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::names::fold;
    use crate::policy::target_index::{in_file_order, TargetIndex};
    use proptest::prelude::*;

    /// One target of a generated list: list, rule number, server, name or
    /// regex.
    type Spec = (usize, u32, String, Result<String, &'static str>);

    fn matcher(spec: &Spec) -> IndexedTarget {
        let (list, _, server, name) = spec;
        let loose = *list != 2;
        let glob = |s: &str| {
            if loose {
                Glob::new(&fold(s))
            } else {
                Glob::new(s)
            }
        };
        IndexedTarget {
            server: glob(server),
            name: match name {
                Ok(n) => NameMatcher::Glob(glob(n)),
                Err(re) => NameMatcher::Regex(CompiledRegex::new(re, 1 << 20).unwrap()),
            },
        }
    }

    /// The old index (one per list) and the new one over the same targets.
    fn build(specs: &[Spec]) -> ([TargetIndex; 3], Lookup) {
        let mut old: [TargetIndex; 3] = Default::default();
        let mut new = Lookup::default();
        for spec in specs {
            let m = matcher(spec);
            old[spec.0].insert(&m, spec.1);
            new.insert(spec.0, spec.1, &m, spec.0 != 2);
        }
        new.freeze();
        (old, new)
    }

    /// Every list's hits, and the allow list's exact hits, agree.
    fn agree(specs: &[Spec], server: &str, name: &str) -> Result<(), TestCaseError> {
        let (old, new) = build(specs);
        let (fs, fname) = (fold(server), fold(name));
        let q = Query {
            server,
            name,
            folded_server: fs.as_bytes(),
            folded_name: fname.as_bytes(),
            server_unfolded: fs == server,
            name_unfolded: fname == name,
        };
        let mut cands = Cands::new();
        new.candidates(&q, &mut cands);
        for (list, index) in old.iter().enumerate() {
            let mut want = Hits::new();
            if list == 2 {
                index.collect(server, name, name, &mut want);
            } else {
                index.collect(&fs, &fname, name, &mut want);
            }
            in_file_order(&mut want);
            let got = hits_of(&cands, list, |c| new.admits(c, &q, false));
            prop_assert_eq!(
                got.to_vec(),
                want.to_vec(),
                "list {} {}/{}",
                list,
                server,
                name
            );
        }
        let mut want = Hits::new();
        old[2].collect_exact(server, name, &mut want);
        in_file_order(&mut want);
        let got = hits_of(&cands, 2, |c| new.admits(c, &q, true));
        prop_assert_eq!(got.to_vec(), want.to_vec(), "exact {}/{}", server, name);
        Ok(())
    }

    fn segment() -> impl Strategy<Value = String> {
        proptest::string::string_regex("[aAb_.*?-]{0,4}|é|\\*|ab\\*|\\*_b").unwrap()
    }

    fn spec() -> impl Strategy<Value = Spec> {
        let name = prop_oneof![
            6 => segment().prop_map(Ok),
            1 => prop::sample::select(vec!["^a", "b$", "^a_b$", "(?i)^A", "_", "^a.b", "^A", "-$", "^a-b$", "^$"]).prop_map(Err),
        ];
        (0..3usize, 0..6u32, segment(), name)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The decision index offers exactly what the old per-list index
        /// did, for every list, on random targets and names.
        #[test]
        fn agrees_with_the_old_index(
            specs in prop::collection::vec(spec(), 0..24),
            server in "[aAb_.-]{0,4}|é",
            name in "[aAb_.-]{0,5}|é",
        ) {
            agree(&specs, &server, &name)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// The heads the short scan reads (eight bytes at an end, a key's
        /// rest only past them) find exactly the keys a text starts or
        /// ends with: keys and texts of 0 to 20 bytes, around the eight
        /// a head holds, before and after `freeze`.
        #[test]
        fn affix_heads_find_exactly_the_keys_at_an_end(
            keys in prop::collection::vec("[ab_]{0,20}", 0..LINEAR_AFFIXES + 4),
            texts in prop::collection::vec("[ab_]{0,20}", 1..8),
        ) {
            for end in [End::Start, End::End] {
                let mut set: Affixes<Vec<usize>> = Affixes::new(end);
                for (i, k) in keys.iter().enumerate() {
                    set.entry(&Arc::from(k.as_str())).push(i);
                }
                for frozen in [false, true] {
                    if frozen {
                        set.freeze();
                    } else if keys.len() > LINEAR_AFFIXES {
                        // Only a short set is searched before `freeze`.
                        continue;
                    }
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
                        prop_assert_eq!(got, want, "{:?} {} {}", end, text, frozen);
                    }
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

    /// Texts that differ only past their first bytes still spread over
    /// the low bits a hash table picks buckets by.
    #[test]
    fn the_build_hasher_spreads_similar_texts() {
        use std::collections::HashSet;
        use std::hash::BuildHasher;
        let build = BuildHasherDefault::<MixedHasher>::default();
        let buckets: HashSet<u64> = (0..1024)
            .map(|i| build.hash_one(format!("*_{i}t").as_str()) & 1023)
            .collect();
        assert!(buckets.len() > 500, "{} of 1024 buckets", buckets.len());
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
            let mut set: Affixes<u32> = Affixes::new(End::Start);
            for (i, k) in keys.iter().enumerate() {
                *set.entry(&Arc::from(*k)) = i as u32;
            }
            set.freeze();
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
            let mut set: Affixes<u32> = Affixes::new(End::End);
            for (i, k) in keys.iter().enumerate() {
                *set.entry(&Arc::from(*k)) = i as u32;
            }
            set.freeze();
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

    #[test]
    fn a_literal_merges_a_bounded_number_of_patterns() {
        let mut new = Lookup::default();
        for i in 0..40u32 {
            new.insert(0, i, &matcher(&(0, i, "s".into(), Ok("*".into()))), true);
        }
        new.insert(0, 40, &matcher(&(0, 40, "s".into(), Ok("t".into()))), true);
        new.freeze();
        let q = Query {
            server: "s",
            name: "t",
            folded_server: b"s",
            folded_name: b"t",
            server_unfolded: true,
            name_unfolded: true,
        };
        let mut cands = Cands::new();
        new.candidates(&q, &mut cands);
        assert_eq!(hits_of(&cands, 0, |_| true).len(), 41);
        assert_eq!(new.tables(), 2);
    }
}
