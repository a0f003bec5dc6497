//! Each host request served: the handshake (the gateway's own), the merged
//! listings, and every governed request routed to its server's pipeline,
//! whose outcome is answered in the proxy's words. The session's taint is
//! passed with every governed request and grows with each result.

use std::sync::Arc;

use serde_json::{json, Value};

use super::host::{not_found, params_of};
use super::naming::{self, ResourceRoutes, Route};
use super::stateless;
use super::upstream::{Live, State};
use super::Shared;
use crate::mcp::jsonrpc::{codes, Request};
use crate::mcp::{
    CallHandle, RpcError, ServerInfo, Transport, MAX_PAGES, META_CLIENT_CAPABILITIES,
    PROTOCOL_VERSIONS,
};
use crate::pipeline::shape::shape_relayed;
use crate::pipeline::{AuditRecord, By, CallError, CallOptions, ErrorKind, Outcome};
use crate::proxy::answer::{call_answer, other_error, read_answer, unknown_tool};
use crate::proxy::host::{options, same_result, str_param};
use crate::{Source, TargetKind};

/// The MCP error of a resource no server listed.
const RESOURCE_NOT_FOUND: i64 = -32002;

/// One host request. A stateless host's (its `_meta` names 2026-07-28)
/// needs no `initialize`: its first request starts the servers, and each
/// result says its `resultType`.
pub(crate) async fn serve(
    gw: &Arc<Shared>,
    request: Request,
    handle: &CallHandle,
) -> Result<Value, RpcError> {
    let params = params_of(&request);
    let is_stateless = stateless::is_stateless(params);
    if is_stateless {
        stateless::check_envelope(params)?;
        adopt_stateless(gw, &request.method).await;
    } else if request.method == "server/discover" && gw.host_caps.get().is_none() {
        // A probe before any handshake: what the gateway speaks. The
        // servers are not started for it (the host may yet `initialize`).
        return Ok(stateless::discover(capabilities(), None));
    }
    let out = serve_one(gw, &request, handle).await;
    if is_stateless {
        out.map(|r| stateless::complete(&request.method, r))
    } else {
        out
    }
}

/// A stateless host's first request: the session is initialized for it
/// (nothing offered to the servers that only a handshake could declare),
/// its taint is kept `--taint-ttl` after its last result, the servers
/// start. `server/discover` is answered at once (an SDK gives its probe a
/// few seconds, and the servers may take longer to start); every other
/// request, the first or one that came while they were starting, waits
/// until every server is up or has failed to start.
async fn adopt_stateless(gw: &Arc<Shared>, method: &str) {
    if gw.host_caps.set(json!({})).is_ok() {
        gw.stateless_host
            .store(true, std::sync::atomic::Ordering::Relaxed);
        gw.taint.expire_after(gw.taint_ttl);
        let starting = gw.clone();
        tokio::spawn(async move { super::start_servers(&starting).await });
    }
    if method != "server/discover" {
        let mut started = gw.started.subscribe();
        // The sender lives in `gw`, so this ends when the servers have
        // started (each one up or given up on by `--start-timeout`).
        let _ = started.wait_for(|up| *up).await;
    }
}

async fn serve_one(
    gw: &Arc<Shared>,
    request: &Request,
    handle: &CallHandle,
) -> Result<Value, RpcError> {
    let params = params_of(request);
    let method = request.method.as_str();
    if method == "initialize" {
        return initialize(gw, params).await;
    }
    if method == "ping" {
        return Ok(json!({}));
    }
    if gw.host_caps.get().is_none() {
        refused_unserved(gw, method, request.params.as_ref(), "not_initialized");
        return Err(RpcError::new(
            codes::INVALID_REQUEST,
            "mcppol: the session is not initialized (send `initialize` first)",
        ));
    }
    if method == "server/discover" {
        // Answered at once, with the instructions of the servers up so
        // far: a client's probe has a deadline (the Python SDK's is 10 s)
        // that slow-starting servers must not make it miss.
        return Ok(stateless::discover(capabilities(), instructions(gw)));
    }
    // Sent right after `initialize`, before its answer: served once the
    // servers have started, so it sees them.
    let _ = gw.started.subscribe().wait_for(|started| *started).await;
    match method {
        "tools/list" => Ok(json!({ "tools": list_tools(gw).await })),
        "tools/call" if is_stateless_call(gw, params) => {
            super::input_required::call_tool(gw, params, handle).await
        }
        "tools/call" => call_tool(gw, params, handle).await,
        "prompts/list" => Ok(json!({ "prompts": list(gw, "prompts/list", "prompts").await })),
        "prompts/get" => get_prompt(gw, params, handle).await,
        "resources/list" => Ok(json!({ "resources": list_resources(gw).await })),
        "resources/templates/list" => Ok(json!({
            "resourceTemplates": list(gw, "resources/templates/list", "resourceTemplates").await
        })),
        "resources/read" => read_resource(gw, params, handle).await,
        "resources/subscribe" | "resources/unsubscribe" => {
            let uri = str_param(params, "uri", method)?;
            let live = route(gw, uri).await?.1;
            live.transport
                .request(method, Some(json!({ "uri": uri })))
                .await
                .map_err(crate::proxy::host::closed)
        }
        "logging/setLevel" => {
            // 2026-07-28 has no `logging/setLevel`: a stateless server is
            // not sent it.
            let lives = lives(gw)
                .into_iter()
                .filter(|(_, l)| !l.transport.server().is_stateless());
            for live in lives {
                let _ = live
                    .1
                    .transport
                    .request(method, request.params.clone())
                    .await;
            }
            Ok(json!({}))
        }
        other => Err(not_found(other)),
    }
}

