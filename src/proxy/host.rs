//! What arrives from the host: each request on a task of its own (governed
//! or relayed under a new id), notifications relayed as they came (a
//! cancellation rewritten to the id the server knows), answers to the
//! proxy's own requests delivered.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::AsyncRead;

use super::answer::{self, call_answer, read_answer};
use super::{build_pipeline, Inflight, Shared};
use crate::mcp::framing::{FrameError, GrowingBufReader, LineReader};
use crate::mcp::jsonrpc::{codes, Id, Message, Notification, Request, Response};
use crate::mcp::{CallHandle, McpError, RpcError};
use crate::pipeline::shape::shape_relayed;
use crate::pipeline::{AuditRecord, By, CallError, CallOptions, Outcome, Pipeline, ToolResult};
use crate::{Source, TargetKind};

/// Reads the host until it closes its input.
pub(crate) async fn read<R: AsyncRead + Unpin>(shared: Arc<Shared>, input: R) {
    let mut lines = LineReader::new(
        GrowingBufReader::new(input, super::READ_BUFFER),
        shared.max_line_bytes,
    );
    loop {
        match lines.next_line().await {
            Ok(Some(line)) => on_line(&shared, line).await,
            Ok(None) => return,
            Err(FrameError::TooLong { max }) => {
                tracing::warn!(target: "mcppol::proxy", max, "the host sent a line over the bound: refused");
                shared
                    .host
                    .send_line(error_line(
                        codes::INVALID_REQUEST,
                        &format!("a line of more than {max} bytes"),
                    ))
                    .await;
            }
            Err(FrameError::Io(e)) => {
                tracing::warn!(target: "mcppol::proxy", error = %e, "reading the host failed");
                return;
            }
        }
    }
}

/// An error answer with a null id (for a message whose id is unknown).
fn error_line(code: i64, message: &str) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}
    }))
    .unwrap_or_default();
    line.push(b'\n');
    line
}

async fn on_line(shared: &Arc<Shared>, line: &[u8]) {
    // A notification the proxy only passes on is relayed with its params
    // as the bytes they were (see server.rs); a cancellation, and a
    // request sent without an id, take the full path below.
    let relayed = super::server::relayed_note_if(line, false, |method| {
        method.starts_with("notifications/") && method != "notifications/cancelled"
    });
    if let Some(out) = relayed {
        shared.server.send_line(out).await;
        return;
    }
    let message = match Message::parse(line) {
        Ok(m) => m,
        Err(e) => {
            // The line itself is not logged: it may carry arguments.
            tracing::warn!(target: "mcppol::proxy", error = %e, "the host sent a line that is not JSON-RPC");
            let code = match e {
                crate::mcp::jsonrpc::MessageError::NotJson => codes::PARSE_ERROR,
                _ => codes::INVALID_REQUEST,
            };
            shared
                .host
                .send_line(error_line(code, &e.to_string()))
                .await;
            return;
        }
    };
    match message {
        Message::Response(Response { id, outcome }) => {
            if !shared.host.resolve(&id, outcome) {
                tracing::debug!(target: "mcppol::proxy", %id, "an answer from the host to no pending request");
            }
        }
        Message::Notification(n) if n.method == "notifications/cancelled" => {
            cancel(shared, n).await
        }
        // Every MCP notification is `notifications/...`. Anything else sent
        // without an id (`tools/call` among them) would reach the server
        // ungoverned, if the server acted on it: it is dropped.
        Message::Notification(n) if !n.method.starts_with("notifications/") => {
            tracing::warn!(target: "mcppol::proxy", method = %n.method, "the host sent a request without an id: dropped, it is not governed");
            refused_unserved(shared, &n.method, n.params.as_ref(), "not_a_request");
        }
        // Written again from what was read, never the line as it came: a
        // line with a key twice (`"method"` of `tools/call` and of a
        // notification) reads as the notification here and could read as
        // the call to a server whose JSON parser keeps the first.
        Message::Notification(n) => {
            // What waits for room in the server's queue is the line, not
            // the parsed message.
            let line = Message::Notification(n).to_line();
            shared.server.send_line(line).await;
        }
        Message::Request(r) => start(shared, r).await,
    }
}

