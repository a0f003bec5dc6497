//! `--state URL`: where a gateway or `mcppol serve` keeps what replicas
//! share (budget counters). Without it, this process's memory.

use std::sync::Arc;

use crate::Budgets;

/// The budgets' store `--state` names (`redis://HOST:PORT/DB`), or memory
/// without it. Call inside the tokio runtime that will serve (the Redis
/// connection manager reconnects on it).
pub fn budgets(state: Option<&str>) -> Result<Arc<dyn Budgets>, String> {
    let Some(url) = state else {
        return Ok(Arc::new(crate::MemoryBudgets::new()));
    };
    redis_budgets(url)
}

#[cfg(feature = "redis-state")]
fn redis_budgets(url: &str) -> Result<Arc<dyn Budgets>, String> {
    if !url.starts_with("redis://") {
        return Err(format!(
            "--state {url}: not a redis:// URL (give redis://HOST:PORT/DB, e.g. redis://127.0.0.1:6379/0)"
        ));
    }
    let connection = crate::budget::redis_connection(url)?;
    Ok(Arc::new(crate::budget::RedisBudgets::new(connection)))
}

#[cfg(not(feature = "redis-state"))]
fn redis_budgets(url: &str) -> Result<Arc<dyn Budgets>, String> {
    Err(format!(
        "--state {url}: this mcppol was built without the `redis-state` feature (build it with --features redis-state)"
    ))
}