/// The handshake: the gateway answers for itself, in the host's protocol
/// version when it speaks it, after every server has come up or failed
/// its first start (so the first listing is whole).
async fn initialize(gw: &Arc<Shared>, params: &Value) -> Result<Value, RpcError> {
    let caps = params.get("capabilities").cloned().unwrap_or(json!({}));
    if gw.host_caps.set(caps).is_err() {
        return Err(RpcError::new(
            codes::INVALID_REQUEST,
            "mcppol: the session is already initialized",
        ));
    }
    super::start_servers(gw).await;
    let asked = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = PROTOCOL_VERSIONS
        .iter()
        .find(|v| **v == asked)
        .unwrap_or(&PROTOCOL_VERSIONS[0]);
    let _ = gw.protocol.set(Arc::from(*version));
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": {"name": "mcppol-gateway", "version": env!("CARGO_PKG_VERSION")},
    });
    if let Some(text) = instructions(gw) {
        result["instructions"] = Value::from(text);
    }
    Ok(result)
}

/// The gateway's capabilities, whatever its servers': it relays what they
/// have.
fn capabilities() -> Value {
    json!({
        "tools": {"listChanged": true},
        "prompts": {"listChanged": true},
        "resources": {"listChanged": true, "subscribe": true},
        "logging": {},
    })
}

/// Every server's instructions, cleaned and named by its pipeline.
fn instructions(gw: &Shared) -> Option<String> {
    let all: Vec<String> = lives(gw)
        .iter()
        .filter_map(|(_, l)| l.pipeline.instructions())
        .collect();
    (!all.is_empty()).then(|| all.join("\n\n"))
}

/// The servers that are up, in the servers file's order.
fn lives(gw: &Shared) -> Vec<(String, Arc<Live>)> {
    gw.upstreams
        .iter()
        .filter_map(|u| match u.state() {
            State::Up(live) => Some((u.id.clone(), live)),
            _ => None,
        })
        .collect()
}

