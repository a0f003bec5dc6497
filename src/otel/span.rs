//! One governed request's spans and metrics. The front door runs the
//! request inside [`traced`] (what it knows of the request: the method, the
//! JSON-RPC id, the transport, the session); the audit point reports the
//! request's one record with [`note`]; when the request is answered, the
//! MCP span (`{mcp.method.name} {target}`, kind server) and its child
//! `apply_guardrail` span are made from the two, and the metrics counted,
//! on the exporter's recorder thread: the request's own thread only hands
//! the record over (never waiting: past the bound it is dropped and
//! counted). A record noted outside any request (refused before it was
//! served) is handed over at once.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use sha2::{Digest, Sha256};

use super::{Exporter, EXPORTER};
use crate::pipeline::AuditRecord;

/// What the front door knows of a governed request.
pub(crate) struct RequestMeta {
    /// `tools/call`, `resources/read` or `prompts/get`.
    pub(crate) method: &'static str,
    /// The host's JSON-RPC id, as text.
    pub(crate) request_id: String,
    /// `pipe` (stdio) or `tcp` (streamable HTTP).
    pub(crate) transport: &'static str,
    /// The `Mcp-Session-Id` of an HTTP session (hashed before it is sent).
    pub(crate) session_id: Option<Arc<str>>,
    /// The protocol version the host's `initialize` asked for.
    pub(crate) protocol_version: Option<Arc<str>>,
}

/// The governed method `method` is, if it is one.
pub(crate) fn governed(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" => Some("tools/call"),
        "resources/read" => Some("resources/read"),
        "prompts/get" => Some("prompts/get"),
        _ => None,
    }
}

/// The audit record, owned (the span is made after the request's end).
struct Noted {
    at: SystemTime,
    server: String,
    kind: &'static str,
    name: Option<String>,
    decision: &'static str,
    source: &'static str,
    reason: &'static str,
    rule_id: Option<String>,
    hook_id: Option<String>,
    approval: &'static str,
    args_digest: Option<String>,
    /// The revision and digest of the bundle that decided (the record's,
    /// taken with the policy snapshot).
    bundle: Option<(String, String)>,
}

impl Noted {
    fn of(r: &AuditRecord<'_>) -> Noted {
        Noted {
            at: SystemTime::now(),
            server: r.server.to_string(),
            kind: match r.kind {
                "resource" => "resource",
                "prompt" => "prompt",
                _ => "tool",
            },
            name: r.name.map(str::to_string),
            decision: r.decision,
            source: r.source,
            reason: r.reason,
            rule_id: r.rule_id.map(str::to_string),
            hook_id: r.hook_id.map(str::to_string),
            approval: r.approval,
            args_digest: r.args_digest.map(str::to_string),
            bundle: r
                .bundle
                .map(|(rev, digest)| (rev.to_string(), digest.to_string())),
        }
    }
}

struct InFlight {
    meta: RequestMeta,
    started: SystemTime,
    noted: Mutex<Option<Noted>>,
}

tokio::task_local! {
    static REQUEST: Arc<InFlight>;
}

/// Runs `request` (a governed request's handling, up to its answer) and,
/// with an exporter running, gives back what [`note`] was told meanwhile
/// as spans to make once the answer is sent ([`Pending::emit`]: their cost
/// is not the answer's); `error` names the answer's error (`error.type`,
/// the JSON-RPC code) when it is one. Without an exporter, or for a
/// method that is not governed, it is `request` alone.
pub(crate) async fn traced<T>(
    meta: Option<RequestMeta>,
    error: impl FnOnce(&T) -> Option<String>,
    request: impl Future<Output = T>,
) -> (T, Option<Pending>) {
    let (Some(_), Some(meta)) = (EXPORTER.get(), meta) else {
        return (request.await, None);
    };
    let inflight = Arc::new(InFlight {
        meta,
        started: SystemTime::now(),
        noted: Mutex::new(None),
    });
    let out = REQUEST.scope(inflight.clone(), request).await;
    let noted = inflight
        .noted
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let pending = noted.map(|noted| Pending {
        inflight,
        noted,
        error: error(&out),
        answered: None,
    });
    (out, pending)
}

