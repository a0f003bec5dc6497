//! Asking a person about an `ask` decision, in this order: the
//! `--approver` command; else, when the host declared the `elicitation`
//! capability, an `elicitation/create` request to the host; else there is
//! no approver (the contract's `no_approver` deny).
//!
//! The pipeline runs the approver in its own task under its deadline
//! (60 s): a command still running then is killed (it is dropped with its
//! task), and the ask ends in `ask_failed`. So it does, at once, when the
//! host goes away (closes its input): nobody is left for the call's result.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::escape::json_text;
use crate::mcp::peer::{self, Peer, Wait};
use crate::mcp::{BoxFuture, McpError};
use crate::pipeline::{Approval, ApprovalRequest, Approver};

/// The most an approver command may print on stdout; its first line is
/// its answer.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// How the proxy asks.
pub(crate) enum ProxyApprover {
    /// `sh -c COMMAND`, the request as JSON on stdin, the answer on stdout;
    /// given up when the host goes.
    Command { command: String, host: Arc<Peer> },
    /// `elicitation/create` to the host.
    Elicit(Arc<Peer>),
}

impl Approver for ProxyApprover {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, Result<Approval, String>> {
        match self {
            ProxyApprover::Command { command, host } => {
                let (command, host) = (command.clone(), host.clone());
                Box::pin(async move {
                    tokio::select! {
                        answer = run_command(command, request) => answer,
                        why = host.closed() => Err(format!("no answer from the approver: {}", peer::why(why))),
                    }
                })
            }
            ProxyApprover::Elicit(host) => Box::pin(elicit(host.clone(), request)),
        }
    }
}

/// The JSON object an approver command reads on stdin: the exact call
/// (what it decides on) and `message`, the dialog's text (what it may show
/// a person).
pub(crate) fn request_json(r: &ApprovalRequest) -> Value {
    json!({
        "server": r.server,
        "tool": r.tool,
        "arguments": r.arguments,
        "args_digest": r.digest,
        "rule_id": r.decision.rule_id.as_deref(),
        "reason": r.decision.reason.as_str(),
        "message": message(r),
    })
}

/// Reads an approver's answer word.
pub(crate) fn parse_answer(word: &str, who: &str) -> Result<Approval, String> {
    match word.trim() {
        "allow_once" => Ok(Approval::AllowOnce),
        "allow_always" => Ok(Approval::AllowAlways),
        "deny" => Ok(Approval::Deny(format!("{who} said deny."))),
        "deny_and_halt" => Ok(Approval::DenyAndHalt(format!("{who} said deny and halt."))),
        _ => Err(format!("{who} gave no answer mcppol knows")),
    }
}

/// The most an approver command may print on stderr (read and dropped:
/// it may quote the arguments).
const MAX_STDERR_BYTES: usize = 64 * 1024;

async fn run_command(command: String, request: ApprovalRequest) -> Result<Approval, String> {
    use crate::enforce::command::{self, ShCommand};
    // One line, every hidden character written as a `\u` escape: the same
    // value for a JSON reader, nothing drawn out of order where it is shown.
    let mut input = json_text(&request_json(&request)).into_bytes();
    input.push(b'\n');
    let ran = command::run(ShCommand {
        text: &command,
        cwd: None,
        env: &[],
        input,
        max_stdout: MAX_ANSWER_BYTES,
        max_stderr: MAX_STDERR_BYTES,
    })
    .await
    .map_err(|e| format!("the approver failed: {e}"))?;
    if !ran.status.success() {
        return Err(format!("the approver ended with {}", ran.status));
    }
    let text = String::from_utf8_lossy(&ran.stdout);
    parse_answer(text.lines().next().unwrap_or(""), "The approver")
}

/// The message a person reads in the host's elicitation dialog (and an
/// approver command gets as `message`): the one renderer's words.
pub(crate) fn message(r: &ApprovalRequest) -> String {
    crate::enforce::render::ask_message(&r.server, &r.tool, &r.decision, &r.arguments)
}

