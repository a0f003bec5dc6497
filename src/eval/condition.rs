//! Evaluating compiled conditions in three-valued (Kleene) logic.
//!
//! A predicate that cannot be decided (a regex on a number, `>` on a string,
//! a host predicate that errors, panics or is missing) is `Failed`. `and`,
//! `or` and `not` treat `Failed` as "could be either": `false and Failed` is
//! false, `true or Failed` is true, `not Failed` is `Failed`. A rule whose
//! whole condition is `Failed` matches if it is a deny or ask rule and does
//! not if it is an allow rule, so a failure never widens access.

use std::ops::ControlFlow;
use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::Value;

use super::Request;
use crate::paths;
use crate::policy::{AnnotationKey, Cond, Operand, Pred, Quantifier, Step, Test};
use crate::syntax::CompareOp;

/// A truth value that may be unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tri {
    False,
    True,
    Failed,
}

impl From<bool> for Tri {
    fn from(b: bool) -> Self {
        if b {
            Tri::True
        } else {
            Tri::False
        }
    }
}

/// What conditions read about one request, computed once.
pub(crate) struct Facts<'r> {
    pub request: &'r Request<'r>,
    /// Effective annotations, in `AnnotationKey` order.
    pub annotations: [bool; 4],
}

fn key_slot(key: AnnotationKey) -> usize {
    key as usize
}

impl<'r> Facts<'r> {
    /// `trusted`: whether the server's own hints are believed.
    pub fn new(request: &'r Request<'r>, trusted: bool, needs_annotations: bool) -> Self {
        let mut annotations = AnnotationKey::ALL.map(|(_, k)| k.conservative());
        if needs_annotations && trusted {
            if let Some(Value::Object(hints)) = request.annotations {
                for (_, key) in AnnotationKey::ALL {
                    if let Some(Value::Bool(b)) = hints.get(key.hint()) {
                        annotations[key_slot(key)] = *b;
                    }
                }
            }
        }
        Facts {
            request,
            annotations,
        }
    }

    pub(crate) fn annotation(&self, key: AnnotationKey) -> bool {
        self.annotations[key_slot(key)]
    }
}

/// Evaluates a condition.
pub(crate) fn eval(cond: &Cond, facts: &Facts<'_>) -> Tri {
    match cond {
        Cond::And(parts) => {
            let mut failed = false;
            for part in parts.iter() {
                match eval(part, facts) {
                    Tri::False => return Tri::False,
                    Tri::Failed => failed = true,
                    Tri::True => {}
                }
            }
            if failed {
                Tri::Failed
            } else {
                Tri::True
            }
        }
        Cond::Or(parts) => {
            let mut failed = false;
            for part in parts.iter() {
                match eval(part, facts) {
                    Tri::True => return Tri::True,
                    Tri::Failed => failed = true,
                    Tri::False => {}
                }
            }
            if failed {
                Tri::Failed
            } else {
                Tri::False
            }
        }
        Cond::Not(inner) => match eval(inner, facts) {
            Tri::True => Tri::False,
            Tri::False => Tri::True,
            Tri::Failed => Tri::Failed,
        },
        Cond::Pred(pred) => eval_pred(pred, facts),
    }
}

/// One selected value.
#[derive(Clone, Copy)]
enum Leaf<'v> {
    Json(&'v Value),
    Str(&'v str),
    Bool(bool),
}

impl Leaf<'_> {
    fn as_str(&self) -> Option<&str> {
        match self {
            Leaf::Json(Value::String(s)) => Some(s),
            Leaf::Str(s) => Some(s),
            _ => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            Leaf::Json(Value::Number(n)) => n.as_f64(),
            _ => None,
        }
    }

    fn equals(&self, value: &Value) -> bool {
        match (self, value) {
            (Leaf::Json(v), _) => json_eq(v, value),
            (Leaf::Str(s), Value::String(t)) => s == t,
            (Leaf::Bool(b), Value::Bool(c)) => b == c,
            _ => false,
        }
    }
}

/// JSON equality where `1` equals `1.0`.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Folds the results of a test over every selected value.
struct Quantified {
    quantifier: Quantifier,
    seen: bool,
    failed: bool,
    decided: Option<Tri>,
}

impl Quantified {
    fn new(quantifier: Quantifier) -> Self {
        Quantified {
            quantifier,
            seen: false,
            failed: false,
            decided: None,
        }
    }

    /// One value's result; `None` for a value that is missing.
    fn add(&mut self, result: Option<Tri>) -> ControlFlow<()> {
        match (self.quantifier, result) {
            (Quantifier::Any, None) => {}
            (Quantifier::All, None | Some(Tri::False)) => {
                self.decided = Some(Tri::False);
                return ControlFlow::Break(());
            }
            (Quantifier::Any, Some(Tri::True)) => {
                self.decided = Some(Tri::True);
                return ControlFlow::Break(());
            }
            (_, Some(Tri::Failed)) => {
                self.seen = true;
                self.failed = true;
            }
            (_, Some(_)) => self.seen = true,
        }
        ControlFlow::Continue(())
    }

    fn finish(self) -> Tri {
        if let Some(t) = self.decided {
            return t;
        }
        match (self.quantifier, self.seen, self.failed) {
            (_, false, _) => Tri::False,
            (_, true, true) => Tri::Failed,
            (Quantifier::Any, true, false) => Tri::False,
            (Quantifier::All, true, false) => Tri::True,
        }
    }
}

/// Lists nested deeper than this inside arguments are not searched: the
/// test counts as failed (which never widens access) instead of recursing
/// without bound on input the model controls.
pub(crate) const MAX_LIST_NESTING: usize = 32;

