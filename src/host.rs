//! Host predicates: named tests that the embedding program registers and
//! policies call as `host.NAME`.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::eval::Request;

/// A host predicate: true or false for a request, or an error (which fails
/// closed: the predicate counts as matching in deny and ask rules and as not
/// matching in allow rules). A panic is caught and treated as an error.
pub type HostPredicate = dyn Fn(&Request<'_>) -> Result<bool, String> + Send + Sync;

/// A registered predicate, shared by every policy that calls it.
#[derive(Clone)]
pub struct HostFn(pub Arc<HostPredicate>);

impl HostFn {
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
#[derive(Clone, Default)]
pub struct HostPredicates {
    predicates: HashMap<String, HostFn>,
}

impl HostPredicates {
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

    pub fn get(&self, name: &str) -> Option<&HostFn> {
        self.predicates.get(name)
    }

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
