//! The steps of a governed request.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use serde_json::{Map, Value};
use tokio::sync::broadcast::error::TryRecvError;

use super::approval::{Approval, ApprovalRequest, GrantKey};
use super::error::{AskFailure, CallError, ErrorKind, ErrorReason, HookFailure};
use super::hooks::{
    ctx_for, emit, ignored, run_task, Before, Failed, Gate, Hook, HookFn, Listed, Next, PromptGate,
};
use super::schema::{self, SchemaState};
use super::shape::shape_result;
use super::types::{args_digest, CallOptions, HookCtx, ToolCall, ToolResult};
use super::{Baseline, Catalog, Pipeline, ToolEntry};
use crate::fingerprint::ToolApproval;
use crate::mcp::{BoxFuture, CallHandle, Transport};
use crate::{Decision, Policy, Request, Verdict};

/// Why a decision event had the approval it had.
#[derive(Clone, Copy)]
enum Approved {
    NotAsked,
    Grant,
    Once,
    Always,
    Denied,
    Halted,
    Failed,
}

impl Approved {
    fn as_str(self) -> &'static str {
        match self {
            Approved::NotAsked => "none",
            Approved::Grant => "grant",
            Approved::Once => "once",
            Approved::Always => "always",
            Approved::Denied => "denied",
            Approved::Halted => "halted",
            Approved::Failed => "failed",
        }
    }
}

impl Pipeline {
    /// The decision event, the observer's record and the audit line (the
    /// request's one: `audited` is set). An audit line that cannot be
    /// written refuses the request (`audit_failed`): nothing is sent.
    fn emit_decision(
        &self,
        audited: &AtomicBool,
        kind: &str,
        name: Option<&str>,
        d: &Decision,
        approved: Approved,
        args: Option<&Value>,
    ) -> Result<(), CallError> {
        audited.store(true, Ordering::Relaxed);
        // A resource's URI is request data: the event leaves it out.
        let event_name = if kind == "resource" { None } else { name };
        emit_decision(&self.server, kind, event_name, d, approved);
        if self.observer.is_none() && self.audit.is_none() {
            return Ok(());
        }
        let digest = args.map(args_digest);
        let record = super::DecisionRecord {
            server: &self.server,
            kind,
            name,
            decision: d,
            approval: approved.as_str(),
            args_digest: digest.as_deref(),
        };
        if let Some(observer) = &self.observer {
            observer(&record);
        }
        self.write_audit(&super::AuditRecord::decided(&record))
    }

    /// Writes one audit line, when an audit sink is set.
    fn write_audit(&self, record: &super::AuditRecord<'_>) -> Result<(), CallError> {
        let Some(audit) = &self.audit else {
            return Ok(());
        };
        audit(record).map_err(|why| {
            tracing::error!(target: "mcppol::pipeline", server = %self.server, why, "the audit line could not be written: the request is refused");
            CallError::new(ErrorKind::Denied, ErrorReason::AuditFailed)
        })
    }

    /// The audit line of a request refused before any policy decision (by
    /// what `e` says); `e` again, or `audit_failed` when the line could not
    /// be written.
    fn audit_refusal(
        &self,
        kind: &str,
        name: Option<&str>,
        e: CallError,
        hidden: bool,
        args: Option<&Value>,
    ) -> CallError {
        if self.audit.is_none() {
            return e;
        }
        let (source, reason) = if e.kind == ErrorKind::NotFound {
            if hidden {
                ("visibility", "hidden")
            } else {
                ("request", "unknown_tool")
            }
        } else if e.hook_id.is_some() || e.kind == ErrorKind::Hook {
            ("hook", e.reason.as_str())
        } else {
            ("request", e.reason.as_str())
        };
        let digest = args.map(args_digest);
        let record = super::AuditRecord::refused(&self.server, kind, name, source, reason)
            .with_hook(e.hook_id.as_deref())
            .with_digest(digest.as_deref());
        match self.write_audit(&record) {
            Ok(()) => e,
            Err(failed) => failed,
        }
    }
}

fn emit_decision(server: &str, kind: &str, name: Option<&str>, d: &Decision, approved: Approved) {
    tracing::info!(
        target: "mcppol::decision",
        server,
        kind,
        tool = name.unwrap_or(""),
        decision = d.decision.as_str(),
        source = d.source.as_str(),
        reason = d.reason.as_str(),
        rule_id = d.rule_id.as_deref().unwrap_or(""),
        approval = approved.as_str(),
        "decision"
    );
}

