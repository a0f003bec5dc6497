//! A 2026-07-28 server's `input_required` result: mid-call, the server
//! asks the client for input (an elicitation, a sampling, the roots) by
//! answering a `tools/call`, `prompts/get` or `resources/read` with
//! `inputRequests` and a `requestState`, and expects the same request again
//! carrying `inputResponses` and that state (MCP 2026-07-28 "Multi
//! Round-Trip Requests").
//!
//! The gateway settles it inside the one governed request, so the policy
//! decides the call once and its audit line is one: the host is asked in
//! its own version's form, and the server is sent the retry.
//!
//! - A host that initialized (2025-06-18, 2025-11-25) is sent each input
//!   request as the server's own request of that method, as a 2025
//!   server's `elicitation/create` is relayed (`roots/list` answered with
//!   the roots narrowed to the policy's pinned roots).
//! - A stateless host (2026-07-28) gets the requests in the gateway's own
//!   `input_required` result (`input_required.rs`), with a `requestState`
//!   of the gateway's; its retry's `inputResponses` go to the server.
//!
//! The server's `requestState` never leaves the gateway. Only the methods
//! a client answers are relayed, each only to a host that declared its
//! capability; the rounds, the requests of one round and the wait for the
//! host are bounded. Anything else fails the request with an error naming
//! what the server asked.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::upstream::{narrow_roots, relay_to_host};
use super::Shared;
use crate::mcp::{CallHandle, McpError};

/// The most times one request is sent again with the host's answers.
pub(crate) const MAX_INPUT_ROUNDS: usize = 8;

/// The most input requests one `input_required` result may carry.
pub(crate) const MAX_INPUT_REQUESTS: usize = 16;

