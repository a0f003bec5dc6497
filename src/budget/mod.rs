//! Budgets at run time: the counters behind `limit` rules.
//!
//! The pure engine ([`crate::Policy::decide`]) holds no state, so it never
//! counts: an enforcement point (the pipeline under the proxy and the
//! gateway, `mcppol serve`) asks a [`Budgets`] store about the budgets a
//! call matches, after the policy decided (`Stage`, below):
//!
//! - a call a deny rule (or anything before the rules) refused is never
//!   looked at: deny comes first;
//! - a call the policy would ask about, or that the pin or the default
//!   decides, is denied (`source: limit`, `reason: limit_exceeded`) when a
//!   matching budget is spent, and nothing is taken from it;
//! - a call whose allow is final (an allow rule; an ask a person or a grant
//!   settled to allow) takes one call from every matching budget, all or
//!   none, atomically: if any is spent, the call is denied instead.
//!
//! A store that cannot count (full, or unreachable) answers
//! [`Room::Unavailable`](crate::budget::Room::Unavailable), which counts as spent: a budget never lets a call
//! through because its state was missing.
//!
//! Windows are fixed: a budget of N per hour holds N allowed calls from
//! each full hour (since the Unix epoch, UTC) to the next. A window's
//! counter is keyed by its start, so counting needs no clock agreement
//! beyond the window's own boundary.

mod memory;
#[cfg(feature = "redis-state")]
mod redis_store;

use std::future::Future;
use std::pin::Pin;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use smol_str::SmolStr;

use crate::model::{Decision, Reason, Source, Verdict};
use crate::policy::{BudgetScope, Limit, Policy};

pub use memory::{MemoryBudgets, MAX_COUNTERS};
#[cfg(feature = "redis-state")]
pub use redis_store::{connection as redis_connection, RedisBudgets, COMMAND_TIMEOUT, KEY_PREFIX};

/// A boxed future a [`Budgets`] store answers with (a shared store talks
/// to another process).
pub type BudgetFuture<'a> = Pin<Box<dyn Future<Output = Room> + Send + 'a>>;

/// One call counted against one window of one budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    /// The counter: the policy, the budget's id, the window and whom it
    /// counts for (`budget:POLICY:ID:SECONDS:START:WHO`). A shared store
    /// puts its own namespace before it.
    pub key: String,
    /// How many calls the window holds.
    pub count: u64,
    /// When the window starts, in seconds since the Unix epoch.
    pub start: u64,
    /// When the window ends, in seconds since the Unix epoch: the counter
    /// may be dropped then.
    pub ends: u64,
}

/// A store's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    /// Every budget had room (and, for [`Budgets::take`], one call was
    /// taken from each).
    Available,
    /// The budget at this position of the charges is spent; nothing was
    /// taken.
    Spent(usize),
    /// The store could not count (full, unreachable, timed out): counted
    /// as spent.
    Unavailable,
}

/// Where the counters of budgets live. The in-memory [`MemoryBudgets`] is
/// the default; a fleet keeps them in a shared store behind this trait.
///
/// Both methods see every charge of one call at once, so that a call is
/// counted against all its budgets or none.
pub trait Budgets: std::fmt::Debug + Send + Sync + 'static {
    /// Takes one call from every charge if each has room, atomically (no
    /// other take can come between the test and the count); else takes
    /// nothing.
    fn take<'a>(&'a self, charges: &'a [Charge]) -> BudgetFuture<'a>;

    /// Whether every charge has room, taking nothing.
    fn check<'a>(&'a self, charges: &'a [Charge]) -> BudgetFuture<'a>;
}

/// Who a call is made for: what `per principal` and `per session` count.
#[derive(Debug, Clone, Copy, Default)]
pub struct Caller<'a> {
    /// The call's principal.
    pub principal: Option<&'a str>,
    /// The call's session (the gateway's `Mcp-Session-Id`).
    pub session: Option<&'a str>,
}

/// The budgets one call counts against, ready to be counted.
#[derive(Debug, Clone, Default)]
pub struct Charges {
    /// The charges, in the order of the policy's budgets.
    pub charges: Vec<Charge>,
    /// For each charge, the budget's id and 1-based line.
    ids: Vec<(SmolStr, u32)>,
    /// The policy's name.
    policy: Option<SmolStr>,
}

