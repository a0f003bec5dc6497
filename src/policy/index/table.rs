//! The targets of one server segment, by the shape of their name segment
//! (folded): filed into a [`TableBuilder`], frozen into a [`Table`].

use std::borrow::Cow;
use std::sync::Arc;

use hashbrown::HashTable;
use smallvec::SmallVec;
use smol_str::SmolStr;

use super::super::glob::{same, Glob};
use super::super::names::text;
use super::super::CompiledRegex;
use super::affix::{Affixes, AffixesBuilder, End};
use super::hash::text_hash;
use super::target::NameMatcher;
use super::{Cand, Cands, Query};

/// The candidates filed under one key (a literal name, a prefix, a
/// suffix): most keys have one or two, held without a heap allocation.
pub(super) type CandList = SmallVec<[Cand; 2]>;

/// At most this many patterns other than the literal are merged into a
/// literal name's entry at load time; past it, that name is searched like
/// any other (so a table of many literals and many `*` rules stays linear).
const MERGE_LIMIT: usize = 16;

/// A regex tried one by one: `loose` for a deny or ask one, tried on the
/// name as sent and folded (an exact one's check tries it as written).
#[derive(Debug, Clone)]
struct FiledRegex {
    regex: CompiledRegex,
    loose: bool,
    cand: Cand,
}

/// A table being filed.
#[derive(Debug, Clone)]
pub(super) struct TableBuilder {
    /// Literal names with their candidates, as filed (a name may come
    /// more than once). The key is shared with the glob (a count, not a
    /// copy).
    literals: Vec<(Arc<str>, Cand)>,
    prefixes: AffixesBuilder<CandList>,
    suffixes: AffixesBuilder<CandList>,
    all: Vec<Cand>,
    globs: Vec<(Glob, Cand)>,
    regexes: Vec<FiledRegex>,
    /// The any-server and matching server-glob tables are merged in.
    shared: bool,
}

impl Default for TableBuilder {
    fn default() -> Self {
        TableBuilder {
            literals: Vec::new(),
            prefixes: AffixesBuilder::new(End::Start),
            suffixes: AffixesBuilder::new(End::End),
            all: Vec::new(),
            globs: Vec::new(),
            regexes: Vec::new(),
            shared: false,
        }
    }
}

