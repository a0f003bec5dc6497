//! The host side over streamable HTTP (`mcppol gateway --listen ADDR`),
//! MCP 2025-11-25 "Transports": one endpoint, `/mcp`.
//!
//! - `POST` carries one JSON-RPC message. A request is answered with JSON,
//!   or with an event stream when the client accepts one (then what the
//!   gateway asks the host while serving it, an elicitation say, comes on
//!   that stream before the answer); a notification or an answer gets
//!   `202 Accepted`.
//! - `initialize` opens a session (`Mcp-Session-Id` in the answer's
//!   headers), required on every later request: a missing one is `400`, an
//!   unknown or expired one `404`. `DELETE` ends it.
//! - `GET` (with the session id, accepting `text/event-stream`) opens the
//!   session's one stream for what is no request's: a server's
//!   `list_changed`, a resource update (`http_session::Outbox`). A second
//!   while one is open is `409`; a reader too slow for its bounded queue
//!   loses the stream.
//! - Before anything else: the bearer token, when `--tokens` or `--jwks`
//!   is set (`401`), and the `Origin` check against DNS rebinding: a
//!   browser's request from an origin that is not this machine's is `403`
//!   unless `--allow-origin` names it. Bodies over `--max-line-bytes` are
//!   `413`; past `--max-sessions` a new session is `503`; a session idle
//!   for `--session-idle` is ended.
//! - `GET /healthz`: `200 ok`.
//!
//! Each session is a whole gateway session (`http_session.rs`): its own
//! servers, its own taint, its caller's principal.
//!
//! A host that speaks 2026-07-28 has no session: its requests are
//! `http_stateless.rs`'s.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::Router;
use serde_json::{json, Value};

use super::http_session::HttpSession;
use super::stateless;
use super::taint::Taint;
use super::Config;
use crate::http_auth::Authenticator;
use crate::mcp::jsonrpc::Message;

/// The session header.
const SESSION: &str = "mcp-session-id";

/// The HTTP side's settings.
pub(crate) struct HttpConfig {
    /// Where to listen.
    pub(crate) addr: SocketAddr,
    /// Origins allowed besides this machine's (`scheme://host[:port]`).
    pub(crate) allowed_origins: Vec<String>,
    /// The most sessions at once.
    pub(crate) max_sessions: usize,
    /// A session with no request for this long is ended.
    pub(crate) idle: Duration,
    /// Who may call; `None`: anyone who can reach the address.
    pub(crate) auth: Option<Authenticator>,
}

pub(super) struct App {
    config: Config,
    pub(super) http: HttpConfig,
    pub(super) sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    /// Stateless (2026-07-28) hosts' gateway sessions, one a principal
    /// (`None`: the anonymous caller).
    pub(super) stateless: Mutex<HashMap<Option<String>, Arc<HttpSession>>>,
    /// Stateless principals' taint: it outlives their sessions, and is
    /// dropped once expired with no session left.
    pub(super) taints: Mutex<HashMap<Option<String>, Arc<Taint>>>,
    /// The ids stateless requests are sent to their session under.
    pub(super) next_id: std::sync::atomic::AtomicU64,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Serves until a signal; returns the exit status.
pub(crate) async fn run(config: Config, http: HttpConfig) -> u8 {
    let listener = match tokio::net::TcpListener::bind(http.addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot listen on {}: {e}", http.addr);
            return 2;
        }
    };
    let addr = listener.local_addr().unwrap_or(http.addr);
    let names: Vec<&str> = config.servers.iter().map(|s| s.id.as_str()).collect();
    tracing::info!(target: "mcppol::gateway", %addr, servers = %names.join(","), policy = %config.policy_name, auth = http.auth.is_some(), "the gateway starts (HTTP)");
    let max_body = config.max_line_bytes;
    let app = Arc::new(App {
        config,
        http,
        sessions: Mutex::default(),
        stateless: Mutex::default(),
        taints: Mutex::default(),
        next_id: std::sync::atomic::AtomicU64::new(0),
    });
    tokio::spawn(expire(Arc::downgrade(&app)));
    let router = Router::new()
        .route("/mcp", any(mcp))
        .route("/healthz", get(|| async { "ok" }))
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(app.clone());
    let mut signals = crate::proxy::child::Signals::new();
    // Without Nagle: an answer is written in several pieces (headers,
    // body, the end of a chunked or SSE body), and the last would wait for
    // the host's delayed ACK, about 40 ms a request.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp: &mut tokio::net::TcpStream| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(target: "mcppol::gateway", error = %e, "cannot set TCP_NODELAY");
        }
    });
    let served = axum::serve(listener, router);
    let signal = tokio::select! {
        r = served => {
            if let Err(e) = r {
                tracing::error!(target: "mcppol::gateway", error = %e, "the listener failed");
            }
            None
        }
        s = signals.next() => Some(s),
    };
    // Every session ends: its servers are stopped and reaped.
    let mut sessions: Vec<Arc<HttpSession>> = lock(&app.sessions).drain().map(|(_, s)| s).collect();
    sessions.extend(lock(&app.stateless).drain().map(|(_, s)| s));
    for s in &sessions {
        s.end();
    }
    for s in &sessions {
        s.stopped().await;
    }
    match signal {
        Some(signal) => u8::try_from(128 + signal).unwrap_or(1),
        None => 1,
    }
}

