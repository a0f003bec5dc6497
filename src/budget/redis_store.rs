//! Budget counters in Redis (`--state redis://`): one count shared by every
//! replica of a gateway or `mcppol serve` that names the same Redis.
//!
//! Each counter is one integer key, `mcppol:v1:budget:POLICY:ID:SECONDS:
//! START:WHO` (the `v1` is the layout's version: a later layout uses other
//! keys, never reads these), that expires when its window ends. One Lua
//! script reads every counter of a call and increments all or none, so no
//! other replica's call comes between the test and the count (Redis runs a
//! script alone).
//!
//! Every command is bounded ([`COMMAND_TIMEOUT`]); an error or a timeout is
//! [`Room::Unavailable`](crate::budget::Room::Unavailable), which counts as spent: with Redis down, no call a
//! budget matches is allowed. The connection manager reconnects by itself,
//! so counting resumes when Redis is back.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, Script};

use super::{BudgetFuture, Budgets, Charge, Room};

/// The namespace of every key mcppol keeps in Redis, with the layout's
/// version.
pub const KEY_PREFIX: &str = "mcppol:v1:";

/// How long one Redis command may take before the call counts as spent.
pub const COMMAND_TIMEOUT: Duration = Duration::from_millis(250);

/// The most charges one call may send in one script (a policy's budgets
/// matching one call; more than this is refused as spent).
const MAX_CHARGES: usize = 256;

/// Checks every counter against its count, then (when ARGV[1] is `take`)
/// increments every one and sets it to expire at its window's end. Returns
/// 0, or the 1-based position of the first spent counter (nothing taken).
const CHARGE_SCRIPT: &str = r"
for i, key in ipairs(KEYS) do
  local taken = tonumber(redis.call('GET', key) or '0') or 0
  if taken >= tonumber(ARGV[2 * i]) then
    return i
  end
end
if ARGV[1] == 'take' then
  for i, key in ipairs(KEYS) do
    redis.call('INCR', key)
    redis.call('EXPIREAT', key, ARGV[2 * i + 1])
  end
end
return 0
";

/// Budget counters in one Redis (see the module).
#[derive(Clone)]
pub struct RedisBudgets {
    connection: ConnectionManager,
    script: Script,
}

impl std::fmt::Debug for RedisBudgets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBudgets").finish_non_exhaustive()
    }
}

/// A connection manager for `url` (`redis://HOST:PORT/DB`) with bounded
/// timeouts, that connects on first use and reconnects by itself. Must be
/// called inside a tokio runtime.
pub fn connection(url: &str) -> Result<ConnectionManager, String> {
    let client = Client::open(url).map_err(|e| {
        format!("--state {url}: {e} (give redis://HOST:PORT/DB, e.g. redis://127.0.0.1:6379/0)")
    })?;
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(COMMAND_TIMEOUT))
        .set_response_timeout(Some(COMMAND_TIMEOUT))
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_millis(500));
    ConnectionManager::new_lazy_with_config(client, config)
        .map_err(|e| format!("--state {url}: {e}"))
}

impl RedisBudgets {
    /// Counters kept through `connection` (see [`connection`]).
    pub fn new(connection: ConnectionManager) -> Self {
        Self {
            connection,
            script: Script::new(CHARGE_SCRIPT),
        }
    }

    async fn run(&self, mode: &str, charges: &[Charge]) -> Room {
        if charges.is_empty() {
            return Room::Available;
        }
        if charges.len() > MAX_CHARGES {
            return Room::Unavailable;
        }
        let mut invocation = self.script.prepare_invoke();
        invocation.arg(mode);
        for c in charges {
            // A little past the window's end, so that a replica whose
            // clock is behind still finds the counter while it counts.
            invocation
                .key(format!("{KEY_PREFIX}{}", c.key))
                .arg(c.count)
                .arg(c.ends.saturating_add(60));
        }
        let mut connection = self.connection.clone();
        let answer = tokio::time::timeout(
            COMMAND_TIMEOUT.saturating_mul(2),
            invocation.invoke_async::<u64>(&mut connection),
        )
        .await;
        match answer {
            Ok(Ok(0)) => Room::Available,
            Ok(Ok(at)) => usize::try_from(at - 1)
                .ok()
                .filter(|i| *i < charges.len())
                .map_or(Room::Unavailable, Room::Spent),
            Ok(Err(e)) => {
                tracing::warn!(target: "mcppol::budget", "Redis could not count ({e}): counted as spent");
                Room::Unavailable
            }
            Err(_) => {
                tracing::warn!(target: "mcppol::budget", "Redis did not answer in time: counted as spent");
                Room::Unavailable
            }
        }
    }
}

impl Budgets for RedisBudgets {
    fn take<'a>(&'a self, charges: &'a [Charge]) -> BudgetFuture<'a> {
        Box::pin(self.run("take", charges))
    }

    fn check<'a>(&'a self, charges: &'a [Charge]) -> BudgetFuture<'a> {
        Box::pin(self.run("check", charges))
    }
}
