//! What the host gets back for a governed request that did not go through:
//! the MCP way for each failure.
//!
//! - an unknown tool and a hidden one: the same JSON-RPC error `-32602`,
//!   the same message but for the name (neither reaches the server);
//! - a denial (policy, a hook, the approver), a failed hook and arguments
//!   that do not fit the tool: a tool result with `isError: true` whose
//!   text names the decision, the reason word and the rule, so the model
//!   stops retrying and a person can find the rule;
//! - the server's own error answer: passed on as it came;
//! - anything else (the server is gone, no answer in time, a malformed
//!   answer): a JSON-RPC internal error.

use serde_json::Value;

use crate::enforce::render;
use crate::mcp::jsonrpc::codes;
use crate::mcp::RpcError;
use crate::pipeline::{CallError, ErrorKind, ErrorReason, ToolResult};
use crate::TargetKind;

/// mcppol's code for a resource read or prompt get it refused.
pub(crate) const DENIED: i64 = -32001;

/// The answer to a `tools/call` for a tool the host may not see or the
/// server never listed.
pub(crate) fn unknown_tool(name: &str) -> RpcError {
    RpcError::new(codes::INVALID_PARAMS, render::unknown_tool(name))
}

/// The answer to a `tools/call` to `server` through the pipeline: a
/// refusal is its outcome in the renderer's words.
pub(crate) fn call_answer(
    server: &str,
    name: &str,
    out: Result<ToolResult, CallError>,
) -> Result<Value, RpcError> {
    match out {
        Ok(result) => Ok(result.to_value()),
        Err(e) => match (e.kind, e.reason) {
            (ErrorKind::NotFound, _) => Err(unknown_tool(name)),
            (ErrorKind::Denied | ErrorKind::Hook, _)
            | (
                ErrorKind::Protocol,
                ErrorReason::InvalidArguments
                | ErrorReason::UnsafeSchema
                | ErrorReason::InvalidStructuredContent,
            ) => {
                let outcome = e.answered(server, TargetKind::Tool, Some(name));
                let text = render::outcome_refusal_text(&outcome, e.detail.as_deref());
                Ok(ToolResult::error_text(text).to_value())
            }
            _ => Err(other_error(e)),
        },
    }
}

/// The answer to a `resources/read` or `prompts/get` (`kind`, of `name`)
/// to `server` through the pipeline: a refusal is its outcome in the
/// renderer's words.
pub(crate) fn read_answer(
    server: &str,
    kind: TargetKind,
    name: &str,
    out: Result<Value, CallError>,
) -> Result<Value, RpcError> {
    match out {
        Ok(v) => Ok(v),
        Err(e) if matches!(e.kind, ErrorKind::Denied | ErrorKind::Hook) => {
            let what = match kind {
                TargetKind::Resource => "resource read",
                _ => "prompt get",
            };
            let outcome = e.answered(server, kind, Some(name));
            let (message, data) = render::read_refusal(what, &outcome);
            Err(RpcError {
                code: DENIED,
                message,
                data: Some(data),
            })
        }
        Err(e) => Err(other_error(e)),
    }
}

/// A failure that is not a refusal.
pub(crate) fn other_error(e: CallError) -> RpcError {
    if let Some(rpc) = e.rpc {
        return *rpc;
    }
    let mut message = format!("mcppol: {}: {}", e.kind.as_str(), e.reason.as_str());
    if let Some(d) = &e.detail {
        message.push_str(": ");
        message.push_str(d);
    }
    RpcError::new(codes::INTERNAL_ERROR, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PolicySet, Request};

    #[test]
    fn refusals_name_decision_reason_and_rule() {
        let set =
            PolicySet::from_text("p.mcppol", "policy p {\n  deny no_rm: \"fs/rm\"\n}").unwrap();
        let d = set.get("p").unwrap().decide(&Request::tool("fs", "rm"));
        let out = call_answer("fs", "rm", Err(CallError::denied(d))).unwrap();
        assert_eq!(out["isError"], true);
        let text = out["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("decision deny, reason deny_rule, rule no_rm"),
            "{text}"
        );
        let hidden = call_answer("fs", "secret", Err(CallError::not_found())).unwrap_err();
        let unknown = call_answer("fs", "nothing", Err(CallError::not_found())).unwrap_err();
        assert_eq!((hidden.code, unknown.code), (-32602, -32602));
        assert_eq!(
            hidden.message.replace("secret", "X"),
            unknown.message.replace("nothing", "X")
        );
    }

    #[test]
    fn server_errors_pass_on_and_the_rest_is_internal() {
        let rpc = RpcError::new(-32000, "boom");
        let e = CallError::from(crate::mcp::McpError::Rpc(rpc.clone()));
        assert_eq!(call_answer("fs", "t", Err(e)), Err(rpc));
        let e = CallError::from(crate::mcp::McpError::Transport("gone".into()));
        let out = call_answer("fs", "t", Err(e)).unwrap_err();
        assert_eq!(out.code, codes::INTERNAL_ERROR);
        assert!(out.message.contains("connection_failed"));
    }
}
