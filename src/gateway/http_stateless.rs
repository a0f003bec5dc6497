//! The HTTP side's stateless (2026-07-28) requests: a POST without
//! `Mcp-Session-Id` whose `_meta` names that version (or a
//! `server/discover`). Its routing headers and envelope are checked
//! (`stateless.rs`), then it is served by its principal's gateway session
//! (one for every anonymous caller) under an id of the gateway's own, so
//! that two clients of one principal never collide; that session shares
//! the principal's taint, which outlives it (`--taint-ttl`).

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::http::{
    answer_text, json_response, json_text_response, lock, new_session_id, plain, session_config,
    App,
};
use super::http_session::HttpSession;
use super::stateless;
use super::taint::Taint;
use crate::mcp::jsonrpc::{codes, Id, Message};
use crate::mcp::RpcError;

/// The gateway session of a stateless caller's principal, opened on its
/// first request (within `--max-sessions`), with the principal's taint.
fn principal_session(
    app: &App,
    principal: Option<crate::http_auth::Principal>,
) -> Result<Arc<HttpSession>, Box<Response>> {
    let name = principal.as_ref().map(|p| p.name.clone());
    let sessions = lock(&app.sessions);
    let mut stateless = lock(&app.stateless);
    if let Some(s) = stateless.get(&name) {
        return Ok(s.clone());
    }
    let id = new_session_id(sessions.len() + stateless.len(), app)?;
    drop(sessions);
    let mut config = session_config(app, principal);
    let ttl = config.taint_ttl;
    let shared = config.shared.as_ref().map(|s| s.taint.clone());
    let taint = lock(&app.taints)
        .entry(name.clone())
        .or_insert_with(|| Arc::new(Taint::expiring(ttl, name.as_deref(), shared)))
        .clone();
    config.taint = Some(taint);
    let session = HttpSession::start(id.clone(), config);
    tracing::info!(target: "mcppol::gateway", session = %id, principal = session.principal.as_deref().unwrap_or(""), "a stateless caller's session opened");
    stateless.insert(name, session.clone());
    Ok(session)
}

/// One request of a stateless (2026-07-28) host: its routing headers and
/// envelope checked (a mismatch is `400`, never a route by header), then
/// served by its principal's session under an id of the gateway's own,
/// answered with JSON under the host's id.
pub(super) async fn post(
    app: &App,
    principal: Option<crate::http_auth::Principal>,
    headers: &HeaderMap,
    mut message: Value,
) -> Response {
    let Some(id) = message.get("id").filter(|id| !id.is_null()).cloned() else {
        // A notification: no request of a stateless host is in flight
        // for it to be about.
        return StatusCode::ACCEPTED.into_response();
    };
    let refuse = |e: RpcError| {
        let body = json!({"jsonrpc": "2.0", "id": id, "error": e});
        json_response(StatusCode::BAD_REQUEST, &body, None)
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Err(e) = stateless::check_headers(&message, header) {
        return refuse(e);
    }
    let params = message.get("params").unwrap_or(&Value::Null);
    if stateless::is_stateless(params) {
        if let Err(e) = stateless::check_envelope(params) {
            return refuse(e);
        }
    }
    let session = match principal_session(app, principal) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let n = app
        .next_id
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let inner = Id::String(format!("mcppol-{n}"));
    message["id"] = Value::from(format!("mcppol-{n}"));
    let request = match Message::from_value(message) {
        Ok(Message::Request(r)) => r,
        Ok(_) => return StatusCode::ACCEPTED.into_response(),
        Err(e) => return refuse(RpcError::new(codes::INVALID_REQUEST, e.to_string())),
    };
    let answer = session.expect(inner.clone());
    if !session.receive(Message::Request(request)).await {
        session.forget(&inner);
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the caller's gateway session ended meanwhile: send the request again",
        );
    }
    match answer.await {
        // The host's own id again, as it wrote it.
        Ok(mut a) => match serde_json::from_value::<Id>(id.clone()) {
            Ok(host_id) => {
                a.id = host_id;
                json_text_response(StatusCode::OK, answer_text(a), None)
            }
            // Not an id MCP allows (a fraction, say): put back as it came.
            Err(_) => {
                let mut a = Message::Response(a).to_value();
                a["id"] = id;
                json_response(StatusCode::OK, &a, None)
            }
        },
        Err(_) => plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the caller's gateway session ended before answering: send the request again",
        ),
    }
}
