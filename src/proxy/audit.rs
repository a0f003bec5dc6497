//! `--audit FILE`: one JSON line per governed request, appended and flushed
//! line by line, with the keys `time`, `server`, `kind`, `name`,
//! `decision`, `source`, `reason`, `rule_id`, `args_digest`, `approval`
//! and `hook_id`. Never the arguments, never a result.
//!
//! Each line is the mapping of a request's one outcome (the pipeline's,
//! or the proxy's for a request the pipeline never saw), written by the
//! writer every enforcement point shares (`crate::enforce::audit`); a
//! line that cannot be written refuses the request (`audit_failed`).

use std::path::Path;

use crate::enforce::audit::AuditFile;
use crate::pipeline::AuditRecord;

/// An open audit file.
pub(crate) struct Audit {
    file: AuditFile,
}

impl Audit {
    /// Opens (creates) the file for appending.
    pub(crate) fn open(path: &Path) -> std::io::Result<Audit> {
        Ok(Audit {
            file: AuditFile::open(path)?,
        })
    }

    /// Appends and flushes the line of one record; an error when it could
    /// not be written whole (the request it records is then refused).
    pub(crate) fn write_record(&self, r: &AuditRecord<'_>) -> Result<(), String> {
        self.file.append(r).map_err(|e| {
            tracing::error!(target: "mcppol::proxy", error = %e, "writing the audit file failed");
            format!("writing the audit file failed: {e}")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{By, Outcome, Settled};
    use crate::{PolicySet, Request, Source, TargetKind};
    use serde_json::Value;

    #[test]
    fn one_line_per_record_without_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let audit = Audit::open(&path).unwrap();
        let set = PolicySet::from_text("p.mcppol", "policy p {\n  ask a: \"fs/w\"\n}").unwrap();
        let d = set.get("p").unwrap().decide(&Request::tool("fs", "w"));
        let asked = Outcome::decided("fs".into(), TargetKind::Tool, Some("w"), d, Settled::Denied)
            .with_digest(Some("sha256:00".into()));
        audit.write_record(&AuditRecord::of(&asked)).unwrap();
        let hidden = Outcome::refused(
            "fs".into(),
            TargetKind::Tool,
            Some("secret"),
            By::Stage(Source::Visibility),
            "hidden",
        )
        .with_digest(Some("sha256:11".into()));
        audit.write_record(&AuditRecord::of(&hidden)).unwrap();
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
            assert_eq!(keys, crate::enforce::audit::KEYS);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_line_that_cannot_be_written_is_an_error() {
        let audit = Audit::open(Path::new("/dev/full")).unwrap();
        let unknown = Outcome::refused(
            "fs".into(),
            TargetKind::Tool,
            Some("x"),
            By::Stage(Source::Request),
            "unknown_tool",
        );
        assert!(audit.write_record(&AuditRecord::of(&unknown)).is_err());
    }
}