fn emit_call<T>(
    server: &str,
    kind: &str,
    name: Option<&str>,
    started: Instant,
    out: &Result<T, CallError>,
) {
    let latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    match out {
        Ok(_) => tracing::info!(
            target: "mcppol::call",
            server, kind, tool = name.unwrap_or(""), status = "ok", latency_us, "governed call"
        ),
        Err(e) => tracing::info!(
            target: "mcppol::call",
            server, kind, tool = name.unwrap_or(""), status = "error",
            error_kind = e.kind.as_str(), reason = e.reason.as_str(),
            hook_id = e.hook_id.as_deref().unwrap_or(""), latency_us, "governed call"
        ),
    }
}

/// Fails when the arguments about to be sent are not the ones approved.
pub(crate) fn check_digest(approved: &str, arguments: &Value) -> Result<(), CallError> {
    if args_digest(arguments) == approved {
        Ok(())
    } else {
        Err(CallError::new(ErrorKind::Hook, ErrorReason::ArgsChanged))
    }
}

/// Arguments past [`crate::limits::MAX_ARGUMENT_BYTES`] or
/// [`crate::limits::MAX_ARGUMENT_DEPTH`] fail the call (`protocol`,
/// `invalid_arguments`): nothing is sent.
fn check_arguments(arguments: &Value) -> Result<(), CallError> {
    crate::limits::check_json(
        arguments,
        crate::limits::MAX_ARGUMENT_BYTES,
        crate::limits::MAX_ARGUMENT_DEPTH,
    )
    .map_err(|why| {
        CallError::new(ErrorKind::Protocol, ErrorReason::InvalidArguments)
            .with_detail(format!("the arguments are too large: {why}"))
    })
}

fn bad_return(hook: &Hook) -> CallError {
    emit(hook, HookFailure::BadReturn.as_str());
    CallError::hook_failed(&hook.id, HookFailure::BadReturn)
}

/// Whether a before-hook's call is the same call (only the arguments and
/// meta may change, and the arguments stay an object).
fn same_call(call: &ToolCall, new: &ToolCall) -> bool {
    new.server == call.server
        && new.name == call.name
        && new.call_id == call.call_id
        && new.arguments.is_object()
}

fn hook_denied(hook: &Hook, reason: String) -> CallError {
    emit(hook, "deny");
    CallError::new(ErrorKind::Denied, ErrorReason::HookDenied)
        .with_hook(&hook.id)
        .with_detail(reason)
}

async fn send_direct(
    transport: Arc<dyn Transport>,
    call: ToolCall,
    params: Option<Arc<Map<String, Value>>>,
    handle: Option<&CallHandle>,
) -> Result<ToolResult, CallError> {
    let raw = match (params.filter(|p| !p.is_empty()), handle) {
        (None, None) => {
            transport
                .call_tool(&call.name, call.arguments, call.meta)
                .await?
        }
        (None, Some(handle)) => {
            // `call_tool`'s request, sent under the caller's handle.
            let mut params = Map::with_capacity(3);
            params.insert("name".into(), Value::from(call.name));
            params.insert("arguments".into(), call.arguments);
            if let Some(meta) = call.meta {
                params.insert("_meta".into(), meta);
            }
            let raw = transport
                .request_with("tools/call", Some(Value::Object(params)), handle)
                .await?;
            expect_object(raw, "tools/call")?
        }
        (Some(rest), handle) => {
            // The caller's other params (a task's `task`, ...) go as they
            // came; the ones the pipeline writes are its own.
            let mut params = Map::with_capacity(rest.len() + 3);
            params.insert("name".into(), Value::from(call.name));
            params.insert("arguments".into(), call.arguments);
            if let Some(meta) = call.meta {
                params.insert("_meta".into(), meta);
            }
            for (k, v) in rest.iter() {
                if !params.contains_key(k) && k != "_meta" {
                    params.insert(k.clone(), v.clone());
                }
            }
            request(&*transport, "tools/call", Value::Object(params), handle).await?
        }
    };
    Ok(ToolResult::from_value(raw)?)
}

/// Sends a request, under the caller's handle when there is one.
async fn request(
    transport: &dyn Transport,
    method: &str,
    params: Value,
    handle: Option<&CallHandle>,
) -> Result<Value, crate::mcp::McpError> {
    let params = Some(params);
    match handle {
        Some(handle) => transport.request_with(method, params, handle).await,
        None => transport.request(method, params).await,
    }
}

/// `params` (the request's other params) with the keys the pipeline
/// writes itself set to `own`, in `own`'s order first.
fn with_params(own: Map<String, Value>, rest: Option<&Map<String, Value>>) -> Value {
    let mut params = own;
    for (k, v) in rest.into_iter().flatten() {
        if !params.contains_key(k) {
            params.insert(k.clone(), v.clone());
        }
    }
    Value::Object(params)
}

