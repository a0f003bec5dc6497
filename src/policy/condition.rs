//! Compiled conditions: predicates with their quantifier fixed at compile
//! time, ready to evaluate without allocation.

use std::borrow::Cow;

use serde_json::Value;

use crate::model::HostFn;
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
    /// The `let` names written in the predicate and the values they stand
    /// for, as written: what `explain` shows beside the text.
    pub names: Box<[(Box<str>, Box<str>)]>,
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
///
/// A plain tag byte first (`repr(u8)`): without it the compiler files the
/// variant in a spare value of a field, and telling which test a predicate
/// is, once per predicate a decision evaluates, took a few instructions of
/// arithmetic instead of one load.
#[derive(Debug, Clone)]
#[repr(u8)]
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
    /// Every selected path is inside the root.
    Inside {
        operand: Operand,
        root: PathRoot,
    },
    /// Some selected path fails to canonicalize or is outside the root.
    Escapes {
        operand: Operand,
        root: PathRoot,
    },
    /// `runs only [...]` (`only`) or `runs [...]`: the simple commands of
    /// a command line against word patterns.
    Runs {
        operand: Operand,
        only: bool,
        patterns: Box<[crate::shell::CommandPattern]>,
    },
    /// `writes inside "ROOT"`: every file a command line's redirections
    /// write is inside the root.
    WritesInside {
        operand: Operand,
        root: PathRoot,
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
    let is = |id: &str| super::glob::same(id.as_bytes(), taint.as_bytes());
    !is(server) && !ignore.iter().any(|i| is(i)) && by.is_none_or(|by| by.iter().any(|b| is(b)))
}

/// How the session's folder is written in a path root: `"$CWD"` or
/// `"$CWD/sub"`.
pub const CWD_VAR: &str = "$CWD";

/// The root of an `inside` or `escapes` test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathRoot {
    /// A fixed canonical path.
    Fixed(Box<str>),
    /// The request's working folder (`$CWD`), followed by a canonical
    /// suffix: `""` for `$CWD` itself, `"/sub"` for `$CWD/sub`. Known only
    /// when the host gives the request a `cwd`; otherwise the test fails
    /// closed.
    Cwd(Box<str>),
}

/// Why a written root cannot be a root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RootError {
    #[error("{0}")]
    Path(crate::paths::PathError),
    #[error("`..` climbs out of `$CWD`")]
    ClimbsOutOfCwd,
}

impl PathRoot {
    /// The root as written in a policy: `$CWD`, `$CWD/...`, or a path (a
    /// relative one taken from `/`).
    pub fn from_written(written: &str) -> Result<PathRoot, RootError> {
        let Some(rest) = written.strip_prefix(CWD_VAR) else {
            return crate::paths::canonical_root(written)
                .map(|r| PathRoot::Fixed(r.into_boxed_str()))
                .map_err(RootError::Path);
        };
        if !rest.is_empty() && !rest.starts_with('/') {
            // `$CWDX` is not the variable: a plain (relative) root.
            return crate::paths::canonical_root(written)
                .map(|r| PathRoot::Fixed(r.into_boxed_str()))
                .map_err(RootError::Path);
        }
        let mut depth = 0usize;
        for segment in rest.split('/') {
            match segment {
                "" | "." => {}
                ".." if depth == 0 => return Err(RootError::ClimbsOutOfCwd),
                ".." => depth -= 1,
                _ => depth += 1,
            }
        }
        let suffix = crate::paths::canonical_root(rest).map_err(RootError::Path)?;
        Ok(PathRoot::Cwd(if suffix == "/" {
            "".into()
        } else {
            suffix.into_boxed_str()
        }))
    }

    /// Whether the root depends on the request's working folder.
    pub fn is_cwd(&self) -> bool {
        matches!(self, PathRoot::Cwd(_))
    }

    /// The canonical root for a request whose working folder is `cwd`;
    /// `None` when the root is `$CWD`-based and `cwd` is missing, not
    /// absolute or not a usable path.
    pub fn resolve<'a>(&'a self, cwd: Option<&str>) -> Option<Cow<'a, str>> {
        match self {
            PathRoot::Fixed(root) => Some(Cow::Borrowed(root)),
            PathRoot::Cwd(suffix) => {
                // The one reading of the working folder, the one relative
                // paths are placed against too.
                let base = crate::paths::canonical_cwd(cwd)?;
                Some(Cow::Owned(match (base.as_str(), suffix.is_empty()) {
                    (_, true) => base,
                    ("/", false) => suffix.to_string(),
                    (_, false) => format!("{base}{suffix}"),
                }))
            }
        }
    }
}

impl std::fmt::Display for PathRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathRoot::Fixed(root) => f.write_str(root),
            PathRoot::Cwd(suffix) => write!(f, "{CWD_VAR}{suffix}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_roots_are_recognised_and_canonical() {
        assert_eq!(PathRoot::from_written("$CWD"), Ok(PathRoot::Cwd("".into())));
        assert_eq!(
            PathRoot::from_written("$CWD/"),
            Ok(PathRoot::Cwd("".into()))
        );
        assert_eq!(
            PathRoot::from_written("$CWD/a/./b/../c/"),
            Ok(PathRoot::Cwd("/a/c".into()))
        );
        assert_eq!(
            PathRoot::from_written("/srv//x/"),
            Ok(PathRoot::Fixed("/srv/x".into()))
        );
        // Not the variable: a relative root, taken from `/`.
        assert_eq!(
            PathRoot::from_written("$CWDX"),
            Ok(PathRoot::Fixed("/$CWDX".into()))
        );
    }

    #[test]
    fn cwd_roots_may_not_climb_out() {
        assert_eq!(
            PathRoot::from_written("$CWD/.."),
            Err(RootError::ClimbsOutOfCwd)
        );
        assert_eq!(
            PathRoot::from_written("$CWD/a/../../b"),
            Err(RootError::ClimbsOutOfCwd)
        );
        assert!(matches!(
            PathRoot::from_written("$CWD/a\\b"),
            Err(RootError::Path(_))
        ));
    }

    #[test]
    fn a_cwd_root_is_known_only_with_an_absolute_cwd() {
        let root = PathRoot::Cwd("/src".into());
        assert_eq!(
            root.resolve(Some("/work/p/")).as_deref(),
            Some("/work/p/src")
        );
        assert_eq!(root.resolve(Some("/")).as_deref(), Some("/src"));
        assert_eq!(root.resolve(None), None);
        assert_eq!(root.resolve(Some("work/p")), None);
        assert_eq!(root.resolve(Some("/work\\p")), None);
        let bare = PathRoot::Cwd("".into());
        assert_eq!(
            bare.resolve(Some("/work/p/../q")).as_deref(),
            Some("/work/q")
        );
        let fixed = PathRoot::Fixed("/srv".into());
        assert_eq!(fixed.resolve(None).as_deref(), Some("/srv"));
        assert_eq!(root.to_string(), "$CWD/src");
    }
}