/// A governed request's record, for its spans and metrics.
pub(crate) struct Pending {
    inflight: Arc<InFlight>,
    noted: Noted,
    error: Option<String>,
    /// When the answer was sent (the request span's end).
    answered: Option<SystemTime>,
}

impl Pending {
    /// The request has been answered: its spans end now, and are made on
    /// the recorder thread.
    pub(crate) fn emit(mut self) {
        if let Some(exporter) = EXPORTER.get() {
            self.answered = Some(SystemTime::now());
            exporter.hand_over(self);
        }
    }

    /// Makes the spans and counts the metrics (the recorder thread).
    pub(super) fn record(self, exporter: &Exporter) {
        let end = self.answered.unwrap_or(self.noted.at);
        emit(
            exporter,
            &self.inflight.meta,
            self.inflight.started,
            end,
            &self.noted,
            self.error.as_deref(),
        );
    }
}

/// The audit record of a governed request: kept for the request's spans
/// (inside [`traced`]), or made into spans at once (a request refused
/// before it was served). Nothing without an exporter.
pub(crate) fn note(record: &AuditRecord<'_>) {
    let Some(exporter) = EXPORTER.get() else {
        return;
    };
    let mut noted = Some(Noted::of(record));
    let kept = REQUEST.try_with(|inflight| {
        let mut slot = inflight
            .noted
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // The first record is the request's (there is one).
        if slot.is_none() {
            *slot = noted.take();
        }
    });
    if let (Err(_), Some(noted)) = (kept, noted) {
        let method = match noted.kind {
            "resource" => "resources/read",
            "prompt" => "prompts/get",
            _ => "tools/call",
        };
        let meta = RequestMeta {
            method,
            request_id: String::new(),
            transport: "",
            session_id: None,
            protocol_version: None,
        };
        let at = noted.at;
        exporter.hand_over(Pending {
            inflight: Arc::new(InFlight {
                meta,
                started: at,
                noted: Mutex::new(None),
            }),
            noted,
            error: None,
            answered: Some(at),
        });
    }
}

/// The record of a request a front door decided and answered at once
/// (`mcppol serve`'s `/v1/decide`), handed over for its spans: the request
/// span runs from `started` to now. Nothing without an exporter.
pub(crate) fn decided(meta: RequestMeta, started: SystemTime, record: &AuditRecord<'_>) {
    let Some(exporter) = EXPORTER.get() else {
        return;
    };
    let noted = Noted::of(record);
    let at = noted.at;
    exporter.hand_over(Pending {
        inflight: Arc::new(InFlight {
            meta,
            started,
            noted: Mutex::new(None),
        }),
        noted,
        error: None,
        answered: Some(at),
    });
}

/// The session id as it is recorded: not the id itself (which addresses
/// the session), its SHA-256, shortened.
pub(crate) fn session_digest(id: &str) -> Arc<str> {
    let digest = Sha256::digest(id.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}").into()
}

