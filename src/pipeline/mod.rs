//! The governed call: every tool call, resource read and prompt get of one
//! MCP server through visibility, hooks, validation, policy, approval and
//! shaping, in the order of the contract (see `docs/pipeline.md`):
//!
//! resolve (list first if nothing is cached) -> visibility filter (hidden =
//! unknown) -> approved fingerprints -> before-hooks -> argument
//! validation -> policy on the final arguments -> approval (grants, then
//! the approver) -> digest check -> send (through around hooks) -> output
//! validation -> after-hooks or failure hooks -> shaping -> telemetry.
//!
//! Failures close: a before-hook that fails fails the call and nothing is
//! sent; a failing after-hook withholds the result (unless it is marked
//! `on_error: ignore`); a failing failure hook leaves the original error; a
//! failing listing hook fails the listing; a failing approver denies with
//! `ask_failed`. No hook can allow: policy is the only allow authority.

// The modules are the crate's own; what a host uses is re-exported below.
// `command_hooks` (Claude Code's command hooks) is a namespace of its own.
pub(crate) mod approval;
pub mod command_hooks;
pub(crate) mod error;
pub(crate) mod hooks;
pub(crate) mod schema;
pub(crate) mod shape;
pub(crate) mod types;

mod call;
mod catalog;
#[cfg_attr(not(feature = "cli"), allow(unused_imports))]
pub(crate) use catalog::ApprovedListings;
mod reads;
mod record;
mod send;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast;

pub use crate::limits::{MAX_ARGUMENT_BYTES, MAX_ARGUMENT_DEPTH, MAX_TOOL_DEFINITION_BYTES};
pub use approval::{
    Approval, ApprovalRequest, Approver, Clock, Grant, GrantKey, Grants, ManualClock, MemoryGrants,
    StateFuture, StateUnavailable, SystemClock, DEFAULT_ASK_TIMEOUT, DEFAULT_GRANT_TTL, MAX_GRANTS,
};
pub use error::{AskFailure, CallError, ErrorKind, ErrorReason, HookFailure};
pub(crate) use hooks::Hooks;
pub use hooks::{
    After, Before, Event, Failed, Gate, Hook, HookError, HookSpecError, Listed, Matcher, Next,
    OnError, PromptGate, DEFAULT_HOOK_TIMEOUT,
};
pub(crate) use schema::SchemaState;
pub use shape::{
    shape_instructions, shape_result, DEFAULT_MAX_RESULT_BYTES, MAX_INSTRUCTIONS_BYTES,
};
pub use types::{
    args_digest, CallOptions, HookCtx, Provenance, ShapeFlag, ToolCall, ToolResult, WITHHELD_TEXT,
};

use crate::mcp::{Notification, Transport};
use crate::store::Store;
use crate::{Lock, Policy};

/// Where the pipeline's policy comes from.
#[derive(Clone)]
pub enum PolicySource {
    /// A named policy of a [`Store`]: each request takes one snapshot and
    /// uses it from start to end, so hot reload keeps working. While no
    /// policy of that name is loaded, every request is denied
    /// (`no_policy`) and listings are empty.
    Store {
        /// The store.
        store: Arc<Store>,
        /// The policy's name in it.
        name: String,
    },
    /// One compiled policy.
    Fixed(Arc<Policy>),
}

impl PolicySource {
    fn snapshot(&self) -> Option<Arc<Policy>> {
        match self {
            PolicySource::Store { store, name } => store.get(name),
            PolicySource::Fixed(p) => Some(p.clone()),
        }
    }

    /// The policy and the bundle the store's policies came from
    /// (`--bundle`; `None` when not running from one), from one snapshot,
    /// for the audit line's `bundle` key.
    fn snapshot_stamped(&self) -> (Option<Arc<Policy>>, Option<Arc<crate::store::BundleStamp>>) {
        match self {
            PolicySource::Store { store, name } => store.get_stamped(name),
            PolicySource::Fixed(p) => (Some(p.clone()), None),
        }
    }
}

