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
//!   with ([`affix`]);
//! - general globs and regexes are tried one by one (only those of the
//!   tables the request reaches).
//!
//! A deny or ask candidate matches as found. An allow (exact) candidate
//! carries its target as written and is checked against the names as sent,
//! unless neither the pattern nor the names change when folded, when the
//! table's match is already exact. Folding maps each character to one
//! character, so a name that matches exactly also matches folded: the
//! folded tables never miss an exact match.
//!
//! The index is made in two steps, as `globset`'s `GlobSetBuilder` makes a
//! `GlobSet`: an [`IndexBuilder`] files targets (with the maps and lists
//! only filing needs), and [`IndexBuilder::build`] freezes it into an
//! [`Index`] that holds only what a search reads.
//!
//! - `hash.rs`: the hash the tables are filed by;
//! - `target.rs`: targets as filed, and the check of an exact one;
//! - `affix.rs`: the sorted, linked prefix and suffix arrays;
//! - `table.rs`: one server segment's table, built then frozen;
//! - `builder.rs`: filing targets, merging shared tables, freezing;
//! - `frozen.rs`: the index searched by every decision;
//! - `oracle.rs` (tests only): the previous per-list index, the oracle of
//!   the differential proptest in `tests.rs`.

mod affix;
mod builder;
mod frozen;
mod hash;
#[cfg(test)]
mod oracle;
mod table;
mod target;
#[cfg(test)]
mod tests;

use smallvec::SmallVec;

use crate::model::Effect;

pub use builder::IndexBuilder;
pub use frozen::Index;
pub use hash::{BuildMap, TextHashState};
pub use target::{FoldedTarget, IndexedTarget, NameMatcher};

/// The list a target is filed in: a policy's rule lists, in the order of
/// precedence (and of [`Cand`]s). The `tools {}` block's index files its
/// exclude patterns (loose) as [`List::EXCLUDE`] and its include patterns
/// (exact) as [`List::INCLUDE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum List {
    /// The deny rules (loose targets).
    Deny,
    /// The ask rules (loose targets).
    Ask,
    /// The allow rules (exact targets).
    Allow,
}

impl List {
    /// The `tools {}` block's exclude patterns (matched loosely).
    pub const EXCLUDE: List = List::Deny;
    /// The `tools {}` block's include patterns (matched exactly).
    pub const INCLUDE: List = List::Allow;

    /// The list's position, in [`Cand`]'s key and the per-list counts.
    fn index(self) -> usize {
        self as usize
    }

    fn from_index(index: u32) -> List {
        match index {
            0 => List::Deny,
            1 => List::Ask,
            _ => List::Allow,
        }
    }
}

impl From<Effect> for List {
    fn from(effect: Effect) -> List {
        match effect {
            Effect::Deny => List::Deny,
            Effect::Ask => List::Ask,
            Effect::Allow => List::Allow,
        }
    }
}

const LIST_SHIFT: u32 = 30;
const NUMBER_MASK: u32 = (1 << LIST_SHIFT) - 1;
/// [`Cand::check`] of a loose candidate: nothing to check.
const NO_CHECK: u32 = u32::MAX;

/// A rule that may match: its list and position, ordered as the decision
/// procedure tries them (by list, then by position), and the exact target
/// an allow rule must check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cand {
    /// The list in the top two bits, the position below: sorting by it
    /// puts candidates in file order, deny first.
    key: u32,
    /// The position of its exact target among the index's checks, or
    /// [`NO_CHECK`].
    check: u32,
}

impl Cand {
    fn new(list: List, number: u32, check: u32) -> Self {
        Cand {
            key: ((list.index() as u32) << LIST_SHIFT) | (number & NUMBER_MASK),
            check,
        }
    }

    /// The list it was filed in.
    pub fn list(self) -> List {
        List::from_index(self.key >> LIST_SHIFT)
    }

    /// The rule's position in its list.
    pub fn number(self) -> u32 {
        self.key & NUMBER_MASK
    }
}

/// Rule numbers (positions in their list) or pattern positions.
pub type Hits = SmallVec<[u32; 16]>;

/// The candidates of one request, in file order (deny, ask, allow).
pub type Cands = SmallVec<[Cand; 16]>;

/// The rule numbers of `list` among `cands` that `admit` accepts, each once,
/// in file order.
pub fn hits_of(cands: &[Cand], list: List, mut admit: impl FnMut(Cand) -> bool) -> Hits {
    let mut hits = Hits::new();
    for &c in cands {
        if c.list() == list && hits.last() != Some(&c.number()) && admit(c) {
            hits.push(c.number());
        }
    }
    hits
}

/// The request's names as the index reads them.
#[derive(Debug, Clone, Copy)]
pub struct Query<'q> {
    /// The server id as sent.
    pub server: &'q str,
    /// The name as sent (a resource's normalized URI).
    pub name: &'q str,
    /// The server id folded (UTF-8: see [`super::names::text`]).
    pub folded_server: &'q [u8],
    /// The name folded.
    pub folded_name: &'q [u8],
    /// Folding left the server id as it is.
    pub server_unfolded: bool,
    /// Folding left the name as it is.
    pub name_unfolded: bool,
}
