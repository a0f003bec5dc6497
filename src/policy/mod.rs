//! The compiled policy: settings, visibility, and the deny, ask and allow
//! lists with their target indexes. Immutable once built; shared by `Arc`.

pub mod compiled_regex;
pub mod condition;
pub mod glob;
pub mod index;
pub mod limit;
pub mod names;
// Read only by `mcppol proxy`'s start-up warning.
#[cfg(any(all(feature = "cli", feature = "pipeline"), test))]
mod servers;
pub mod settings;

use std::sync::Arc;

use smol_str::SmolStr;

pub use compiled_regex::{CompiledRegex, RegexError};
pub use condition::{
    AnnotationKey, Cond, Operand, PathRoot, Pred, Quantifier, RootError, Step, Test,
};
pub use index::{
    hits_of, BuildMap, Cand, Cands, FoldedTarget, Hits, Index, IndexBuilder, IndexedTarget, List,
    NameMatcher, Query,
};
pub use limit::{BudgetScope, Limit, MAX_LIMIT_COUNT};
pub(crate) use settings::TrustedIds;
pub use settings::{DefaultDecision, Scope, Settings, Trusted};

use crate::diagnostics::SourceFile;
use crate::model::{Effect, Span, TargetKind};

/// One target of a rule as written, with its own matcher (used by
/// `explain` and the checker; decisions go through the list's index).
#[derive(Debug, Clone)]
pub struct Target {
    /// Where the target is written (its text: [`Target::text`]).
    pub span: Span,
    /// Both segments literal: the only kind of allow target that allows a
    /// new tool.
    pub exact: bool,
    /// Segments as matched: folded for deny and ask rules.
    pub matcher: IndexedTarget,
}

impl Target {
    pub fn new(span: Span, exact: bool, matcher: IndexedTarget) -> Self {
        Target {
            span,
            exact,
            matcher,
        }
    }

    /// The target as written (`"github/get_*"`, `*`, ...), read from the
    /// file it was compiled from: a policy keeps no copy of it.
    pub fn text<'s>(&self, source: &'s SourceFile) -> &'s str {
        source.text_of(self.span)
    }

    /// Whether this target matches; `server` and `name` must be folded for
    /// a loose list, `raw_name` is the name as sent.
    pub fn matches(&self, server: &str, name: &str, raw_name: &str) -> bool {
        if !self.matcher.server.matches(server) {
            return false;
        }
        match &self.matcher.name {
            NameMatcher::Glob(g) => g.matches(name),
            NameMatcher::Regex(re) => re.is_match(raw_name) || re.is_match(name),
        }
    }
}

/// One rule statement.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The id written in the file, or `<list>:<index>`.
    pub id: SmolStr,
    pub effect: Effect,
    pub kind: TargetKind,
    pub targets: Vec<Target>,
    pub condition: Option<Cond>,
    pub span: Span,
    /// The 1-based line the rule starts on, kept for decisions.
    pub line: u32,
}

/// The rules of one effect, in file order (their targets are found
/// through the policy's [`Index`] of each kind).
#[derive(Debug, Clone, Default)]
pub struct RuleList {
    pub rules: Vec<Rule>,
}

/// The `tools {}` block: include patterns (exact) and exclude patterns
/// (loose).
#[derive(Debug, Clone, Default)]
pub struct Visibility {
    /// Exclude patterns as [`List::EXCLUDE`], include patterns as
    /// [`List::INCLUDE`]; hits are positions in `patterns`.
    pub(crate) index: Index,
    /// Every pattern as written, in file order: what an explanation names.
    pub(crate) patterns: Vec<VisPattern>,
    pub span: Span,
}

/// One pattern of the `tools {}` block: where it is written (its text:
/// [`SourceFile::text_of`] of the policy's source).
#[derive(Debug, Clone)]
pub(crate) struct VisPattern {
    pub span: Span,
}

/// How the `tools {}` block treats a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shown {
    /// No block: every tool is visible.
    NoBlock,
    /// No exclude pattern matches and the include list is empty.
    Unfiltered,
    /// An include pattern names it.
    Included,
    /// An exclude pattern matches it.
    Excluded,
    /// The include list does not name it.
    NotIncluded,
}

impl Shown {
    pub fn visible(self) -> bool {
        matches!(self, Shown::NoBlock | Shown::Unfiltered | Shown::Included)
    }
}

/// Where a policy's settings are written, for the explanation's steps that
/// no rule decides (kept at compile time: explaining never parses again).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SettingSpans {
    pub default: Option<Span>,
    pub pin_tools: Option<Span>,
    pub resolve_links: Option<Span>,
    pub scope: Option<Span>,
    pub roots: Option<Span>,
}

/// A compiled policy.
#[derive(Debug, Clone)]
pub struct Policy {
    pub(crate) name: String,
    /// `name`, shared by every decision the policy makes.
    pub(crate) shared_name: SmolStr,
    pub(crate) settings: Settings,
    /// `settings.trusted` as deciding reads it.
    pub(crate) trusted: TrustedIds,
    pub(crate) visibility: Option<Visibility>,
    pub(crate) lists: [RuleList; 3],
    /// The targets of the three lists, one index per kind of request.
    pub(crate) index: [Index; 3],
    /// The budgets (`limit`), in file order.
    pub(crate) limits: Vec<Limit>,
    pub(crate) source: Arc<SourceFile>,
    pub(crate) span: Span,
    pub(crate) name_span: Span,
    pub(crate) setting_spans: SettingSpans,
}

