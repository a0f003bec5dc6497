//! The server's tools as the pipeline knows them: the cached listing
//! (listed again on `list_changed`, one listing at a time), the approved
//! fingerprints it is held to, and the listing a model is shown.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError};

use serde_json::Value;
use tokio::sync::broadcast::error::TryRecvError;

use super::approval::GrantKey;
use super::error::CallError;
use super::hooks::{ctx_for, emit, run_task, HookFn, Listed};
use super::schema::{self, SchemaState};
use super::types::CallOptions;
use super::{Approved, ApprovedTool, Baseline, Catalog, Pipeline, StateFuture, ToolEntry};
use crate::fingerprint::ToolApproval;

/// A first-listing baseline replicas share (`--state redis://`,
/// `shared_state`): the first listing any replica stored is the baseline
/// of every one, so a definition changed before a replica first listed it
/// is changed there too, not approved as its own first listing.
pub(crate) trait ApprovedListings: Send + Sync + 'static {
    /// The server's approved fingerprints, by tool name: those already
    /// stored, else `listing` (name, fingerprint), stored now in one step
    /// (the first writer wins). `Err` when the store cannot be read or
    /// holds another version: nothing is approved from this listing.
    fn first_writer<'a>(
        &'a self,
        server: &'a str,
        listing: &'a [(String, String)],
    ) -> StateFuture<'a, HashMap<String, String>>;
}

impl Pipeline {
    /// Whether the server said its tools changed since the last look.
    fn tools_changed(&self) -> bool {
        let mut rx = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        let mut changed = false;
        loop {
            match rx.try_recv() {
                Ok(n) => changed |= n.method == "notifications/tools/list_changed",
                Err(TryRecvError::Lagged(_)) => changed = true,
                Err(_) => return changed,
            }
        }
    }

    pub(super) async fn cached_catalog(&self) -> Result<Arc<Catalog>, CallError> {
        let changed = self.tools_changed();
        if !changed {
            let cached = self
                .catalog
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(c) = cached {
                if self.approved_listings.is_some() && !self.has_baseline() {
                    // The shared baseline could not be read at the listing:
                    // read it again now (calls wait on no new listing).
                    let _one_at_a_time = self.listing.lock().await;
                    self.settle_baseline(&c).await;
                }
                return Ok(c);
            }
        }
        self.refresh_catalog().await
    }

    /// Lists the server's tools again (every page) and caches them. A tool
    /// whose definition changed since the last listing emits a
    /// `definition_changed` event.
    /// Returns how many tools the server listed.
    pub async fn refresh_tools(&self) -> Result<usize, CallError> {
        Ok(self.refresh_catalog().await?.order.len())
    }

    pub(crate) async fn refresh_catalog(&self) -> Result<Arc<Catalog>, CallError> {
        // One listing at a time: two read side by side could be recorded
        // in the other order, and a changed definition answered second
        // become the approved first listing (a rug pull let through).
        let _one_at_a_time = self.listing.lock().await;
        // What the server said before this listing is answered by it:
        // whatever the caller asks (a listing, a call), the queue of its
        // notifications is drained here.
        let _ = self.tools_changed();
        let tools = self.transport.list_all_tools().await?;
        let previous = self
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut catalog = Catalog::default();
        for def in tools {
            let Some(name) = def.get("name").and_then(Value::as_str).map(String::from) else {
                tracing::warn!(target: "mcppol::pipeline", server = %self.server, "a listed tool without a name was left out");
                continue;
            };
            if let Err(why) = crate::limits::check_json(
                &def,
                crate::limits::MAX_TOOL_DEFINITION_BYTES,
                usize::MAX,
            ) {
                tracing::warn!(target: "mcppol::pipeline", server = %self.server, tool = %name, why, "a tool whose definition is too large was left out");
                continue;
            }
            if catalog.tools.contains_key(&name) {
                tracing::warn!(target: "mcppol::pipeline", server = %self.server, tool = %name, "a tool listed twice: the first is kept");
                continue;
            }
            let fingerprint = crate::fingerprint(&def).ok();
            if let Some(prev) = previous.as_ref().and_then(|p| p.tools.get(&name)) {
                if prev.fingerprint != fingerprint {
                    tracing::warn!(
                        target: "mcppol::definition_changed",
                        server = %self.server,
                        tool = %name,
                        old = prev.fingerprint.as_deref().unwrap_or(""),
                        new = fingerprint.as_deref().unwrap_or(""),
                        "a tool's definition changed"
                    );
                }
            }
            let (input, output) = if self.validation.any() {
                (
                    schema::compile(def.get("inputSchema")),
                    schema::compile(def.get("outputSchema")),
                )
            } else {
                (SchemaState::Absent, SchemaState::Absent)
            };
            catalog.order.push(name.clone());
            catalog.tools.insert(
                name,
                Arc::new(ToolEntry {
                    def,
                    fingerprint,
                    input,
                    output,
                }),
            );
        }
        self.settle_baseline(&catalog).await;
        let catalog = Arc::new(catalog);
        *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = Some(catalog.clone());
        if previous.is_none() {
            self.warn_unmatched_tools_entries(&catalog);
        }
        Ok(catalog)
    }

