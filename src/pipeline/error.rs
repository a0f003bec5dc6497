//! The pipeline's typed errors: a kind, and a reason a program can match on.

#[cfg(feature = "cli")]
use std::borrow::Cow;
use std::fmt;

use crate::enforce::Outcome;
#[cfg(feature = "cli")]
use crate::enforce::{By, Settled};
use crate::mcp::McpError;
use crate::Decision;
#[cfg(feature = "cli")]
use crate::TargetKind;

/// What went wrong, broadly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An unknown tool, or one hidden by the visibility filter (the two
    /// cannot be told apart).
    NotFound,
    /// Policy, a hook or the approver said no.
    Denied,
    /// A hook failed (it panicked, erred, timed out or returned outside
    /// its contract), or the arguments changed after approval.
    Hook,
    /// The server or its schemas broke the protocol (an unsafe schema,
    /// invalid arguments or output, an error answer, a malformed result).
    Protocol,
    /// The connection failed.
    Transport,
    /// No answer in time.
    Timeout,
}

impl ErrorKind {
    /// The kind's word (`not_found`, `denied`, `hook`, `protocol`,
    /// `transport`, `timeout`): how a [`CallError`] displays it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::Denied => "denied",
            ErrorKind::Hook => "hook",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Transport => "transport",
            ErrorKind::Timeout => "timeout",
        }
    }
}

/// How a hook failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HookFailure {
    /// It panicked.
    Panic,
    /// It returned an error.
    Error,
    /// It ran past its deadline.
    Timeout,
    /// It returned something its event does not allow (a call for another
    /// tool, a tool it was not given, an `allow`, ...).
    BadReturn,
}

impl HookFailure {
    /// `panic`, `error`, `timeout` or `bad_return`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookFailure::Panic => "panic",
            HookFailure::Error => "error",
            HookFailure::Timeout => "timeout",
            HookFailure::BadReturn => "bad_return",
        }
    }
}

/// How asking the approver failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AskFailure {
    /// The approver panicked.
    Panic,
    /// It returned an error.
    Error,
    /// It did not answer before its deadline.
    Timeout,
}

impl AskFailure {
    /// `panic`, `error` or `timeout`.
    pub fn as_str(self) -> &'static str {
        match self {
            AskFailure::Panic => "panic",
            AskFailure::Error => "error",
            AskFailure::Timeout => "timeout",
        }
    }
}

/// Why, precisely: the contract's reason words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorReason {
    /// `not_found`: no such tool, resource or prompt (or it is hidden).
    UnknownTool,
    /// `denied` by policy: `deny_rule`, `no_approver`, `definition_changed`,
    /// `no_rule`, `predicate_failed`, `no_policy`, ... (the decision's own
    /// reason).
    Policy(crate::Reason),
    /// `denied` by a hook's deny.
    HookDenied,
    /// `denied` by the approver (`deny`).
    AskDenied,
    /// `denied` by the approver's `deny and halt`: an agent loop should stop.
    AskHalt,
    /// `denied`: the approver failed.
    AskFailed(AskFailure),
    /// `hook`: a hook failed.
    HookFailed(HookFailure),
    /// `hook`: the arguments about to be sent are not the ones policy and
    /// the approver saw.
    ArgsChanged,
    /// `protocol`: the tool's input or output schema is refused as unsafe.
    UnsafeSchema,
    /// `protocol`: the final arguments do not match the input schema.
    InvalidArguments,
    /// `protocol`: the result's `structuredContent` does not match the
    /// output schema.
    InvalidStructuredContent,
    /// `protocol`: the server answered with a JSON-RPC error.
    ServerError,
    /// `protocol`: a malformed answer.
    BadResponse,
    /// `transport`.
    ConnectionFailed,
    /// `timeout`.
    NoAnswer,
    /// `denied`: the request's audit line could not be written, so it is
    /// refused (nothing is sent): a trusted audit trail has every request.
    AuditFailed,
}

impl ErrorReason {
    /// The reason word (`deny_rule`, `ask_failed`, `unsafe_schema`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorReason::UnknownTool => "unknown_tool",
            ErrorReason::Policy(r) => r.as_str(),
            ErrorReason::HookDenied => "hook_denied",
            ErrorReason::AskDenied => "ask_denied",
            ErrorReason::AskHalt => "ask_halt",
            ErrorReason::AskFailed(_) => "ask_failed",
            ErrorReason::HookFailed(_) => "hook_failed",
            ErrorReason::ArgsChanged => "args_changed",
            ErrorReason::UnsafeSchema => "unsafe_schema",
            ErrorReason::InvalidArguments => "invalid_arguments",
            ErrorReason::InvalidStructuredContent => "invalid_structured_content",
            ErrorReason::ServerError => "server_error",
            ErrorReason::BadResponse => "bad_response",
            ErrorReason::ConnectionFailed => "connection_failed",
            ErrorReason::NoAnswer => "no_answer",
            ErrorReason::AuditFailed => "audit_failed",
        }
    }
}