/// Every server's visible tools, named for the host; a server whose
/// listing fails is left out (and logged), never the others.
async fn list_tools(gw: &Arc<Shared>) -> Vec<Value> {
    let mut opts = CallOptions::default();
    opts.principal.clone_from(&gw.principal);
    opts.assigns.clone_from(&gw.assigns);
    let tasks: Vec<_> = lives(gw)
        .into_iter()
        .map(|(id, live)| {
            let opts = opts.clone();
            tokio::spawn(async move {
                let listed = live.pipeline.list_tools(&opts).await;
                (id, listed)
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        match task.await {
            Ok((id, Ok(tools))) => all.extend(naming::qualify_items(&id, tools, &gw.separator)),
            Ok((id, Err(e))) => {
                tracing::warn!(target: "mcppol::gateway", server = %id, error = %e, "listing a server's tools failed: they are left out");
            }
            Err(e) => {
                tracing::warn!(target: "mcppol::gateway", error = %e, "a listing task failed")
            }
        }
    }
    all
}

/// Every page of `method` from each server that declared the capability.
async fn pages(gw: &Shared, method: &'static str, key: &'static str) -> Vec<(String, Vec<Value>)> {
    let capability = method.split('/').next().unwrap_or(method);
    let tasks: Vec<_> = lives(gw)
        .into_iter()
        .filter(|(_, live)| live.transport.server().capabilities.get(capability).is_some())
        .map(|(id, live)| {
            tokio::spawn(async move {
                let mut items = Vec::new();
                let mut cursor: Option<String> = None;
                for _ in 0..MAX_PAGES {
                    let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
                    let page = match live.transport.request(method, params).await {
                        Ok(page) => page,
                        Err(e) => {
                            tracing::warn!(target: "mcppol::gateway", server = %id, method, error = %crate::mcp::peer::why(e), "a server's listing failed: its items are left out");
                            return (id, Vec::new());
                        }
                    };
                    if let Some(list) = page.get(key).and_then(Value::as_array) {
                        items.extend(list.iter().cloned());
                    }
                    match page.get("nextCursor").and_then(Value::as_str) {
                        Some(next) if items.len() < crate::mcp::MAX_LIST_ITEMS && cursor.as_deref() != Some(next) => {
                            cursor = Some(next.to_string());
                        }
                        _ => break,
                    }
                }
                (id, items)
            })
        })
        .collect();
    let mut out = Vec::new();
    for task in tasks {
        if let Ok(listed) = task.await {
            out.push(listed);
        }
    }
    out
}

/// A merged listing of prompts (named for the host) or resource templates
/// (as they are).
async fn list(gw: &Shared, method: &'static str, key: &'static str) -> Vec<Value> {
    let mut all = Vec::new();
    for (id, items) in pages(gw, method, key).await {
        if key == "prompts" {
            all.extend(naming::qualify_items(&id, items, &gw.separator));
        } else {
            all.extend(items);
        }
    }
    all
}

/// Every server's resources, their URIs as they are; the routes of reads
/// are what this listing says.
async fn list_resources(gw: &Shared) -> Vec<Value> {
    let mut routes = ResourceRoutes::default();
    let mut all = Vec::new();
    for (id, items) in pages(gw, "resources/list", "resources").await {
        routes.add(&id, &items);
        all.extend(items);
    }
    *Shared::lock(&gw.routes) = routes;
    all
}

/// The server a resource URI goes to: the one that listed it (the
/// listing is read again once when no server has).
async fn route(gw: &Shared, uri: &str) -> Result<(String, Arc<Live>), RpcError> {
    for attempt in 0..2 {
        let routed = match Shared::lock(&gw.routes).route(uri) {
            Route::To(server) => Ok(server.to_string()),
            Route::Unknown => Err(None),
            Route::Ambiguous(servers) => Err(Some(servers.join(", "))),
        };
        match routed {
            Ok(server) => {
                let up = gw.upstream(&server).ok_or_else(|| unknown_resource(uri))?;
                return Ok((server, up.live()?));
            }
            Err(Some(servers)) => {
                return Err(RpcError::new(
                    codes::INVALID_PARAMS,
                    format!("mcppol: the resource `{uri}` is listed by several servers ({servers}): refused as ambiguous; give each server its own URIs"),
                ))
            }
            Err(None) if attempt == 0 => {
                list_resources(gw).await;
            }
            Err(None) => {}
        }
    }
    Err(unknown_resource(uri))
}

fn unknown_resource(uri: &str) -> RpcError {
    RpcError::new(RESOURCE_NOT_FOUND, format!("Resource not found: {uri}"))
}

/// The options of a governed request to `server`, with the session's taint.
async fn governed(
    gw: &Shared,
    server: &ServerInfo,
    params: &Value,
    own: &[&str],
    handle: &CallHandle,
) -> CallOptions {
    // A stateless host's retry keys (`input_required`) are the gateway's,
    // never a server's.
    let own: Vec<&str> = own
        .iter()
        .copied()
        .chain(["inputResponses", "requestState"])
        .collect();
    let mut opts = options(params, &own).handle(handle.clone());
    if stateless::is_stateless(params) {
        // Translated for the server: the 2026 envelope is the gateway's.
        opts.meta = opts.meta.as_ref().and_then(stateless::server_meta);
        if server.is_stateless() {
            // What this request's host may be asked for, as it declared it
            // (the rest of the envelope is the connection's).
            let caps =
                super::upstream::client_capabilities(Some(&stateless::client_capabilities(params)));
            let mut meta = opts.meta.take().unwrap_or_else(|| json!({}));
            if let Value::Object(m) = &mut meta {
                m.insert(META_CLIENT_CAPABILITIES.into(), caps);
            }
            opts.meta = Some(meta);
        }
    }
    let taint = gw.taint.servers().await;
    opts.taint = taint.servers;
    opts.taint_unknown = taint.unknown;
    opts.principal.clone_from(&gw.principal);
    opts.assigns.clone_from(&gw.assigns);
    opts.session.clone_from(&gw.session);
    opts
}

/// Whether an outcome carries what the server sent (a result, or its own
/// error): then the session is tainted by it.
fn from_server<T>(out: &Result<T, CallError>) -> bool {
    match out {
        Ok(_) => true,
        Err(e) => e.rpc.is_some(),
    }
}

/// A failure that is not a refusal: the server's own error as it came,
/// anything else `-32603` naming the server.
fn failure(gw: &Shared, server: &str, e: CallError) -> RpcError {
    let from_server = e.rpc.is_some();
    let mut rpc = other_error(e);
    if !from_server {
        gw.upstream_error(server);
        if let Some(rest) = rpc.message.strip_prefix("mcppol: ") {
            rpc.message = format!("mcppol: server `{server}`: {rest}");
        }
    }
    rpc
}

/// Whether a call is a stateless host's (its ask is put as
/// `input_required`).
fn is_stateless_call(gw: &Shared, params: &Value) -> bool {
    stateless::is_stateless(params) && gw.stateless_host.load(std::sync::atomic::Ordering::Relaxed)
}

pub(super) async fn call_tool(
    gw: &Arc<Shared>,
    params: &Value,
    handle: &CallHandle,
) -> Result<Value, RpcError> {
    let name = params.get("name").and_then(Value::as_str);
    let Some(name) = name else {
        refused_request(gw, "", TargetKind::Tool, None, "invalid_params");
        return Err(str_param(params, "name", "tools/call")
            .err()
            .unwrap_or_else(|| unknown_tool("")));
    };
    // An unknown server is an unknown tool, word for word.
    let Some((server, own, up)) = naming::split(name, &gw.separator)
        .and_then(|(server, own)| gw.upstream(server).map(|up| (server, own, up)))
    else {
        refused_request(gw, "", TargetKind::Tool, Some(name), "unknown_tool");
        return Err(unknown_tool(name));
    };
    let live = up.live().inspect_err(|_| {
        refused_request(gw, server, TargetKind::Tool, Some(own), "connection_failed")
    })?;
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    if !args.is_object() {
        refused_request(gw, server, TargetKind::Tool, Some(own), "invalid_arguments");
        return Err(RpcError::new(
            codes::INVALID_PARAMS,
            "tools/call: `arguments` is not an object",
        ));
    }
    let opts = governed(
        gw,
        live.transport.server(),
        params,
        &["name", "arguments"],
        handle,
    )
    .await;
    let p = &live.pipeline;
    let started = std::time::Instant::now();
    let out = p.call_tool(own, args, &opts).await;
    gw.took(server, started);
    if from_server(&out) {
        gw.taint.add(server).await;
    }
    let raw = handle.take_kept();
    let mut answer = match out {
        Ok(result) => match raw {
            Some(raw) if same_result(&result, &raw) => raw,
            _ => result.to_value(),
        },
        // Hidden or unknown on its server: the host's name, as for a
        // server the gateway does not have.
        Err(e) if e.kind == ErrorKind::NotFound => return Err(unknown_tool(name)),
        Err(e) if e.rpc.is_none() && !is_refusal(&e) => return Err(failure(gw, server, e)),
        Err(e) => call_answer(server, own, Err(e))?,
    };
    if let Some(cap) = gw.shape {
        let done = shape_relayed(&mut answer, cap, || p.output_schema(own));
        if !done.flags.is_empty() || done.withheld.is_some() {
            let flags: Vec<&str> = done.flags.iter().map(|f| f.as_str()).collect();
            tracing::info!(target: "mcppol::shape", server, tool = own, flags = %flags.join(","), withheld = done.withheld.is_some(), "a result was shaped for the model");
        }
    }
    Ok(answer)
}

/// Whether `call_answer` answers this error as a refusal (a tool result
/// naming the decision) rather than a JSON-RPC error.
fn is_refusal(e: &CallError) -> bool {
    use crate::pipeline::ErrorReason as R;
    matches!(e.kind, ErrorKind::Denied | ErrorKind::Hook)
        || (e.kind == ErrorKind::Protocol
            && matches!(
                e.reason,
                R::InvalidArguments | R::UnsafeSchema | R::InvalidStructuredContent
            ))
}

async fn read_resource(
    gw: &Arc<Shared>,
    params: &Value,
    handle: &CallHandle,
) -> Result<Value, RpcError> {
    let uri = params.get("uri").and_then(Value::as_str);
    let Some(uri) = uri else {
        refused_request(gw, "", TargetKind::Resource, None, "invalid_params");
        return Err(str_param(params, "uri", "resources/read")
            .err()
            .unwrap_or_else(|| unknown_resource("")));
    };
    let (server, live) = route(gw, uri).await.inspect_err(|e| {
        let reason = if e.code == RESOURCE_NOT_FOUND {
            "unknown_resource"
        } else {
            "invalid_params"
        };
        refused_request(gw, "", TargetKind::Resource, Some(uri), reason);
    })?;
    let opts = governed(gw, live.transport.server(), params, &["uri"], handle).await;
    let started = std::time::Instant::now();
    let out = live.pipeline.read_resource(uri, &opts).await;
    gw.took(&server, started);
    if from_server(&out) {
        gw.taint.add(&server).await;
    }
    match out {
        Err(e) if e.rpc.is_none() && !matches!(e.kind, ErrorKind::Denied | ErrorKind::Hook) => {
            Err(failure(gw, &server, e))
        }
        out => read_answer(&server, TargetKind::Resource, uri, out),
    }
}

async fn get_prompt(
    gw: &Arc<Shared>,
    params: &Value,
    handle: &CallHandle,
) -> Result<Value, RpcError> {
    let name = params.get("name").and_then(Value::as_str);
    let Some(name) = name else {
        refused_request(gw, "", TargetKind::Prompt, None, "invalid_params");
        return Err(str_param(params, "name", "prompts/get")
            .err()
            .unwrap_or_else(|| unknown_prompt("")));
    };
    let Some((server, own, up)) = naming::split(name, &gw.separator)
        .and_then(|(server, own)| gw.upstream(server).map(|up| (server, own, up)))
    else {
        refused_request(gw, "", TargetKind::Prompt, Some(name), "unknown_prompt");
        return Err(unknown_prompt(name));
    };
    let live = up.live().inspect_err(|_| {
        refused_request(
            gw,
            server,
            TargetKind::Prompt,
            Some(own),
            "connection_failed",
        )
    })?;
    let opts = governed(
        gw,
        live.transport.server(),
        params,
        &["name", "arguments"],
        handle,
    )
    .await;
    let started = std::time::Instant::now();
    let out = live
        .pipeline
        .get_prompt(own, params.get("arguments").cloned(), &opts)
        .await;
    gw.took(server, started);
    if from_server(&out) {
        gw.taint.add(server).await;
    }
    match out {
        Err(e) if e.rpc.is_none() && !matches!(e.kind, ErrorKind::Denied | ErrorKind::Hook) => {
            Err(failure(gw, server, e))
        }
        out => read_answer(server, TargetKind::Prompt, own, out),
    }
}

fn unknown_prompt(name: &str) -> RpcError {
    RpcError::new(codes::INVALID_PARAMS, format!("Unknown prompt: {name}"))
}

/// The audit line of a governed request refused before any pipeline saw
/// it (no such server, the server down, a parameter missing): `server` is
/// empty when no server could be named.
fn refused_request(
    gw: &Shared,
    server: &str,
    kind: TargetKind,
    name: Option<&str>,
    reason: &'static str,
) {
    let outcome = Outcome::refused(
        server.into(),
        kind,
        name,
        By::Stage(Source::Request),
        reason,
    );
    let record = AuditRecord::of(&outcome).with_principal(gw.principal.as_deref());
    gw.count(record.server, record.decision, record.reason);
    #[cfg(feature = "otel")]
    crate::otel::note(&record);
    if let Some(audit) = &gw.audit {
        let _ = audit.write_record(&record);
    }
}

/// The audit line of a governed request refused before it is served (its
/// id in use, too many in flight, no session yet).
pub(crate) fn refused_unserved(
    gw: &Shared,
    method: &str,
    params: Option<&Value>,
    reason: &'static str,
) {
    let (kind, key) = match method {
        "tools/call" => (TargetKind::Tool, "name"),
        "resources/read" => (TargetKind::Resource, "uri"),
        "prompts/get" => (TargetKind::Prompt, "name"),
        _ => return,
    };
    let name = params.and_then(|p| p.get(key)).and_then(Value::as_str);
    refused_request(gw, "", kind, name, reason);
}