    fn has_baseline(&self) -> bool {
        self.first_listing
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// With [`Baseline::FirstListing`] and no baseline yet: `catalog`'s
    /// tools become it, or, with a shared store, what the store holds
    /// (this listing when it is the first). A store that cannot be read
    /// leaves no baseline (every tool new, never approved) and is read
    /// again at the next listing or call. Called holding `listing`.
    async fn settle_baseline(&self, catalog: &Catalog) {
        if !matches!(self.baseline_kind, Baseline::FirstListing) || self.has_baseline() {
            return;
        }
        let listed = catalog
            .tools
            .iter()
            .filter_map(|(n, e)| e.fingerprint.as_ref().map(|fp| (n, fp, e)));
        let approved: Approved = match &self.approved_listings {
            None => listed
                .map(|(n, fp, e)| {
                    let tool = ApprovedTool {
                        fingerprint: fp.clone(),
                        listed: Some(e.clone()),
                    };
                    (n.clone(), tool)
                })
                .collect(),
            Some(store) => {
                let mine: Vec<(String, String)> =
                    listed.map(|(n, fp, _)| (n.clone(), fp.clone())).collect();
                match store.first_writer(&self.server, &mine).await {
                    Ok(stored) => stored
                        .into_iter()
                        .map(|(name, fingerprint)| {
                            // The definition is known only where this
                            // listing is the approved one.
                            let listed = catalog
                                .tools
                                .get(&name)
                                .filter(|e| e.fingerprint.as_deref() == Some(fingerprint.as_str()))
                                .cloned();
                            (
                                name,
                                ApprovedTool {
                                    fingerprint,
                                    listed,
                                },
                            )
                        })
                        .collect(),
                    Err(e) => {
                        tracing::warn!(target: "mcppol::pipeline", server = %self.server, "no tool is approved until the shared baseline can be read: {e}");
                        return;
                    }
                }
            }
        };
        let mut first = self
            .first_listing
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if first.is_none() {
            *first = Some(Arc::new(approved));
        }
    }

    /// After the first listing: one warning for each `tools {}` entry of
    /// the policy that hides (or shows) none of the server's tools, likely a
    /// misspelt name that leaves the tool it meant to hide in view.
    fn warn_unmatched_tools_entries(&self, catalog: &Catalog) {
        let Some(policy) = self.policy_snapshot() else {
            return;
        };
        let tools: Vec<Value> = catalog
            .order
            .iter()
            .filter_map(|name| catalog.tools.get(name).map(|e| e.def.clone()))
            .collect();
        for d in crate::lint::unmatched_tools_entries(&policy, &self.server, &tools) {
            let (line, column) = d.line_col();
            let help = d.help.as_deref().unwrap_or_default();
            tracing::warn!(
                target: "mcppol::pipeline",
                server = %self.server,
                policy = policy.name(),
                "{}:{line}:{column}: {} ({help})",
                d.source.name,
                d.message
            );
        }
    }

    pub(super) fn grant_key(&self, principal: Option<&str>, tool: &str, fp: &str) -> GrantKey {
        GrantKey {
            principal: principal.map(String::from),
            server: self.server.to_string(),
            tool: tool.to_string(),
            fingerprint: fp.to_string(),
        }
    }

    /// The tool against its approved fingerprint; a live grant for the
    /// principal approves its fingerprint.
    /// A grant that cannot be read counts as none (the state stays as the
    /// baseline has it).
    pub(super) async fn approval_state(
        &self,
        name: &str,
        entry: &ToolEntry,
        principal: Option<&str>,
    ) -> ToolApproval {
        let fp = entry.fingerprint.as_deref();
        let state = match &self.baseline_kind {
            Baseline::Lock(lock) => lock.approval(&self.server, name, fp),
            Baseline::FirstListing => {
                let first = self
                    .first_listing
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                match first.as_ref().and_then(|m| m.get(name)) {
                    None => ToolApproval::New,
                    Some(approved) if Some(approved.fingerprint.as_str()) == fp => {
                        ToolApproval::Approved
                    }
                    Some(_) => ToolApproval::Changed,
                }
            }
        };
        match (state, fp) {
            (ToolApproval::Approved, _) | (_, None) => state,
            (_, Some(fp)) => {
                let key = self.grant_key(principal, name, fp);
                if super::approval::is_live_or_not(self.grants.as_ref(), &key).await {
                    ToolApproval::Approved
                } else {
                    state
                }
            }
        }
    }

    /// The tools a model may see: listed again, without hidden tools,
    /// without tools whose schemas are unsafe (while validation is on),
    /// then through the listing hooks. With no policy loaded, nothing.
    pub async fn list_tools(&self, opts: &CallOptions) -> Result<Vec<Value>, CallError> {
        let policy = self.policy_snapshot();
        let catalog = self.refresh_catalog().await?;
        let Some(policy) = policy else {
            return Ok(Vec::new());
        };
        let first = self
            .first_listing
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let principal = opts.principal.as_deref();
        // With `pin_tools off` a changed definition is the policy's to
        // ignore: the listing shows it as it is.
        let pinned = policy.settings().pin_tools;
        // A shared baseline that could not be read approves nothing, and
        // a definition nobody approved is not shown: until it is read, the
        // server lists no tool (as a lock file's changed tools are left
        // out), rather than whatever it lists now, rug pull included.
        let unapproved = pinned
            && self.approved_listings.is_some()
            && matches!(self.baseline_kind, Baseline::FirstListing)
            && first.is_none();
        if unapproved {
            tracing::warn!(
                target: "mcppol::definition_changed",
                server = %self.server,
                "the shared baseline cannot be read: the server's tools are left out of the listing"
            );
            return Ok(Vec::new());
        }
        let mut tools: Vec<(String, Value)> = Vec::with_capacity(catalog.order.len());
        let shown = catalog
            .order
            .iter()
            .filter_map(|name| catalog.tools.get(name).map(|e| (name, e)))
            .filter(|(name, e)| {
                policy.is_visible(&self.server, name) && !e.unsafe_schema(self.validation)
            });
        for (name, e) in shown {
            // The model never reads a definition nobody approved: a
            // changed tool is listed as it was approved, where that
            // definition is held (the first listing), and otherwise
            // (a lock file holds only fingerprints) left out until the
            // change is approved. Its calls are the pin's to decide.
            if !pinned || self.approval_state(name, e, principal).await != ToolApproval::Changed {
                tools.push((name.clone(), e.def.clone()));
                continue;
            }
            let approved = first
                .as_ref()
                .and_then(|m| m.get(name.as_str()))
                .and_then(|a| a.listed.as_ref());
            tracing::warn!(
                target: "mcppol::definition_changed",
                server = %self.server,
                tool = %name,
                listed = if approved.is_some() { "approved" } else { "none" },
                "a tool whose definition changed is listed as approved, or not at all"
            );
            if let Some(a) = approved {
                tools.push((name.clone(), a.def.clone()));
            }
        }
        let base = self.base_ctx(opts);
        for hook in &self.hooks.listed {
            let selected: Vec<Value> = tools
                .iter()
                .filter(|(n, _)| hook.matcher.matches(&self.server, n))
                .map(|(_, d)| d.clone())
                .collect();
            if selected.is_empty() {
                continue;
            }
            let HookFn::Listed(f) = &hook.func else {
                continue;
            };
            let given: HashSet<String> = selected
                .iter()
                .filter_map(|d| d.get("name").and_then(Value::as_str).map(String::from))
                .collect();
            let fut = f(selected, ctx_for(&base, hook));
            match run_task(hook, self.hook_timeout, fut).await {
                Err(how) => return Err(CallError::hook_failed(&hook.id, how)),
                Ok(Listed::Continue) => emit(hook, "cont"),
                Ok(Listed::Replace(new)) => {
                    let mut replaced: HashMap<String, Value> = HashMap::new();
                    for def in new {
                        let name = def.get("name").and_then(Value::as_str).map(String::from);
                        match name {
                            Some(n) if given.contains(&n) && !replaced.contains_key(&n) => {
                                replaced.insert(n, def);
                            }
                            _ => return Err(super::call::bad_return(hook)),
                        }
                    }
                    tools = tools
                        .into_iter()
                        .filter_map(|(n, d)| {
                            if given.contains(&n) {
                                replaced.remove(&n).map(|r| (n, r))
                            } else {
                                Some((n, d))
                            }
                        })
                        .collect();
                    emit(hook, "rewrite");
                }
            }
        }
        Ok(tools.into_iter().map(|(_, d)| d).collect())
    }
}

#[cfg(all(test, feature = "test-util"))]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use crate::mcp::{text_result, FakeServer, MemoryTransport};
    use crate::pipeline::{PolicySource, StateUnavailable};