/// The host cancelled one of its requests: stop serving it and tell the
/// server, under the id the server knows.
async fn cancel(shared: &Shared, n: Notification) {
    let Some(params) = n.params.as_ref() else {
        return;
    };
    let Ok(id) =
        serde_json::from_value::<Id>(params.get("requestId").cloned().unwrap_or(Value::Null))
    else {
        return;
    };
    let entry = Shared::lock(&shared.inflight).remove(&id);
    let Some(entry) = entry else {
        return;
    };
    // The requests sent for it are taken before its task stops, which
    // would take them off the handle as answered.
    let cancelled = entry.handle.cancel_requests(params.clone());
    entry.abort.abort();
    cancelled.tell().await;
}

/// Numbers the host's requests in flight (`Inflight::seq`).
static SEQ: AtomicU64 = AtomicU64::new(0);

async fn start(shared: &Arc<Shared>, request: Request) {
    let handle = CallHandle::new();
    let refusal = {
        let inflight = Shared::lock(&shared.inflight);
        if inflight.contains_key(&request.id) {
            // Its answer could not be told from the other's, and a
            // cancellation could not say which: refused, and the one in
            // flight goes on.
            Some(RpcError::new(
                codes::INVALID_REQUEST,
                format!(
                    "mcppol: the id {} is already used by a request in flight",
                    request.id
                ),
            ))
        } else if inflight.len() >= shared.max_pending {
            Some(RpcError::new(
                codes::INTERNAL_ERROR,
                format!(
                    "mcppol: more than {} requests in flight",
                    shared.max_pending
                ),
            ))
        } else {
            None
        }
    };
    if let Some(e) = refusal {
        let reason = if e.code == codes::INVALID_REQUEST {
            "duplicate_id"
        } else {
            "too_many_pending"
        };
        refused_unserved(shared, &request.method, request.params.as_ref(), reason);
        shared.host.respond(request.id, Err(e)).await;
        return;
    }
    let id = request.id.clone();
    let task_shared = shared.clone();
    let task_handle = handle.clone();
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    // The entry is made before the task can end: it takes the same lock
    // to remove it.
    let mut inflight = Shared::lock(&shared.inflight);
    // `serve` is boxed: its future holds every step of the pipeline, and
    // a task's future is moved a few times while it is spawned (a third
    // of the proxy's copying, by perf); a box moves as one pointer.
    let task = tokio::spawn(async move {
        let id = request.id.clone();
        #[cfg(feature = "otel")]
        let (outcome, spans) = {
            let meta = || {
                Some(crate::otel::RequestMeta {
                    method: crate::otel::governed(&request.method)?,
                    request_id: request.id.to_string(),
                    transport: "pipe",
                    session_id: None,
                    protocol_version: Some(
                        crate::mcp::Transport::server(&*task_shared.upstream)
                            .protocol_version
                            .as_str()
                            .into(),
                    ),
                })
            };
            // Made only while an exporter runs (the request moves below).
            let meta = crate::otel::active().then(meta).flatten();
            crate::otel::traced(
                meta,
                |out: &Result<Value, RpcError>| out.as_ref().err().map(|e| e.code.to_string()),
                Box::pin(serve(&task_shared, request, &task_handle)),
            )
            .await
        };
        #[cfg(not(feature = "otel"))]
        let outcome = Box::pin(serve(&task_shared, request, &task_handle)).await;
        // Answered only while the entry is this request's: a cancellation
        // (no answer) or the session's end (answered there) took it
        // otherwise.
        let mine = {
            let mut inflight = Shared::lock(&task_shared.inflight);
            match inflight.get(&id) {
                Some(entry) if entry.seq == seq => inflight.remove(&id).is_some(),
                _ => false,
            }
        };
        if mine {
            task_shared.host.respond(id, outcome).await;
        }
        // After the answer is handed to the writer: one push onto the
        // recorder's queue, which wakes no thread (the spans are made on
        // the recorder's next round).
        #[cfg(feature = "otel")]
        if let Some(spans) = spans {
            spans.emit();
        }
    });
    inflight.insert(
        id,
        Inflight {
            abort: task.abort_handle(),
            handle,
            seq,
        },
    );
}

/// The session is over: every host request still in flight is stopped
/// and answered with an error, so each has its answer before the host's
/// output is closed.
pub(crate) async fn give_up(shared: &Shared) {
    let left: Vec<(Id, Inflight)> = Shared::lock(&shared.inflight).drain().collect();
    for (id, entry) in left {
        entry.abort.abort();
        let e = RpcError::new(
            codes::INTERNAL_ERROR,
            "mcppol: the session ended before this request was answered",
        );
        shared.host.respond(id, Err(e)).await;
    }
}

