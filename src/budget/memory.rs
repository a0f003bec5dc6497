//! Budget counters in this process's memory: exact under any number of
//! concurrent calls (one lock over the test and the count).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use super::{BudgetFuture, Budgets, Charge, Room};

/// The most counters [`MemoryBudgets`] keeps. Past it, counters of ended
/// windows are dropped; if all are live, the store cannot count, which
/// counts as spent.
pub const MAX_COUNTERS: usize = 100_000;

/// Budget counters in memory: the default store of a pipeline, the gateway
/// and `mcppol serve` without `--state`.
#[derive(Debug, Default)]
pub struct MemoryBudgets {
    /// Each counter: the calls taken and when its window ends.
    counters: Mutex<HashMap<String, (u64, u64)>>,
}

impl MemoryBudgets {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, (u64, u64)>> {
        self.counters.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many calls a counter has taken in its window (for tests and
    /// status).
    pub fn taken(&self, key: &str) -> u64 {
        self.lock().get(key).map_or(0, |(n, _)| *n)
    }

    fn room(counters: &HashMap<String, (u64, u64)>, charges: &[Charge]) -> Room {
        for (i, c) in charges.iter().enumerate() {
            let taken = counters.get(&c.key).map_or(0, |(n, _)| *n);
            if taken >= c.count {
                return Room::Spent(i);
            }
        }
        Room::Available
    }

    /// [`Budgets::check`] without a future: the store never waits.
    pub fn check_now(&self, charges: &[Charge]) -> Room {
        Self::room(&self.lock(), charges)
    }

    /// [`Budgets::take`] without a future: the store never waits.
    pub fn take_now(&self, charges: &[Charge]) -> Room {
        let mut counters = self.lock();
        let room = Self::room(&counters, charges);
        if room != Room::Available {
            return room;
        }
        let new = charges
            .iter()
            .filter(|c| !counters.contains_key(&c.key))
            .count();
        if counters.len() + new > MAX_COUNTERS {
            // Every window being counted has started, so a counter whose
            // window ended by the latest start is over.
            let now = charges.iter().map(|c| c.start).max().unwrap_or(0);
            counters.retain(|_, (_, ends)| *ends > now);
            if counters.len() + new > MAX_COUNTERS {
                tracing::warn!(target: "mcppol::budget", "budget store full: the call is not counted, and denied");
                return Room::Unavailable;
            }
        }
        for c in charges {
            let entry = counters.entry(c.key.clone()).or_insert((0, c.ends));
            entry.0 += 1;
        }
        Room::Available
    }
}

impl Budgets for MemoryBudgets {
    fn take<'a>(&'a self, charges: &'a [Charge]) -> BudgetFuture<'a> {
        let room = self.take_now(charges);
        Box::pin(async move { room })
    }

    fn check<'a>(&'a self, charges: &'a [Charge]) -> BudgetFuture<'a> {
        let room = Self::room(&self.lock(), charges);
        Box::pin(async move { room })
    }
}