    /// A shared baseline that cannot be read until `up`, then holds
    /// `stored` (another replica's first listing).
    struct Shared {
        up: AtomicBool,
        stored: HashMap<String, String>,
        asked: Mutex<usize>,
    }

    impl ApprovedListings for Shared {
        fn first_writer<'a>(
            &'a self,
            _server: &'a str,
            _listing: &'a [(String, String)],
        ) -> StateFuture<'a, HashMap<String, String>> {
            *self.asked.lock().unwrap_or_else(PoisonError::into_inner) += 1;
            let answer = if self.up.load(Ordering::SeqCst) {
                Ok(self.stored.clone())
            } else {
                Err(StateUnavailable("down".into()))
            };
            Box::pin(async move { answer })
        }
    }

    #[tokio::test]
    async fn a_shared_baseline_unreadable_approves_nothing_then_holds_changes_to_it() {
        let echo = json!({"name": "echo", "description": "echoes, changed"});
        let read = json!({"name": "read_file"});
        let stored = HashMap::from([
            ("echo".to_string(), "sha256:the-first-listing".to_string()),
            (
                "read_file".to_string(),
                crate::fingerprint(&read).unwrap_or_else(|e| panic!("{e}")),
            ),
        ]);
        let shared = Arc::new(Shared {
            up: AtomicBool::new(false),
            stored,
            asked: Mutex::new(0),
        });
        let server = FakeServer::new()
            .tool(echo, |_| Ok(text_result("e")))
            .tool(read, |_| Ok(text_result("r")));
        let set = crate::PolicySet::from_text("p.mcppol", "policy p {\n  allow \"s/*\"\n}\n")
            .unwrap_or_else(|e| panic!("{}", e.render(false)));
        let policy = set.get("p").unwrap_or_else(|| panic!("no policy")).clone();
        let pipeline = Pipeline::builder(
            "s",
            Arc::new(MemoryTransport::new(server)),
            PolicySource::Fixed(policy),
        )
        .approved_listings(shared.clone())
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
        let state = |name: &'static str| {
            let pipeline = &pipeline;
            async move {
                let catalog = pipeline
                    .cached_catalog()
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                let entry = catalog
                    .tools
                    .get(name)
                    .unwrap_or_else(|| panic!("{name}"))
                    .clone();
                pipeline.approval_state(name, &entry, None).await
            }
        };
        // Down: no baseline, every tool new, and each look asks again.
        assert_eq!(state("read_file").await, ToolApproval::New);
        assert_eq!(state("echo").await, ToolApproval::New);
        assert!(!pipeline.has_baseline());
        assert_eq!(
            *shared.asked.lock().unwrap_or_else(PoisonError::into_inner),
            2
        );
        // Up: the stored listing is the baseline, and it is kept.
        shared.up.store(true, Ordering::SeqCst);
        assert_eq!(state("read_file").await, ToolApproval::Approved);
        assert_eq!(state("echo").await, ToolApproval::Changed);
        assert_eq!(
            *shared.asked.lock().unwrap_or_else(PoisonError::into_inner),
            3
        );
        // The changed tool's approved definition is unknown here: it is
        // left out of the listing.
        let listed = pipeline
            .list_tools(&CallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["read_file"]);
    }

    #[tokio::test]
    async fn while_the_shared_baseline_cannot_be_read_no_tool_is_listed() {
        let shared = Arc::new(Shared {
            up: AtomicBool::new(false),
            stored: HashMap::new(),
            asked: Mutex::new(0),
        });
        let server = FakeServer::new()
            .tool(json!({"name": "echo", "description": "rug pulled"}), |_| {
                Ok(text_result("e"))
            });
        let set = crate::PolicySet::from_text("p.mcppol", "policy p {\n  allow \"s/*\"\n}\n")
            .unwrap_or_else(|e| panic!("{}", e.render(false)));
        let policy = set.get("p").unwrap_or_else(|| panic!("no policy")).clone();
        let pipeline = Pipeline::builder(
            "s",
            Arc::new(MemoryTransport::new(server)),
            PolicySource::Fixed(policy),
        )
        .approved_listings(shared.clone())
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
        let listed = pipeline
            .list_tools(&CallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(listed.is_empty(), "{listed:?}");
        // Readable again (an empty store: this listing is the first).
        shared.up.store(true, Ordering::SeqCst);
        let listed = pipeline
            .list_tools(&CallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(listed.len(), 1, "{listed:?}");
    }
}