impl TableBuilder {
    /// Files a target's name segment (folded for a loose list).
    pub(super) fn insert(&mut self, name: &NameMatcher, loose: bool, cand: Cand) {
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
                _ => self.insert_regex(re, loose, cand),
            },
            NameMatcher::Glob(glob) => self.insert_glob(glob, cand),
        }
    }

    /// Files a regex tried one by one.
    pub(super) fn insert_regex(&mut self, regex: &CompiledRegex, loose: bool, cand: Cand) {
        self.regexes.push(FiledRegex {
            regex: regex.clone(),
            loose,
            cand,
        });
    }

    /// Files a (folded) glob by its shape.
    pub(super) fn insert_glob(&mut self, glob: &Glob, cand: Cand) {
        match glob {
            Glob::Literal(l) => self.literals.push((Arc::clone(l), cand)),
            Glob::Any => self.all.push(cand),
            Glob::Prefix(p) => self.prefixes.entry(p).push(cand),
            Glob::Suffix(s) => self.suffixes.entry(s).push(cand),
            g @ Glob::Pattern(_) => self.globs.push((g.clone(), cand)),
        }
    }

    /// How many patterns the table holds (a literal name filed twice
    /// counts twice).
    pub(super) fn patterns(&self) -> usize {
        self.literals.len()
            + self.prefixes.len()
            + self.suffixes.len()
            + self.all.len()
            + self.globs.len()
            + self.regexes.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.patterns() == 0
    }

    /// Files every pattern of `other` here too, and marks this table as
    /// holding every candidate of its server (the caller merges every
    /// shared table that reaches it).
    pub(super) fn absorb(&mut self, other: &TableBuilder) {
        self.literals.extend(other.literals.iter().cloned());
        for (key, cands) in other.prefixes.iter() {
            self.prefixes.entry(key).extend_from_slice(cands);
        }
        for (key, cands) in other.suffixes.iter() {
            self.suffixes.entry(key).extend_from_slice(cands);
        }
        self.all.extend_from_slice(&other.all);
        self.globs.extend(other.globs.iter().cloned());
        self.regexes.extend(other.regexes.iter().cloned());
    }

    /// Marks the table as holding every candidate of its server.
    pub(super) fn set_shared(&mut self) {
        self.shared = true;
    }

    /// Files the literal names' candidates in a map sized once, sorts the
    /// affixes, and merges into each literal name the other patterns that
    /// match it.
    pub(super) fn freeze(self) -> Table {
        let TableBuilder {
            literals,
            mut prefixes,
            mut suffixes,
            mut all,
            globs,
            regexes,
            shared,
        } = self;
        // Every source of candidates in file order, so that a request
        // served by one of them needs no sort.
        for cands in prefixes.values_mut().chain(suffixes.values_mut()) {
            cands.sort_unstable_by_key(|c| c.key);
        }
        all.sort_unstable_by_key(|c| c.key);
        let (prefixes, suffixes) = (prefixes.freeze(), suffixes.freeze());
        let rehash = |(key, _): &(SmolStr, Literal)| text_hash(key.as_bytes());
        let mut literal: HashTable<(SmolStr, Literal)> = HashTable::new();
        // Sized once for every name filed (a name filed twice leaves a
        // little room unused).
        literal.reserve(literals.len(), rehash);
        for (name, cand) in literals {
            let hash = text_hash(name.as_bytes());
            let entry = literal
                .entry(hash, |(key, _)| **key == *name, rehash)
                .or_insert_with(|| (SmolStr::new(&*name), Literal::default()));
            entry.into_mut().1.cands.push(cand);
        }
        let mut more: Vec<Cand> = Vec::new();
        for (name, entry) in literal.iter_mut().map(|(n, e)| (&*n, e)) {
            more.clear();
            prefixes.each(name.as_bytes(), |c| more.extend_from_slice(c));
            suffixes.each(name.as_bytes(), |c| more.extend_from_slice(c));
            more.extend_from_slice(&all);
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
        Table {
            literal,
            prefixes,
            suffixes,
            all,
            globs,
            regexes,
            shared,
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

/// A frozen table: what a search reads, nothing else.
#[derive(Debug, Clone)]
pub(super) struct Table {
    /// Literal names, hashed by [`text_hash`] (looked up by folded bytes).
    ///
    /// Keys are held in the entry (up to 23 bytes; a longer one is
    /// shared), so a look-up that finds its entry reads no other memory.
    literal: HashTable<(SmolStr, Literal)>,
    prefixes: Affixes<CandList>,
    suffixes: Affixes<CandList>,
    all: Vec<Cand>,
    globs: Vec<(Glob, Cand)>,
    regexes: Vec<FiledRegex>,
    /// The any-server and matching server-glob tables are merged in: this
    /// table alone holds every candidate of its server.
    pub(super) shared: bool,
}

/// Appends candidates (one by one: cheaper than a bulk insert for the one
/// to three a pattern usually has).
#[inline]
fn extend(out: &mut Cands, cands: &[Cand]) {
    for &c in cands {
        out.push(c);
    }
}

impl Table {
    pub(super) fn is_empty(&self) -> bool {
        self.literal.is_empty()
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
    pub(super) fn collect(&self, q: &Query<'_>, out: &mut Cands) -> bool {
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
        for r in &self.regexes {
            if !r.loose
                || r.regex.is_match(q.name)
                || (q.name.as_bytes() != name && r.regex.is_match(text(name)))
            {
                add(out, std::slice::from_ref(&r.cand));
            }
        }
        sources <= 1
    }
}