/// A governed request that did not produce a result: a [`ErrorKind`] to
/// branch on broadly, an [`ErrorReason`] to match precisely, and what is
/// known about who said no.
///
/// ```
/// use mcppol::pipeline::{CallError, ErrorKind, ErrorReason};
///
/// fn retry_later(err: &CallError) -> bool {
///     matches!(err.kind, ErrorKind::Timeout | ErrorKind::Transport)
/// }
///
/// let err = CallError::new(ErrorKind::Timeout, ErrorReason::NoAnswer);
/// assert!(retry_later(&err));
/// assert_eq!(err.to_string(), "timeout: no_answer");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallError {
    /// What went wrong, broadly.
    pub kind: ErrorKind,
    /// Why, precisely.
    pub reason: ErrorReason,
    /// The hook that denied or failed.
    pub hook_id: Option<String>,
    /// The policy decision, when policy decided.
    pub decision: Option<Box<Decision>>,
    /// A message for the caller. It is never logged: it may carry what a
    /// hook or the approver said, or the server's error text.
    pub detail: Option<String>,
    /// The server's JSON-RPC error, for `server_error`.
    pub rpc: Option<Box<crate::mcp::RpcError>>,
    /// The request's outcome, when the pipeline refused it (its audit line
    /// is a mapping of the same outcome); `None` for a failure after the
    /// request was allowed (the send, the digest check, an around hook),
    /// and for an unknown or hidden tool (the two cannot be told apart).
    pub outcome: Option<Box<Outcome>>,
}

impl CallError {
    /// An error of `kind` and `reason` with nothing else known (what an
    /// around hook returns to fail the send).
    pub fn new(kind: ErrorKind, reason: ErrorReason) -> Self {
        CallError {
            kind,
            reason,
            hook_id: None,
            decision: None,
            detail: None,
            rpc: None,
            outcome: None,
        }
    }

    /// The `not_found` error of an unknown or hidden tool (the two cannot
    /// be told apart).
    pub fn not_found() -> Self {
        CallError::new(ErrorKind::NotFound, ErrorReason::UnknownTool)
    }

    /// With a message for the caller (never logged).
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// With the id of the hook that denied or failed.
    pub fn with_hook(mut self, id: &str) -> Self {
        self.hook_id = Some(id.to_string());
        self
    }

    /// With the policy decision behind it.
    pub fn with_decision(mut self, d: Decision) -> Self {
        self.decision = Some(Box::new(d));
        self
    }

    /// With the request's outcome.
    pub fn with_outcome(mut self, outcome: Outcome) -> Self {
        self.outcome = Some(Box::new(outcome));
        self
    }

    /// The outcome a front door answers with: the request's own, or, for a
    /// failure after the request was allowed, one made of this error (the
    /// verdict `deny` for a refusal, else the policy's) for the target
    /// `server`, `kind`, `name`.
    #[cfg(feature = "cli")]
    pub(crate) fn answered(
        &self,
        server: &str,
        kind: TargetKind,
        name: Option<&str>,
    ) -> Cow<'_, Outcome> {
        if let Some(o) = &self.outcome {
            return Cow::Borrowed(o);
        }
        let by = if self.hook_id.is_some() || self.kind == ErrorKind::Hook {
            By::Hook
        } else {
            By::Stage(crate::Source::Request)
        };
        let mut o = Outcome::refused(server.into(), kind, name, by, self.reason.as_str())
            .with_hook(self.hook_id.as_deref());
        if let Some(d) = &self.decision {
            if self.kind != ErrorKind::Denied {
                o.verdict = d.decision;
            }
            o.decision = Some((**d).clone());
        }
        if self.is_halt() {
            o.settled = Settled::Halted;
        }
        Cow::Owned(o)
    }

    /// A policy denial.
    pub fn denied(decision: Decision) -> Self {
        CallError::new(ErrorKind::Denied, ErrorReason::Policy(decision.reason))
            .with_decision(decision)
    }

    /// A failed hook.
    pub fn hook_failed(id: &str, how: HookFailure) -> Self {
        CallError::new(ErrorKind::Hook, ErrorReason::HookFailed(how)).with_hook(id)
    }

    /// Whether an agent loop should stop (the approver said `deny and halt`).
    pub fn is_halt(&self) -> bool {
        self.reason == ErrorReason::AskHalt
    }
}

impl From<McpError> for CallError {
    fn from(e: McpError) -> Self {
        match e {
            McpError::Rpc(rpc) => {
                let mut err = CallError::new(ErrorKind::Protocol, ErrorReason::ServerError)
                    .with_detail(rpc.message.clone());
                err.rpc = Some(Box::new(rpc));
                err
            }
            McpError::Protocol(m) => {
                CallError::new(ErrorKind::Protocol, ErrorReason::BadResponse).with_detail(m)
            }
            McpError::Transport(m) => {
                CallError::new(ErrorKind::Transport, ErrorReason::ConnectionFailed).with_detail(m)
            }
            McpError::Timeout(d) => CallError::new(ErrorKind::Timeout, ErrorReason::NoAnswer)
                .with_detail(format!("no answer within {} ms", d.as_millis())),
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::enforce::render::call_error(self, f)
    }
}

impl std::error::Error for CallError {}