fn pipeline(shared: &Shared) -> Result<Arc<Pipeline>, RpcError> {
    shared.pipeline.get().cloned().ok_or_else(|| {
        RpcError::new(
            codes::INVALID_REQUEST,
            "mcppol: the session is not initialized (send `initialize` first)",
        )
    })
}

fn params_of(request: &Request) -> &Value {
    static EMPTY: Value = Value::Null;
    request.params.as_ref().unwrap_or(&EMPTY)
}

pub(crate) fn str_param<'a>(
    params: &'a Value,
    key: &str,
    method: &str,
) -> Result<&'a str, RpcError> {
    params.get(key).and_then(Value::as_str).ok_or_else(|| {
        RpcError::new(
            codes::INVALID_PARAMS,
            format!("{method}: `{key}` is missing or not a string"),
        )
    })
}

/// The request's options: its `_meta`, and every other param but those
/// the pipeline writes itself (`own`), which go to the server as they came
/// (a task-augmented call's `task`, what a newer protocol adds).
pub(crate) fn options(params: &Value, own: &[&str]) -> CallOptions {
    let mut opts = CallOptions::default();
    if let Some(meta) = params.get("_meta") {
        opts = opts.meta(meta.clone());
    }
    if let Value::Object(all) = params {
        let rest: serde_json::Map<String, Value> = all
            .iter()
            .filter(|(k, _)| k.as_str() != "_meta" && !own.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !rest.is_empty() {
            opts = opts.params(rest);
        }
    }
    opts
}

/// One host request, governed or relayed; `handle` reaches every request
/// sent the server for it.
async fn serve(
    shared: &Arc<Shared>,
    mut request: Request,
    handle: &CallHandle,
) -> Result<Value, RpcError> {
    // A call's arguments move out of the parsed request into the pipeline
    // (and on to the server): never copied on the way through.
    let arguments = if request.method == "tools/call" {
        request
            .params
            .as_mut()
            .and_then(Value::as_object_mut)
            .and_then(|params| params.shift_remove("arguments"))
    } else {
        None
    };
    let params = params_of(&request);
    match request.method.as_str() {
        "initialize" => {
            let _ = shared
                .host_caps
                .set(params.get("capabilities").cloned().unwrap_or(json!({})));
            let result = relay(shared, &request.method, request.params.clone(), handle).await?;
            shared.upstream.initialized(&result);
            build_pipeline(shared);
            Ok(result)
        }
        "tools/list" => {
            let p = pipeline(shared)?;
            let tools = p
                .list_tools(&options(params, &["cursor"]))
                .await
                .map_err(answer::other_error)?;
            Ok(json!({ "tools": tools }))
        }
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str);
            let refused = |reason| refused_request(shared, TargetKind::Tool, name, reason);
            let p = pipeline(shared).inspect_err(|_| refused("not_initialized"))?;
            let name = str_param(params, "name", "tools/call")
                .inspect_err(|_| refused("invalid_params"))?;
            let args = arguments.unwrap_or_else(|| json!({}));
            if !args.is_object() {
                refused("invalid_arguments");
                return Err(RpcError::new(
                    codes::INVALID_PARAMS,
                    "tools/call: `arguments` is not an object",
                ));
            }
            // The pipeline writes the call's one audit line, whatever
            // refuses it, before anything is sent.
            let opts = options(params, &["name", "arguments"]).handle(handle.clone());
            let out = p.call_tool(name, args, &opts).await;
            let raw = handle.take_kept();
            let mut answer = match out {
                // The server's result with every key it sent, unless a hook
                // replaced it.
                Ok(result) => match raw {
                    Some(raw) if same_result(&result, &raw) => raw,
                    _ => result.to_value(),
                },
                Err(e) => call_answer(&shared.server_id, name, Err(e))?,
            };
            if let Some(cap) = shared.shape {
                let done = shape_relayed(&mut answer, cap, || p.output_schema(name));
                if !done.flags.is_empty() || done.withheld.is_some() {
                    let flags: Vec<&str> = done.flags.iter().map(|f| f.as_str()).collect();
                    tracing::info!(
                        target: "mcppol::shape",
                        server = %shared.server_id,
                        tool = name,
                        flags = %flags.join(","),
                        withheld = done.withheld.is_some(),
                        "a result was shaped for the model"
                    );
                }
            }
            Ok(answer)
        }
        "resources/read" => {
            let uri = params.get("uri").and_then(Value::as_str);
            let refused = |reason| refused_request(shared, TargetKind::Resource, uri, reason);
            let p = pipeline(shared).inspect_err(|_| refused("not_initialized"))?;
            let uri = str_param(params, "uri", "resources/read")
                .inspect_err(|_| refused("invalid_params"))?;
            read_answer(
                &shared.server_id,
                TargetKind::Resource,
                uri,
                p.read_resource(uri, &options(params, &["uri"]).handle(handle.clone()))
                    .await,
            )
        }
        "prompts/get" => {
            let name = params.get("name").and_then(Value::as_str);
            let refused = |reason| refused_request(shared, TargetKind::Prompt, name, reason);
            let p = pipeline(shared).inspect_err(|_| refused("not_initialized"))?;
            let name = str_param(params, "name", "prompts/get")
                .inspect_err(|_| refused("invalid_params"))?;
            let args = params.get("arguments").cloned();
            read_answer(
                &shared.server_id,
                TargetKind::Prompt,
                name,
                p.get_prompt(
                    name,
                    args,
                    &options(params, &["name", "arguments"]).handle(handle.clone()),
                )
                .await,
            )
        }
        method => relay(shared, method, request.params.clone(), handle).await,
    }
}