impl Charges {
    /// The budgets of `policy` a tool call to `server`/`tool` matches, with
    /// their windows as of `now` (seconds since the Unix epoch).
    pub fn of(policy: &Policy, server: &str, tool: &str, caller: Caller<'_>, now: u64) -> Self {
        let limits = policy.limits_for(server, tool);
        if limits.is_empty() {
            // Every call of a policy without budgets passes here: nothing
            // to name or allocate.
            return Charges {
                charges: Vec::new(),
                ids: Vec::new(),
                policy: None,
            };
        }
        let mut out = Charges {
            charges: Vec::with_capacity(limits.len()),
            ids: Vec::with_capacity(limits.len()),
            policy: Some(SmolStr::new(policy.name())),
        };
        for limit in limits {
            out.charges.push(charge(policy.name(), limit, caller, now));
            out.ids.push((limit.id.clone(), limit.line));
        }
        out
    }

    /// Whether the call matches no budget.
    pub fn is_empty(&self) -> bool {
        self.charges.is_empty()
    }

    /// The decision for a call a store refused: `deny`, `source: limit`,
    /// `reason: limit_exceeded`, the spent budget's id (the first matching
    /// one when the store could not say).
    pub fn refusal(&self, room: Room) -> Option<Decision> {
        let at = match room {
            Room::Available => return None,
            Room::Spent(i) => i,
            Room::Unavailable => 0,
        };
        let (id, line) = self.ids.get(at).or(self.ids.first())?;
        let mut d = Decision::new(Verdict::Deny, Source::Limit, Reason::LimitExceeded);
        d.rule_id = Some(id.clone());
        d.line = Some(*line);
        d.policy.clone_from(&self.policy);
        Some(d)
    }

    /// Asks `budgets` about a call the policy decided `decision`, at the
    /// stage the call is in (see the module): the decision to act on.
    pub async fn apply(&self, budgets: &dyn Budgets, decision: Decision, stage: Stage) -> Decision {
        if self.is_empty() || !counts(&decision) {
            return decision;
        }
        let room = match stage {
            Stage::Final => budgets.take(&self.charges).await,
            Stage::Pending => budgets.check(&self.charges).await,
        };
        if room == Room::Unavailable {
            tracing::warn!(target: "mcppol::budget", "the budgets' store could not count: the call is denied");
        }
        self.refusal(room).unwrap_or(decision)
    }
}

/// Where a call stands when its budgets are asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The allow is final: take one call from every budget.
    Final,
    /// Not allowed yet (to be asked about) or refused by a later stage than
    /// deny: only whether a budget is spent.
    Pending,
}

/// Whether budgets apply to a decision: not to a refusal made before or
/// by the deny rules, nor to what the policy does not govern.
pub fn counts(decision: &Decision) -> bool {
    matches!(
        decision.source,
        Source::Pin | Source::Ask | Source::Allow | Source::Default
    ) && !matches!(decision.reason, Reason::OutOfScope | Reason::NoPolicy)
}

/// The stage of a decision as the policy gave it: an allow is final, an
/// ask or a later refusal is pending.
pub fn stage_of(decision: &Decision) -> Stage {
    if decision.decision == Verdict::Allow {
        Stage::Final
    } else {
        Stage::Pending
    }
}

/// Seconds since the Unix epoch, by the system's clock.
pub fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// Waits for a store's answer on this thread (for a caller that is not
/// async: a hook run on `mcppol serve`'s blocking threads). The thread
/// sleeps until the store's future wakes it.
pub fn wait(future: BudgetFuture<'_>) -> Room {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = future;
    loop {
        match future.as_mut().poll(&mut context) {
            Poll::Ready(room) => return room,
            Poll::Pending => std::thread::park(),
        }
    }
}

/// One budget's charge for a call.
fn charge(policy: &str, limit: &Limit, caller: Caller<'_>, now: u64) -> Charge {
    let window = limit.window.max(1);
    let start = now - now % window;
    let who = match limit.scope {
        BudgetScope::Everyone => "all".to_string(),
        BudgetScope::Principal => who("p", caller.principal),
        BudgetScope::Session => who("s", caller.session),
    };
    Charge {
        key: format!("budget:{policy}:{}:{window}:{start}:{who}", limit.id),
        count: limit.count,
        start,
        ends: start.saturating_add(window),
    }
}

/// `p:` and the first 16 bytes of the name's SHA-256 in hex (any text, of
/// any length, makes a short key of safe characters), or `p-` for calls
/// made without one (which share one counter).
fn who(tag: &str, name: Option<&str>) -> String {
    match name {
        None => format!("{tag}-"),
        Some(name) => {
            let digest = Sha256::digest(name.as_bytes());
            let mut out = format!("{tag}:");
            for b in digest.iter().take(16) {
                out.push_str(&format!("{b:02x}"));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests;
