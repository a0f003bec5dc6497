//! An ask put to a stateless (2026-07-28) host: it cannot be sent a
//! request of the gateway's own, so the call is answered with an
//! `input_required` result (MCP 2026-07-28 "Multi Round-Trip Requests")
//! holding the elicitation, and the host calls again with the person's
//! answer in `inputResponses` and the `requestState` it was given.
//!
//! Meanwhile the call itself waits in the pipeline, as an ask to an older
//! host waits for its `elicitation/create` answer (under the pipeline's
//! ask deadline: a host that never calls again gets `ask_failed`). The
//! `requestState` is 128 random bits naming the waiting call inside this
//! gateway session, which is its principal's: another principal cannot
//! reach it, and it is used once. The retry must repeat the call it
//! answers (the same name and arguments), so an answer given for one call
//! never settles another.
//!
//! The ask goes to the host only when that request declared the
//! `elicitation` capability in its `_meta`; otherwise it fails
//! (`ask_failed`), as an ask nobody can be asked does.
//!
//! A 2026-07-28 server's own `input_required` (`server_input.rs`) is put
//! to the host the same way: its input requests in the gateway's
//! `input_required` result, the host's answers back to the waiting call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::{requests, stateless, Shared};
use crate::mcp::jsonrpc::codes;
use crate::mcp::{BoxFuture, CallHandle, RpcError};
use crate::pipeline::{Approval, ApprovalRequest, Approver};
use crate::proxy::approve;

/// The key of the gateway's one input request.
const APPROVAL_KEY: &str = "mcppol_approval";

/// The most calls of one session waiting for the host to call again.
const MAX_WAITING: usize = 1024;

/// How long a waiting call is kept for its retry (the pipeline's ask
/// deadline ends the ask itself well before).
const RETRY_WINDOW: Duration = Duration::from_secs(600);

/// A question for the host: the input requests (`inputRequests`: key to
/// `{method, params}`), and where the host's `inputResponses` go (`None`:
/// no answer will come, the call is declined).
struct Question {
    requests: Value,
    answer: oneshot::Sender<Option<Value>>,
}

/// A call in flight for a stateless host: what it may ask, and its answer.
struct Progress {
    name: Value,
    arguments: Value,
    questions: mpsc::Receiver<Question>,
    outcome: oneshot::Receiver<Result<Value, RpcError>>,
}

/// A call waiting for the host to call again with the person's answer.
struct Waiting {
    answer: oneshot::Sender<Option<Value>>,
    progress: Progress,
    since: Instant,
}

/// A session's stateless calls that may ask, and those waiting for a
/// retry.
#[derive(Default)]
pub(crate) struct Asks {
    /// Each call in flight: its handle, where its questions go, and the
    /// client capabilities its request declared.
    calls: Mutex<Vec<(CallHandle, mpsc::Sender<Question>, Value)>>,
    waiting: Mutex<HashMap<String, Waiting>>,
}