/// Ends sessions idle past `--session-idle`.
async fn expire(app: std::sync::Weak<App>) {
    loop {
        let Some(app) = app.upgrade() else {
            return;
        };
        let idle = app.http.idle;
        let is_idle = |s: &HttpSession| !s.busy() && lock(&s.last_seen).elapsed() >= idle;
        let mut expired: Vec<Arc<HttpSession>> = {
            let mut sessions = lock(&app.sessions);
            let old: Vec<String> = sessions
                .iter()
                .filter(|(_, s)| is_idle(s))
                .map(|(k, _)| k.clone())
                .collect();
            old.iter().filter_map(|k| sessions.remove(k)).collect()
        };
        {
            let mut stateless = lock(&app.stateless);
            let old: Vec<Option<String>> = stateless
                .iter()
                .filter(|(_, s)| is_idle(s))
                .map(|(k, _)| k.clone())
                .collect();
            expired.extend(old.iter().filter_map(|k| stateless.remove(k)));
            // A principal's taint goes once it expired and no session of
            // its is left to add to it.
            lock(&app.taints).retain(|k, t| stateless.contains_key(k) || !t.is_clean());
        }
        for s in expired {
            tracing::info!(target: "mcppol::gateway", session = %s.id, "an idle session expired");
            s.end();
        }
        let tick = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        drop(app);
        tokio::time::sleep(tick).await;
    }
}

pub(super) fn plain(status: StatusCode, text: &str) -> Response {
    let mut r = (status, format!("{text}\n")).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

pub(super) fn json_response(status: StatusCode, value: &Value, session: Option<&str>) -> Response {
    json_text_response(status, value.to_string(), session)
}

/// A JSON body already written.
pub(super) fn json_text_response(
    status: StatusCode,
    json: String,
    session: Option<&str>,
) -> Response {
    let mut r = Response::new(Body::from(json));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    add_session(&mut r, session);
    r
}

fn add_session(r: &mut Response, session: Option<&str>) {
    if let Some(v) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        r.headers_mut().insert(SESSION, v);
    }
}

/// Whether an `Origin` may call: none (not a browser), this machine's, or
/// one `--allow-origin` names.
pub(crate) fn origin_allowed(origin: Option<&str>, allowed: &[String]) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    if allowed.iter().any(|a| a == origin) {
        return true;
    }
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']')
            .next()
            .map(|h| format!("[{h}]"))
            .unwrap_or_default()
    } else {
        rest.split(':').next().unwrap_or("").to_string()
    };
    matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]")
}

/// A fresh session id: 128 bits from the system's random source.
fn session_id() -> Option<String> {
    super::random_token()
}

