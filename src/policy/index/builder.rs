//! Filing targets: an [`IndexBuilder`] holds the tables of each server
//! segment while targets are filed (with the maps that find them), then
//! merges the tables shared by several servers into each literal server's
//! own and freezes everything into an [`Index`].

use std::sync::Arc;

use hashbrown::HashTable;
use smol_str::SmolStr;

use super::super::glob::Glob;
use super::affix::{AffixesBuilder, End};
use super::frozen::Index;
use super::hash::{text_hash, BuildMap};
use super::table::{Table, TableBuilder};
use super::target::{Check, FoldedTarget, IndexedTarget, NameMatcher};
use super::{Cand, List, NO_CHECK};

/// The any-server table and the server-glob tables that match a literal
/// server are merged into that server's own table at load when together
/// they hold at most this many patterns: a request to a server the policy
/// names then searches one table. Past it, they are searched beside it,
/// so a policy of many servers and many shared rules stays linear.
const MERGE_SHARED: usize = 64;

/// The index of one kind of request being filed (or of the `tools {}`
/// block).
#[derive(Debug, Clone)]
pub struct IndexBuilder {
    /// The literal servers' tables in the order first seen.
    servers: Vec<(Arc<str>, TableBuilder)>,
    /// Where each literal server is in `servers`.
    server_at: BuildMap<Arc<str>, usize>,
    /// The last literal server a target was filed in: the next target
    /// usually names the same server, and the compiler shares one text
    /// per distinct server, so a pointer comparison finds it.
    last: usize,
    any: TableBuilder,
    server_prefixes: AffixesBuilder<TableBuilder>,
    server_suffixes: AffixesBuilder<TableBuilder>,
    /// General server globs (folded), in the order first seen.
    server_globs: Vec<(Glob, TableBuilder)>,
    /// Where each server glob is in `server_globs`.
    glob_at: BuildMap<Glob, usize>,
    checks: Vec<Check>,
    /// How many targets each list holds.
    counts: [usize; 3],
}

impl Default for IndexBuilder {
    fn default() -> Self {
        IndexBuilder {
            servers: Vec::new(),
            server_at: BuildMap::default(),
            last: 0,
            any: TableBuilder::default(),
            server_prefixes: AffixesBuilder::new(End::Start),
            server_suffixes: AffixesBuilder::new(End::End),
            server_globs: Vec::new(),
            glob_at: BuildMap::default(),
            checks: Vec::new(),
            counts: [0; 3],
        }
    }
}

impl IndexBuilder {
    /// Files target of rule `number` of `list`. A loose target's segments
    /// are folded already; an exact one's are as written and are folded
    /// here (the compiler, which keeps each distinct segment folded once,
    /// calls [`IndexBuilder::insert_exact`] instead).
    #[cfg(test)]
    pub fn insert(&mut self, list: List, number: u32, target: &IndexedTarget, loose: bool) {
        use std::borrow::Cow;
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
    pub fn insert_loose(&mut self, list: List, number: u32, target: &IndexedTarget) {
        self.counts[list.index()] += 1;
        let cand = Cand::new(list, number, NO_CHECK);
        if let Some(table) = self.table(&target.server) {
            table.insert(&target.name, true, cand);
        }
    }

    /// Files an exact target (allow, include), written as `target`, under
    /// its segments folded (`folded`); it is checked as written.
    pub fn insert_exact(
        &mut self,
        list: List,
        number: u32,
        target: &IndexedTarget,
        folded: &FoldedTarget,
    ) {
        self.counts[list.index()] += 1;
        let check = u32::try_from(self.checks.len()).unwrap_or(NO_CHECK);
        self.checks.push(Check::new(target, folded));
        let cand = Cand::new(list, number, check);
        if let Some(table) = self.table(&folded.server) {
            match (&folded.name, &target.name) {
                (Some(glob), _) => table.insert_glob(glob, cand),
                // A literal regex anchored at an end: filed as its glob
                // folded (a name it matches matches that folded), and
                // checked as written.
                (None, NameMatcher::Regex(re)) => match re.as_glob() {
                    Some(glob) => table.insert_glob(&glob.folded(), cand),
                    None => table.insert_regex(re, false, cand),
                },
                (None, NameMatcher::Glob(_)) => {}
            }
        }
    }

    /// The table of a (folded) server segment, made if new. Keys are
    /// shared with the globs (a count, not a copy).
    fn table(&mut self, server: &Glob) -> Option<&mut TableBuilder> {
        Some(match server {
            Glob::Literal(s) => {
                let at = match self.servers.get(self.last) {
                    Some((key, _)) if Arc::ptr_eq(key, s) => self.last,
                    _ => {
                        let next = self.servers.len();
                        let at = *self.server_at.entry(Arc::clone(s)).or_insert(next);
                        if at == next {
                            self.servers.push((Arc::clone(s), TableBuilder::default()));
                        }
                        at
                    }
                };
                self.last = at;
                &mut self.servers.get_mut(at)?.1
            }
            Glob::Any => &mut self.any,
            Glob::Prefix(p) => self.server_prefixes.entry(p),
            Glob::Suffix(s) => self.server_suffixes.entry(s),
            other @ Glob::Pattern(_) => {
                let at = match self.glob_at.get(other) {
                    Some(&at) => at,
                    None => {
                        self.server_globs
                            .push((other.clone(), TableBuilder::default()));
                        let at = self.server_globs.len() - 1;
                        self.glob_at.insert(other.clone(), at);
                        at
                    }
                };
                &mut self.server_globs.get_mut(at)?.1
            }
        })
    }

    /// Freezes the index: merges into each literal server's table the
    /// tables of the patterns shared with other servers that can reach it
    /// (any server, server prefixes, suffixes and globs), when they hold
    /// at most [`MERGE_SHARED`] patterns together; sorts the affixes; and
    /// merges each literal name's candidates.
    pub fn build(self) -> Index {
        let IndexBuilder {
            mut servers,
            any,
            server_prefixes,
            server_suffixes,
            server_globs,
            checks,
            counts,
            ..
        } = self;
        let server_prefixes = server_prefixes.freeze();
        let server_suffixes = server_suffixes.freeze();
        let mut shared: Vec<&TableBuilder> = Vec::new();
        for (server, table) in &mut servers {
            shared.clear();
            if !any.is_empty() {
                shared.push(&any);
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
            table.set_shared();
        }
        let rehash = |(key, _): &(SmolStr, Table)| text_hash(key.as_bytes());
        let mut frozen: HashTable<(SmolStr, Table)> = HashTable::new();
        frozen.reserve(servers.len(), rehash);
        for (server, table) in servers {
            // Each server once: `servers` holds each literal server once.
            frozen.insert_unique(
                text_hash(server.as_bytes()),
                (SmolStr::new(&*server), table.freeze()),
                rehash,
            );
        }
        Index {
            servers: frozen,
            any: any.freeze(),
            server_prefixes: server_prefixes.map(TableBuilder::freeze),
            server_suffixes: server_suffixes.map(TableBuilder::freeze),
            server_globs: server_globs
                .into_iter()
                .map(|(glob, table)| (glob, table.freeze()))
                .collect(),
            checks,
            counts,
        }
    }
}
