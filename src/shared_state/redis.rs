//! Grants and taint in Redis, on the budgets' connection manager (it
//! connects on first use and reconnects by itself, so a replica recovers
//! when Redis is back).
//!
//! - a grant is one string key ([`super::grant_key`]) holding its versioned
//!   JSON, set with `SET ... PX` so that Redis drops it when its time is
//!   over; `list`, `revoke` and `clear` scan the grant keys (at most
//!   [`MAX_GRANTS`]);
//! - a taint is one set per session or principal ([`super::taint_key`]):
//!   `SADD` then `PEXPIRE` in one transaction, so a set only grows and a
//!   new result keeps it for its whole time again;
//! - a server's approved fingerprints are one hash
//!   ([`super::approved_key`]) that a Lua script reads, or writes with this
//!   listing when it does not exist, in one step: the first replica to list
//!   the server sets every replica's baseline. It never expires.
//!
//! Every command has [`COMMAND_TIMEOUT`] (the manager's own bound) and is
//! waited on for at most twice that; an error or a timeout is
//! [`StateUnavailable`], which the callers read fail closed.

use std::future::Future;
use std::time::Duration;

use std::collections::HashMap;

use redis::aio::ConnectionManager;
use redis::{FromRedisValue, Script};

use super::{
    decode_approved, decode_grant, decode_server, encode_approved, encode_grant, encode_server,
    TaintSets,
};
use crate::budget::COMMAND_TIMEOUT;
use crate::mcp::MAX_LIST_ITEMS;
use crate::pipeline::{
    ApprovedListings, Clock, Grant, GrantKey, Grants, StateFuture, StateUnavailable, SystemClock,
    MAX_GRANTS,
};

/// How many keys one `SCAN` step asks for.
const SCAN_COUNT: usize = 1_000;

/// Runs one command (or transaction) within twice [`COMMAND_TIMEOUT`].
async fn bounded<T, F>(what: &str, run: F) -> Result<T, StateUnavailable>
where
    F: Future<Output = redis::RedisResult<T>>,
{
    match tokio::time::timeout(COMMAND_TIMEOUT.saturating_mul(2), run).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(StateUnavailable(format!("Redis could not {what}: {e}"))),
        Err(_) => Err(StateUnavailable(format!(
            "Redis did not {what} within {} ms",
            COMMAND_TIMEOUT.saturating_mul(2).as_millis()
        ))),
    }
}

async fn query<T: FromRedisValue>(
    connection: &ConnectionManager,
    what: &str,
    command: redis::Cmd,
) -> Result<T, StateUnavailable> {
    let mut connection = connection.clone();
    bounded(
        what,
        async move { command.query_async(&mut connection).await },
    )
    .await
}

/// Every key that matches `pattern`, at most `bound` of them (a `SCAN`,
/// each step bounded).
async fn scan(
    connection: &ConnectionManager,
    pattern: &str,
    bound: usize,
) -> Result<Vec<String>, StateUnavailable> {
    let mut keys = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let mut command = redis::cmd("SCAN");
        command
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(SCAN_COUNT);
        let (next, found): (u64, Vec<String>) = query(connection, "scan", command).await?;
        keys.extend(found);
        if next == 0 || keys.len() >= bound {
            keys.truncate(bound);
            keys.sort();
            keys.dedup();
            return Ok(keys);
        }
        cursor = next;
    }
}

/// Grants in one Redis (see the module).
#[derive(Clone)]
pub(crate) struct RedisGrants {
    connection: ConnectionManager,
}

impl RedisGrants {
    /// Grants kept through `connection` (`budget::redis_connection`).
    pub(crate) fn new(connection: ConnectionManager) -> Self {
        RedisGrants { connection }
    }

    async fn record_now(&self, key: GrantKey, ttl: Duration) -> Result<(), StateUnavailable> {
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let expires = SystemClock.now().saturating_add(ttl);
        let mut command = redis::cmd("SET");
        command
            .arg(super::grant_key(&key))
            .arg(encode_grant(&key, expires))
            .arg("PX")
            .arg(millis);
        query::<()>(&self.connection, "record a grant", command).await
    }

    async fn is_live_now(&self, key: &GrantKey) -> Result<bool, StateUnavailable> {
        let mut command = redis::cmd("GET");
        command.arg(super::grant_key(key));
        let value: Option<String> = query(&self.connection, "read a grant", command).await?;
        // A value of another version or for another grant (a digest that
        // collided) is no grant: the call is asked about.
        Ok(value
            .as_deref()
            .and_then(decode_grant)
            .is_some_and(|(stored, _)| stored == *key))
    }