async fn mcp(
    State(app): State<Arc<App>>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Who is calling comes before anything else.
    let principal = match &app.http.auth {
        None => None,
        Some(auth) => {
            let authorization = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok());
            match auth.authenticate(authorization).await {
                Ok(p) => Some(p),
                Err(e) => {
                    let mut r = plain(StatusCode::UNAUTHORIZED, &e.to_string());
                    if let Ok(v) = HeaderValue::from_str(&e.www_authenticate()) {
                        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
                    }
                    return r;
                }
            }
        }
    };
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    if !origin_allowed(origin, &app.http.allowed_origins) {
        tracing::warn!(target: "mcppol::gateway", origin = origin.unwrap_or(""), "a request from another origin: refused (DNS rebinding)");
        return plain(
            StatusCode::FORBIDDEN,
            "this origin may not call the gateway; see --allow-origin",
        );
    }
    let session_header = headers.get(SESSION).and_then(|v| v.to_str().ok());
    let name = principal.as_ref().map(|p| p.name.clone());
    let session = match session_header {
        None => None,
        Some(id) => match lock(&app.sessions).get(id).cloned() {
            // A session is its caller's: another token cannot use it.
            Some(s) if s.principal == name => Some(s),
            Some(_) => {
                return plain(
                    StatusCode::FORBIDDEN,
                    "this session was opened by another caller",
                )
            }
            None => {
                return plain(
                    StatusCode::NOT_FOUND,
                    "no such session (it ended or expired): initialize again",
                )
            }
        },
    };
    match method {
        Method::POST => post(&app, session, principal, &headers, &body).await,
        Method::DELETE => match session {
            Some(s) => {
                lock(&app.sessions).remove(&s.id);
                s.end();
                StatusCode::NO_CONTENT.into_response()
            }
            None => plain(
                StatusCode::BAD_REQUEST,
                "DELETE needs the Mcp-Session-Id header",
            ),
        },
        Method::GET => match session {
            Some(s) => listen(s, &headers),
            None => plain(
                StatusCode::BAD_REQUEST,
                "GET needs the Mcp-Session-Id header (initialize first)",
            ),
        },
        _ => {
            let mut r = plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "POST a JSON-RPC message, GET the session's event stream, or DELETE the session",
            );
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            r
        }
    }
}

/// Whether the client's `Accept` names an event stream.
fn accepts_events(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/event-stream"))
}

/// `GET /mcp`: the session's event stream for what is no request's.
fn listen(session: Arc<HttpSession>, headers: &HeaderMap) -> Response {
    if !accepts_events(headers) {
        return plain(
            StatusCode::NOT_ACCEPTABLE,
            "GET /mcp opens the session's event stream: send `Accept: text/event-stream`",
        );
    }
    let Some((n, messages)) = session.open_listener() else {
        return plain(
            StatusCode::CONFLICT,
            "this session has its GET event stream open already (one a session)",
        );
    };
    tracing::debug!(target: "mcppol::gateway", session = %session.id, "the host opened the session's GET stream");
    Sse::new(super::http_session::listen(session, n, messages))
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn post(
    app: &App,
    session: Option<Arc<HttpSession>>,
    principal: Option<crate::http_auth::Principal>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    // The body is parsed here, once: the session is given the message.
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        let e = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "the body is not JSON"}});
        return json_response(StatusCode::BAD_REQUEST, &e, None);
    };
    if !value.is_object() {
        let e = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "one JSON-RPC message per POST (batches are not part of MCP)"}});
        return json_response(StatusCode::BAD_REQUEST, &e, None);
    }
    let method = value.get("method").and_then(Value::as_str);
    let params = value.get("params").unwrap_or(&Value::Null);
    if session.is_none() && (stateless::is_stateless(params) || method == Some("server/discover")) {
        return super::http_stateless::post(app, principal, headers, value).await;
    }
    let opens = session.is_none() && method == Some("initialize");
    let message = match Message::from_value(value) {
        Ok(m) => m,
        Err(e) => {
            let e = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": e.to_string()}});
            return json_response(StatusCode::BAD_REQUEST, &e, None);
        }
    };
    let (session, opened) = match session {
        Some(s) => (s, false),
        None if opens && matches!(message, Message::Request(_)) => match open(app, principal) {
            Ok(s) => (s, true),
            Err(r) => return *r,
        },
        None => {
            return plain(
                StatusCode::BAD_REQUEST,
                "no Mcp-Session-Id header: send `initialize` first",
            )
        }
    };
    let Message::Request(request) = message else {
        // A notification or an answer to the gateway's question.
        if !session.receive(message).await {
            return plain(StatusCode::NOT_FOUND, "the session has ended");
        }
        return StatusCode::ACCEPTED.into_response();
    };
    let id = request.id.clone();
    let answer = session.expect(id.clone());
    let stream = accepts_events(headers).then(|| session.open_stream());
    if !session.receive(Message::Request(request)).await {
        session.forget(&id);
        return plain(StatusCode::NOT_FOUND, "the session has ended");
    }
    let sid = opened.then(|| session.id.clone());
    match stream {
        None => match answer.await {
            Ok(a) => json_text_response(StatusCode::OK, answer_text(a), sid.as_deref()),
            Err(_) => plain(StatusCode::NOT_FOUND, "the session ended before answering"),
        },
        Some((n, questions)) => {
            let events = super::http_session::events(session.clone(), n, questions, answer);
            let mut r = Sse::new(events)
                .keep_alive(KeepAlive::default())
                .into_response();
            add_session(&mut r, sid.as_deref());
            r
        }
    }
}

