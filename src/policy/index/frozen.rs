//! The frozen index: what every decision searches, and nothing that only
//! filing needed (an [`IndexBuilder`](super::IndexBuilder) makes one).

use hashbrown::HashTable;
use smol_str::SmolStr;

use super::super::glob::{same, Glob};
use super::super::names::text;
use super::affix::Affixes;
use super::hash::text_hash;
use super::table::Table;
use super::target::Check;
use super::{Cand, Cands, List, Query, NO_CHECK};

/// The index of one kind of request over the deny, ask and allow lists (or
/// of the `tools {}` block: exclude as [`List::EXCLUDE`], include as
/// [`List::INCLUDE`]).
#[derive(Debug, Clone)]
pub struct Index {
    /// Literal servers' tables, by folded id (held in the entry, as a
    /// table's literal names are).
    pub(super) servers: HashTable<(SmolStr, Table)>,
    pub(super) any: Table,
    pub(super) server_prefixes: Affixes<Table>,
    pub(super) server_suffixes: Affixes<Table>,
    /// General server globs (folded), in the order first seen.
    pub(super) server_globs: Vec<(Glob, Table)>,
    /// The exact targets as written, by [`Cand`]'s `check`.
    pub(super) checks: Vec<Check>,
    /// How many targets each list holds.
    pub(super) counts: [usize; 3],
}

impl Default for Index {
    /// The index of no target.
    fn default() -> Self {
        super::IndexBuilder::default().build()
    }
}

impl Index {
    /// The table of a literal server, by its folded bytes.
    #[inline]
    fn server_table(&self, folded_server: &[u8]) -> Option<&Table> {
        self.servers
            .find(text_hash(folded_server), |(key, _)| {
                same(key.as_bytes(), folded_server)
            })
            .map(|(_, table)| table)
    }

    /// Whether `list` has no target.
    pub fn list_is_empty(&self, list: List) -> bool {
        self.counts[list.index()] == 0
    }

    /// Every rule of any list with a target that may name the request, in
    /// file order (deny, ask, allow); a rule may appear more than once (one
    /// entry per target), and an allow entry still has to pass
    /// [`Index::admits`].
    #[inline]
    pub fn candidates(&self, q: &Query<'_>, out: &mut Cands) {
        if let Some(table) = self.server_table(q.folded_server) {
            let in_order = table.collect(q, out);
            if table.shared {
                if !in_order && out.len() > 1 {
                    out.sort_unstable_by_key(|c| c.key);
                }
                return;
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

    /// How many tables there are: every literal server's, the any-server
    /// one, and one per server affix and glob (for tests).
    #[cfg(test)]
    pub(super) fn tables(&self) -> usize {
        self.servers.len()
            + 1
            + self.server_prefixes.len()
            + self.server_suffixes.len()
            + self.server_globs.len()
    }
}