/// The `elicitation/create` params that put an ask to a person: the
/// dialog's words and the three answers.
pub(crate) fn elicitation_params(request: &ApprovalRequest) -> Value {
    json!({
        "message": message(request),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Decision",
                    "enum": ["allow_once", "allow_always", "deny"],
                }
            },
            "required": ["decision"],
        }
    })
}

/// Reads the person's answer to the elicitation (an `ElicitResult`):
/// allowed only when accepted with an allowing word.
pub(crate) fn elicitation_answer(answer: &Value) -> Approval {
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let word = answer
                .pointer("/content/decision")
                .and_then(Value::as_str)
                .unwrap_or("");
            match parse_answer(word, "The person") {
                Ok(a @ (Approval::AllowOnce | Approval::AllowAlways)) => a,
                _ => Approval::Deny("The person did not allow it.".into()),
            }
        }
        _ => Approval::Deny("The person declined.".into()),
    }
}

async fn elicit(host: Arc<Peer>, request: ApprovalRequest) -> Result<Approval, String> {
    let params = elicitation_params(&request);
    // A call given up while the person is asked (the host cancelled it,
    // the ask timed out) closes the dialog: the host is sent
    // `notifications/cancelled` for the elicitation.
    let wait = Wait {
        cancel_on_drop: Some("the call waiting on this approval was given up"),
        ..Wait::default()
    };
    let answer = match host.request("elicitation/create", Some(params), wait).await {
        Ok(a) => a,
        Err(McpError::Rpc(e)) => return Err(format!("the host answered error {}", e.code)),
        Err(other) => return Err(peer::why(other)),
    };
    Ok(elicitation_answer(&answer))
}

/// Whether the host can answer a form elicitation: it declared the
/// capability, and (2025-11-25) not only for URLs.
pub(crate) fn host_elicits(capabilities: &Value) -> bool {
    match capabilities.get("elicitation") {
        Some(Value::Object(e)) => e.is_empty() || e.contains_key("form"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::HookCtx;
    use crate::{Decision, Reason, Source, Verdict};

    fn asked() -> ApprovalRequest {
        ApprovalRequest {
            server: "fs".into(),
            tool: "write".into(),
            arguments: json!({"path": "/srv/a"}),
            digest: "sha256:00".into(),
            fingerprint: None,
            decision: Decision::new(Verdict::Ask, Source::Ask, Reason::AskRule),
            ctx: HookCtx {
                server: "fs".into(),
                hook_id: "".into(),
                principal: None,
                assigns: None,
                taint: Vec::new().into(),
            },
            handle: None,
        }
    }

    #[tokio::test]
    async fn an_approver_command_is_read_on_both_streams_within_bounds() {
        let answer = |text: &str| run_command(text.to_string(), asked());
        assert_eq!(
            answer("cat >/dev/null; echo 'talking to a person' >&2; echo allow_once").await,
            Ok(Approval::AllowOnce)
        );
        // Past the bound on either stream: no answer, whatever follows.
        assert!(answer("head -c 70000 /dev/zero >&2; echo allow_once")
            .await
            .is_err());
        assert!(answer("echo allow_once; head -c 70000 /dev/zero")
            .await
            .is_err());
        assert!(answer("exit 1").await.is_err());
    }

    #[test]
    fn answers_and_capabilities() {
        assert_eq!(parse_answer("allow_once\n", "x"), Ok(Approval::AllowOnce));
        assert_eq!(
            parse_answer(" allow_always ", "x"),
            Ok(Approval::AllowAlways)
        );
        assert!(matches!(parse_answer("deny", "x"), Ok(Approval::Deny(_))));
        assert!(matches!(
            parse_answer("deny_and_halt", "x"),
            Ok(Approval::DenyAndHalt(_))
        ));
        assert!(parse_answer("yes", "x").is_err());
        assert!(parse_answer("", "x").is_err());
        assert!(host_elicits(&json!({"elicitation": {}})));
        assert!(host_elicits(
            &json!({"elicitation": {"form": {}, "url": {}}})
        ));
        assert!(!host_elicits(&json!({"elicitation": {"url": {}}})));
        assert!(!host_elicits(&json!({"roots": {}})));
    }
}
