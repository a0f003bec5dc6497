//! Evaluating compiled conditions in three-valued (Kleene) logic.
//!
//! A predicate that cannot be decided (a regex on a number, `>` on a string,
//! a host predicate that errors, panics or is missing) is `Failed`. `and`,
//! `or` and `not` treat `Failed` as "could be either": `false and Failed` is
//! false, `true or Failed` is true, `not Failed` is `Failed`. A rule whose
//! whole condition is `Failed` matches if it is a deny or ask rule and does
//! not if it is an allow rule, so a failure never widens access.

use std::cell::{Cell, OnceCell};
use std::cmp::Ordering;
use std::ops::ControlFlow;
use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::{Map, Number, Value};

use super::sink::{HostCall, Reached, Sink};
use super::Request;
use crate::model::ExactNumber;
use crate::paths::{self, Links};
use crate::policy::glob::same;
use crate::policy::{AnnotationKey, Cond, Operand, Policy, Pred, Quantifier, Step, Test};
use crate::syntax::CompareOp;

/// A truth value that may be unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tri {
    /// Does not hold.
    False,
    /// Holds.
    True,
    /// Could not be decided (a predicate of the wrong type, a host
    /// predicate that erred): matches deny and ask rules, never an allow.
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

/// What conditions read about one request, computed once, when first
/// read.
pub(crate) struct Facts<'r> {
    pub request: &'r Request<'r>,
    /// A trusted server's effective annotations, each once a condition
    /// has read it: bit `k` says annotation `k` (in `AnnotationKey` order)
    /// is known, bit `k + 4` holds its value.
    annotations: Cell<u8>,
    /// The policy deciding: whether it or the host trusts the request's
    /// server (its own hints are believed) is asked of
    /// [`super::trusts`] when an annotation is first read.
    policy: &'r Policy,
    trusted: OnceCell<bool>,
    /// How path tests resolve symbolic links: the request's way, unless
    /// the policy's `resolve_links` says otherwise.
    links: Links<'r>,
    /// The request's working folder, canonical (`None` when it has none
    /// or it is not an absolute path), once a path test needs it.
    cwd: OnceCell<Option<String>>,
}

impl<'r> Facts<'r> {
    pub fn new(request: &'r Request<'r>, policy: &'r Policy) -> Self {
        Facts {
            request,
            annotations: Cell::new(0),
            policy,
            trusted: OnceCell::new(),
            links: request.links,
            cwd: OnceCell::new(),
        }
    }

    /// The policy's `resolve_links`, where written, over the request's.
    pub fn with_resolve_links(mut self, setting: Option<bool>) -> Self {
        self.links = match (setting, self.request.links) {
            (Some(false), _) => Links::Off,
            (Some(true), Links::Off) => Links::ThisMachine,
            (_, links) => links,
        };
        self
    }

    /// The canonical working folder relative paths are placed against.
    pub fn cwd(&self) -> Option<&str> {
        self.cwd
            .get_or_init(|| paths::canonical_cwd(self.request.cwd))
            .as_deref()
    }

    /// A trusted server's own hint (MCP's default when absent).
    fn hint(&self, key: AnnotationKey) -> bool {
        match self.request.annotations {
            Some(Value::Object(hints)) => match get_key(hints, key.hint()) {
                Some(Value::Bool(b)) => *b,
                _ => key.conservative(),
            },
            _ => key.conservative(),
        }
    }

    /// An effective annotation: the server's own hint if the policy or
    /// the host trusts it, else the conservative value.
    #[inline]
    pub(crate) fn annotation(&self, key: AnnotationKey) -> bool {
        if !*self
            .trusted
            .get_or_init(|| super::trusts(self.policy, self.request))
        {
            return key.conservative();
        }
        let known_bit = 1u8 << (key as u8);
        let value_bit = known_bit << 4;
        let known = self.annotations.get();
        if known & known_bit != 0 {
            return known & value_bit != 0;
        }
        let value = self.hint(key);
        self.annotations
            .set(known | known_bit | if value { value_bit } else { 0 });
        value
    }
}