impl Asks {
    /// Puts `requests` (an `inputRequests` map) to the host of the call
    /// `handle` belongs to; `check` sees the capabilities that request
    /// declared first. The host's `inputResponses`, or why there are none.
    pub(crate) async fn ask(
        &self,
        handle: &CallHandle,
        requests: Value,
        check: impl FnOnce(&Value) -> Result<(), String>,
    ) -> Result<Value, String> {
        let asking = lock(&self.calls)
            .iter()
            .find(|(c, _, _)| c.same(handle))
            .map(|(_, tx, caps)| (tx.clone(), caps.clone()));
        let Some((tx, caps)) = asking else {
            return Err("the host's request cannot be asked for input".into());
        };
        check(&caps)?;
        let (answer, answered) = oneshot::channel();
        tx.send(Question { requests, answer })
            .await
            .map_err(|_| "the call is no longer waiting".to_string())?;
        answered
            .await
            .ok()
            .flatten()
            .ok_or_else(|| "the host did not call again with an answer".to_string())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The approver of a stateless host's session: the ask goes to the call's
/// own host request, as an `input_required` result.
pub(crate) struct HostInput(pub(crate) Arc<Asks>);

impl Approver for HostInput {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, Result<Approval, String>> {
        let asks = self.0.clone();
        Box::pin(async move {
            let not_declared =
                || "the host did not declare the elicitation capability in this request";
            let Some(handle) = request.handle.clone() else {
                return Err(not_declared().into());
            };
            let requests = json!({APPROVAL_KEY: {
                "method": "elicitation/create",
                "params": with_form_mode(approve::elicitation_params(&request)),
            }});
            let elicits = |caps: &Value| {
                if approve::host_elicits(caps) {
                    Ok(())
                } else {
                    Err(not_declared().to_string())
                }
            };
            let responses = asks.ask(&handle, requests, elicits).await?;
            // No answer for the gateway's key: the person did not allow it.
            let answer = responses
                .get(APPROVAL_KEY)
                .cloned()
                .unwrap_or_else(|| json!({"action": "decline"}));
            Ok(approve::elicitation_answer(&answer))
        })
    }
}

/// A stateless host's `tools/call`: a first call, or a retry carrying the
/// person's answer (`requestState`).
pub(crate) async fn call_tool(
    gw: &Arc<Shared>,
    params: &Value,
    handle: &CallHandle,
) -> Result<Value, RpcError> {
    if let Some(state) = params.get("requestState") {
        return retry(gw, params, state).await;
    }
    let (tx, questions) = mpsc::channel(1);
    let caps = stateless::client_capabilities(params);
    lock(&gw.asks.calls).push((handle.clone(), tx, caps));
    let (done, outcome) = oneshot::channel();
    let task = {
        let (gw, params, handle) = (gw.clone(), params.clone(), handle.clone());
        async move {
            let out = requests::call_tool(&gw, &params, &handle).await;
            lock(&gw.asks.calls).retain(|(c, _, _)| !c.same(&handle));
            let _ = done.send(out);
        }
    };
    // Its own task: the call outlives this request when it asks.
    tokio::spawn(task);
    let progress = Progress {
        name: params.get("name").cloned().unwrap_or(Value::Null),
        arguments: params.get("arguments").cloned().unwrap_or(json!({})),
        questions,
        outcome,
    };
    drive(gw, progress).await
}

/// The call's answer, or an `input_required` result when it asks first.
async fn drive(gw: &Shared, mut progress: Progress) -> Result<Value, RpcError> {
    tokio::select! {
        out = &mut progress.outcome => out.unwrap_or_else(|_| Err(RpcError::new(
            codes::INTERNAL_ERROR,
            "mcppol: the call ended without an answer",
        ))),
        Some(question) = progress.questions.recv() => {
            let Some(state) = super::random_token() else {
                // No state to give: the ask fails (its answer is dropped).
                return Err(RpcError::new(codes::INTERNAL_ERROR, "mcppol: no random source for a requestState"));
            };
            let result = json!({
                "resultType": "input_required",
                "inputRequests": question.requests,
                "requestState": state,
            });
            park(gw, state, Waiting { answer: question.answer, progress, since: Instant::now() });
            Ok(result)
        }
    }
}

/// 2026-07-28's elicitation names its mode.
fn with_form_mode(mut params: Value) -> Value {
    params["mode"] = Value::from("form");
    params
}

/// Keeps a call for its retry, within the session's bounds: the oldest
/// past the window go first; past the count, the new one is declined.
fn park(gw: &Shared, state: String, waiting: Waiting) {
    let mut all = lock(&gw.asks.waiting);
    all.retain(|_, w| w.since.elapsed() < RETRY_WINDOW);
    if all.len() >= MAX_WAITING {
        // Declined: the call is denied at once, never kept unbounded.
        let _ = waiting.answer.send(None);
        return;
    }
    all.insert(state, waiting);
}

/// The host called again: the person's answer goes to the waiting call,
/// whose answer (or next question) is this request's.
async fn retry(gw: &Shared, params: &Value, state: &Value) -> Result<Value, RpcError> {
    let waiting = state
        .as_str()
        .and_then(|s| lock(&gw.asks.waiting).remove(s));
    let Some(waiting) = waiting else {
        return Err(RpcError::new(
            codes::INVALID_PARAMS,
            "mcppol: this requestState is unknown, used or expired: call the tool again without it",
        ));
    };
    let same = params.get("name").unwrap_or(&Value::Null) == &waiting.progress.name
        && params.get("arguments").cloned().unwrap_or(json!({})) == waiting.progress.arguments;
    if !same {
        // The answer is not this call's: the waiting call is declined.
        let _ = waiting.answer.send(None);
        return Err(RpcError::new(
            codes::INVALID_PARAMS,
            "mcppol: a retry must repeat the call its requestState belongs to (the same name and arguments)",
        ));
    }
    let answer = params
        .get("inputResponses")
        .filter(|r| r.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    let _ = waiting.answer.send(Some(answer));
    drive(gw, waiting.progress).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_elicitation_names_its_form_mode() {
        let p = with_form_mode(json!({"message": "m"}));
        assert_eq!(p, json!({"message": "m", "mode": "form"}));
    }
}
