//! What arrives from the host: each request served on a task of its own
//! (bounded by `--max-pending`, its id unique while in flight), a
//! cancellation passed on to the server serving it, answers to the
//! gateway's own requests (an elicitation, a server's `roots/list`)
//! delivered. The host speaks to the gateway, never to a server directly:
//! nothing it sends is relayed ungoverned.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncRead, BufReader};

use super::{requests, Shared};
use crate::mcp::framing::{FrameError, LineReader};
use crate::mcp::jsonrpc::{codes, Id, Message, MessageError, Notification, Request, Response};
use crate::mcp::{CallHandle, RpcError, Transport};

/// A host request in flight.
pub(crate) struct Inflight {
    abort: tokio::task::AbortHandle,
    handle: CallHandle,
    /// This request's own number: its task answers only while its entry is
    /// still the one under its id.
    seq: u64,
}

/// Reads the host until it closes its input.
pub(crate) async fn read<R: AsyncRead + Unpin>(gw: Arc<Shared>, input: R) {
    let mut lines = LineReader::new(BufReader::new(input), gw.max_line_bytes);
    loop {
        match lines.next_line().await {
            Ok(Some(line)) => on_line(&gw, line).await,
            Ok(None) => return,
            Err(FrameError::TooLong { max }) => {
                tracing::warn!(target: "mcppol::gateway", max, "the host sent a line over the bound: refused");
                let line = error_line(
                    codes::INVALID_REQUEST,
                    &format!("a line of more than {max} bytes"),
                );
                gw.host.send_line(line).await;
            }
            Err(FrameError::Io(e)) => {
                tracing::warn!(target: "mcppol::gateway", error = %e, "reading the host failed");
                return;
            }
        }
    }
}

async fn on_line(gw: &Arc<Shared>, line: &[u8]) {
    let message = match Message::parse(line) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(target: "mcppol::gateway", error = %e, "the host sent a line that is not JSON-RPC");
            let code = match e {
                MessageError::NotJson => codes::PARSE_ERROR,
                _ => codes::INVALID_REQUEST,
            };
            gw.host.send_line(error_line(code, &e.to_string())).await;
            return;
        }
    };
    on_message(gw, message).await;
}

/// One message from the host, read (a line of stdin) or handed over (an
/// HTTP POST's body, parsed once there).
pub(crate) async fn on_message(gw: &Arc<Shared>, message: Message) {
    match message {
        Message::Response(Response { id, outcome }) => {
            if !gw.host.resolve(&id, outcome) {
                tracing::debug!(target: "mcppol::gateway", %id, "an answer from the host to no pending request");
            }
        }
        Message::Notification(n) => on_notification(gw, n).await,
        Message::Request(r) => start(gw, r),
    }
}

async fn on_notification(gw: &Arc<Shared>, n: Notification) {
    match n.method.as_str() {
        "notifications/cancelled" => cancel(gw, n.params.as_ref()).await,
        // Each server asks the host for its roots again (through the
        // gateway, which pins them).
        "notifications/roots/list_changed" => {
            for up in &gw.upstreams {
                if let Ok(live) = up.live() {
                    let _ = live.transport.notify(&n.method, None).await;
                }
            }
        }
        // `initialized` and the rest: nothing for the gateway to do. A
        // request sent without an id is not served (it would be
        // ungoverned, and it cannot be answered).
        method if !method.starts_with("notifications/") => {
            tracing::warn!(target: "mcppol::gateway", method, "the host sent a request without an id: dropped");
        }
        _ => {}
    }
}

/// The host cancelled one of its requests: its task stops, and the server
/// serving it is told under the id it knows.
async fn cancel(gw: &Shared, params: Option<&Value>) {
    let Some(params) = params else {
        return;
    };
    let Ok(id) =
        serde_json::from_value::<Id>(params.get("requestId").cloned().unwrap_or(Value::Null))
    else {
        return;
    };
    let Some(entry) = Shared::lock(&gw.inflight).remove(&id) else {
        return;
    };
    let cancelled = entry.handle.cancel_requests(params.clone());
    entry.abort.abort();
    cancelled.tell().await;
}