fn emit(
    e: &Exporter,
    meta: &RequestMeta,
    started: SystemTime,
    end: SystemTime,
    n: &Noted,
    error: Option<&str>,
) {
    let name = n.name.as_deref().unwrap_or("");
    // A resource's URI is request data: neither the span's name nor an
    // attribute carries it.
    let target = match n.kind {
        "tool" | "prompt" if !name.is_empty() => Some(name),
        _ => None,
    };
    let span_name = match target {
        Some(t) => format!("{} {t}", meta.method),
        None => meta.method.to_string(),
    };
    let mut attrs = vec![
        KeyValue::new("mcp.method.name", meta.method),
        KeyValue::new("mcppol.server", n.server.clone()),
    ];
    let mut metric_attrs = vec![KeyValue::new("mcp.method.name", meta.method)];
    match (n.kind, target) {
        ("tool", Some(t)) => {
            attrs.push(KeyValue::new("gen_ai.tool.name", t.to_string()));
            attrs.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            metric_attrs.push(KeyValue::new("gen_ai.tool.name", t.to_string()));
        }
        ("prompt", Some(t)) => {
            attrs.push(KeyValue::new("gen_ai.prompt.name", t.to_string()));
            metric_attrs.push(KeyValue::new("gen_ai.prompt.name", t.to_string()));
        }
        _ => {}
    }
    if !meta.request_id.is_empty() {
        attrs.push(KeyValue::new("jsonrpc.request.id", meta.request_id.clone()));
    }
    if !meta.transport.is_empty() {
        attrs.push(KeyValue::new("network.transport", meta.transport));
        metric_attrs.push(KeyValue::new("network.transport", meta.transport));
    }
    if let Some(s) = &meta.session_id {
        attrs.push(KeyValue::new("mcp.session.id", s.to_string()));
    }
    if let Some(v) = meta.protocol_version.as_ref().filter(|v| !v.is_empty()) {
        attrs.push(KeyValue::new("mcp.protocol.version", v.to_string()));
    }
    if let Some(code) = error {
        attrs.push(KeyValue::new("error.type", code.to_string()));
        metric_attrs.push(KeyValue::new("error.type", code.to_string()));
    }
    e.decisions.add(
        1,
        &[
            KeyValue::new("mcppol.server", n.server.clone()),
            KeyValue::new("gen_ai.security.decision.type", n.decision),
            KeyValue::new("gen_ai.security.decision.reason", n.reason),
        ],
    );
    let took = end.duration_since(started).unwrap_or_default();
    e.duration.record(took.as_secs_f64(), &metric_attrs);
    if e.stats.down() {
        // The endpoint is down and its backoff runs: spans made now would
        // be lost, so they are counted as lost without being made.
        e.stats.failed.fetch_add(2, Ordering::Relaxed);
        return;
    }
    let request = e
        .tracer
        .span_builder(span_name)
        .with_kind(SpanKind::Server)
        .with_start_time(started)
        .with_attributes(attrs)
        .start(&e.tracer);
    let cx = Context::new().with_span(request);

    let digest = e.policy.get();
    let target_type = match n.kind {
        "tool" => "tool_call",
        other => other,
    };
    let mut guard = vec![
        KeyValue::new("gen_ai.operation.name", "apply_guardrail"),
        KeyValue::new("gen_ai.guardian.name", "mcppol"),
        KeyValue::new("gen_ai.security.target.type", target_type),
        KeyValue::new("gen_ai.security.decision.type", n.decision),
        KeyValue::new("gen_ai.security.decision.reason", n.reason),
        KeyValue::new("gen_ai.security.policy.id", digest.to_string()),
        KeyValue::new("gen_ai.security.policy.name", e.policy.name.clone()),
        KeyValue::new("gen_ai.security.policy.version", digest.to_string()),
        KeyValue::new("mcppol.source", n.source),
        KeyValue::new("mcppol.approval", n.approval),
    ];
    for (key, value) in [
        ("mcppol.rule_id", &n.rule_id),
        ("mcppol.hook_id", &n.hook_id),
        ("mcppol.args_digest", &n.args_digest),
    ] {
        if let Some(v) = value {
            guard.push(KeyValue::new(key, v.clone()));
        }
    }
    if let Some((revision, digest)) = &n.bundle {
        guard.push(KeyValue::new("mcppol.bundle.revision", revision.clone()));
        guard.push(KeyValue::new("mcppol.bundle.digest", digest.clone()));
    }
    let mut guardrail = e
        .tracer
        .span_builder("apply_guardrail mcppol")
        .with_kind(SpanKind::Internal)
        .with_start_time(started)
        .with_attributes(guard)
        .start_with_context(&e.tracer, &cx);
    guardrail.end_with_timestamp(n.at.max(started));
    let span = cx.span();
    if let Some(code) = error {
        span.set_status(Status::error(format!("JSON-RPC error {code}")));
    }
    span.end_with_timestamp(end);
}