/// Objects of up to this many keys are searched key by key: comparing a
/// few short keys is cheaper than hashing one (`serde_json` keeps keys in
/// order, in an `IndexMap` hashed with SipHash).
const SCAN_KEYS: usize = 16;

/// `map[key]`, without hashing for a small object.
#[inline]
fn get_key<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    if map.len() <= SCAN_KEYS {
        map.iter()
            .find(|(k, _)| same(k.as_bytes(), key.as_bytes()))
            .map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// Evaluates a condition, telling `sink` each predicate's result. Of the
/// notes of an `and` (`or`), the sink keeps those that decided it: the
/// first false (true) part's, else the failed parts', else all.
pub(crate) fn eval<S: Sink>(cond: &Cond, facts: &Facts<'_>, sink: &mut S) -> Tri {
    match cond {
        Cond::Pred(pred) => noted(pred, facts, sink),
        Cond::And(parts) => junction(parts, Tri::False, Tri::True, facts, sink),
        Cond::Or(parts) => junction(parts, Tri::True, Tri::False, facts, sink),
        Cond::Not(inner) => match eval(inner, facts, sink) {
            Tri::True => Tri::False,
            Tri::False => Tri::True,
            Tri::Failed => Tri::Failed,
        },
    }
}

/// One predicate, its result told to the sink.
#[inline]
fn noted<S: Sink>(pred: &Pred, facts: &Facts<'_>, sink: &mut S) -> Tri {
    let result = eval_pred(pred, facts, sink);
    sink.predicate(pred, result, facts);
    result
}

/// `and` (`short` false, `otherwise` true) or `or` (`short` true,
/// `otherwise` false) in Kleene logic: the first part that comes out
/// `short` decides; else any failed part makes it `Failed`.
///
/// In line in `eval`: a condition that is an `and` or `or` costs one
/// call, not two (about 25 instructions a decision at 10,000 rules).
#[inline(always)]
fn junction<S: Sink>(
    parts: &[Cond],
    short: Tri,
    otherwise: Tri,
    facts: &Facts<'_>,
    sink: &mut S,
) -> Tri {
    let start = sink.mark();
    let mut failed = false;
    for part in parts {
        let from = sink.mark();
        // A predicate part is tested here, not through a call of `eval`
        // (most conditions are an `and` or `or` of predicates).
        let result = match part {
            Cond::Pred(pred) => noted(pred, facts, sink),
            _ => eval(part, facts, sink),
        };
        if result == short {
            sink.cut(start, from);
            return short;
        }
        if result == Tri::Failed {
            if !failed {
                // From now on only failed parts explain the result.
                sink.cut(start, from);
                failed = true;
            }
        } else if failed {
            let to = sink.mark();
            sink.cut(from, to);
        }
    }
    if failed {
        Tri::Failed
    } else {
        otherwise
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

    fn as_number(&self) -> Option<&Number> {
        match self {
            Leaf::Json(Value::Number(n)) => Some(n),
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
        (Value::Number(x), Value::Number(y)) => match compare_numbers(x, y) {
            Some(order) => order == Ordering::Equal,
            // Neither can be held exactly: equal only as the same double.
            None => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| get_key(y, k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// An integer against a double, exactly (no rounding of the integer to a
/// double). `f` is finite and below 2^64 in magnitude.
fn cmp_int_float(i: i128, f: f64) -> Option<Ordering> {
    let floor = f.floor();
    // |floor| < 2^64 + 1, so the cast is exact.
    let whole = floor as i128;
    Some(match i.cmp(&whole) {
        Ordering::Equal if f > floor => Ordering::Less,
        order => order,
    })
}

/// Compares two JSON numbers exactly; `None` when either cannot be held
/// exactly (then an ordering test fails).
pub(crate) fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    match (ExactNumber::of(a)?, ExactNumber::of(b)?) {
        (ExactNumber::Int(i), ExactNumber::Int(j)) => Some(i.cmp(&j)),
        (ExactNumber::Float(x), ExactNumber::Float(y)) => x.partial_cmp(&y),
        (ExactNumber::Int(i), ExactNumber::Float(f)) => cmp_int_float(i, f),
        (ExactNumber::Float(f), ExactNumber::Int(i)) => cmp_int_float(i, f).map(Ordering::reverse),
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
        (Step::Key(k), Value::Object(map)) => match get_key(map, k) {
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

/// What a test makes of a selector that finds nothing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnMissing {
    /// No match (comparisons, membership, regexes, paths, presence).
    NoMatch,
    /// A failure: `!=` on nothing is unknown, not true or false.
    Fail,
}

#[allow(clippy::too_many_arguments)]
fn quantify<S: Sink>(
    facts: &Facts<'_>,
    operand: &Operand,
    quantifier: Quantifier,
    flatten: bool,
    on_missing: OnMissing,
    sink: &mut S,
    test: impl Fn(Leaf<'_>) -> Tri,
) -> Tri {
    let mut acc = Quantified::new(quantifier);
    let request = facts.request;
    let mut visit = |slot: Slot<'_>| {
        let result = match slot {
            Slot::Found(leaf) => Some(test(leaf)),
            Slot::Missing if on_missing == OnMissing::Fail => Some(Tri::Failed),
            Slot::Missing => None,
            Slot::TooDeep => Some(Tri::Failed),
        };
        if !S::ON {
            return acc.add(result);
        }
        // An observer sees every place the selector reaches, also after
        // the quantifier is decided; the result stays the first decision.
        match (slot, result) {
            (Slot::Found(Leaf::Json(v)), Some(t)) => sink.reached(Reached::Value(v, t)),
            (Slot::Missing, _) => sink.reached(Reached::Missing),
            (Slot::TooDeep, _) => sink.reached(Reached::TooDeep),
            _ => {}
        }
        if acc.decided.is_none() {
            let _ = acc.add(result);
        }
        ControlFlow::Continue(())
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
            let (Some(a), Value::Number(b)) = (leaf.as_number(), value) else {
                return Tri::Failed;
            };
            let Some(order) = compare_numbers(a, b) else {
                return Tri::Failed;
            };
            match op {
                CompareOp::Lt => order == Ordering::Less,
                CompareOp::Le => order != Ordering::Greater,
                CompareOp::Gt => order == Ordering::Greater,
                _ => order != Ordering::Less,
            }
            .into()
        }
    }
}

/// One predicate. The two that read no selector (an annotation, taint),
/// which the rules that apply to every call usually test, are answered
/// in line; the others in [`eval_selected`], a function of its own so
/// that these two do not pay for its frame.
#[inline(always)]
pub(crate) fn eval_pred<S: Sink>(pred: &Pred, facts: &Facts<'_>, sink: &mut S) -> Tri {
    match &pred.test {
        Test::Annotation(key) => facts.annotation(*key).into(),
        Test::Tainted { ignore, by } => tainted(ignore, by.as_deref(), facts),
        _ => eval_selected(pred, facts, sink),
    }
}

/// `tainted(...)`: unknown taint fails; else whether any server's output
/// in the context counts.
#[inline]
fn tainted(ignore: &[Box<str>], by: Option<&[Box<str>]>, facts: &Facts<'_>) -> Tri {
    let request = facts.request;
    if request.taint_unknown {
        return Tri::Failed;
    }
    request
        .taint
        .iter()
        .any(|t| crate::policy::condition::taint_counts(ignore, by, t, request.server))
        .into()
}

/// A predicate that selects values (arguments, assigns, the principal) or
/// calls the host.
#[inline(never)]
fn eval_selected<S: Sink>(pred: &Pred, facts: &Facts<'_>, sink: &mut S) -> Tri {
    let q = pred.quantifier;
    match &pred.test {
        // Answered in line by `eval_pred`; here too, so that every test
        // has one arm.
        Test::Annotation(key) => facts.annotation(*key).into(),
        Test::Tainted { ignore, by } => tainted(ignore, by.as_deref(), facts),
        Test::Host { predicate, .. } => {
            let Some(p) = predicate else {
                sink.host(HostCall::Unregistered);
                return Tri::Failed;
            };
            let outcome = catch_unwind(AssertUnwindSafe(|| p.call(facts.request)));
            if S::ON {
                sink.host(match &outcome {
                    Ok(Ok(b)) => HostCall::Returned(*b),
                    Ok(Err(e)) => HostCall::Failed(e),
                    Err(_) => HostCall::Panicked,
                });
            }
            match outcome {
                Ok(Ok(b)) => b.into(),
                Ok(Err(_)) | Err(_) => Tri::Failed,
            }
        }
        Test::Exists(operand) => {
            quantify(facts, operand, q, false, OnMissing::NoMatch, sink, |_| {
                Tri::True
            })
        }
        Test::Compare { operand, op, value } => {
            // A list compared with `==` to a list literal is one value; with
            // anything else, each element is compared.
            let flatten = !value.is_array();
            let on_missing = if *op == CompareOp::Ne {
                OnMissing::Fail
            } else {
                OnMissing::NoMatch
            };
            quantify(facts, operand, q, flatten, on_missing, sink, |leaf| {
                compare(leaf, *op, value)
            })
        }
        Test::In { operand, list } => {
            quantify(facts, operand, q, true, OnMissing::NoMatch, sink, |leaf| {
                list.iter().any(|v| leaf.equals(v)).into()
            })
        }
        Test::Matches { operand, regex } => {
            quantify(facts, operand, q, true, OnMissing::NoMatch, sink, |leaf| {
                // A deferred regex that cannot be compiled is unknown.
                leaf.as_str()
                    .and_then(|s| regex.check_match(s))
                    .map_or(Tri::Failed, Tri::from)
            })
        }
        Test::Inside { operand, root } => {
            // A `$CWD` root with no usable working folder: unknown.
            let Some(root) = root.resolve(facts.request.cwd) else {
                return Tri::Failed;
            };
            quantify(facts, operand, q, true, OnMissing::NoMatch, sink, |leaf| {
                leaf.as_str()
                    .is_some_and(|s| paths::inside(s, &root, facts.cwd(), facts.links))
                    .into()
            })
        }
        Test::Runs {
            operand,
            only,
            patterns,
        } => {
            // Where a match narrows access, the loose readings (a command
            // by its path's last segment, flags within a cluster) apply.
            let loose = q == Quantifier::Any;
            quantify(facts, operand, q, true, OnMissing::NoMatch, sink, |leaf| {
                leaf.as_str().map_or(Tri::Failed, |s| {
                    super::shell::runs(s, patterns, *only, loose)
                })
            })
        }
        Test::WritesInside { operand, root } => {
            let Some(root) = root.resolve(facts.request.cwd) else {
                return Tri::Failed;
            };
            quantify(facts, operand, q, true, OnMissing::NoMatch, sink, |leaf| {
                leaf.as_str().map_or(Tri::Failed, |s| {
                    super::shell::writes_inside(s, &root, facts.cwd(), facts.links)
                })
            })
        }
        Test::Escapes { operand, root } => {
            let Some(root) = root.resolve(facts.request.cwd) else {
                return Tri::Failed;
            };
            quantify(facts, operand, q, true, OnMissing::NoMatch, sink, |leaf| {
                let inside = |s| paths::inside(s, &root, facts.cwd(), facts.links);
                (!leaf.as_str().is_some_and(inside)).into()
            })
        }
    }
}