/// One governed request's decision, as the pipeline's observer sees it
/// (an audit log): the policy's decision and how an ask was settled.
#[derive(Debug, Clone, Copy)]
pub struct DecisionRecord<'a> {
    /// The server's id.
    pub server: &'a str,
    /// `tool`, `resource` or `prompt`.
    pub kind: &'a str,
    /// The tool or prompt name, or the resource URI.
    pub name: Option<&'a str>,
    /// The policy's decision (for an ask, before it was settled).
    pub decision: &'a crate::Decision,
    /// `none`, `grant`, `once`, `always`, `denied`, `halted` or `failed`
    /// ([`Settled::as_str`]).
    pub approval: &'static str,
    /// `sha256:` of the canonical arguments (tools and prompts with arguments).
    pub args_digest: Option<&'a str>,
}

/// Called with every decision record (see [`PipelineBuilder::observer`]).
pub type DecisionObserver = Arc<dyn Fn(&DecisionRecord<'_>) + Send + Sync>;

pub use crate::enforce::{AuditRecord, By, Outcome, Settled};

/// Writes one audit line (see [`PipelineBuilder::audit`]); an error
/// refuses the request (`audit_failed`).
pub type AuditSink = Arc<dyn Fn(&AuditRecord<'_>) -> Result<(), String> + Send + Sync>;

/// Where approved fingerprints come from.
#[derive(Debug, Clone, Default)]
pub enum Baseline {
    /// The first full listing the pipeline reads: every tool in it is
    /// approved as listed; a tool first seen later is new.
    #[default]
    FirstListing,
    /// A lock file.
    Lock(Lock),
}

/// Which schemas are checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Validation {
    /// The final arguments against `inputSchema`, before policy.
    pub arguments: bool,
    /// A successful result's `structuredContent` against `outputSchema`.
    pub output: bool,
}

impl Validation {
    /// Both checks on (the default is both off).
    pub fn on() -> Self {
        Validation {
            arguments: true,
            output: true,
        }
    }

    fn any(self) -> bool {
        self.arguments || self.output
    }
}

/// One listed tool as the pipeline keeps it.
#[derive(Debug, Clone)]
pub(crate) struct ToolEntry {
    pub(crate) def: Value,
    pub(crate) fingerprint: Option<String>,
    pub(crate) input: SchemaState,
    pub(crate) output: SchemaState,
}

impl ToolEntry {
    fn unsafe_schema(&self, v: Validation) -> bool {
        (v.arguments && self.input.is_unsafe()) || (v.output && self.output.is_unsafe())
    }
}

/// One approved tool of the baseline: its fingerprint and, where this
/// pipeline read that definition itself, the entry it was listed with (a
/// baseline shared through `--state` holds only fingerprints, so a tool
/// that changed before this pipeline first listed it has none).
#[derive(Debug, Clone)]
pub(crate) struct ApprovedTool {
    pub(crate) fingerprint: String,
    pub(crate) listed: Option<Arc<ToolEntry>>,
}

/// The approved tools of the first listing, by name.
pub(crate) type Approved = HashMap<String, ApprovedTool>;

/// The tools of the last listing.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    pub(crate) order: Vec<String>,
    pub(crate) tools: HashMap<String, Arc<ToolEntry>>,
}

/// Builds a [`Pipeline`].
pub struct PipelineBuilder {
    server: String,
    transport: Arc<dyn Transport>,
    policy: PolicySource,
    hooks: Vec<Hook>,
    approver: Option<Arc<dyn Approver>>,
    grants: Option<Arc<dyn Grants>>,
    budgets: Option<Arc<dyn crate::Budgets>>,
    approved_listings: Option<Arc<dyn catalog::ApprovedListings>>,
    ask_timeout: Duration,
    grant_ttl: Duration,
    hook_timeout: Duration,
    send_timeout: Duration,
    validation: Validation,
    baseline: Baseline,
    trusted: bool,
    local_tool: bool,
    protected: Option<Arc<crate::protected::Protected>>,
    max_result_bytes: usize,
    observer: Option<DecisionObserver>,
    audit: Option<AuditSink>,
}

