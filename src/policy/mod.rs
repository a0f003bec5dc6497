//! The compiled policy: settings, visibility, and the deny, ask and allow
//! lists with their target indexes. Immutable once built; shared by `Arc`.

pub mod condition;
pub mod glob;
pub mod names;
pub mod settings;
pub mod target_index;

use std::sync::Arc;

pub use condition::{
    AnnotationKey, Cond, Operand, PathRoot, Pred, Quantifier, RootError, Step, Test, CWD_VAR,
};
pub use settings::{DefaultDecision, Scope, Settings, Trusted, SETTING_NAMES};
pub use target_index::{Hits, IndexedTarget, NameMatcher, TargetIndex};

use crate::diagnostics::SourceFile;
use crate::syntax::{Effect, Span, TargetKind};

/// One target of a rule as written, with its own matcher (used by
/// `explain` and the checker; decisions go through the list's index).
#[derive(Debug, Clone)]
pub struct Target {
    /// The target as written in the file (`"github/get_*"`, `*`, ...).
    pub text: String,
    pub span: Span,
    /// Both segments literal: the only kind of allow target that allows a
    /// new tool.
    pub exact: bool,
    /// Segments as matched: folded for deny and ask rules.
    pub matcher: IndexedTarget,
}

impl Target {
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
    pub id: Arc<str>,
    /// Whether the id was written in the file.
    pub named: bool,
    pub effect: Effect,
    pub kind: TargetKind,
    pub targets: Vec<Target>,
    pub condition: Option<Cond>,
    pub span: Span,
}

/// The rules of one effect, in file order, and their indexes by kind.
#[derive(Debug, Clone, Default)]
pub struct RuleList {
    pub rules: Vec<Rule>,
    pub(crate) index: [TargetIndex; 3],
}

impl RuleList {
    pub(crate) fn index(&self, kind: TargetKind) -> &TargetIndex {
        &self.index[kind.index()]
    }
}

/// The `tools {}` block: include patterns (exact) and exclude patterns
/// (loose).
#[derive(Debug, Clone, Default)]
pub struct Visibility {
    pub(crate) include: TargetIndex,
    pub(crate) exclude: TargetIndex,
    pub span: Span,
}

/// A compiled policy.
#[derive(Debug, Clone)]
pub struct Policy {
    pub name: String,
    pub settings: Settings,
    pub visibility: Option<Visibility>,
    pub(crate) lists: [RuleList; 3],
    pub source: Arc<SourceFile>,
    pub span: Span,
    pub name_span: Span,
    /// Whether any condition reads annotations (else they are not computed).
    pub(crate) uses_annotations: bool,
}

impl Policy {
    /// The rules of one effect, in file order.
    pub fn rules(&self, effect: Effect) -> &[Rule] {
        &self.lists[effect.index()].rules
    }

    pub(crate) fn list(&self, effect: Effect) -> &RuleList {
        &self.lists[effect.index()]
    }

    /// Every rule: deny, then ask, then allow, each in file order.
    pub fn all_rules(&self) -> impl Iterator<Item = &Rule> {
        self.lists.iter().flat_map(|l| l.rules.iter())
    }

    /// Whether the visibility filter shows a tool to the model.
    pub fn is_visible(&self, server: &str, tool: &str) -> bool {
        let (fs, ft) = (names::fold_name(server), names::fold_name(tool));
        self.is_visible_folded(server, tool, &fs, &ft)
    }

    /// [`Policy::is_visible`] for a caller that has folded the names
    /// already (deciding folds them once for every list).
    pub(crate) fn is_visible_folded(
        &self,
        server: &str,
        tool: &str,
        folded_server: &str,
        folded_tool: &str,
    ) -> bool {
        let Some(vis) = &self.visibility else {
            return true;
        };
        let mut hits = Hits::new();
        vis.exclude
            .collect(folded_server, folded_tool, tool, &mut hits);
        if !hits.is_empty() {
            return false;
        }
        if vis.include.is_empty() {
            return true;
        }
        vis.include.collect(server, tool, tool, &mut hits);
        !hits.is_empty()
    }
}

/// The policies of one file, by name, in file order.
#[derive(Debug, Clone)]
pub struct PolicySet {
    pub(crate) policies: Vec<Arc<Policy>>,
    pub source: Arc<SourceFile>,
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

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.policies.iter().map(|p| p.name.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<Policy>> {
        self.policies.iter()
    }

    pub fn len(&self) -> usize {
        self.policies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }
}

/// Why no single policy could be picked from a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PickError {
    #[error("no policy named `{name}`; the file has: {}", known.join(", "))]
    NotFound { name: String, known: Vec<String> },
    #[error("the file holds several policies ({}); name one with --name", known.join(", "))]
    Ambiguous { known: Vec<String> },
    #[error("the file holds no policy")]
    Empty,
}