/// A request's result, which must be an object.
fn expect_object(result: Value, method: &str) -> Result<Value, CallError> {
    if result.is_object() {
        Ok(result)
    } else {
        Err(
            crate::mcp::McpError::Protocol(format!("the result of {method} is not an object"))
                .into(),
        )
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The around hooks of one send and the call they wrap.
struct Chain {
    transport: Arc<dyn Transport>,
    call: ToolCall,
    params: Option<Arc<Map<String, Value>>>,
    /// Carried to the send whichever task runs it (each hook runs on one
    /// of its own), so the caller can cancel what it sent.
    handle: Option<CallHandle>,
    hooks: Vec<Arc<Hook>>,
    base: HookCtx,
    timeout: std::time::Duration,
}

fn next_at(chain: Arc<Chain>, i: usize) -> Next {
    Next {
        run: Arc::new(move || run_chain(chain.clone(), i)),
    }
}

fn run_chain(chain: Arc<Chain>, i: usize) -> BoxFuture<'static, Result<ToolResult, CallError>> {
    Box::pin(async move {
        let Some(hook) = chain.hooks.get(i).cloned() else {
            return send_direct(
                chain.transport.clone(),
                chain.call.clone(),
                chain.params.clone(),
                chain.handle.as_ref(),
            )
            .await;
        };
        let HookFn::Around(f) = &hook.func else {
            return Err(bad_return(&hook));
        };
        let inner = f(
            chain.call.clone(),
            next_at(chain.clone(), i + 1),
            ctx_for(&chain.base, &hook),
        );
        match run_task(
            &hook,
            chain.timeout,
            Box::pin(async move { Ok(inner.await) }),
        )
        .await
        {
            Ok(out) => {
                emit(&hook, "cont");
                out
            }
            Err(how) => Err(CallError::hook_failed(&hook.id, how)),
        }
    })
}

/// The hook context of one request, built the first time a hook or the
/// approver needs it (a call without hooks never builds it).
pub(crate) struct LazyCtx<'a> {
    pipeline: &'a Pipeline,
    opts: &'a CallOptions,
    cell: std::sync::OnceLock<HookCtx>,
    /// Whether the request's audit line was written (its one line).
    audited: AtomicBool,
}

impl<'a> LazyCtx<'a> {
    fn new(pipeline: &'a Pipeline, opts: &'a CallOptions) -> Self {
        LazyCtx {
            pipeline,
            opts,
            cell: std::sync::OnceLock::new(),
            audited: AtomicBool::new(false),
        }
    }

    fn get(&self) -> &HookCtx {
        self.cell.get_or_init(|| self.pipeline.base_ctx(self.opts))
    }
}

impl Pipeline {
    fn policy_snapshot(&self) -> Option<Arc<Policy>> {
        self.policy.snapshot()
    }

    fn base_ctx(&self, opts: &CallOptions) -> HookCtx {
        HookCtx {
            server: self.server.clone(),
            hook_id: "".into(),
            principal: opts.principal.as_deref().map(Arc::from),
            assigns: opts.assigns.clone().map(Arc::new),
            taint: opts.taint.clone().into(),
        }
    }

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

    async fn cached_catalog(&self) -> Result<Arc<Catalog>, CallError> {
        let changed = self.tools_changed();
        if !changed {
            let cached = self
                .catalog
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(c) = cached {
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
        if matches!(self.baseline_kind, Baseline::FirstListing) {
            let mut first = self
                .first_listing
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            if first.is_none() {
                let approved: super::Approved = catalog
                    .tools
                    .iter()
                    .filter(|(_, e)| e.fingerprint.is_some())
                    .map(|(n, e)| (n.clone(), e.clone()))
                    .collect();
                *first = Some(Arc::new(approved));
            }
        }
        let catalog = Arc::new(catalog);
        *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = Some(catalog.clone());
        Ok(catalog)
    }

    fn grant_key(&self, principal: Option<&str>, tool: &str, fp: &str) -> GrantKey {
        GrantKey {
            principal: principal.map(String::from),
            server: self.server.to_string(),
            tool: tool.to_string(),
            fingerprint: fp.to_string(),
        }
    }

    /// The tool against its approved fingerprint; a live grant for the
    /// principal approves its fingerprint.
    fn approval_state(
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
                    Some(approved) if approved.fingerprint.as_deref() == fp => {
                        ToolApproval::Approved
                    }
                    Some(_) => ToolApproval::Changed,
                }
            }
        };
        match (state, fp) {
            (ToolApproval::Approved, _) | (_, None) => state,
            (_, Some(fp)) if self.grants.is_live(&self.grant_key(principal, name, fp)) => {
                ToolApproval::Approved
            }
            _ => state,
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
        let mut tools: Vec<(String, Value)> = catalog
            .order
            .iter()
            .filter_map(|name| catalog.tools.get(name).map(|e| (name, e)))
            .filter(|(name, e)| {
                policy.is_visible(&self.server, name) && !e.unsafe_schema(self.validation)
            })
            .filter_map(|(name, e)| {
                // The model never reads a definition nobody approved: a
                // changed tool is listed as it was approved, where that
                // definition is held (the first listing), and otherwise
                // (a lock file holds only fingerprints) left out until the
                // change is approved. Its calls are the pin's to decide.
                if !pinned || self.approval_state(name, e, principal) != ToolApproval::Changed {
                    return Some((name.clone(), e.def.clone()));
                }
                let approved = first.as_ref().and_then(|m| m.get(name.as_str()));
                tracing::warn!(
                    target: "mcppol::definition_changed",
                    server = %self.server,
                    tool = %name,
                    listed = if approved.is_some() { "approved" } else { "none" },
                    "a tool whose definition changed is listed as approved, or not at all"
                );
                approved.map(|a| (name.clone(), a.def.clone()))
            })
            .collect();
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
                            _ => return Err(bad_return(hook)),
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

    /// Calls a tool through the whole pipeline (the steps are listed in
    /// the [module](super) docs) and returns its result, shaped when
    /// `opts` asks for it. A before-hook's halt answers without sending.
    ///
    /// # Errors
    ///
    /// A [`CallError`] of kind `not_found` (unknown or hidden tool),
    /// `denied` (policy, a hook, the approver), `hook` (a hook failed, or
    /// the arguments changed after approval), `protocol`, `transport` or
    /// `timeout`, unless a failure hook recovered it.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        opts: &CallOptions,
    ) -> Result<ToolResult, CallError> {
        let started = Instant::now();
        let out = self.call_inner(name, arguments, opts).await;
        emit_call(&self.server, "tool", Some(name), started, &out);
        out
    }

