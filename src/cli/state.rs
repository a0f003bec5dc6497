//! `--state URL`: where a gateway or `mcppol serve` keeps what replicas
//! share (budget counters; the gateway's grants and taint, and the approved
//! fingerprints of the gateway's and the proxy's servers, too). Without
//! it, this process's memory.

use std::sync::Arc;

use crate::shared_state::SharedState;
use crate::Budgets;

/// The budgets' store `--state` names (`redis://HOST:PORT/DB`), or memory
/// without it. Call inside the tokio runtime that will serve (the Redis
/// connection manager reconnects on it).
pub fn budgets(state: Option<&str>) -> Result<Arc<dyn Budgets>, String> {
    open(state).map(|(budgets, _)| budgets)
}

/// The budgets' store and, with `--state`, the grants and taint every
/// replica shares (`None`: each session keeps its own in memory), on one
/// connection. Call inside the tokio runtime that will serve.
pub fn open(state: Option<&str>) -> Result<(Arc<dyn Budgets>, Option<SharedState>), String> {
    let Some(url) = state else {
        return Ok((Arc::new(crate::MemoryBudgets::new()), None));
    };
    redis_state(url).map(|(budgets, shared)| (budgets, Some(shared)))
}

#[cfg(feature = "redis-state")]
fn redis_state(url: &str) -> Result<(Arc<dyn Budgets>, SharedState), String> {
    if !url.starts_with("redis://") {
        return Err(format!(
            "--state {url}: not a redis:// URL (give redis://HOST:PORT/DB, e.g. redis://127.0.0.1:6379/0)"
        ));
    }
    let connection = crate::budget::redis_connection(url)?;
    let shared = SharedState {
        grants: Arc::new(crate::shared_state::RedisGrants::new(connection.clone())),
        taint: Arc::new(crate::shared_state::RedisTaint::new(connection.clone())),
        approved: Arc::new(crate::shared_state::RedisApproved::new(connection.clone())),
    };
    Ok((
        Arc::new(crate::budget::RedisBudgets::new(connection)),
        shared,
    ))
}

#[cfg(not(feature = "redis-state"))]
fn redis_state(url: &str) -> Result<(Arc<dyn Budgets>, SharedState), String> {
    Err(format!(
        "--state {url}: this mcppol was built without the `redis-state` feature (build it with --features redis-state)"
    ))
}