static SEQ: AtomicU64 = AtomicU64::new(0);

fn start(gw: &Arc<Shared>, request: Request) {
    let mut inflight = Shared::lock(&gw.inflight);
    let refusal = if inflight.contains_key(&request.id) {
        Some(RpcError::new(
            codes::INVALID_REQUEST,
            format!(
                "mcppol: the id {} is already used by a request in flight",
                request.id
            ),
        ))
    } else if inflight.len() >= gw.max_pending {
        Some(RpcError::new(
            codes::INTERNAL_ERROR,
            format!("mcppol: more than {} requests in flight", gw.max_pending),
        ))
    } else {
        None
    };
    if let Some(e) = refusal {
        drop(inflight);
        let reason = if e.code == codes::INVALID_REQUEST {
            "duplicate_id"
        } else {
            "too_many_pending"
        };
        requests::refused_unserved(gw, &request.method, request.params.as_ref(), reason);
        let host = gw.host.clone();
        tokio::spawn(async move { host.respond(request.id, Err(e)).await });
        return;
    }
    let handle = CallHandle::new();
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let id = request.id.clone();
    let (task_gw, task_handle) = (gw.clone(), handle.clone());
    let task = tokio::spawn(async move {
        let id = request.id.clone();
        #[cfg(feature = "otel")]
        let (outcome, spans) = {
            let meta = || {
                Some(crate::otel::RequestMeta {
                    method: crate::otel::governed(&request.method)?,
                    request_id: request.id.to_string(),
                    transport: if task_gw.session.is_some() {
                        "tcp"
                    } else {
                        "pipe"
                    },
                    session_id: task_gw.session.as_deref().map(crate::otel::session_digest),
                    protocol_version: task_gw.protocol.get().cloned(),
                })
            };
            // Made only while an exporter runs (the request moves below).
            let meta = crate::otel::active().then(meta).flatten();
            crate::otel::traced(
                meta,
                |out: &Result<Value, RpcError>| out.as_ref().err().map(|e| e.code.to_string()),
                requests::serve(&task_gw, request, &task_handle),
            )
            .await
        };
        #[cfg(not(feature = "otel"))]
        let outcome = requests::serve(&task_gw, request, &task_handle).await;
        let mine = {
            let mut inflight = Shared::lock(&task_gw.inflight);
            match inflight.get(&id) {
                Some(entry) if entry.seq == seq => inflight.remove(&id).is_some(),
                _ => false,
            }
        };
        if mine {
            task_gw.host.respond(id, outcome).await;
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

/// The session is over: every request still in flight is stopped and
/// answered with an error.
pub(crate) async fn give_up(gw: &Shared) {
    let left: Vec<(Id, Inflight)> = Shared::lock(&gw.inflight).drain().collect();
    for (id, entry) in left {
        entry.abort.abort();
        let e = RpcError::new(
            codes::INTERNAL_ERROR,
            "mcppol: the session ended before this request was answered",
        );
        gw.host.respond(id, Err(e)).await;
    }
}

/// The empty params of a request sent without any.
pub(crate) fn params_of(request: &Request) -> &Value {
    static EMPTY: Value = Value::Null;
    request.params.as_ref().unwrap_or(&EMPTY)
}

/// The answer to a request the gateway does not serve.
pub(crate) fn not_found(method: &str) -> RpcError {
    RpcError::new(
        codes::METHOD_NOT_FOUND,
        format!("mcppol gateway: no method `{method}`"),
    )
}

/// An error answer with a null id (for a line whose id is unknown).
fn error_line(code: i64, message: &str) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}
    }))
    .unwrap_or_default();
    line.push(b'\n');
    line
}
