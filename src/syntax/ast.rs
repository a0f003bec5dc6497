//! The abstract syntax tree: what a file says, with the span of every node.
//!
//! Nothing here is checked beyond the grammar; the compiler gives meaning
//! (and errors) to names, settings and values.

use serde_json::Value;

pub use super::keywords::{CompareOp, Effect};
pub use crate::model::{Span, TargetKind};

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned<T> {
    pub node: T,
    pub span: Span,
}

impl<T> Spanned<T> {
    pub fn new(node: T, span: Span) -> Self {
        Spanned { node, span }
    }
}

/// A whole file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct File {
    pub policies: Vec<PolicyAst>,
    /// Comments with their spans, kept for the formatter.
    pub comments: Vec<Span>,
    /// The file's own `let`s, for every policy in it.
    pub lets: Vec<LetAst>,
    /// Where a `let` name stands for a value (a target, a root, a list),
    /// in text order: the node there holds the name until the names are
    /// replaced by their values (`super::lets::expand`).
    pub name_uses: Vec<Span>,
}

/// `let NAME = VALUE`.
#[derive(Debug, Clone, PartialEq)]
pub struct LetAst {
    pub name: Spanned<String>,
    pub value: Spanned<LetValue>,
    pub span: Span,
}

/// What a `let` names.
#[derive(Debug, Clone, PartialEq)]
pub enum LetValue {
    /// `"text"`.
    Str(String),
    /// `["a", "b"]`.
    List(Vec<Spanned<String>>),
}

/// `policy NAME { ... }`.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyAst {
    pub name: Spanned<String>,
    pub items: Vec<Item>,
    pub span: Span,
}

/// One entry of a policy.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Setting(SettingAst),
    Let(LetAst),
    Tools(ToolsBlock),
    Rule(Box<RuleAst>),
    /// `limit ...`: a budget.
    Limit(Box<LimitAst>),
}

/// `NAME VALUE, ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingAst {
    pub name: Spanned<String>,
    pub values: Vec<Spanned<SettingValue>>,
    pub span: Span,
}

/// A setting's value as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingValue {
    Word(String),
    Str(String),
}

impl SettingValue {
    pub fn text(&self) -> &str {
        match self {
            SettingValue::Word(s) | SettingValue::Str(s) => s,
        }
    }
}

/// `tools { include ...; exclude ... }`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsBlock {
    pub entries: Vec<VisibilityEntry>,
    pub span: Span,
}

/// `include TARGET, ...` or `exclude TARGET, ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct VisibilityEntry {
    pub include: bool,
    pub targets: Vec<TargetAst>,
    pub span: Span,
}

/// `EFFECT [ID:] [KIND] TARGET, ... [when COND]`.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleAst {
    pub effect: Spanned<Effect>,
    pub id: Option<Spanned<String>>,
    pub kind: TargetKind,
    pub kind_span: Option<Span>,
    pub targets: Vec<TargetAst>,
    pub condition: Option<ConditionClause>,
    pub span: Span,
}

/// `limit [ID:] TARGET, ... COUNT per UNIT [per SCOPE]`.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitAst {
    /// The `limit` keyword.
    pub keyword: Span,
    pub id: Option<Spanned<String>>,
    pub targets: Vec<TargetAst>,
    /// The count as written (checked by the compiler).
    pub count: Spanned<String>,
    /// The window's unit as written (`hour`).
    pub unit: Spanned<String>,
    /// Whom it counts for as written (`principal`), if any.
    pub scope: Option<Spanned<String>>,
    pub span: Span,
}

/// `when COND` or `unless COND`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionClause {
    pub unless: bool,
    pub keyword: Span,
    pub condition: Cond,
}

/// One target as written.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetAst {
    /// `*`
    Any(Span),
    /// `"server/tool"`, `"tool"`: the decoded string.
    Pattern(Spanned<String>),
    /// `"server" ~ /re/`: the server glob and the regex source (with `\/`
    /// already turned into `/`).
    Regex {
        server: Spanned<String>,
        regex: Spanned<String>,
        span: Span,
    },
}

impl TargetAst {
    pub fn span(&self) -> Span {
        match self {
            TargetAst::Any(s) => *s,
            TargetAst::Pattern(p) => p.span,
            TargetAst::Regex { span, .. } => *span,
        }
    }
}

/// A condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    Or(Vec<Cond>, Span),
    And(Vec<Cond>, Span),
    Not(Box<Cond>, Span),
    /// `tainted`, `tainted(ignore: [...])` or `tainted(by: [...])`.
    Tainted {
        ignore: Vec<Spanned<String>>,
        /// `by: [...]`: only these servers' taint counts.
        by: Option<Vec<Spanned<String>>>,
        span: Span,
    },
    Exists {
        selector: SelectorAst,
        span: Span,
    },
    /// A selector alone.
    Bare(SelectorAst),
    Compare {
        selector: SelectorAst,
        op: Spanned<CompareOp>,
        value: Spanned<Value>,
        span: Span,
    },
    In {
        selector: SelectorAst,
        list: Spanned<Value>,
        span: Span,
    },
    Matches {
        selector: SelectorAst,
        regex: Spanned<String>,
        span: Span,
    },
    Path {
        selector: SelectorAst,
        inside: bool,
        root: Spanned<String>,
        span: Span,
    },
    /// `SEL runs only [...]` or `SEL runs [...]`: the simple commands of a
    /// command line against word patterns.
    Runs {
        selector: SelectorAst,
        /// `runs only`: every command must match (else: some command).
        only: bool,
        patterns: Vec<Spanned<String>>,
        /// The list as written.
        list: Span,
        span: Span,
    },
    /// `SEL writes inside "ROOT"`: every file a redirection of the command
    /// line writes is inside ROOT.
    Writes {
        selector: SelectorAst,
        root: Spanned<String>,
        span: Span,
    },
    /// `SELECTOR WORD VALUE` where WORD is not a test: an error to report.
    UnknownTest {
        selector: SelectorAst,
        word: Spanned<String>,
        /// The value after the word.
        value: Span,
        span: Span,
    },
}

impl Cond {
    pub fn span(&self) -> Span {
        match self {
            Cond::Or(_, s) | Cond::And(_, s) | Cond::Not(_, s) => *s,
            Cond::Tainted { span, .. }
            | Cond::Exists { span, .. }
            | Cond::Compare { span, .. }
            | Cond::In { span, .. }
            | Cond::Matches { span, .. }
            | Cond::Path { span, .. }
            | Cond::Runs { span, .. }
            | Cond::Writes { span, .. }
            | Cond::UnknownTest { span, .. } => *span,
            Cond::Bare(sel) => sel.span,
        }
    }
}

/// `root.step[0]["key"]`: the root word and its steps.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectorAst {
    pub root: Spanned<String>,
    pub steps: Vec<Spanned<Step>>,
    pub span: Span,
}

/// One step of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}