    async fn call_inner(
        &self,
        name: &str,
        arguments: Value,
        opts: &CallOptions,
    ) -> Result<ToolResult, CallError> {
        // One policy snapshot for the whole call.
        let policy = self.policy_snapshot();
        // Refused before policy: the one audit line says by what.
        let refused = |e: CallError, hidden: bool, args: &Value| {
            self.audit_refusal("tool", Some(name), e, hidden, Some(args))
        };
        let catalog = match self.cached_catalog().await {
            Ok(c) => c,
            Err(e) => return Err(refused(e, false, &arguments)),
        };
        let Some(entry) = catalog.tools.get(name).cloned() else {
            return Err(refused(CallError::not_found(), false, &arguments));
        };
        if let Some(p) = &policy {
            if !p.is_visible(&self.server, name) {
                return Err(refused(CallError::not_found(), true, &arguments));
            }
        }
        if let Err(e) = check_arguments(&arguments) {
            return Err(refused(e, false, &arguments));
        }
        let state = self.approval_state(name, &entry, opts.principal.as_deref());
        let base = LazyCtx::new(self, opts);
        let mut call = ToolCall {
            server: self.server.clone(),
            name: name.to_string(),
            arguments,
            meta: opts.meta.clone(),
            call_id: self.next_call.fetch_add(1, Ordering::Relaxed),
        };
        let outcome = self
            .govern_and_send(&mut call, &entry, state, policy.as_deref(), opts, &base)
            .await;
        let outcome = match outcome {
            Err(e) if !base.audited.load(Ordering::Relaxed) => {
                Err(self.audit_refusal("tool", Some(name), e, false, Some(&call.arguments)))
            }
            other => other,
        };
        let result = match outcome {
            Ok(r) => self.after_hooks(&call, r, &base).await,
            Err(e) => self.failure_hooks(&call, e, &base).await?,
        };
        Ok(if opts.shape {
            shape_result(result, &self.server, self.max_result_bytes)
        } else {
            result
        })
    }

    /// Runs the before-hooks. `ask` records the first hook that asked
    /// (`Before::Ask`): an allow from policy then becomes an ask.
    async fn before_hooks(
        &self,
        call: &mut ToolCall,
        base: &LazyCtx<'_>,
        ask: &mut Option<String>,
    ) -> Result<Option<ToolResult>, CallError> {
        for hook in &self.hooks.before {
            if !hook.matcher.matches(&self.server, &call.name) {
                continue;
            }
            let HookFn::Before(f) = &hook.func else {
                continue;
            };
            let fut = f(call.clone(), ctx_for(base.get(), hook));
            match run_task(hook, self.hook_timeout, fut).await {
                Err(how) => return Err(CallError::hook_failed(&hook.id, how)),
                Ok(Before::Continue) => emit(hook, "cont"),
                Ok(Before::Rewrite(new)) => {
                    if !same_call(call, &new) {
                        return Err(bad_return(hook));
                    }
                    *call = new;
                    emit(hook, "rewrite");
                }
                Ok(Before::Ask { reason: _, rewrite }) => {
                    if let Some(new) = rewrite {
                        if !same_call(call, &new) {
                            return Err(bad_return(hook));
                        }
                        *call = new;
                    }
                    emit(hook, "ask");
                    ask.get_or_insert_with(|| hook.id.to_string());
                }
                Ok(Before::Deny(reason)) => return Err(hook_denied(hook, reason)),
                Ok(Before::Halt(result)) => {
                    emit(hook, "halt");
                    // Answered by the hook, nothing sent: its audit line.
                    base.audited.store(true, Ordering::Relaxed);
                    let digest = call.digest();
                    let record = super::AuditRecord::refused(
                        &self.server,
                        "tool",
                        Some(&call.name),
                        "hook",
                        "hook_halt",
                    )
                    .with_hook(Some(&*hook.id))
                    .with_digest(Some(&digest));
                    self.write_audit(&record)?;
                    return Ok(Some(result));
                }
                Ok(Before::Allow) => return Err(bad_return(hook)),
            }
        }
        Ok(None)
    }