/// Refuses a new session past `--max-sessions` (stateful and stateless
/// ones together); a fresh session id otherwise.
pub(super) fn new_session_id(open: usize, app: &App) -> Result<String, Box<Response>> {
    if open >= app.http.max_sessions {
        return Err(Box::new(plain(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!(
                "{} sessions are open, the most --max-sessions allows: end one (DELETE) or wait",
                app.http.max_sessions
            ),
        )));
    }
    session_id().ok_or_else(|| {
        Box::new(plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "no random source for a session id",
        ))
    })
}

/// A session's settings: the gateway's, with its caller.
pub(super) fn session_config(app: &App, principal: Option<crate::http_auth::Principal>) -> Config {
    let mut config = app.config.clone();
    if let Some(p) = principal {
        config.principal = Some(p.name);
        config.assigns = Some(p.assigns);
    }
    config
}

/// Opens a session for this caller, within `--max-sessions`.
fn open(
    app: &App,
    principal: Option<crate::http_auth::Principal>,
) -> Result<Arc<HttpSession>, Box<Response>> {
    let mut sessions = lock(&app.sessions);
    let open = sessions.len() + lock(&app.stateless).len();
    let id = new_session_id(open, app)?;
    let mut config = session_config(app, principal);
    config.session = Some(id.clone());
    let session = HttpSession::start(id.clone(), config);
    tracing::info!(target: "mcppol::gateway", session = %id, principal = session.principal.as_deref().unwrap_or(""), "a session opened");
    sessions.insert(id, session.clone());
    Ok(session)
}

/// An event of the stream.
pub(crate) fn event(message: &Value) -> Event {
    Event::default().event("message").data(message.to_string())
}

/// The event of an answer, the last of a POST's stream.
pub(crate) fn answer_event(answer: crate::mcp::jsonrpc::Response) -> Event {
    Event::default().event("message").data(answer_text(answer))
}

/// An answer as JSON text: its members in the order a line has them,
/// written once, from the value the session answered with.
pub(super) fn answer_text(answer: crate::mcp::jsonrpc::Response) -> String {
    let mut line = Message::Response(answer).to_line();
    line.pop();
    // Serialized from values: always UTF-8.
    String::from_utf8(line).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_machines_origins_and_the_allowed_ones_may_call() {
        let allowed = vec!["https://app.example.com".to_string()];
        for ok in [
            None,
            Some("http://localhost:6274"),
            Some("http://127.0.0.1"),
            Some("https://[::1]:8443"),
            Some("https://app.example.com"),
        ] {
            assert!(origin_allowed(ok, &allowed), "{ok:?}");
        }
        for bad in [
            Some("https://evil.example"),
            Some("http://localhost.evil.example"),
            Some("null"),
            Some("http://127.0.0.1.nip.io"),
            Some("https://app.example.com:444"),
        ] {
            assert!(!origin_allowed(bad, &allowed), "{bad:?}");
        }
    }

    #[test]
    fn session_ids_are_long_and_differ() {
        let (a, b) = (session_id().unwrap(), session_id().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
