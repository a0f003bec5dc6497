//! Approval of `ask` decisions and the grants `allow always` records.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::types::HookCtx;
use crate::mcp::BoxFuture;
use crate::Decision;

/// The default time an approver has to answer.
pub const DEFAULT_ASK_TIMEOUT: Duration = Duration::from_secs(60);
/// The default life of a grant.
pub const DEFAULT_GRANT_TTL: Duration = Duration::from_secs(24 * 3600);
/// The most grants [`MemoryGrants`] keeps; past it a new grant is not
/// recorded (which only means asking again).
pub const MAX_GRANTS: usize = 100_000;

/// What the approver sees: the exact call that will be sent.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The server's id.
    pub server: String,
    /// The tool's name as the server lists it.
    pub tool: String,
    /// The final arguments, as they will be sent.
    pub arguments: Value,
    /// Their digest (`sha256:...` of the canonical JSON).
    pub digest: String,
    /// The tool's current fingerprint.
    pub fingerprint: Option<String>,
    /// The decision that asks (source `ask`, `pin` or `default`).
    pub decision: Decision,
    /// Who the call is for and the rest of its context (`hook_id` is
    /// empty).
    pub ctx: HookCtx,
    /// The call's handle, when its caller gave one: which call of many is
    /// asking (the gateway puts the ask to that call's host request).
    // The gateway's alone (feature `cli`).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) handle: Option<crate::mcp::CallHandle>,
}

/// The approver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Send this call.
    AllowOnce,
    /// Send it and record a grant for this principal, tool and definition.
    AllowAlways,
    /// Do not send it (`ask_denied`).
    Deny(String),
    /// Do not send it, and tell the agent loop to stop (`ask_halt`).
    DenyAndHalt(String),
}

/// A person (or a program standing in for one) that settles asks. It runs
/// in its own task under a deadline (default 60 s); an error, a panic or
/// the deadline is a deny with `ask_failed`. It cannot change the call.
///
/// Any `Fn(ApprovalRequest) -> impl Future<Output = Result<Approval, String>>`
/// is an approver:
///
/// ```
/// use mcppol::pipeline::{Approval, ApprovalRequest, Approver};
///
/// fn approver() -> impl Approver {
///     |request: ApprovalRequest| async move {
///         // A real approver asks a person, showing the exact arguments.
///         if request.tool.starts_with("write_") && request.ctx.principal.is_some() {
///             Ok(Approval::AllowOnce)
///         } else {
///             Ok(Approval::Deny("not approved".to_string()))
///         }
///     }
/// }
/// # let _ = approver();
/// ```
pub trait Approver: Send + Sync + 'static {
    /// Asks about one call. `Err` (with a message for the caller, never
    /// logged) is a failure: the call is denied with `ask_failed`.
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, Result<Approval, String>>;
}

impl<F, R> Approver for F
where
    F: Fn(ApprovalRequest) -> R + Send + Sync + 'static,
    R: std::future::Future<Output = Result<Approval, String>> + Send + 'static,
{
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, Result<Approval, String>> {
        Box::pin(self(request))
    }
}

/// Time for grants, injectable so tests move it instead of sleeping.
pub trait Clock: Send + Sync + 'static {
    /// Time since the Unix epoch.
    fn now(&self) -> Duration;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct ManualClock(Mutex<Duration>);

impl ManualClock {
    /// A clock standing at `start` (time since the Unix epoch).
    pub fn new(start: Duration) -> Self {
        ManualClock(Mutex::new(start))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *now = now.saturating_add(by);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What a grant is for. Without a principal, grants are per pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GrantKey {
    /// Whom the grant is for (`None`: calls made without a principal).
    pub principal: Option<String>,
    /// The server's id.
    pub server: String,
    /// The tool's name.
    pub tool: String,
    /// The tool definition's fingerprint when it was granted: a changed
    /// definition does not match, so it is asked again.
    pub fingerprint: String,
}

/// A live grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// What it grants.
    pub key: GrantKey,
    /// When it expires (since the Unix epoch, by the store's clock).
    pub expires: Duration,
}

/// A shared store (Redis) that could not be read or written in time. A
/// grant that cannot be read counts as no grant (the call is asked about
/// again); a grant that cannot be written is asked about again next time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateUnavailable(pub String);

impl std::fmt::Display for StateUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the shared state is unavailable: {}", self.0)
    }
}

impl std::error::Error for StateUnavailable {}

/// What a [`Grants`] store answers: a boxed future (a shared store talks
/// to another process), `Err` when the store could not answer.
pub type StateFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, StateUnavailable>> + Send + 'a>>;

/// Where grants live. The in-memory [`MemoryGrants`] is the default; a
/// fleet keeps them in a shared store (`--state redis://`) behind this
/// trait. Every method may fail ([`StateUnavailable`]); the pipeline reads
/// a failed [`Grants::is_live`] as no grant, never as one.
pub trait Grants: Send + Sync + 'static {
    /// Records a grant for `ttl`.
    fn record(&self, key: GrantKey, ttl: Duration) -> StateFuture<'_, ()>;
    /// Whether a live grant matches exactly.
    fn is_live<'a>(&'a self, key: &'a GrantKey) -> StateFuture<'a, bool>;
    /// Every live grant.
    fn list(&self) -> StateFuture<'_, Vec<Grant>>;
    /// Revokes every grant of one principal (`None`: the grants made
    /// without one); returns how many.
    fn revoke<'a>(&'a self, principal: Option<&'a str>) -> StateFuture<'a, usize>;
    /// Revokes every grant.
    fn clear(&self) -> StateFuture<'_, ()>;
}