    async fn govern_and_send(
        &self,
        call: &mut ToolCall,
        entry: &ToolEntry,
        state: ToolApproval,
        policy: Option<&Policy>,
        opts: &CallOptions,
        base: &LazyCtx<'_>,
    ) -> Result<ToolResult, CallError> {
        let mut hook_ask = None;
        if !self.hooks.before.is_empty() {
            if let Some(halted) = self.before_hooks(call, base, &mut hook_ask).await? {
                return Ok(halted);
            }
            // A hook's rewrite is held to the same bounds as the caller's.
            check_arguments(&call.arguments)?;
        }
        // Argument validation (and unsafe schemas) before policy.
        if self.validation.arguments {
            match &entry.input {
                SchemaState::Unsafe(why) => {
                    return Err(
                        CallError::new(ErrorKind::Protocol, ErrorReason::UnsafeSchema)
                            .with_detail(format!("inputSchema: {why}")),
                    )
                }
                SchemaState::Ready(v) => schema::validate(v, &call.arguments).map_err(|e| {
                    CallError::new(ErrorKind::Protocol, ErrorReason::InvalidArguments)
                        .with_detail(e)
                })?,
                SchemaState::Absent => {}
            }
        }
        if let (true, SchemaState::Unsafe(why)) = (self.validation.output, &entry.output) {
            return Err(
                CallError::new(ErrorKind::Protocol, ErrorReason::UnsafeSchema)
                    .with_detail(format!("outputSchema: {why}")),
            );
        }
        // A refusal by the policy step (no policy, the protected files, a
        // deny): its one audit line, then the error; nothing is sent.
        let refuse = |d: Decision| -> CallError {
            let audited = self.emit_decision(
                &base.audited,
                "tool",
                Some(&call.name),
                &d,
                Approved::NotAsked,
                Some(&call.arguments),
            );
            audited.err().unwrap_or_else(|| CallError::denied(d))
        };
        // Policy on the final arguments.
        let Some(policy) = policy else {
            return Err(refuse(Decision::no_policy()));
        };
        let taint: Vec<&str> = opts.taint.iter().map(String::as_str).collect();
        let mut request = Request::tool(&self.server, &call.name)
            .with_args(&call.arguments)
            .with_approval(state)
            .with_trusted_server(self.trusted)
            .with_taint(&taint)
            .with_links(if self.local_tool {
                crate::Links::ThisMachine
            } else {
                crate::Links::Off
            });
        if let Some(a) = entry.def.get("annotations") {
            request = request.with_annotations(a);
        }
        request = opts.apply(request);
        if self.approver.is_none() {
            request = request.without_approver();
        }
        // The fixed rule before the policy: no call writes the files this
        // pipeline enforces, whatever the policy says.
        if let Some(protected) = &self.protected {
            let reads_only = crate::eval::trusts(policy, &request)
                && entry
                    .def
                    .pointer("/annotations/readOnlyHint")
                    .and_then(Value::as_bool)
                    == Some(true);
            if !reads_only && protected.named_in(&call.arguments) {
                return Err(refuse(Decision::protected()));
            }
        }
        let mut decision = policy.decide(&request);
        if decision.decision == Verdict::Allow && hook_ask.is_some() {
            // A before-hook asked: what policy allows needs a person.
            decision.decision = Verdict::Ask;
            if self.approver.is_none() {
                decision.decision = Verdict::Deny;
                decision.reason = crate::Reason::NoApprover;
            }
        }
        let approved_digest = match decision.decision {
            Verdict::Deny => return Err(refuse(decision)),
            Verdict::Allow => {
                // Nothing is sent unless its audit line was written.
                self.emit_decision(
                    &base.audited,
                    "tool",
                    Some(&call.name),
                    &decision,
                    Approved::NotAsked,
                    Some(&call.arguments),
                )?;
                None
            }
            Verdict::Ask => Some(self.settle_ask(call, entry, decision, opts, base).await?),
        };
        if let Some(digest) = approved_digest {
            check_digest(&digest, &call.arguments)?;
        }
        // The call is kept for after and failure hooks; without any, its
        // arguments move into the request instead of being copied.
        let to_send = if self.hooks.after.is_empty() && self.hooks.failed.is_empty() {
            ToolCall {
                server: call.server.clone(),
                name: call.name.clone(),
                arguments: std::mem::take(&mut call.arguments),
                meta: call.meta.take(),
                call_id: call.call_id,
            }
        } else {
            call.clone()
        };
        let result = self.send(to_send, opts, base).await?;
        // A task-augmented call is answered with the task it made
        // (`CreateTaskResult`), not with the tool's output: there is no
        // `structuredContent` to check yet.
        let task = opts.params.as_ref().is_some_and(|p| p.contains_key("task"))
            && result.extra.contains_key("task");
        if self.validation.output && !result.is_error && !task {
            if let SchemaState::Ready(v) = &entry.output {
                let checked = match &result.structured_content {
                    Some(s) => schema::validate(v, s),
                    None => Err(
                        "the tool has an outputSchema but the result has no structuredContent"
                            .into(),
                    ),
                };
                checked.map_err(|e| {
                    CallError::new(ErrorKind::Protocol, ErrorReason::InvalidStructuredContent)
                        .with_detail(e)
                })?;
            }
        }
        Ok(result)
    }

