//! What flows through the pipeline: the call, its result, the call's
//! options and the context hooks and the approver see.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::mcp::{CallHandle, McpError};
use crate::Request;

/// One tool call as the pipeline carries it. Hooks get a copy; a
/// before-hook may hand back one with other `arguments` or `meta`, nothing
/// else.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The server's id (chosen by the host).
    pub server: Arc<str>,
    /// The tool's name as the server lists it.
    pub name: String,
    /// The arguments (a JSON object).
    pub arguments: Value,
    /// Sent as the request's `_meta`.
    pub meta: Option<Value>,
    /// Unique within the pipeline.
    pub call_id: u64,
}

impl ToolCall {
    /// The fingerprint-style digest of the canonical arguments (what the
    /// approver sees; log it instead of the arguments).
    pub fn digest(&self) -> String {
        args_digest(&self.arguments)
    }
}

/// `sha256:` and the hex SHA-256 of the arguments' RFC 8785 form.
pub fn args_digest(arguments: &Value) -> String {
    crate::fingerprint::digest(arguments).unwrap_or_else(|_| "sha256:unavailable".to_string())
}

/// A change shaping made to a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ShapeFlag {
    /// Bidirectional controls removed.
    Bidi,
    /// Zero-width characters removed.
    ZeroWidth,
    /// Unicode tag characters removed.
    TagChars,
    /// A media block outside the allow-list became a placeholder.
    MediaDropped,
    /// A block of an unknown type became a placeholder.
    UnsupportedContent,
    /// The result was cut at the size cap.
    Truncated,
}

impl ShapeFlag {
    /// The flag's word in `provenance` (`bidi`, `zero_width`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ShapeFlag::Bidi => "bidi",
            ShapeFlag::ZeroWidth => "zero_width",
            ShapeFlag::TagChars => "tag_chars",
            ShapeFlag::MediaDropped => "media_dropped",
            ShapeFlag::UnsupportedContent => "unsupported_content",
            ShapeFlag::Truncated => "truncated",
        }
    }
}

/// Where a shaped result came from and what shaping changed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Provenance {
    /// The server's id.
    pub server: String,
    /// Whether the result was cut at the size cap.
    pub truncated: bool,
    /// Every change shaping made.
    pub flags: BTreeSet<ShapeFlag>,
}

/// A tool's result (`CallToolResult`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolResult {
    /// Content blocks (`{"type": "text", "text": ...}`, images, ...).
    pub content: Vec<Value>,
    /// `structuredContent`: a JSON value checked against the tool's
    /// `outputSchema` when output validation is on.
    pub structured_content: Option<Value>,
    /// `isError`: the tool ran and reports a failure (still a result, seen
    /// by after-hooks, not a [`CallError`](super::CallError)).
    pub is_error: bool,
    /// `_meta`, as the server sent it.
    pub meta: Option<Value>,
    /// Set by shaping.
    pub provenance: Option<Provenance>,
    /// The result's other keys, as the server sent them and written back
    /// by [`ToolResult::to_value`]: what a newer protocol adds (the `task`
    /// of a task-augmented call's `CreateTaskResult`, say) is relayed, not
    /// dropped.
    pub extra: Map<String, Value>,
}

/// The fixed text of a withheld result.
pub const WITHHELD_TEXT: &str =
    "The tool's result was withheld: a hook that checks results failed.";