/// Whether the pipeline's result is the server's, unchanged (no hook
/// replaced it): then the server's own object is relayed, every key kept.
pub(crate) fn same_result(result: &ToolResult, raw: &Value) -> bool {
    let Some(o) = raw.as_object() else {
        return false;
    };
    let content = match o.get("content") {
        None | Some(Value::Null) => result.content.is_empty(),
        Some(Value::Array(c)) => *c == result.content,
        Some(_) => false,
    };
    content
        && o.get("structuredContent") == result.structured_content.as_ref()
        && o.get("isError").and_then(Value::as_bool).unwrap_or(false) == result.is_error
        && o.get("_meta") == result.meta.as_ref()
        && result.provenance.is_none()
}

/// The audit line of a governed request refused before the pipeline saw
/// it (no session yet, a parameter missing or of the wrong type): the
/// mapping of its outcome, refused by the request itself. The request is
/// refused whether or not the line is written.
fn refused_request(shared: &Shared, kind: TargetKind, name: Option<&str>, reason: &'static str) {
    let outcome = Outcome::refused(
        shared.server_id.as_str().into(),
        kind,
        name,
        By::Stage(Source::Request),
        reason,
    );
    let record = AuditRecord::of(&outcome);
    #[cfg(feature = "otel")]
    crate::otel::note(&record);
    if let Some(audit) = &shared.audit {
        let _ = audit.write_record(&record);
    }
}

/// The audit line of a governed request that is refused before it is
/// served (its id in use, too many in flight, sent without an id).
fn refused_unserved(shared: &Shared, method: &str, params: Option<&Value>, reason: &'static str) {
    let (kind, key) = match method {
        "tools/call" => (TargetKind::Tool, "name"),
        "resources/read" => (TargetKind::Resource, "uri"),
        "prompts/get" => (TargetKind::Prompt, "name"),
        _ => return,
    };
    let name = params.and_then(|p| p.get(key)).and_then(Value::as_str);
    refused_request(shared, kind, name, reason);
}

/// Relays a host request to the server under a new id and gives back the
/// server's answer, or a timeout error past `--call-timeout` (the server
/// is then told, as for a governed call), so that no request holds a place
/// of `--max-pending` for ever.
async fn relay(
    shared: &Shared,
    method: &str,
    params: Option<Value>,
    handle: &CallHandle,
) -> Result<Value, RpcError> {
    shared
        .upstream
        .send(method, params, Some(handle))
        .await
        .map_err(closed)
}

/// A failed relay as the answer to the side that asked: the other side's
/// own error as it came; the side gone, or no answer in time, in the
/// proxy's words.
pub(crate) fn closed(e: McpError) -> RpcError {
    match e {
        McpError::Rpc(rpc) => rpc,
        McpError::Transport(why) | McpError::Protocol(why) => {
            RpcError::new(codes::INTERNAL_ERROR, format!("mcppol: {why}"))
        }
        timeout => answer::other_error(CallError::from(timeout)),
    }
}