impl Policy {
    /// The policy's name (`policy NAME { ... }`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its settings, with the contract's defaults for those not written.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The file it was compiled from.
    pub fn source(&self) -> &Arc<SourceFile> {
        &self.source
    }

    /// The roots the policy pins (`roots "/srv/work", ...`), each an
    /// absolute, canonical path; `None` when the policy does not set them,
    /// and then a host's roots pass through unchanged.
    pub fn roots(&self) -> Option<&[String]> {
        self.settings.roots.as_deref()
    }

    /// The budgets (`limit ...`), in file order.
    pub fn limits(&self) -> &[Limit] {
        &self.limits
    }

    /// The budgets a tool call to `server`/`tool` counts against, in file
    /// order (none for a resource read or a prompt get).
    pub fn limits_for(&self, server: &str, tool: &str) -> Vec<&Limit> {
        if self.limits.is_empty() {
            return Vec::new();
        }
        self.limits
            .iter()
            .filter(|l| l.matches(server, tool))
            .collect()
    }

    pub(crate) fn list(&self, effect: Effect) -> &RuleList {
        &self.lists[effect.index()]
    }

    /// The index of the rules' targets for one kind of request.
    pub(crate) fn index(&self, kind: TargetKind) -> &Index {
        &self.index[kind.index()]
    }

    /// Every rule: deny, then ask, then allow, each in file order.
    pub(crate) fn all_rules(&self) -> impl Iterator<Item = &Rule> {
        self.lists.iter().flat_map(|l| l.rules.iter())
    }

    /// Whether the visibility filter shows a tool to the model.
    pub fn is_visible(&self, server: &str, tool: &str) -> bool {
        let mut bufs = [[0; 64]; 2];
        let names = names::Names::new(server, tool, &mut bufs);
        let mut hits = Hits::new();
        self.visibility_folded(&names.query(), &mut hits).visible()
    }

    /// How the `tools {}` block treats a tool; `hits` ends holding the
    /// patterns (positions in [`Visibility::patterns`]) that decided it.
    pub(crate) fn visibility_folded(&self, query: &Query<'_>, hits: &mut Hits) -> Shown {
        let Some(vis) = &self.visibility else {
            return Shown::NoBlock;
        };
        let mut cands = Cands::new();
        vis.index.candidates(query, &mut cands);
        *hits = hits_of(&cands, List::EXCLUDE, |_| true);
        if !hits.is_empty() {
            return Shown::Excluded;
        }
        if vis.index.list_is_empty(List::INCLUDE) {
            return Shown::Unfiltered;
        }
        *hits = hits_of(&cands, List::INCLUDE, |c| vis.index.admits(c, query, false));
        if hits.is_empty() {
            Shown::NotIncluded
        } else {
            Shown::Included
        }
    }
}

/// The policies of one file, by name, in file order.
#[derive(Debug, Clone)]
pub struct PolicySet {
    pub(crate) policies: Vec<Arc<Policy>>,
    pub(crate) source: Arc<SourceFile>,
}

impl PolicySet {
    /// The policy of that name.
    pub fn get(&self, name: &str) -> Option<&Arc<Policy>> {
        self.policies.iter().find(|p| p.name == name)
    }

    /// The policy a caller means: the named one, or the only one when no
    /// name is given.
    pub fn pick(&self, name: Option<&str>) -> Result<&Arc<Policy>, PickError> {
        match name {
            Some(n) => self.get(n).ok_or_else(|| PickError::NotFound {
                name: n.to_string(),
                known: self.names().map(String::from).collect(),
            }),
            None => match self.policies.as_slice() {
                [only] => Ok(only),
                [] => Err(PickError::Empty),
                _ => Err(PickError::Ambiguous {
                    known: self.names().map(String::from).collect(),
                }),
            },
        }
    }

    /// The policies' names, in file order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.policies.iter().map(|p| p.name.as_str())
    }

    /// The policies, in file order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Policy>> {
        self.policies.iter()
    }

    /// How many policies the file holds.
    pub fn len(&self) -> usize {
        self.policies.len()
    }

    /// The file they were compiled from.
    pub fn source(&self) -> &Arc<SourceFile> {
        &self.source
    }

    /// Whether the file holds no policy.
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }
}

/// Why no single policy could be picked from a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PickError {
    /// No policy has that name.
    #[error("no policy named `{name}`; the file has: {}", known.join(", "))]
    NotFound {
        /// The name asked for.
        name: String,
        /// The names the file has.
        known: Vec<String>,
    },
    /// No name was given and the file holds more than one policy.
    #[error("the file holds several policies ({}); name one with --name", known.join(", "))]
    Ambiguous {
        /// The names the file has.
        known: Vec<String>,
    },
    /// The file holds no policy.
    #[error("the file holds no policy")]
    Empty,
}
