//! Resource reads and prompt gets: their hooks, then the policy (which
//! never asks), then the request, with the URI the rules saw.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};

use super::call::{bad_return, hook_denied};
use super::error::CallError;
use super::hooks::{ctx_for, emit, run_task, Gate, HookFn, PromptGate};
use super::record::{emit_call, Audited};
use super::send::request;
use super::types::CallOptions;
use super::Pipeline;
use crate::enforce::Settled;
use crate::{Decision, Policy, Request, TargetKind, Verdict};

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
pub(super) fn expect_object(result: Value, method: &str) -> Result<Value, CallError> {
    if result.is_object() {
        Ok(result)
    } else {
        Err(
            crate::mcp::McpError::Protocol(format!("the result of {method} is not an object"))
                .into(),
        )
    }
}

impl Pipeline {
    /// Reads a resource: resource hooks, then policy (never asks), then
    /// the read.
    pub async fn read_resource(&self, uri: &str, opts: &CallOptions) -> Result<Value, CallError> {
        let started = Instant::now();
        // One snapshot: the policy that decides and the bundle it names.
        let (policy, bundle) = self.policy_snapshot_stamped();
        let audited = Audited::new(bundle);
        let out = match self.read_inner(uri, opts, &audited, policy).await {
            Err(e) if !audited.load(Ordering::Relaxed) => Err(self.refused(
                TargetKind::Resource,
                Some(uri),
                e,
                false,
                None,
                audited.bundle(),
            )),
            other => other,
        };
        // The URI is request data: telemetry leaves it out.
        emit_call(&self.server, TargetKind::Resource, None, started, &out);
        out
    }

    async fn read_inner(
        &self,
        uri: &str,
        opts: &CallOptions,
        audited: &Audited,
        policy: Option<Arc<Policy>>,
    ) -> Result<Value, CallError> {
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
        let outcome = self.decided(
            audited,
            TargetKind::Resource,
            Some(uri),
            &decision,
            Settled::NotAsked,
            None,
        )?;
        if decision.decision != Verdict::Allow {
            return Err(CallError::denied(decision).with_outcome(outcome));
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
        // One snapshot: the policy that decides and the bundle it names.
        let (policy, bundle) = self.policy_snapshot_stamped();
        let audited = Audited::new(bundle);
        let digest_of = arguments.clone();
        let out = match self
            .prompt_inner(name, arguments, opts, &audited, policy)
            .await
        {
            Err(e) if !audited.load(Ordering::Relaxed) => Err(self.refused(
                TargetKind::Prompt,
                Some(name),
                e,
                false,
                digest_of.as_ref(),
                audited.bundle(),
            )),
            other => other,
        };
        emit_call(&self.server, TargetKind::Prompt, Some(name), started, &out);
        out
    }

    async fn prompt_inner(
        &self,
        name: &str,
        mut arguments: Option<Value>,
        opts: &CallOptions,
        audited: &Audited,
        policy: Option<Arc<Policy>>,
    ) -> Result<Value, CallError> {
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
        let outcome = self.decided(
            audited,
            TargetKind::Prompt,
            Some(name),
            &decision,
            Settled::NotAsked,
            arguments.as_ref(),
        )?;
        if decision.decision != Verdict::Allow {
            return Err(CallError::denied(decision).with_outcome(outcome));
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