impl PipelineBuilder {
    /// The server acts on this machine (a stdio server this process
    /// started): path tests read symbolic links first, unless the
    /// policy sets `resolve_links off`.
    pub fn local_tool(mut self, on: bool) -> Self {
        self.local_tool = on;
        self
    }

    /// Files no call may write, whatever the policy says: the policy this
    /// pipeline enforces, its tests and lock files, the audit file. A call
    /// with a string argument naming one (an absolute path, a `file:` URI,
    /// or a relative path from this process's folder) is denied (`source:
    /// protected`, `reason: protected_policy`) unless the server is
    /// trusted and the tool says it only reads (`readOnlyHint`).
    pub fn protect(mut self, protected: crate::protected::Protected) -> Self {
        self.protected = Some(Arc::new(protected));
        self
    }

    /// An audit trail: called with exactly one [`AuditRecord`] per governed
    /// request (the mapping of its [`Outcome`]), before anything is sent
    /// for it, whatever decided it. When
    /// it fails (the line could not be written), the request is refused
    /// (`denied`, `audit_failed`) and nothing is sent.
    pub fn audit(mut self, sink: AuditSink) -> Self {
        self.audit = Some(sink);
        self
    }

    /// Called with each governed request's decision (after approval), on
    /// the request's task: keep it quick.
    pub fn observer(mut self, observer: DecisionObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Hooks, in declaration order.
    pub fn hooks(mut self, hooks: Vec<Hook>) -> Self {
        self.hooks = hooks;
        self
    }

    /// Adds one hook.
    pub fn hook(mut self, hook: Hook) -> Self {
        self.hooks.push(hook);
        self
    }

    /// The approver that settles asks (without one, policy never asks: an
    /// ask is a deny with `no_approver`).
    pub fn approver(mut self, approver: impl Approver) -> Self {
        self.approver = Some(Arc::new(approver));
        self
    }

    /// Where grants live (default: in memory, the system clock).
    pub fn grants(mut self, grants: Arc<dyn Grants>) -> Self {
        self.grants = Some(grants);
        self
    }

    /// Where the counters of the policy's budgets (`limit`) live (default:
    /// this pipeline's own, in memory). Pipelines that share one budget
    /// (a gateway's servers) are given the same store.
    pub fn budgets(mut self, budgets: Arc<dyn crate::Budgets>) -> Self {
        self.budgets = Some(budgets);
        self
    }

    /// Where the first listing's fingerprints are shared with other
    /// replicas (`--state`): the first any of them stored is this
    /// pipeline's baseline too (catalog.rs). Only with
    /// [`Baseline::FirstListing`].
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn approved_listings(mut self, store: Arc<dyn catalog::ApprovedListings>) -> Self {
        self.approved_listings = Some(store);
        self
    }

    /// How long the approver has to answer (default 60 s,
    /// [`DEFAULT_ASK_TIMEOUT`]); past it the call is denied with
    /// `ask_failed`.
    pub fn ask_timeout(mut self, t: Duration) -> Self {
        self.ask_timeout = t;
        self
    }

    /// How long an `allow always` grant lives (default 24 h,
    /// [`DEFAULT_GRANT_TTL`]).
    pub fn grant_ttl(mut self, t: Duration) -> Self {
        self.grant_ttl = t;
        self
    }

    /// The default deadline of a hook (5 s).
    pub fn hook_timeout(mut self, t: Duration) -> Self {
        self.hook_timeout = t;
        self
    }

    /// The default deadline of an around hook, which covers the send (60 s).
    pub fn send_timeout(mut self, t: Duration) -> Self {
        self.send_timeout = t;
        self
    }

    /// Which schemas are checked (default: none). While a check is on, a
    /// tool whose schema is unsafe is left out of listings and calling it
    /// fails with `unsafe_schema`.
    pub fn validation(mut self, v: Validation) -> Self {
        self.validation = v;
        self
    }

    /// Where approved tool fingerprints come from (default: the first
    /// listing); a tool whose definition differs from its approved one is
    /// asked again (`definition_changed`).
    pub fn baseline(mut self, b: Baseline) -> Self {
        self.baseline = b;
        self
    }

    /// The host trusts this server: its annotations are believed and its
    /// instructions are not prefixed.
    pub fn trusted(mut self, t: bool) -> Self {
        self.trusted = t;
        self
    }

    /// The cap of a shaped result (100 KiB).
    pub fn max_result_bytes(mut self, n: usize) -> Self {
        self.max_result_bytes = n;
        self
    }

    /// Checks the hooks and builds the pipeline. Nothing is sent to the
    /// server yet: the first request lists its tools.
    ///
    /// # Errors
    ///
    /// A [`HookSpecError`]: two hooks with one id, an empty id, a zero
    /// timeout, `on_error: ignore` on a hook that must fail closed, or a
    /// server id with `/`.
    pub fn build(self) -> Result<Pipeline, HookSpecError> {
        let hooks = Hooks::new(self.hooks)?;
        let changes = self.transport.subscribe();
        let server: Arc<str> = self.server.into();
        if server.contains('/') {
            // A server id never contains `/`: refuse it as the contract says.
            return Err(HookSpecError::BadServer(server.to_string()));
        }
        Ok(Pipeline {
            server,
            transport: self.transport,
            policy: self.policy,
            hooks: Arc::new(hooks),
            approver: self.approver,
            grants: self
                .grants
                .unwrap_or_else(|| Arc::new(MemoryGrants::default())),
            budgets: self
                .budgets
                .unwrap_or_else(|| Arc::new(crate::MemoryBudgets::new())),
            approved_listings: self.approved_listings,
            ask_timeout: self.ask_timeout,
            grant_ttl: self.grant_ttl,
            hook_timeout: self.hook_timeout,
            send_timeout: self.send_timeout,
            validation: self.validation,
            baseline_kind: self.baseline,
            trusted: self.trusted,
            local_tool: self.local_tool,
            protected: self.protected,
            max_result_bytes: self.max_result_bytes,
            observer: self.observer,
            audit: self.audit,
            catalog: RwLock::new(None),
            first_listing: RwLock::new(None),
            listing: tokio::sync::Mutex::new(()),
            changes: Mutex::new(changes),
            next_call: AtomicU64::new(1),
        })
    }
}

/// The governed client of one MCP server: every tool call, resource read
/// and prompt get through visibility, hooks, validation, policy, approval
/// and shaping (see the [module](self)). Cheap to share behind an `Arc`;
/// calls may run concurrently.
///
/// ```
/// use std::sync::Arc;
/// use mcppol::mcp::{text_result, FakeServer, MemoryTransport};
/// use mcppol::pipeline::{Approval, CallOptions, ErrorReason, Pipeline, PolicySource};
/// use mcppol::PolicySet;
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let set = PolicySet::from_text("gh.mcppol", r#"
///     policy gh {
///       ask   "gh/merge_*"
///       allow "gh/get_*"
///     }
/// "#).map_err(|e| e.render(false))?;
/// let server = FakeServer::new()
///     .tool(json!({"name": "get_issue"}), |_| Ok(text_result("issue 7")))
///     .tool(json!({"name": "merge_pr"}), |_| Ok(text_result("merged")));
/// let gh = Pipeline::builder(
///     "gh",
///     Arc::new(MemoryTransport::new(server)),
///     PolicySource::Fixed(set.get("gh").ok_or("no policy")?.clone()),
/// )
/// // Asks go to a person; this one approves once, for ann only.
/// .approver(|req: mcppol::pipeline::ApprovalRequest| async move {
///     Ok(match req.ctx.principal.as_deref() {
///         Some("ann") => Approval::AllowOnce,
///         _ => Approval::Deny("ask ann".into()),
///     })
/// })
/// .build()?;
///
/// let ann = CallOptions::default().principal("ann");
/// let bob = CallOptions::default().principal("bob");
/// assert_eq!(gh.call_tool("get_issue", json!({}), &bob).await?.joined_text(), "issue 7");
/// assert_eq!(gh.call_tool("merge_pr", json!({}), &ann).await?.joined_text(), "merged");
/// let err = gh.call_tool("merge_pr", json!({}), &bob).await.unwrap_err();
/// assert_eq!(err.reason, ErrorReason::AskDenied);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Pipeline {
    pub(crate) server: Arc<str>,
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) policy: PolicySource,
    pub(crate) hooks: Arc<Hooks>,
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) grants: Arc<dyn Grants>,
    pub(crate) budgets: Arc<dyn crate::Budgets>,
    /// The baseline replicas share (`--state`); `None`: this pipeline's
    /// own first listing.
    pub(crate) approved_listings: Option<Arc<dyn catalog::ApprovedListings>>,
    pub(crate) ask_timeout: Duration,
    pub(crate) grant_ttl: Duration,
    pub(crate) hook_timeout: Duration,
    pub(crate) send_timeout: Duration,
    pub(crate) validation: Validation,
    pub(crate) baseline_kind: Baseline,
    pub(crate) trusted: bool,
    pub(crate) local_tool: bool,
    pub(crate) protected: Option<Arc<crate::protected::Protected>>,
    pub(crate) max_result_bytes: usize,
    pub(crate) observer: Option<DecisionObserver>,
    pub(crate) audit: Option<AuditSink>,
    pub(crate) catalog: RwLock<Option<Arc<Catalog>>>,
    /// The first listing's tools (with their fingerprints), by name: the
    /// approved definitions, which a listing shows in place of a changed
    /// one.
    pub(crate) first_listing: RwLock<Option<Arc<Approved>>>,
    /// Held while a listing is asked for and read: one at a time, so the
    /// first listing (the baseline) is the first the server answered, and
    /// each is compared with the one before, however their answers are
    /// scheduled (catalog.rs, `refresh_catalog`).
    pub(crate) listing: tokio::sync::Mutex<()>,
    pub(crate) changes: Mutex<broadcast::Receiver<Notification>>,
    pub(crate) next_call: AtomicU64,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("server", &self.server)
            .field("hooks", &self.hooks)
            .field("validation", &self.validation)
            .finish_non_exhaustive()
    }
}

