//! `--audit FILE`: one JSON line per governed request, appended and flushed
//! line by line, with the keys `time`, `server`, `kind`, `name`,
//! `decision`, `source`, `reason`, `rule_id`, `args_digest` and
//! `approval`. Never the arguments, never a result.
//!
//! `decision` and `reason` say what happened: an ask a person allowed is
//! `allow` (with `approval` `once`, `always` or `grant`), one refused is
//! `deny` with `ask_denied`, `ask_halt` or `ask_failed`.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::pipeline::DecisionRecord;
use crate::Verdict;

/// An open audit file.
pub(crate) struct Audit {
    file: Mutex<File>,
}

impl Audit {
    /// Opens (creates) the file for appending.
    pub(crate) fn open(path: &Path) -> std::io::Result<Audit> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Audit {
            file: Mutex::new(file),
        })
    }

    /// The line of one pipeline decision.
    pub(crate) fn record(&self, r: &DecisionRecord<'_>) {
        let d = r.decision;
        let (decision, reason) = match (d.decision, r.approval) {
            (Verdict::Ask, "once" | "always" | "grant") => ("allow", d.reason.as_str()),
            (Verdict::Ask, "denied") => ("deny", "ask_denied"),
            (Verdict::Ask, "halted") => ("deny", "ask_halt"),
            (Verdict::Ask, _) => ("deny", "ask_failed"),
            (v, _) => (v.as_str(), d.reason.as_str()),
        };
        self.write(json!({
            "time": now(),
            "server": r.server,
            "kind": r.kind,
            "name": r.name,
            "decision": decision,
            "source": d.source.as_str(),
            "reason": reason,
            "rule_id": d.rule_id.as_deref(),
            "args_digest": r.args_digest,
            "approval": r.approval,
        }));
    }

    /// The line of a call to a tool the host may not see (`hidden`) or the
    /// server never listed (`unknown_tool`): refused before policy.
    pub(crate) fn not_found(&self, server: &str, name: &str, hidden: bool, digest: &str) {
        let (source, reason) = if hidden {
            ("visibility", "hidden")
        } else {
            ("request", "unknown_tool")
        };
        self.write(json!({
            "time": now(),
            "server": server,
            "kind": "tool",
            "name": name,
            "decision": "deny",
            "source": source,
            "reason": reason,
            "rule_id": null,
            "args_digest": digest,
            "approval": "none",
        }));
    }

    fn write(&self, line: Value) {
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // The writer `claude-hook --audit` uses too (crate::audit).
        if let Err(e) = crate::audit::write_line(&mut *file, &line) {
            tracing::error!(target: "mcppol::proxy", error = %e, "writing the audit file failed");
        }
    }
}

use crate::audit::now;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PolicySet, Request};

    #[test]
    fn one_line_per_record_without_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let audit = Audit::open(&path).unwrap();
        let set = PolicySet::from_text("p.mcppol", "policy p {\n  ask a: \"fs/w\"\n}").unwrap();
        let d = set.get("p").unwrap().decide(&Request::tool("fs", "w"));
        audit.record(&DecisionRecord {
            server: "fs",
            kind: "tool",
            name: Some("w"),
            decision: &d,
            approval: "denied",
            args_digest: Some("sha256:00"),
        });
        audit.not_found("fs", "secret", true, "sha256:11");
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            (
                lines[0]["decision"].as_str(),
                lines[0]["reason"].as_str(),
                lines[0]["rule_id"].as_str()
            ),
            (Some("deny"), Some("ask_denied"), Some("a"))
        );
        assert_eq!(lines[1]["reason"], "hidden");
        for l in &lines {
            let keys: Vec<&String> = l.as_object().unwrap().keys().collect();
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
                    "approval"
                ]
            );
        }
    }
}
