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

/// An ask for the host: the elicitation's params, and where its answer
/// (the host's `ElicitResult`) goes.
struct Question {
    params: Value,
    answer: oneshot::Sender<Value>,
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
    answer: oneshot::Sender<Value>,
    progress: Progress,
    since: Instant,
}

/// A session's stateless calls that may ask, and those waiting for a
/// retry.
#[derive(Default)]
pub(crate) struct Asks {
    calls: Mutex<Vec<(CallHandle, mpsc::Sender<Question>)>>,
    waiting: Mutex<HashMap<String, Waiting>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The approver of a stateless host's session: the ask goes to the call's
/// own host request, as an `input_required` result.
pub(crate) struct HostInput(pub(crate) Arc<Asks>);

impl Approver for HostInput {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, Result<Approval, String>> {
        let asking = request.handle.as_ref().and_then(|h| {
            lock(&self.0.calls)
                .iter()
                .find(|(c, _)| c.same(h))
                .map(|(_, tx)| tx.clone())
        });
        Box::pin(async move {
            let Some(tx) = asking else {
                return Err(
                    "the host did not declare the elicitation capability in this request".into(),
                );
            };
            let (answer, answered) = oneshot::channel();
            let question = Question {
                params: approve::elicitation_params(&request),
                answer,
            };
            tx.send(question)
                .await
                .map_err(|_| "the call is no longer waiting".to_string())?;
            let answer = answered
                .await
                .map_err(|_| "the host did not call again with an answer".to_string())?;
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
    let elicits = approve::host_elicits(&stateless::client_capabilities(params));
    if elicits {
        lock(&gw.asks.calls).push((handle.clone(), tx));
    }
    let (done, outcome) = oneshot::channel();
    let task = {
        let (gw, params, handle) = (gw.clone(), params.clone(), handle.clone());
        async move {
            let out = requests::call_tool(&gw, &params, &handle).await;
            lock(&gw.asks.calls).retain(|(c, _)| !c.same(&handle));
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
                "inputRequests": {APPROVAL_KEY: {
                    "method": "elicitation/create",
                    "params": with_form_mode(question.params),
                }},
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
        let _ = waiting.answer.send(json!({"action": "decline"}));
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
        let _ = waiting.answer.send(json!({"action": "decline"}));
        return Err(RpcError::new(
            codes::INVALID_PARAMS,
            "mcppol: a retry must repeat the call its requestState belongs to (the same name and arguments)",
        ));
    }
    // No answer for the gateway's key: the person did not allow it.
    let answer = params
        .get("inputResponses")
        .and_then(|r| r.get(APPROVAL_KEY))
        .cloned()
        .unwrap_or_else(|| json!({"action": "decline"}));
    let _ = waiting.answer.send(answer);
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
