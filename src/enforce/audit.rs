//! The audit line: one JSON object a line, the same keys for every
//! enforcement point that writes one (`mcppol proxy --audit`, `mcppol
//! claude-hook --audit`): `time`, `server`, `kind`, `name`, `decision`,
//! `source`, `reason`, `rule_id`, `args_digest`, `approval` and `hook_id`,
//! and `principal` where the front door knows who called (the gateway's
//! bearer token). Never the arguments, never a result.

// The line and its writer serve the command line's `--audit` (the proxy,
// the hook); a host of the pipeline alone gets the record, not a file.
#[cfg(feature = "cli")]
use std::fs::{File, OpenOptions};
#[cfg(feature = "cli")]
use std::io::Write;
#[cfg(feature = "cli")]
use std::path::Path;
#[cfg(feature = "cli")]
use std::sync::Mutex;
#[cfg(feature = "cli")]
use std::time::SystemTime;

#[cfg(feature = "cli")]
use serde_json::{json, Value};

use super::Outcome;

/// One governed request's line in an audit trail (see
/// `PipelineBuilder::audit`): exactly one per request, whatever decided
/// it, the policy or a step before it (an unknown or hidden tool, a hook
/// that denied, failed or halted, arguments over the bounds or against the
/// schema). A mapping of the request's [`Outcome`] ([`AuditRecord::of`]).
/// Never the arguments, never a result.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AuditRecord<'a> {
    /// The server's id.
    pub server: &'a str,
    /// `tool`, `resource` or `prompt`.
    pub kind: &'a str,
    /// The tool or prompt name, or the resource URI.
    pub name: Option<&'a str>,
    /// What was done: `allow` (it goes to the server) or `deny` (nothing
    /// is sent). An ask a person allowed is `allow`.
    pub decision: &'static str,
    /// Who decided: the policy's sources (`deny`, `pin`, `ask`, `allow`,
    /// `default`), `visibility`, `request` (the request itself: unknown
    /// tool, arguments out of bounds) or `hook`.
    pub source: &'static str,
    /// The reason word: the policy's, `ask_denied`, `ask_halt`,
    /// `ask_failed`, or the refusal's (`unknown_tool`, `hidden`,
    /// `invalid_arguments`, `hook_denied`, `hook_failed`, `hook_halt`, ...).
    pub reason: &'static str,
    /// The deciding rule, when a rule decided.
    pub rule_id: Option<&'a str>,
    /// The hook that denied, failed or halted.
    pub hook_id: Option<&'a str>,
    /// `none`, `grant`, `once`, `always`, `denied`, `halted`, `failed`
    /// (or `host`, where the host asks itself).
    pub approval: &'static str,
    /// `sha256:` of the canonical arguments (tools and prompts with arguments).
    pub args_digest: Option<&'a str>,
    /// Who the request was made for, where the front door knows it (the
    /// gateway's bearer token or JWT); the line has no `principal` key
    /// otherwise.
    pub principal: Option<&'a str>,
    /// The revision and digest of the signed bundle the policy came from,
    /// when the front door runs from one (`--bundle`); the line has no
    /// `bundle` key otherwise.
    pub bundle: Option<(&'a str, &'a str)>,
}

impl<'a> AuditRecord<'a> {
    /// The line of one governed request's outcome.
    pub fn of(outcome: &'a Outcome) -> Self {
        AuditRecord {
            server: &outcome.server,
            kind: outcome.kind.as_str(),
            name: outcome.name.as_deref(),
            decision: outcome.verdict.as_str(),
            source: outcome.by.as_str(),
            reason: outcome.reason,
            rule_id: outcome.rule_id(),
            hook_id: outcome.hook_id.as_deref(),
            approval: outcome.settled.as_str(),
            args_digest: outcome.args_digest.as_deref(),
            principal: None,
            bundle: None,
        }
    }

    /// The same line, naming the bundle (revision, digest) the policy came
    /// from.
    pub fn with_bundle(mut self, bundle: Option<(&'a str, &'a str)>) -> Self {
        self.bundle = bundle;
        self
    }

    /// The same line, naming who the request was made for.
    pub fn with_principal(mut self, principal: Option<&'a str>) -> Self {
        self.principal = principal;
        self
    }

    /// The JSON object, stamped with the time now (the proxy's and the
    /// hook's `--audit` line).
    #[cfg(feature = "cli")]
    pub(crate) fn to_json(self) -> Value {
        let mut line = json!({
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
        });
        if let (Some(principal), Some(map)) = (self.principal, line.as_object_mut()) {
            map.insert("principal".into(), Value::from(principal));
        }
        if let (Some((revision, digest)), Some(map)) = (self.bundle, line.as_object_mut()) {
            map.insert(
                "bundle".into(),
                json!({ "revision": revision, "digest": digest }),
            );
        }
        line
    }
}

/// An audit file (`--audit` of the proxy and the Claude hook), open for
/// appending: each record one whole line, flushed.
#[cfg(feature = "cli")]
pub(crate) struct AuditFile {
    file: Mutex<File>,
}

#[cfg(feature = "cli")]
impl AuditFile {
    /// Opens (creates) the file for appending.
    pub(crate) fn open(path: &Path) -> std::io::Result<AuditFile> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AuditFile {
            file: Mutex::new(file),
        })
    }

    /// Appends the line of `record`, stamped with the time now; an error
    /// when it could not be written whole (the request it records is then
    /// refused).
    pub(crate) fn append(&self, record: &AuditRecord<'_>) -> std::io::Result<()> {
        let line = record.to_json();
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        write_line(&mut *file, &line)
    }
}

/// Writes `line` and a line feed in one write, then flushes: an error
/// means the line may not be in the file, and the caller refuses the call.
#[cfg(feature = "cli")]
fn write_line(out: &mut impl Write, line: &Value) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(line).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    out.write_all(&bytes)?;
    out.flush()
}

/// The time now, RFC 3339 with milliseconds, UTC.
#[cfg(feature = "cli")]
fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// Every audit line's keys, in their order (what the tests hold each line to).
#[cfg(all(test, feature = "cli"))]
pub(crate) const KEYS: [&str; 11] = [
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
    "hook_id",
];

#[cfg(all(test, feature = "cli"))]
mod tests {
    use super::*;

    #[test]
    fn a_line_has_the_keys_in_order() {
        let outcome = Outcome::decided(
            "claude".into(),
            crate::TargetKind::Tool,
            Some("Write"),
            crate::Decision::protected(),
            super::super::Settled::NotAsked,
        )
        .with_digest(Some("sha256:00".into()));
        let line = AuditRecord::of(&outcome).to_json();
        assert_eq!(
            (line["source"].as_str(), line["reason"].as_str()),
            (Some("protected"), Some("protected_policy"))
        );
        let mut out = Vec::new();
        write_line(&mut out, &line).unwrap();
        assert!(out.ends_with(b"}\n"));
        let keys: Vec<String> = line.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, KEYS);
    }
}