    async fn list_now(&self) -> Result<Vec<Grant>, StateUnavailable> {
        let keys = scan(&self.connection, &super::grant_pattern(None), MAX_GRANTS).await?;
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(SCAN_COUNT) {
            let mut command = redis::cmd("MGET");
            command.arg(chunk);
            let values: Vec<Option<String>> =
                query(&self.connection, "list grants", command).await?;
            out.extend(
                values
                    .iter()
                    .flatten()
                    .filter_map(|v| decode_grant(v))
                    .map(|(key, expires)| Grant { key, expires }),
            );
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    async fn delete(&self, pattern: &str) -> Result<usize, StateUnavailable> {
        let keys = scan(&self.connection, pattern, MAX_GRANTS).await?;
        let mut removed = 0;
        for chunk in keys.chunks(SCAN_COUNT) {
            let mut command = redis::cmd("DEL");
            command.arg(chunk);
            removed += query::<usize>(&self.connection, "revoke grants", command).await?;
        }
        Ok(removed)
    }
}

impl Grants for RedisGrants {
    fn record(&self, key: GrantKey, ttl: Duration) -> StateFuture<'_, ()> {
        Box::pin(self.record_now(key, ttl))
    }

    fn is_live<'a>(&'a self, key: &'a GrantKey) -> StateFuture<'a, bool> {
        Box::pin(self.is_live_now(key))
    }

    fn list(&self) -> StateFuture<'_, Vec<Grant>> {
        Box::pin(self.list_now())
    }

    fn revoke<'a>(&'a self, principal: Option<&'a str>) -> StateFuture<'a, usize> {
        Box::pin(async move { self.delete(&super::grant_pattern(Some(principal))).await })
    }

    fn clear(&self) -> StateFuture<'_, ()> {
        Box::pin(async move { self.delete(&super::grant_pattern(None)).await.map(|_| ()) })
    }
}

/// Taint sets in one Redis (see the module).
#[derive(Clone)]
pub(crate) struct RedisTaint {
    connection: ConnectionManager,
}

impl RedisTaint {
    /// Taint kept through `connection` (`budget::redis_connection`).
    pub(crate) fn new(connection: ConnectionManager) -> Self {
        RedisTaint { connection }
    }

    async fn add_now(
        &self,
        key: &str,
        servers: &[String],
        ttl: Duration,
    ) -> Result<(), StateUnavailable> {
        if servers.is_empty() {
            return Ok(());
        }
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let members: Vec<String> = servers.iter().map(|s| encode_server(s)).collect();
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("SADD")
            .arg(key)
            .arg(members)
            .ignore()
            .cmd("PEXPIRE")
            .arg(key)
            .arg(millis)
            .ignore();
        let mut connection = self.connection.clone();
        bounded("record taint", async move {
            pipe.query_async::<()>(&mut connection).await
        })
        .await
    }

    async fn read_now(&self, key: &str) -> Result<Vec<String>, StateUnavailable> {
        let mut command = redis::cmd("SMEMBERS");
        command.arg(key);
        let members: Vec<String> = query(&self.connection, "read taint", command).await?;
        members
            .iter()
            .map(|m| {
                decode_server(m).map(String::from).ok_or_else(|| {
                    StateUnavailable(format!("{key} holds a member of another version"))
                })
            })
            .collect()
    }
}

impl TaintSets for RedisTaint {
    fn add<'a>(
        &'a self,
        key: &'a str,
        servers: &'a [String],
        ttl: Duration,
    ) -> StateFuture<'a, ()> {
        Box::pin(self.add_now(key, servers, ttl))
    }

    fn read<'a>(&'a self, key: &'a str) -> StateFuture<'a, Vec<String>> {
        Box::pin(self.read_now(key))
    }
}

/// Reads the approved hash, or writes this listing into it when it does
/// not exist (the first writer wins). KEYS[1]: the hash; ARGV[1]: the most
/// fields it may hold (a bigger one is refused, not read); the rest: the
/// listing's fields and values.
const FIRST_WRITER_SCRIPT: &str = r"
local held = redis.call('HLEN', KEYS[1])
if held > tonumber(ARGV[1]) then
  return redis.error_reply('the approved hash holds more fields than a listing can')
end
if held == 0 then
  for i = 2, #ARGV, 2 do
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return redis.call('HGETALL', KEYS[1])
";

/// Approved fingerprints in one Redis (see the module).
#[derive(Clone)]
pub(crate) struct RedisApproved {
    connection: ConnectionManager,
    script: Script,
}

impl RedisApproved {
    /// Baselines kept through `connection` (`budget::redis_connection`).
    pub(crate) fn new(connection: ConnectionManager) -> Self {
        RedisApproved {
            connection,
            script: Script::new(FIRST_WRITER_SCRIPT),
        }
    }

    async fn first_writer_now(
        &self,
        server: &str,
        listing: &[(String, String)],
    ) -> Result<HashMap<String, String>, StateUnavailable> {
        let key = super::approved_key(server);
        let mut invocation = self.script.prepare_invoke();
        // The mark and a field for each tool a listing can hold.
        invocation.key(&key).arg(MAX_LIST_ITEMS + 1);
        for item in encode_approved(listing) {
            invocation.arg(item);
        }
        let mut connection = self.connection.clone();
        let flat: Vec<String> = bounded("read the approved fingerprints", async move {
            invocation.invoke_async(&mut connection).await
        })
        .await?;
        decode_approved(&key, &flat)
    }
}

impl ApprovedListings for RedisApproved {
    fn first_writer<'a>(
        &'a self,
        server: &'a str,
        listing: &'a [(String, String)],
    ) -> StateFuture<'a, HashMap<String, String>> {
        Box::pin(self.first_writer_now(server, listing))
    }
}