impl Pipeline {
    /// A pipeline for server `server` over `transport`, governed by
    /// `policy`: set hooks, the approver and the options on the builder,
    /// then [`PipelineBuilder::build`]. `server` is the id policy rules
    /// name (`"gh/merge_*"`) and must not contain `/`.
    pub fn builder(
        server: &str,
        transport: Arc<dyn Transport>,
        policy: PolicySource,
    ) -> PipelineBuilder {
        PipelineBuilder {
            server: server.to_string(),
            transport,
            policy,
            hooks: Vec::new(),
            approver: None,
            grants: None,
            budgets: None,
            approved_listings: None,
            ask_timeout: DEFAULT_ASK_TIMEOUT,
            grant_ttl: DEFAULT_GRANT_TTL,
            hook_timeout: DEFAULT_HOOK_TIMEOUT,
            send_timeout: Duration::from_secs(60),
            validation: Validation::default(),
            baseline: Baseline::default(),
            trusted: false,
            local_tool: false,
            protected: None,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            observer: None,
            audit: None,
        }
    }

    /// The server's id.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The `outputSchema` of a tool of the last listing, if it has one
    /// (the proxy's shaping keeps a result valid against it).
    #[cfg(feature = "cli")]
    pub(crate) fn output_schema(&self, tool: &str) -> Option<Value> {
        let catalog = self
            .catalog
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()?;
        catalog.tools.get(tool)?.def.get("outputSchema").cloned()
    }

    /// The store of the budgets' counters this pipeline counts in.
    pub fn budgets(&self) -> &Arc<dyn crate::Budgets> {
        &self.budgets
    }

    /// The grants this pipeline records and reads.
    pub fn grants(&self) -> &Arc<dyn Grants> {
        &self.grants
    }

    /// The server's instructions for a model: `None` when it sent none;
    /// else cleaned, capped and (unless trusted) prefixed with its name.
    pub fn instructions(&self) -> Option<String> {
        self.transport
            .server()
            .instructions
            .as_deref()
            .map(|t| shape_instructions(&self.server, t, self.trusted))
    }
}