/// Grants in memory, with an injectable clock.
pub struct MemoryGrants {
    clock: Arc<dyn Clock>,
    grants: Mutex<HashMap<GrantKey, Duration>>,
}

impl std::fmt::Debug for MemoryGrants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryGrants").finish_non_exhaustive()
    }
}

impl Default for MemoryGrants {
    fn default() -> Self {
        MemoryGrants::new(Arc::new(SystemClock))
    }
}

impl MemoryGrants {
    /// An empty store reading time from `clock` (a [`ManualClock`] in
    /// tests; [`MemoryGrants::default`] uses the [`SystemClock`]). It keeps
    /// at most [`MAX_GRANTS`] grants.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        MemoryGrants {
            clock,
            grants: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<GrantKey, Duration>> {
        self.grants.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl MemoryGrants {
    fn record_now(&self, key: GrantKey, ttl: Duration) {
        let now = self.clock.now();
        let mut g = self.lock();
        if g.len() >= MAX_GRANTS {
            g.retain(|_, exp| *exp > now);
            if g.len() >= MAX_GRANTS && !g.contains_key(&key) {
                tracing::warn!(target: "mcppol::grants", "grant store full: the grant is not recorded");
                return;
            }
        }
        g.insert(key, now.saturating_add(ttl));
    }

    fn is_live_now(&self, key: &GrantKey) -> bool {
        let now = self.clock.now();
        self.lock().get(key).is_some_and(|exp| *exp > now)
    }

    fn list_now(&self) -> Vec<Grant> {
        let now = self.clock.now();
        let mut out: Vec<Grant> = self
            .lock()
            .iter()
            .filter(|(_, exp)| **exp > now)
            .map(|(k, exp)| Grant {
                key: k.clone(),
                expires: *exp,
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }

    fn revoke_now(&self, principal: Option<&str>) -> usize {
        let mut g = self.lock();
        let before = g.len();
        g.retain(|k, _| k.principal.as_deref() != principal);
        before - g.len()
    }
}

// Memory always answers: each future is ready at once.
impl Grants for MemoryGrants {
    fn record(&self, key: GrantKey, ttl: Duration) -> StateFuture<'_, ()> {
        self.record_now(key, ttl);
        Box::pin(std::future::ready(Ok(())))
    }

    fn is_live<'a>(&'a self, key: &'a GrantKey) -> StateFuture<'a, bool> {
        Box::pin(std::future::ready(Ok(self.is_live_now(key))))
    }

    fn list(&self) -> StateFuture<'_, Vec<Grant>> {
        Box::pin(std::future::ready(Ok(self.list_now())))
    }

    fn revoke<'a>(&'a self, principal: Option<&'a str>) -> StateFuture<'a, usize> {
        Box::pin(std::future::ready(Ok(self.revoke_now(principal))))
    }

    fn clear(&self) -> StateFuture<'_, ()> {
        self.lock().clear();
        Box::pin(std::future::ready(Ok(())))
    }
}

/// Whether a live grant matches `key`, read fail closed: a store that
/// cannot answer counts as no grant (the call is asked about again), with
/// a warning.
pub(crate) async fn is_live_or_not(grants: &dyn Grants, key: &GrantKey) -> bool {
    match grants.is_live(key).await {
        Ok(live) => live,
        Err(e) => {
            tracing::warn!(target: "mcppol::grants", error = %e, "a grant could not be read: the call is asked about again");
            false
        }
    }
}

/// Records a grant; a store that cannot take it is logged (the next call
/// is asked about again).
pub(crate) async fn record_or_warn(grants: &dyn Grants, key: GrantKey, ttl: Duration) {
    if let Err(e) = grants.record(key, ttl).await {
        tracing::warn!(target: "mcppol::grants", error = %e, "a grant could not be recorded: the next call is asked about again");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: Option<&str>, fp: &str) -> GrantKey {
        GrantKey {
            principal: p.map(String::from),
            server: "gh".into(),
            tool: "merge".into(),
            fingerprint: fp.into(),
        }
    }

    async fn now<T>(f: StateFuture<'_, T>) -> T {
        f.await
            .unwrap_or_else(|e| panic!("memory grants failed: {e}"))
    }

    #[tokio::test]
    async fn grants_expire_and_are_per_principal_and_definition() {
        let clock = Arc::new(ManualClock::new(Duration::from_secs(1000)));
        let g = MemoryGrants::new(clock.clone());
        now(g.record(key(Some("ann"), "sha256:a"), Duration::from_secs(60))).await;
        now(g.record(key(None, "sha256:a"), Duration::from_secs(600))).await;
        assert!(now(g.is_live(&key(Some("ann"), "sha256:a"))).await);
        assert!(!now(g.is_live(&key(Some("bob"), "sha256:a"))).await);
        assert!(!now(g.is_live(&key(Some("ann"), "sha256:b"))).await);
        assert_eq!(now(g.list()).await.len(), 2);
        clock.advance(Duration::from_secs(60));
        assert!(!now(g.is_live(&key(Some("ann"), "sha256:a"))).await);
        assert_eq!(now(g.list()).await.len(), 1);
        assert_eq!(now(g.revoke(None)).await, 1);
        assert!(now(g.list()).await.is_empty());
        now(g.record(key(Some("ann"), "sha256:a"), Duration::from_secs(60))).await;
        now(g.clear()).await;
        assert!(now(g.list()).await.is_empty());
    }
}
