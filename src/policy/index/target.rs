//! Targets as the index files them: the segments a rule's target names
//! (folded for a loose list), and an exact target as written, which an
//! allow or include candidate is checked against on the names as sent.

use super::super::glob::Glob;
use super::super::CompiledRegex;
use super::Query;

/// What a target's name segment is matched with.
#[derive(Debug, Clone)]
pub enum NameMatcher {
    /// A glob (a literal, a prefix, a suffix, `*` or a general pattern).
    Glob(Glob),
    /// A regex (`"server" ~ /re/`).
    Regex(CompiledRegex),
}

/// A target ready for the index: the server segment and the name segment,
/// already folded when the list matches loosely.
#[derive(Debug, Clone)]
pub struct IndexedTarget {
    /// The server segment.
    pub server: Glob,
    /// The name segment.
    pub name: NameMatcher,
}

/// An exact target's segments folded, as the index files it.
#[derive(Debug, Clone)]
pub struct FoldedTarget {
    /// The server segment folded.
    pub server: Glob,
    /// `None` for a regex (filed under the server, tried as written).
    pub name: Option<Glob>,
    /// Folding left the server segment as written.
    pub server_unchanged: bool,
    /// Folding left the name segment as written (false for a regex).
    pub name_unchanged: bool,
}

/// An exact target as written, checked on the names as sent.
#[derive(Debug, Clone)]
pub(super) struct Check {
    pub(super) server: Glob,
    pub(super) name: NameMatcher,
    /// Both segments literal: the only targets that allow a new tool.
    pub(super) exact: bool,
    /// Folding leaves the server pattern as it is: for a server id that
    /// folding leaves as it is too, the table's match of the folded server
    /// is exact.
    pub(super) server_safe: bool,
    /// The same of the name pattern (never for a regex).
    pub(super) name_safe: bool,
}

impl Check {
    /// `target` as written, `folded` as filed.
    pub(super) fn new(target: &IndexedTarget, folded: &FoldedTarget) -> Self {
        Check {
            server: target.server.clone(),
            name: target.name.clone(),
            exact: target.server.is_literal()
                && matches!(&target.name, NameMatcher::Glob(g) if g.is_literal()),
            server_safe: folded.server_unchanged,
            name_safe: folded.name_unchanged && folded.name.is_some(),
        }
    }

    /// Whether the target as written matches the names as sent, given that
    /// the folded target matches the folded names (the table found it):
    /// a segment whose pattern and name folding both leave as they are
    /// matches as found.
    #[inline]
    pub(super) fn holds(&self, q: &Query<'_>) -> bool {
        ((q.server_unfolded && self.server_safe) || self.server.matches(q.server))
            && ((q.name_unfolded && self.name_safe)
                || match &self.name {
                    NameMatcher::Glob(g) => g.matches(q.name),
                    NameMatcher::Regex(re) => re.is_match(q.name),
                })
    }
}