/// The methods whose results carry an `input_required` answer.
pub(crate) fn may_ask(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

/// Whether a result is a server's request for input.
pub(crate) fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// The capability a client declares to answer an input request of `method`.
fn capability(method: &str) -> Option<&'static str> {
    match method {
        "elicitation/create" => Some("elicitation"),
        "sampling/createMessage" => Some("sampling"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// One round: the params of the retry, built from the request's own
/// `params`, the server's `input_required` result and the host's answers.
pub(crate) async fn answer_round(
    gw: &Arc<Shared>,
    server: &str,
    params: Option<&Value>,
    result: &Value,
    handle: Option<&CallHandle>,
    wait: Duration,
) -> Result<Value, McpError> {
    let requests = match result.get("inputRequests") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(all)) => all.clone(),
        Some(_) => return Err(asked("`inputRequests` is not an object")),
    };
    if requests.len() > MAX_INPUT_REQUESTS {
        return Err(asked(&format!(
            "more than {MAX_INPUT_REQUESTS} input requests at once"
        )));
    }
    let mut methods = Map::new();
    for (key, request) in &requests {
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        if capability(method).is_none() {
            return Err(asked(&format!(
                "`{}`, which the gateway does not relay (it relays elicitation/create, \
                 sampling/createMessage and roots/list)",
                crate::escape::escape(crate::escape::cut_at(method, 64))
            )));
        }
        methods.insert(key.clone(), Value::from(method));
    }
    let responses = tokio::time::timeout(wait, responses(gw, server, &requests, handle))
        .await
        .map_err(|_| {
            asked(&format!(
                "input, and the host gave none within {}",
                humantime::format_duration(wait)
            ))
        })??;
    let mut retry = match params {
        Some(Value::Object(p)) => p.clone(),
        _ => Map::new(),
    };
    retry.insert("inputResponses".into(), Value::Object(responses));
    match result.get("requestState") {
        Some(state @ Value::String(_)) => {
            retry.insert("requestState".into(), state.clone());
        }
        _ => {
            retry.remove("requestState");
        }
    }
    Ok(Value::Object(retry))
}

/// The host's answers to `requests`, keyed as the server keyed them.
async fn responses(
    gw: &Arc<Shared>,
    server: &str,
    requests: &Map<String, Value>,
    handle: Option<&CallHandle>,
) -> Result<Map<String, Value>, McpError> {
    if gw.stateless_host.load(std::sync::atomic::Ordering::Relaxed) {
        return stateless_responses(gw, server, requests, handle).await;
    }
    let host_caps = gw.host_caps.get().cloned().unwrap_or(Value::Null);
    let mut answers = Map::new();
    for (key, request) in requests {
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        declared(&host_caps, method)?;
        let params = request.get("params").cloned();
        let answer = relay_to_host(gw, server, method, params)
            .await
            .map_err(|e| {
                asked(&format!(
                    "`{method}`, and the host answered with error {}: {}",
                    e.code,
                    crate::escape::escape(crate::escape::cut_at(&e.message, 200))
                ))
            })?;
        answers.insert(key.clone(), answer);
    }
    Ok(answers)
}

/// A stateless host's answers: asked through the gateway's own
/// `input_required` result of the call this request belongs to.
async fn stateless_responses(
    gw: &Arc<Shared>,
    server: &str,
    requests: &Map<String, Value>,
    handle: Option<&CallHandle>,
) -> Result<Map<String, Value>, McpError> {
    let Some(handle) = handle else {
        return Err(asked("input, outside a call the host can be asked in"));
    };
    let check = |caps: &Value| {
        for request in requests.values() {
            let method = request.get("method").and_then(Value::as_str).unwrap_or("");
            declared(caps, method).map_err(|e| e.to_string())?;
        }
        Ok(())
    };
    let all = gw
        .asks
        .ask(handle, Value::Object(requests.clone()), check)
        .await
        .map_err(|why| asked(&format!("input, and {why}")))?;
    let mut answers = Map::new();
    for (key, request) in requests {
        let Some(answer) = all.get(key) else {
            continue;
        };
        let answer = if request.get("method").and_then(Value::as_str) == Some("roots/list") {
            narrow_roots(gw, server, Ok(answer.clone()))
        } else {
            answer.clone()
        };
        answers.insert(key.clone(), answer);
    }
    Ok(answers)
}

/// Whether the host declared the capability `method` needs.
fn declared(caps: &Value, method: &str) -> Result<(), McpError> {
    let needed = capability(method).unwrap_or("");
    if caps.get(needed).is_some_and(|c| !c.is_null()) {
        Ok(())
    } else {
        Err(asked(&format!(
            "`{method}`, and the host did not declare the `{needed}` capability"
        )))
    }
}

/// The error of an input request that cannot be settled (the gateway names
/// the server in front of it).
fn asked(what: &str) -> McpError {
    McpError::Protocol(format!("the server asked for {what}"))
}

/// A result of a stateless server, as an initialized host is sent it: the
/// keys only 2026-07-28 has (`resultType` `complete`, `ttlMs`,
/// `cacheScope`, the server's description in `_meta`) left out; the
/// gateway writes its own for a stateless host.
pub(crate) fn translate(result: &mut Value) {
    let Value::Object(map) = result else {
        return;
    };
    if map.get("resultType").and_then(Value::as_str) == Some("complete") {
        map.remove("resultType");
    }
    map.remove("ttlMs");
    map.remove("cacheScope");
    let empty = match map.get_mut("_meta") {
        Some(Value::Object(meta)) => {
            meta.remove(crate::mcp::transport::META_SERVER_INFO);
            meta.is_empty()
        }
        _ => false,
    };
    if empty {
        map.remove("_meta");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_stateless_result_loses_what_only_2026_has() {
        let mut r = json!({"content": [], "resultType": "complete", "ttlMs": 0,
            "cacheScope": "public", "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s"}}});
        translate(&mut r);
        assert_eq!(r, json!({"content": []}));
        let mut kept = json!({"content": [], "_meta": {"trace": 1,
            "io.modelcontextprotocol/serverInfo": {}}});
        translate(&mut kept);
        assert_eq!(kept, json!({"content": [], "_meta": {"trace": 1}}));
        let asking = json!({"resultType": "input_required", "requestState": "s"});
        assert!(is_input_required(&asking));
        let mut same = asking.clone();
        translate(&mut same);
        assert_eq!(same, asking);
    }

    #[test]
    fn only_what_a_client_answers_and_declared() {
        assert_eq!(capability("sampling/createMessage"), Some("sampling"));
        assert_eq!(capability("tools/call"), None);
        let caps = json!({"elicitation": {}});
        assert!(declared(&caps, "elicitation/create").is_ok());
        let e = declared(&caps, "roots/list").unwrap_err();
        assert!(e.to_string().contains("`roots` capability"), "{e}");
        assert!(may_ask("resources/read") && !may_ask("tools/list"));
    }
}