    /// Settles an ask with a live grant or the approver; returns the digest
    /// of the arguments that were approved.
    async fn settle_ask(
        &self,
        call: &ToolCall,
        entry: &ToolEntry,
        decision: Decision,
        opts: &CallOptions,
        base: &LazyCtx<'_>,
    ) -> Result<String, CallError> {
        let digest = call.digest();
        let principal = opts.principal.as_deref();
        let key = entry
            .fingerprint
            .as_deref()
            .map(|fp| self.grant_key(principal, &call.name, fp));
        let tool = Some(call.name.as_str());
        if key.as_ref().is_some_and(|k| self.grants.is_live(k)) {
            self.emit_decision(
                &base.audited,
                "tool",
                tool,
                &decision,
                Approved::Grant,
                Some(&call.arguments),
            )?;
            return Ok(digest);
        }
        let Some(approver) = &self.approver else {
            // Unreachable through decide (no approver: never ask); closed anyway.
            self.emit_decision(
                &base.audited,
                "tool",
                tool,
                &decision,
                Approved::Failed,
                Some(&call.arguments),
            )?;
            return Err(CallError::new(
                ErrorKind::Denied,
                ErrorReason::Policy(crate::Reason::NoApprover),
            )
            .with_decision(decision));
        };
        let request = ApprovalRequest {
            server: self.server.to_string(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            digest: digest.clone(),
            fingerprint: entry.fingerprint.clone(),
            decision: decision.clone(),
            ctx: base.get().clone(),
        };
        let task = tokio::spawn(approver.ask(request));
        // The approver's task ends with the call's: a call given up (its
        // caller cancelled it) does not leave a person asked about it.
        let abort = AbortOnDrop(task.abort_handle());
        let answer = match tokio::time::timeout(self.ask_timeout, task).await {
            Err(_) => {
                abort.0.abort();
                Err(AskFailure::Timeout)
            }
            Ok(Err(_)) => Err(AskFailure::Panic),
            Ok(Ok(Err(_raised))) => Err(AskFailure::Error),
            Ok(Ok(Ok(a))) => Ok(a),
        };
        let denied = |reason, approved, detail: Option<String>| {
            if let Err(failed) = self.emit_decision(
                &base.audited,
                "tool",
                tool,
                &decision,
                approved,
                Some(&call.arguments),
            ) {
                return failed;
            }
            let mut e = CallError::new(ErrorKind::Denied, reason).with_decision(decision.clone());
            e.detail = detail;
            e
        };
        match answer {
            Ok(Approval::AllowOnce) => {
                self.emit_decision(
                    &base.audited,
                    "tool",
                    tool,
                    &decision,
                    Approved::Once,
                    Some(&call.arguments),
                )?;
                Ok(digest)
            }
            Ok(Approval::AllowAlways) => {
                if let Some(k) = key {
                    self.grants.record(k, self.grant_ttl);
                }
                self.emit_decision(
                    &base.audited,
                    "tool",
                    tool,
                    &decision,
                    Approved::Always,
                    Some(&call.arguments),
                )?;
                Ok(digest)
            }
            Ok(Approval::Deny(r)) => Err(denied(ErrorReason::AskDenied, Approved::Denied, Some(r))),
            Ok(Approval::DenyAndHalt(r)) => {
                Err(denied(ErrorReason::AskHalt, Approved::Halted, Some(r)))
            }
            Err(how) => Err(denied(ErrorReason::AskFailed(how), Approved::Failed, None)),
        }
    }

    async fn send(
        &self,
        call: ToolCall,
        opts: &CallOptions,
        base: &LazyCtx<'_>,
    ) -> Result<ToolResult, CallError> {
        let params = opts.params.clone().map(Arc::new);
        let around: Vec<Arc<Hook>> = self
            .hooks
            .around
            .iter()
            .filter(|h| h.matcher.matches(&self.server, &call.name))
            .cloned()
            .collect();
        if around.is_empty() {
            return send_direct(self.transport.clone(), call, params, opts.handle.as_ref()).await;
        }
        let chain = Arc::new(Chain {
            transport: self.transport.clone(),
            call,
            params,
            handle: opts.handle.clone(),
            hooks: around,
            base: base.get().clone(),
            timeout: self.send_timeout,
        });
        run_chain(chain, 0).await
    }

    async fn after_hooks(
        &self,
        call: &ToolCall,
        mut result: ToolResult,
        base: &LazyCtx<'_>,
    ) -> ToolResult {
        for hook in &self.hooks.after {
            if !hook.matcher.matches(&self.server, &call.name) {
                continue;
            }
            let HookFn::After(f) = &hook.func else {
                continue;
            };
            let fut = f(call.clone(), result.clone(), ctx_for(base.get(), hook));
            match run_task(hook, self.hook_timeout, fut).await {
                Ok(super::hooks::After::Continue) => emit(hook, "cont"),
                Ok(super::hooks::After::Replace(r)) => {
                    emit(hook, "rewrite");
                    result = r;
                }
                Err(_) if ignored(hook) => {}
                // Withheld: the raw result is dropped here, unlogged.
                Err(_) => return ToolResult::withheld(),
            }
        }
        result
    }

    async fn failure_hooks(
        &self,
        call: &ToolCall,
        error: CallError,
        base: &LazyCtx<'_>,
    ) -> Result<ToolResult, CallError> {
        for hook in &self.hooks.failed {
            if !hook.matcher.matches(&self.server, &call.name) {
                continue;
            }
            let HookFn::Failed(f) = &hook.func else {
                continue;
            };
            let fut = f(call.clone(), error.clone(), ctx_for(base.get(), hook));
            match run_task(hook, self.hook_timeout, fut).await {
                Ok(Failed::Continue) => emit(hook, "cont"),
                Ok(Failed::Recover(r)) => {
                    emit(hook, "recover");
                    return Ok(r);
                }
                Err(_) if ignored(hook) => {}
                Err(_) => return Err(error),
            }
        }
        Err(error)
    }

    /// Reads a resource: resource hooks, then policy (never asks), then
    /// the read.
    pub async fn read_resource(&self, uri: &str, opts: &CallOptions) -> Result<Value, CallError> {
        let started = Instant::now();
        let audited = AtomicBool::new(false);
        let out = match self.read_inner(uri, opts, &audited).await {
            Err(e) if !audited.load(Ordering::Relaxed) => {
                Err(self.audit_refusal("resource", Some(uri), e, false, None))
            }
            other => other,
        };
        // The URI is request data: telemetry leaves it out.
        emit_call(&self.server, "resource", None, started, &out);
        out
    }

    async fn read_inner(
        &self,
        uri: &str,
        opts: &CallOptions,
        audited: &AtomicBool,
    ) -> Result<Value, CallError> {
        let policy = self.policy_snapshot();
        let base = self.base_ctx(opts);
        for hook in &self.hooks.resource {
            if !hook.matcher.matches(&self.server, uri) {
                continue;
            }
            let HookFn::Resource(f) = &hook.func else {
                continue;
            };
            match run_task(
                hook,
                self.hook_timeout,
                f(uri.to_string(), ctx_for(&base, hook)),
            )
            .await
            {
                Err(how) => return Err(CallError::hook_failed(&hook.id, how)),
                Ok(Gate::Continue) => emit(hook, "cont"),
                Ok(Gate::Deny(r)) => return Err(hook_denied(hook, r)),
                Ok(Gate::Allow) => return Err(bad_return(hook)),
            }
        }
        let decision = match &policy {
            None => Decision::no_policy(),
            Some(p) => {
                let taint: Vec<&str> = opts.taint.iter().map(String::as_str).collect();
                let r = Request::resource(&self.server, uri)
                    .with_taint(&taint)
                    .without_approver();
                p.decide(&opts.apply(r))
            }
        };
        self.emit_decision(
            audited,
            "resource",
            Some(uri),
            &decision,
            Approved::NotAsked,
            None,
        )?;
        if decision.decision != Verdict::Allow {
            return Err(CallError::denied(decision));
        }
        // What is decided is what is sent: the URI the rules saw, never
        // the text that came. A read outside the policy's scope is not
        // decided on its URI and goes as it came.
        let sent: std::borrow::Cow<'_, str> = if decision.reason == crate::Reason::OutOfScope {
            uri.into()
        } else {
            match crate::uri::normalize(uri) {
                Ok(normal) => normal,
                // Unreachable (such a URI is `bad_uri`); closed anyway.
                Err(_) => {
                    return Err(CallError::denied(Decision::new(
                        Verdict::Deny,
                        crate::Source::Request,
                        crate::Reason::BadUri,
                    )))
                }
            }
        };
        if opts.params.as_ref().is_none_or(Map::is_empty)
            && opts.meta.is_none()
            && opts.handle.is_none()
        {
            return Ok(self.transport.read_resource(&sent).await?);
        }
        let mut own = Map::new();
        own.insert("uri".into(), Value::from(sent.as_ref()));
        if let Some(meta) = &opts.meta {
            own.insert("_meta".into(), meta.clone());
        }
        let params = with_params(own, opts.params.as_ref());
        let result = request(
            &*self.transport,
            "resources/read",
            params,
            opts.handle.as_ref(),
        )
        .await?;
        expect_object(result, "resources/read")
    }

