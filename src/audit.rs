//! The audit line: one JSON object a line, the same keys for every
//! enforcement point that writes one (`mcppol proxy --audit`, `mcppol
//! claude-hook --audit`): `time`, `server`, `kind`, `name`, `decision`,
//! `source`, `reason`, `rule_id`, `args_digest`, `approval` and `hook_id`.
//! Never the arguments, never a result.

use std::io::Write;
use std::time::SystemTime;

use serde_json::{json, Value};

/// One decided request, as the audit records it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AuditLine<'a> {
    pub server: &'a str,
    pub kind: &'a str,
    pub name: Option<&'a str>,
    pub decision: &'a str,
    pub source: &'a str,
    pub reason: &'a str,
    pub rule_id: Option<&'a str>,
    pub args_digest: Option<&'a str>,
    pub approval: &'a str,
    /// The hook that refused the request, if one did.
    pub hook_id: Option<&'a str>,
}

impl AuditLine<'_> {
    /// The JSON object, stamped with the time now.
    pub(crate) fn to_json(self) -> Value {
        json!({
            "time": now(),
            "server": self.server,
            "kind": self.kind,
            "name": self.name,
            "decision": self.decision,
            "source": self.source,
            "reason": self.reason,
            "rule_id": self.rule_id,
            "args_digest": self.args_digest,
            "approval": self.approval,
            "hook_id": self.hook_id,
        })
    }
}

/// Writes `line` and a line feed in one write, then flushes: an error
/// means the line may not be in the file, and the caller refuses the call.
pub(crate) fn write_line(out: &mut impl Write, line: &Value) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(line).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    out.write_all(&bytes)?;
    out.flush()
}

/// The time now, RFC 3339 with milliseconds, UTC.
pub(crate) fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_has_the_keys_in_order() {
        let line = AuditLine {
            server: "claude",
            kind: "tool",
            name: Some("Write"),
            decision: "deny",
            source: "protected",
            reason: "protected_policy",
            rule_id: None,
            args_digest: Some("sha256:00"),
            approval: "none",
            hook_id: None,
        }
        .to_json();
        let mut out = Vec::new();
        write_line(&mut out, &line).unwrap();
        assert!(out.ends_with(b"}\n"));
        let keys: Vec<String> = line.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "time",
                "server",
                "kind",
                "name",
                "decision",
                "source",
                "reason",
                "rule_id",
                "args_digest",
                "approval",
                "hook_id"
            ]
        );
    }
}