/// One place a selector reached.
enum Slot<'v> {
    Found(Leaf<'v>),
    Missing,
    TooDeep,
}

/// Visits the values a selector finds. A key step that meets a list is
/// applied to each element; with `flatten`, a final list gives its
/// elements.
fn walk<'v>(
    value: &'v Value,
    steps: &[Step],
    flatten: bool,
    depth: usize,
    visit: &mut dyn FnMut(Slot<'v>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    if depth > MAX_LIST_NESTING {
        return visit(Slot::TooDeep);
    }
    let Some((step, rest)) = steps.split_first() else {
        if let (true, Value::Array(items)) = (flatten, value) {
            for item in items {
                visit(Slot::Found(Leaf::Json(item)))?;
            }
            return ControlFlow::Continue(());
        }
        return visit(Slot::Found(Leaf::Json(value)));
    };
    match (step, value) {
        (Step::Key(k), Value::Object(map)) => match map.get(&**k) {
            Some(v) => walk(v, rest, flatten, depth, visit),
            None => visit(Slot::Missing),
        },
        (Step::Key(_), Value::Array(items)) => {
            for item in items {
                walk(item, steps, flatten, depth + 1, visit)?;
            }
            ControlFlow::Continue(())
        }
        (Step::Index(i), Value::Array(items)) => match items.get(*i) {
            Some(v) => walk(v, rest, flatten, depth, visit),
            None => visit(Slot::Missing),
        },
        _ => visit(Slot::Missing),
    }
}

fn quantify(
    facts: &Facts<'_>,
    operand: &Operand,
    quantifier: Quantifier,
    flatten: bool,
    test: impl Fn(Leaf<'_>) -> Tri,
) -> Tri {
    let mut acc = Quantified::new(quantifier);
    let request = facts.request;
    let mut visit = |slot: Slot<'_>| {
        acc.add(match slot {
            Slot::Found(leaf) => Some(test(leaf)),
            Slot::Missing => None,
            Slot::TooDeep => Some(Tri::Failed),
        })
    };
    let _ = match operand {
        Operand::Args(steps) => match request.args {
            Some(args) => walk(args, steps, flatten, 0, &mut visit),
            None => visit(Slot::Missing),
        },
        Operand::Assigns(steps) => match request.assigns {
            Some(assigns) => walk(assigns, steps, flatten, 0, &mut visit),
            None => visit(Slot::Missing),
        },
        Operand::Principal => visit(
            request
                .principal
                .map_or(Slot::Missing, |p| Slot::Found(Leaf::Str(p))),
        ),
        Operand::Annotation(key) => visit(Slot::Found(Leaf::Bool(facts.annotation(*key)))),
    };
    acc.finish()
}

fn compare(leaf: Leaf<'_>, op: CompareOp, value: &Value) -> Tri {
    match op {
        CompareOp::Eq => leaf.equals(value).into(),
        CompareOp::Ne => (!leaf.equals(value)).into(),
        _ => {
            let (Some(a), Some(b)) = (leaf.as_f64(), value.as_f64()) else {
                return Tri::Failed;
            };
            match op {
                CompareOp::Lt => a < b,
                CompareOp::Le => a <= b,
                CompareOp::Gt => a > b,
                _ => a >= b,
            }
            .into()
        }
    }
}

pub(crate) fn eval_pred(pred: &Pred, facts: &Facts<'_>) -> Tri {
    let q = pred.quantifier;
    match &pred.test {
        Test::Annotation(key) => facts.annotation(*key).into(),
        Test::Tainted { ignore } => {
            let request = facts.request;
            if request.taint_unknown {
                return Tri::Failed;
            }
            request
                .taint
                .iter()
                .any(|t| *t != request.server && !ignore.iter().any(|i| &**i == *t))
                .into()
        }
        Test::Host { predicate, .. } => match predicate {
            None => Tri::Failed,
            Some(p) => match catch_unwind(AssertUnwindSafe(|| p.call(facts.request))) {
                Ok(Ok(b)) => b.into(),
                Ok(Err(_)) | Err(_) => Tri::Failed,
            },
        },
        Test::Exists(operand) => quantify(facts, operand, q, false, |_| Tri::True),
        Test::Compare { operand, op, value } => {
            // A list compared with `==` to a list literal is one value; with
            // anything else, each element is compared.
            let flatten = !value.is_array();
            quantify(facts, operand, q, flatten, |leaf| compare(leaf, *op, value))
        }
        Test::In { operand, list } => quantify(facts, operand, q, true, |leaf| {
            list.iter().any(|v| leaf.equals(v)).into()
        }),
        Test::Matches { operand, regex } => quantify(facts, operand, q, true, |leaf| {
            leaf.as_str()
                .map_or(Tri::Failed, |s| regex.is_match(s).into())
        }),
        Test::Inside { operand, root } => {
            // A `$CWD` root with no usable working folder: unknown.
            let Some(root) = root.resolve(facts.request.cwd) else {
                return Tri::Failed;
            };
            quantify(facts, operand, q, true, |leaf| {
                leaf.as_str()
                    .is_some_and(|s| paths::inside(s, &root))
                    .into()
            })
        }
        Test::Escapes { operand, root } => {
            let Some(root) = root.resolve(facts.request.cwd) else {
                return Tri::Failed;
            };
            quantify(facts, operand, q, true, |leaf| {
                (!leaf.as_str().is_some_and(|s| paths::inside(s, &root))).into()
            })
        }
    }
}
