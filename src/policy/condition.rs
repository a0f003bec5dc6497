//! Compiled conditions: predicates with their quantifier fixed at compile
//! time, ready to evaluate without allocation.

use serde_json::Value;

use crate::host::HostFn;
use crate::syntax::{CompareOp, Span};

/// A compiled condition.
#[derive(Debug, Clone)]
pub enum Cond {
    And(Box<[Cond]>),
    Or(Box<[Cond]>),
    Not(Box<Cond>),
    Pred(Box<Pred>),
}

/// How a test over several selected values (a list met on the way) is
/// decided. Chosen by polarity so that the answer is always the narrower
/// one: `All` where a match widens access (an allow rule, or a deny rule
/// under `not`), `Any` where a match narrows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantifier {
    Any,
    All,
}

/// One predicate and where it was written.
#[derive(Debug, Clone)]
pub struct Pred {
    pub test: Test,
    pub quantifier: Quantifier,
    pub span: Span,
}

/// The four MCP tool annotations a policy may test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnnotationKey {
    ReadOnly,
    Destructive,
    OpenWorld,
    Idempotent,
}

impl AnnotationKey {
    pub const ALL: [(&'static str, AnnotationKey); 4] = [
        ("read_only", AnnotationKey::ReadOnly),
        ("destructive", AnnotationKey::Destructive),
        ("open_world", AnnotationKey::OpenWorld),
        ("idempotent", AnnotationKey::Idempotent),
    ];

    pub fn name(self) -> &'static str {
        match self {
            AnnotationKey::ReadOnly => "read_only",
            AnnotationKey::Destructive => "destructive",
            AnnotationKey::OpenWorld => "open_world",
            AnnotationKey::Idempotent => "idempotent",
        }
    }

    /// The MCP field (`readOnlyHint`, ...).
    pub fn hint(self) -> &'static str {
        match self {
            AnnotationKey::ReadOnly => "readOnlyHint",
            AnnotationKey::Destructive => "destructiveHint",
            AnnotationKey::OpenWorld => "openWorldHint",
            AnnotationKey::Idempotent => "idempotentHint",
        }
    }

    /// MCP's value for an absent hint, which is also the conservative value
    /// used for servers that are not trusted.
    pub fn conservative(self) -> bool {
        match self {
            AnnotationKey::ReadOnly | AnnotationKey::Idempotent => false,
            AnnotationKey::Destructive | AnnotationKey::OpenWorld => true,
        }
    }
}

/// One step of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(Box<str>),
    Index(usize),
}

/// Where a predicate's value comes from.
#[derive(Debug, Clone)]
pub enum Operand {
    Args(Box<[Step]>),
    Principal,
    Assigns(Box<[Step]>),
    Annotation(AnnotationKey),
}

/// What is tested.
#[derive(Debug, Clone)]
pub enum Test {
    /// `annotation.read_only` alone: the effective annotation is true.
    Annotation(AnnotationKey),
    Compare {
        operand: Operand,
        op: CompareOp,
        value: Value,
    },
    In {
        operand: Operand,
        list: Box<[Value]>,
    },
    Matches {
        operand: Operand,
        regex: super::CompiledRegex,
    },
    Exists(Operand),
    /// Every selected path is inside the (canonical) root.
    Inside {
        operand: Operand,
        root: Box<str>,
    },
    /// Some selected path fails to canonicalize or is outside the root.
    Escapes {
        operand: Operand,
        root: Box<str>,
    },
    /// Some server other than the called tool's own, and not ignored
    /// (and, with `by`, one of those), has output in the context.
    Tainted {
        ignore: Box<[Box<str>]>,
        /// `tainted(by: [...])`: only these servers' taint counts.
        by: Option<Box<[Box<str>]>>,
    },
    Host {
        name: Box<str>,
        predicate: Option<HostFn>,
    },
}

/// Whether taint from `taint` counts for a `tainted` test on a call to a
/// tool of `server`: never the server's own, never an ignored one, and with
/// `by`, only one of those.
pub fn taint_counts(
    ignore: &[Box<str>],
    by: Option<&[Box<str>]>,
    taint: &str,
    server: &str,
) -> bool {
    taint != server
        && !ignore.iter().any(|i| &**i == taint)
        && by.is_none_or(|by| by.iter().any(|b| &**b == taint))
}
