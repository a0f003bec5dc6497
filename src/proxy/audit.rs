//! `--audit FILE`: one JSON line per governed request, appended and flushed
//! line by line, with the keys `time`, `server`, `kind`, `name`,
//! `decision`, `source`, `reason`, `rule_id`, `args_digest`, `approval`
//! and `hook_id`. Never the arguments, never a result.
//!
//! The pipeline gives every governed request exactly one record
//! (`AuditRecord`), whatever refused it, before anything is sent for it;
//! a line that cannot be written refuses the request (`audit_failed`).
//! [`Audit::write_record`] is the writer any enforcement point reuses.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::sync::Mutex;

use serde_json::Value;

use crate::pipeline::AuditRecord;

/// An open audit file.
pub(crate) struct Audit {
    file: Mutex<File>,
}

/// The JSON line of one record, stamped with the time now: the keys every
/// enforcement point writes (crate::audit).
pub(crate) fn line(r: &AuditRecord<'_>) -> Value {
    r.to_json()
}

impl Audit {
    /// Opens (creates) the file for appending.
    pub(crate) fn open(path: &Path) -> std::io::Result<Audit> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Audit {
            file: Mutex::new(file),
        })
    }

    /// Appends and flushes the line of one record; an error when it could
    /// not be written whole (the request it records is then refused).
    pub(crate) fn write_record(&self, r: &AuditRecord<'_>) -> Result<(), String> {
        self.write(&line(r))
    }

    fn write(&self, line: &Value) -> Result<(), String> {
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // The writer `claude-hook --audit` uses too (crate::audit).
        crate::audit::write_line(&mut *file, line).map_err(|e| {
            tracing::error!(target: "mcppol::proxy", error = %e, "writing the audit file failed");
            format!("writing the audit file failed: {e}")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::DecisionRecord;
    use crate::{PolicySet, Request};

    #[test]
    fn one_line_per_record_without_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let audit = Audit::open(&path).unwrap();
        let set = PolicySet::from_text("p.mcppol", "policy p {\n  ask a: \"fs/w\"\n}").unwrap();
        let d = set.get("p").unwrap().decide(&Request::tool("fs", "w"));
        audit
            .write_record(&AuditRecord::decided(&DecisionRecord {
                server: "fs",
                kind: "tool",
                name: Some("w"),
                decision: &d,
                approval: "denied",
                args_digest: Some("sha256:00"),
            }))
            .unwrap();
        audit
            .write_record(
                &AuditRecord::refused("fs", "tool", Some("secret"), "visibility", "hidden")
                    .with_digest(Some("sha256:11")),
            )
            .unwrap();
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
                    "approval",
                    "hook_id"
                ]
            );
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_line_that_cannot_be_written_is_an_error() {
        let audit = Audit::open(Path::new("/dev/full")).unwrap();
        let r = AuditRecord::refused("fs", "tool", Some("x"), "request", "unknown_tool");
        assert!(audit.write_record(&r).is_err());
    }
}
