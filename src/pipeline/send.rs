//! The send of an allowed call, through the around hooks (each in its own
//! task under its deadline), and what follows it: after-hooks on a result,
//! failure hooks on an error.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::error::CallError;
use super::hooks::{ctx_for, emit, ignored, run_task, Failed, Hook, HookFn, Next};
use super::reads::expect_object;
use super::record::LazyCtx;
use super::types::{CallOptions, HookCtx, ToolCall, ToolResult};
use super::Pipeline;
use crate::mcp::{BoxFuture, CallHandle, Transport};

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
pub(super) async fn request(
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

/// Aborts a task when dropped.
pub(super) struct AbortOnDrop(pub(super) tokio::task::AbortHandle);

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
            return Err(super::call::bad_return(&hook));
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

impl Pipeline {
    pub(super) async fn send(
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

    pub(super) async fn after_hooks(
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

    pub(super) async fn failure_hooks(
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
}
