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

use serde_json::{json, Value};

use crate::mcp::jsonrpc::codes;
use crate::mcp::RpcError;
use crate::pipeline::{CallError, ErrorKind, ErrorReason, ToolResult};

/// mcppol's code for a resource read or prompt get it refused.
pub(crate) const DENIED: i64 = -32001;

/// The answer to a `tools/call` for a tool the host may not see or the
/// server never listed.
pub(crate) fn unknown_tool(name: &str) -> RpcError {
    RpcError::new(codes::INVALID_PARAMS, format!("Unknown tool: {name}"))
}

/// The text a model reads for a call that did not go through.
pub(crate) fn refusal_text(e: &CallError) -> String {
    let mut text = String::from("mcppol refused this call: ");
    match &e.decision {
        Some(d) => text.push_str(&format!(
            "decision {}, reason {}, rule {}",
            // The policy's verdict was ask when a person or approver said no.
            if e.kind == ErrorKind::Denied {
                "deny"
            } else {
                d.decision.as_str()
            },
            e.reason.as_str(),
            d.rule_id.as_deref().unwrap_or("none"),
        )),
        None => text.push_str(&format!("decision deny, reason {}", e.reason.as_str())),
    }
    if let Some(d) = e.decision.as_ref() {
        if e.reason.as_str() != d.reason.as_str() {
            text.push_str(&format!(" (policy reason {})", d.reason.as_str()));
        }
        if let Some(p) = &d.policy {
            text.push_str(&format!(", policy {p}"));
        }
    }
    if let Some(hook) = &e.hook_id {
        text.push_str(&format!(", hook {hook}"));
    }
    text.push('.');
    let said = matches!(
        e.reason,
        ErrorReason::HookDenied
            | ErrorReason::AskDenied
            | ErrorReason::AskHalt
            | ErrorReason::InvalidArguments
    );
    if let (true, Some(detail)) = (said, &e.detail) {
        text.push_str(&format!(" {detail}"));
    }
    if e.is_halt() {
        text.push_str(" Stop: the person asked to halt.");
    } else {
        text.push_str(" Do not retry the same call; a person can change the policy.");
    }
    text
}

/// The answer to a `tools/call` through the pipeline.
pub(crate) fn call_answer(
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
            ) => Ok(ToolResult::error_text(refusal_text(&e)).to_value()),
            _ => Err(other_error(e)),
        },
    }
}

/// The answer to a `resources/read` or `prompts/get` through the pipeline.
pub(crate) fn read_answer(what: &str, out: Result<Value, CallError>) -> Result<Value, RpcError> {
    match out {
        Ok(v) => Ok(v),
        Err(e) if matches!(e.kind, ErrorKind::Denied | ErrorKind::Hook) => {
            let d = e.decision.as_ref();
            Err(RpcError {
                code: DENIED,
                message: format!("mcppol refused this {what}: reason {}", e.reason.as_str()),
                data: Some(json!({
                    "decision": "deny",
                    "reason": e.reason.as_str(),
                    "rule_id": d.and_then(|d| d.rule_id.as_deref()),
                    "policy": d.and_then(|d| d.policy.as_deref()),
                    "hook_id": e.hook_id,
                })),
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
        let out = call_answer("rm", Err(CallError::denied(d))).unwrap();
        assert_eq!(out["isError"], true);
        let text = out["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("decision deny, reason deny_rule, rule no_rm"),
            "{text}"
        );
        let hidden = call_answer("secret", Err(CallError::not_found())).unwrap_err();
        let unknown = call_answer("nothing", Err(CallError::not_found())).unwrap_err();
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
        assert_eq!(call_answer("t", Err(e)), Err(rpc));
        let e = CallError::from(crate::mcp::McpError::Transport("gone".into()));
        let out = call_answer("t", Err(e)).unwrap_err();
        assert_eq!(out.code, codes::INTERNAL_ERROR);
        assert!(out.message.contains("connection_failed"));
    }
}