impl ToolResult {
    /// A result of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        let mut block = Map::new();
        block.insert("type".into(), Value::from("text"));
        block.insert("text".into(), Value::from(text.into()));
        ToolResult {
            content: vec![Value::Object(block)],
            ..ToolResult::default()
        }
    }

    /// An error result of one text block.
    pub fn error_text(text: impl Into<String>) -> Self {
        ToolResult {
            is_error: true,
            ..ToolResult::text(text)
        }
    }

    /// The result a failing after-hook leaves: an error with a fixed text.
    pub fn withheld() -> Self {
        ToolResult::error_text(WITHHELD_TEXT)
    }

    /// Reads a `CallToolResult` object.
    ///
    /// # Errors
    ///
    /// [`McpError::Protocol`] when it is not an object, `content` is not a
    /// list or `isError` is not a boolean.
    pub fn from_value(value: Value) -> Result<Self, McpError> {
        let Value::Object(mut obj) = value else {
            return Err(McpError::Protocol("a tool result is not an object".into()));
        };
        let content = match obj.remove("content") {
            Some(Value::Array(c)) => c,
            None | Some(Value::Null) => Vec::new(),
            Some(_) => {
                return Err(McpError::Protocol(
                    "a tool result's `content` is not a list".into(),
                ))
            }
        };
        let is_error = match obj.remove("isError") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => b,
            Some(_) => {
                return Err(McpError::Protocol(
                    "a tool result's `isError` is not a boolean".into(),
                ))
            }
        };
        Ok(ToolResult {
            content,
            structured_content: obj.remove("structuredContent"),
            is_error,
            meta: obj.remove("_meta"),
            provenance: None,
            extra: obj,
        })
    }

    /// The `CallToolResult` object (with `provenance` under `_meta` when
    /// shaped: `{"mcppol/provenance": {...}}`).
    pub fn to_value(&self) -> Value {
        let mut obj = Map::new();
        for (k, v) in &self.extra {
            obj.insert(k.clone(), v.clone());
        }
        obj.insert("content".into(), Value::Array(self.content.clone()));
        if let Some(s) = &self.structured_content {
            obj.insert("structuredContent".into(), s.clone());
        }
        obj.insert("isError".into(), Value::from(self.is_error));
        let mut meta = match &self.meta {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        if let Some(p) = &self.provenance {
            meta.insert(
                "mcppol/provenance".into(),
                serde_json::json!({
                    "server": p.server,
                    "truncated": p.truncated,
                    "flags": p.flags.iter().map(|f| f.as_str()).collect::<Vec<_>>(),
                }),
            );
        }
        if !meta.is_empty() {
            obj.insert("_meta".into(), Value::Object(meta));
        }
        Value::Object(obj)
    }

    /// The text of every text block, joined by newlines.
    pub fn joined_text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Per-request options.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Who the call is made for (keys grants; `principal` in policy).
    pub principal: Option<String>,
    /// The session the call belongs to (the gateway's `Mcp-Session-Id`):
    /// what a `limit ... per session` budget counts for.
    pub session: Option<String>,
    /// Host data (`assigns.KEY` in policy).
    pub assigns: Option<Value>,
    /// Server ids whose output is in the model's context.
    pub taint: Vec<String>,
    /// The taint could not be read (a shared store down): every `tainted`
    /// test fails, which matches deny and ask rules and never an allow.
    pub taint_unknown: bool,
    /// Sent as `_meta` (before-hooks may rewrite it).
    pub meta: Option<Value>,
    /// Shape the result for a model (default off).
    pub shape: bool,
    /// The folder the server resolves a relative path from, when the host
    /// knows it: what a relative path argument is placed against (without
    /// it, a path test on a relative path fails closed).
    pub cwd: Option<String>,
    /// The request's other params: what the caller sent besides those the
    /// pipeline writes itself (`name`, `arguments` and `_meta` of a call,
    /// `uri` of a read, `name` and `arguments` of a prompt get), sent to
    /// the server as they came: a task-augmented call's `task`, what a
    /// newer protocol adds. Keys the pipeline writes are never taken from
    /// here.
    pub params: Option<Map<String, Value>>,
    /// The caller's handle on what is sent the server for this request:
    /// cancelling it fails the request and tells the server, whichever
    /// task sent it (an around hook's included).
    pub handle: Option<CallHandle>,
}

impl CallOptions {
    /// The request with this call's principal and assigns, the part of the
    /// policy's inputs every governed request kind shares.
    pub(crate) fn apply<'a>(&'a self, mut request: Request<'a>) -> Request<'a> {
        if let Some(p) = &self.principal {
            request = request.with_principal(p);
        }
        if let Some(a) = &self.assigns {
            request = request.with_assigns(a);
        }
        if let Some(c) = &self.cwd {
            request = request.with_cwd(c);
        }
        if self.taint_unknown {
            request = request.with_taint_unknown();
        }
        request
    }

    /// The folder the server resolves relative paths from.
    pub fn cwd(mut self, dir: &str) -> Self {
        self.cwd = Some(dir.to_string());
        self
    }

    /// In this session (`limit ... per session`).
    pub fn session(mut self, id: &str) -> Self {
        self.session = Some(id.to_string());
        self
    }

    /// For this principal.
    pub fn principal(mut self, p: &str) -> Self {
        self.principal = Some(p.to_string());
        self
    }

    /// With these host data.
    pub fn assigns(mut self, a: Value) -> Self {
        self.assigns = Some(a);
        self
    }

    /// With output of these servers in the model's context.
    pub fn taint(mut self, servers: &[&str]) -> Self {
        self.taint = servers.iter().map(|s| s.to_string()).collect();
        self
    }

    /// With a taint that could not be read (see the `taint_unknown`
    /// field).
    pub fn taint_unknown(mut self) -> Self {
        self.taint_unknown = true;
        self
    }

    /// Sending this `_meta`.
    pub fn meta(mut self, m: Value) -> Self {
        self.meta = Some(m);
        self
    }

    /// Sending these other params with the request (see the `params`
    /// field).
    pub fn params(mut self, params: Map<String, Value>) -> Self {
        self.params = Some(params);
        self
    }

    /// With this handle on what is sent the server (see the `handle`
    /// field).
    pub fn handle(mut self, handle: CallHandle) -> Self {
        self.handle = Some(handle);
        self
    }

    /// Shaping the result for a model.
    pub fn shaped(mut self) -> Self {
        self.shape = true;
        self
    }
}

/// What a hook (and the approver) knows about the request besides its
/// payload. Cheap to clone.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HookCtx {
    /// The server's id.
    pub server: Arc<str>,
    /// The hook's id (empty for the approver).
    pub hook_id: Arc<str>,
    /// Who the request is for ([`CallOptions::principal`]).
    pub principal: Option<Arc<str>>,
    /// The host data of the request ([`CallOptions::assigns`]).
    pub assigns: Option<Arc<Value>>,
    /// The servers whose output is in the model's context
    /// ([`CallOptions::taint`]).
    pub taint: Arc<[String]>,
}
