//! Host predicates: named tests that the embedding program registers and
//! policies call as `host.NAME`. A compiled policy holds the registered
//! function and the evaluator calls it with the request, so its type is
//! part of the vocabulary both share.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::Request;

/// A host predicate: true or false for a request, or an error (which fails
/// closed: the predicate counts as matching in deny and ask rules and as not
/// matching in allow rules). A panic is caught and treated as an error.
pub type HostPredicate = dyn Fn(&Request<'_>) -> Result<bool, String> + Send + Sync;

/// A registered predicate, shared by every policy that calls it.
#[derive(Clone)]
pub struct HostFn(pub Arc<HostPredicate>);

impl HostFn {
    /// Calls the predicate.
    pub fn call(&self, request: &Request<'_>) -> Result<bool, String> {
        (self.0)(request)
    }
}

impl fmt::Debug for HostFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HostFn(..)")
    }
}

/// The predicates a host registers before loading policies.
///
/// ```
/// use mcppol::{HostPredicates, LoadOptions, PolicySet, Request, Verdict};
///
/// let mut host = HostPredicates::new();
/// host.register("within_budget", |request| Ok(request.server == "search"));
/// host.register("quota_service", |_| Err("quota service unreachable".to_string()));
/// let options = LoadOptions { host: Some(host) };
///
/// let set = PolicySet::from_text_with("p.mcppol", r#"
///     policy p {
///       deny  "*/bulk_*" when host.quota_service
///       allow "search/query" when host.within_budget
///     }
/// "#, &options).map_err(|e| e.render(false))?;
/// let p = set.get("p").ok_or("no policy")?;
/// assert_eq!(p.decide(&Request::tool("search", "query")).decision, Verdict::Allow);
/// // A predicate that errors fails closed: it matches the deny.
/// let d = p.decide(&Request::tool("search", "bulk_export"));
/// assert_eq!((d.decision, d.reason.as_str()), (Verdict::Deny, "predicate_failed"));
///
/// // With a registry, naming an unregistered predicate is a load error.
/// let err = PolicySet::from_text_with("q.mcppol", "policy q { allow * when host.nope }", &options)
///     .err().ok_or("should not load")?;
/// assert_eq!(err.diagnostics[0].code, "mcppol::compile::unknown_host_predicate");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct HostPredicates {
    predicates: HashMap<String, HostFn>,
}

impl HostPredicates {
    /// No predicate registered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `host.NAME`.
    pub fn register<F>(&mut self, name: impl Into<String>, predicate: F) -> &mut Self
    where
        F: Fn(&Request<'_>) -> Result<bool, String> + Send + Sync + 'static,
    {
        self.predicates
            .insert(name.into(), HostFn(Arc::new(predicate)));
        self
    }

    pub(crate) fn get(&self, name: &str) -> Option<&HostFn> {
        self.predicates.get(name)
    }

    /// The registered names, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.predicates.keys().map(String::as_str)
    }
}

impl fmt::Debug for HostPredicates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.names().collect();
        names.sort_unstable();
        f.debug_struct("HostPredicates")
            .field("names", &names)
            .finish()
    }
}