    /// Gets a prompt: prompt hooks (which may rewrite the arguments), then
    /// policy (never asks), then the get.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Value>,
        opts: &CallOptions,
    ) -> Result<Value, CallError> {
        let started = Instant::now();
        let audited = AtomicBool::new(false);
        let digest_of = arguments.clone();
        let out = match self.prompt_inner(name, arguments, opts, &audited).await {
            Err(e) if !audited.load(Ordering::Relaxed) => {
                Err(self.audit_refusal("prompt", Some(name), e, false, digest_of.as_ref()))
            }
            other => other,
        };
        emit_call(&self.server, "prompt", Some(name), started, &out);
        out
    }

    async fn prompt_inner(
        &self,
        name: &str,
        mut arguments: Option<Value>,
        opts: &CallOptions,
        audited: &AtomicBool,
    ) -> Result<Value, CallError> {
        let policy = self.policy_snapshot();
        let base = self.base_ctx(opts);
        for hook in &self.hooks.prompt {
            if !hook.matcher.matches(&self.server, name) {
                continue;
            }
            let HookFn::Prompt(f) = &hook.func else {
                continue;
            };
            let fut = f(name.to_string(), arguments.clone(), ctx_for(&base, hook));
            match run_task(hook, self.hook_timeout, fut).await {
                Err(how) => return Err(CallError::hook_failed(&hook.id, how)),
                Ok(PromptGate::Continue) => emit(hook, "cont"),
                Ok(PromptGate::Rewrite(a)) => {
                    if a.as_ref().is_some_and(|v| !v.is_object()) {
                        return Err(bad_return(hook));
                    }
                    emit(hook, "rewrite");
                    arguments = a;
                }
                Ok(PromptGate::Deny(r)) => return Err(hook_denied(hook, r)),
                Ok(PromptGate::Allow) => return Err(bad_return(hook)),
            }
        }
        let decision = match &policy {
            None => Decision::no_policy(),
            Some(p) => {
                let taint: Vec<&str> = opts.taint.iter().map(String::as_str).collect();
                let mut r = Request::prompt(&self.server, name)
                    .with_taint(&taint)
                    .without_approver();
                if let Some(a) = &arguments {
                    r = r.with_args(a);
                }
                p.decide(&opts.apply(r))
            }
        };
        self.emit_decision(
            audited,
            "prompt",
            Some(name),
            &decision,
            Approved::NotAsked,
            arguments.as_ref(),
        )?;
        if decision.decision != Verdict::Allow {
            return Err(CallError::denied(decision));
        }
        if opts.params.as_ref().is_none_or(Map::is_empty)
            && opts.meta.is_none()
            && opts.handle.is_none()
        {
            return Ok(self.transport.get_prompt(name, arguments).await?);
        }
        let mut own = Map::new();
        own.insert("name".into(), Value::from(name));
        if let Some(args) = arguments {
            own.insert("arguments".into(), args);
        }
        if let Some(meta) = &opts.meta {
            own.insert("_meta".into(), meta.clone());
        }
        let params = with_params(own, opts.params.as_ref());
        let result = request(
            &*self.transport,
            "prompts/get",
            params,
            opts.handle.as_ref(),
        )
        .await?;
        expect_object(result, "prompts/get")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_digest_check_refuses_changed_arguments() {
        let approved = args_digest(&json!({"path": "/srv/a", "n": 1}));
        assert!(check_digest(&approved, &json!({"n": 1, "path": "/srv/a"})).is_ok());
        let e = check_digest(&approved, &json!({"path": "/etc/passwd", "n": 1})).unwrap_err();
        assert_eq!(
            (e.kind, e.reason),
            (ErrorKind::Hook, ErrorReason::ArgsChanged)
        );
    }
}
