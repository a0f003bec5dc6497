//! A tool call through the whole pipeline: resolve, visibility, the
//! argument bounds, before-hooks, validation, the protected files, the
//! policy, the ask (a grant, else the approver), the digest check, then
//! the send and what follows it (send.rs). Every refusal on the way ends
//! in the request's one outcome (record.rs).

use std::sync::atomic::Ordering;
use std::time::Instant;

use serde_json::Value;

use super::approval::{Approval, ApprovalRequest};
use super::error::{AskFailure, CallError, ErrorKind, ErrorReason, HookFailure};
use super::hooks::{ctx_for, emit, run_task, Before, Hook, HookFn};
use super::record::{emit_call, LazyCtx};
use super::schema::{self, SchemaState};
use super::send::AbortOnDrop;
use super::shape::shape_result;
use super::types::{args_digest, CallOptions, ToolCall, ToolResult};
use super::{Pipeline, ToolEntry};
use crate::enforce::{By, Outcome, Settled};
use crate::fingerprint::ToolApproval;
use crate::{Decision, Policy, Request, TargetKind, Verdict};

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

pub(super) fn bad_return(hook: &Hook) -> CallError {
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

pub(super) fn hook_denied(hook: &Hook, reason: String) -> CallError {
    emit(hook, "deny");
    CallError::new(ErrorKind::Denied, ErrorReason::HookDenied)
        .with_hook(&hook.id)
        .with_detail(reason)
}

impl Pipeline {
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
        emit_call(&self.server, TargetKind::Tool, Some(name), started, &out);
        out
    }

    async fn call_inner(
        &self,
        name: &str,
        arguments: Value,
        opts: &CallOptions,
    ) -> Result<ToolResult, CallError> {
        // One policy snapshot for the whole call, and the bundle it came
        // from, which the call's record names.
        let (policy, bundle) = self.policy_snapshot_stamped();
        // Refused before policy: the one audit line says by what.
        let refused = |e: CallError, hidden: bool, args: &Value| {
            self.refused(
                TargetKind::Tool,
                Some(name),
                e,
                hidden,
                Some(args),
                bundle.as_deref(),
            )
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
        let state = self
            .approval_state(name, &entry, opts.principal.as_deref())
            .await;
        let base = LazyCtx::new(self, opts, bundle.clone());
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
            Err(e) if !base.audited.load(Ordering::Relaxed) => Err(self.refused(
                TargetKind::Tool,
                Some(name),
                e,
                false,
                Some(&call.arguments),
                base.audited.bundle(),
            )),
            other => other,
        };
        // The hooks' steps are boxed, and skipped without hooks: a call's
        // future holds only the steps every call takes (64 calls in flight
        // hold 64 of them).
        let result = match outcome {
            Ok(r) if self.hooks.after.is_empty() => r,
            Ok(r) => Box::pin(self.after_hooks(&call, r, &base)).await,
            Err(e) if self.hooks.failed.is_empty() => return Err(e),
            Err(e) => Box::pin(self.failure_hooks(&call, e, &base)).await?,
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
                    // Answered by the hook, nothing sent: its outcome.
                    base.audited.store(true, Ordering::Relaxed);
                    let outcome = Outcome::refused(
                        self.server.clone(),
                        TargetKind::Tool,
                        Some(&call.name),
                        By::Hook,
                        "hook_halt",
                    )
                    .with_hook(Some(&hook.id));
                    self.record(outcome, Some(&call.arguments), base.audited.bundle())?;
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
            // Boxed, as every step that not every call takes.
            if let Some(halted) = Box::pin(self.before_hooks(call, base, &mut hook_ask)).await? {
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
            match self.decided(
                &base.audited,
                TargetKind::Tool,
                Some(&call.name),
                &d,
                Settled::NotAsked,
                Some(&call.arguments),
            ) {
                Ok(outcome) => CallError::denied(d).with_outcome(outcome),
                Err(failed) => failed,
            }
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
        // Budgets: after deny, before everything else; only a final allow
        // takes from them (an ask takes when it is settled to allow).
        let caller = crate::budget::Caller {
            principal: opts.principal.as_deref(),
            session: opts.session.as_deref(),
        };
        let charges = crate::budget::Charges::of(
            policy,
            &self.server,
            &call.name,
            caller,
            crate::budget::now_seconds(),
        );
        if !charges.is_empty() {
            let stage = crate::budget::stage_of(&decision);
            decision = Box::pin(charges.apply(&*self.budgets, decision, stage)).await;
        }
        let approved_digest = match decision.decision {
            Verdict::Deny => return Err(refuse(decision)),
            Verdict::Allow => {
                // Nothing is sent unless its audit line was written.
                self.decided(
                    &base.audited,
                    TargetKind::Tool,
                    Some(&call.name),
                    &decision,
                    Settled::NotAsked,
                    Some(&call.arguments),
                )?;
                None
            }
            Verdict::Ask => {
                Some(Box::pin(self.settle_ask(call, entry, decision, &charges, opts, base)).await?)
            }
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
        charges: &crate::budget::Charges,
        opts: &CallOptions,
        base: &LazyCtx<'_>,
    ) -> Result<String, CallError> {
        let digest = call.digest();
        // An ask settled to allow takes from the call's budgets, at the
        // moment the allow is final: refused (and audited as the budget's
        // deny) when one was spent meanwhile.
        let spent = |charges: &crate::budget::Charges| {
            let budgets = self.budgets.clone();
            let charges = charges.clone();
            async move {
                if charges.is_empty() {
                    return None;
                }
                charges.refusal(budgets.take(&charges.charges).await)
            }
        };
        let over_budget = |refusal: Decision| -> CallError {
            match self.decided(
                &base.audited,
                TargetKind::Tool,
                Some(&call.name),
                &refusal,
                Settled::NotAsked,
                Some(&call.arguments),
            ) {
                Ok(outcome) => CallError::denied(refusal).with_outcome(outcome),
                Err(failed) => failed,
            }
        };
        let principal = opts.principal.as_deref();
        let key = entry
            .fingerprint
            .as_deref()
            .map(|fp| self.grant_key(principal, &call.name, fp));
        let tool = Some(call.name.as_str());
        let granted = match &key {
            Some(k) => super::approval::is_live_or_not(self.grants.as_ref(), k).await,
            None => false,
        };
        if granted {
            if let Some(refusal) = spent(charges).await {
                return Err(over_budget(refusal));
            }
            self.decided(
                &base.audited,
                TargetKind::Tool,
                tool,
                &decision,
                Settled::Grant,
                Some(&call.arguments),
            )?;
            return Ok(digest);
        }
        let Some(approver) = &self.approver else {
            // Unreachable through decide (no approver: never ask); closed anyway.
            let outcome = self.decided(
                &base.audited,
                TargetKind::Tool,
                tool,
                &decision,
                Settled::Failed,
                Some(&call.arguments),
            )?;
            return Err(CallError::new(
                ErrorKind::Denied,
                ErrorReason::Policy(crate::Reason::NoApprover),
            )
            .with_decision(decision)
            .with_outcome(outcome));
        };
        let request = ApprovalRequest {
            server: self.server.to_string(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            digest: digest.clone(),
            fingerprint: entry.fingerprint.clone(),
            decision: decision.clone(),
            ctx: base.get().clone(),
            handle: opts.handle.clone(),
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
        let denied = |reason, settled, detail: Option<String>| {
            let outcome = match self.decided(
                &base.audited,
                TargetKind::Tool,
                tool,
                &decision,
                settled,
                Some(&call.arguments),
            ) {
                Ok(outcome) => outcome,
                Err(failed) => return failed,
            };
            let mut e = CallError::new(ErrorKind::Denied, reason)
                .with_decision(decision.clone())
                .with_outcome(outcome);
            e.detail = detail;
            e
        };
        match answer {
            Ok(Approval::AllowOnce) => {
                if let Some(refusal) = spent(charges).await {
                    return Err(over_budget(refusal));
                }
                self.decided(
                    &base.audited,
                    TargetKind::Tool,
                    tool,
                    &decision,
                    Settled::Once,
                    Some(&call.arguments),
                )?;
                Ok(digest)
            }
            Ok(Approval::AllowAlways) => {
                // The person's grant stands even when this call is over
                // its budget: it settles later asks, not budgets.
                if let Some(k) = key {
                    super::approval::record_or_warn(self.grants.as_ref(), k, self.grant_ttl).await;
                }
                if let Some(refusal) = spent(charges).await {
                    return Err(over_budget(refusal));
                }
                self.decided(
                    &base.audited,
                    TargetKind::Tool,
                    tool,
                    &decision,
                    Settled::Always,
                    Some(&call.arguments),
                )?;
                Ok(digest)
            }
            Ok(Approval::Deny(r)) => Err(denied(ErrorReason::AskDenied, Settled::Denied, Some(r))),
            Ok(Approval::DenyAndHalt(r)) => {
                Err(denied(ErrorReason::AskHalt, Settled::Halted, Some(r)))
            }
            Err(how) => Err(denied(ErrorReason::AskFailed(how), Settled::Failed, None)),
        }
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
