//! Reading a policy test file: one directive a line, `#` lines are
//! comments, `case TITLE` starts a case; directives before the first case
//! apply to every case.

use serde_json::Value;

use crate::eval::owned::{parse_host_value, HostValue, RequestSpec};
use crate::fingerprint::Lock;
use crate::syntax::TargetKind;

/// What a case expects; `None` fields are not checked. `rule_id:
/// Some(None)` expects no rule (`rule_id=null`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expect {
    pub decision: String,
    pub source: Option<String>,
    pub reason: Option<String>,
    pub rule_id: Option<Option<String>>,
}

/// One case: its inputs and what it expects.
#[derive(Debug, Clone, Default)]
pub struct Case {
    pub title: String,
    /// 1-based line of `case`.
    pub line: usize,
    pub name: Option<String>,
    pub spec: RequestSpec,
    pub host: Vec<(String, HostValue)>,
    pub expect: Option<Expect>,
}

/// A whole test file.
#[derive(Debug, Clone, Default)]
pub struct TestFile {
    /// `policy PATH`, relative to the test file.
    pub policy: Option<String>,
    pub cases: Vec<Case>,
    /// `uncovered RULE_ID REASON`: rules the author says no case needs to
    /// decide, with why.
    pub uncovered: Vec<(String, String, usize)>,
}

/// A line that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct TestFileError {
    pub line: usize,
    pub message: String,
}

const DECISIONS: [&str; 3] = ["allow", "ask", "deny"];
const SOURCES: [&str; 6] = ["visibility", "deny", "pin", "ask", "allow", "default"];
const REASONS: [&str; 10] = [
    "hidden",
    "deny_rule",
    "ask_rule",
    "allow_rule",
    "predicate_failed",
    "no_approver",
    "definition_changed",
    "no_rule",
    "out_of_scope",
    "no_policy",
];
const KEYS: [&str; 21] = [
    "policy",
    "name",
    "case",
    "tool",
    "resource",
    "prompt",
    "args",
    "annotations",
    "tool_def",
    "taint",
    "principal",
    "assigns",
    "no_approver",
    "lock",
    "trust_server",
    "host",
    "cwd",
    "taint_unknown",
    "local_tool",
    "expect",
    "uncovered",
];

fn json_value(
    key: &str,
    text: &str,
    base: &std::path::Path,
    allow_file: bool,
) -> Result<Value, String> {
    let (body, origin) = match text.strip_prefix('@') {
        Some(path) if allow_file => {
            let full = base.join(path);
            (
                crate::io::read_text(&full, crate::io::MAX_JSON_BYTES, "JSON file")
                    .map_err(|e| format!("{key}: {e}"))?,
                format!("`{path}`"),
            )
        }
        _ => (text.to_string(), "its value".to_string()),
    };
    serde_json::from_str(&body).map_err(|e| format!("{key}: {origin} is not valid JSON: {e}"))
}

fn flag(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "" | "true" => Ok(true),
        "false" => Ok(false),
        other => Err(format!(
            "{key} takes no value (or true/false), not `{other}`"
        )),
    }
}

fn expect(value: &str) -> Result<Expect, String> {
    let mut words = value.split_whitespace();
    let decision = words
        .next()
        .ok_or("expect needs a decision: allow, ask or deny")?;
    if !DECISIONS.contains(&decision) {
        return Err(format!(
            "expect: `{decision}` is not a decision (allow, ask or deny)"
        ));
    }
    let mut out = Expect {
        decision: decision.to_string(),
        ..Expect::default()
    };
    for word in words {
        let (k, v) = word.split_once('=').ok_or_else(|| {
            format!("expect: `{word}` is not KEY=VALUE (source=, reason=, rule_id=)")
        })?;
        match k {
            "source" if SOURCES.contains(&v) => out.source = Some(v.to_string()),
            "reason" if REASONS.contains(&v) => out.reason = Some(v.to_string()),
            "rule_id" | "rule" => {
                out.rule_id = Some(if v == "null" {
                    None
                } else {
                    Some(v.to_string())
                })
            }
            "source" => {
                return Err(format!(
                    "expect: `{v}` is not a source ({})",
                    SOURCES.join(", ")
                ))
            }
            "reason" => {
                return Err(format!(
                    "expect: `{v}` is not a reason ({})",
                    REASONS.join(", ")
                ))
            }
            other => {
                return Err(format!(
                    "expect: unknown key `{other}` (source, reason, rule_id)"
                ))
            }
        }
    }
    Ok(out)
}

/// Applies one directive to a case (or to the defaults).
fn apply(case: &mut Case, key: &str, value: &str, base: &std::path::Path) -> Result<(), String> {
    let spec = &mut case.spec;
    let need = |v: &str| -> Result<(), String> {
        if v.is_empty() {
            Err(format!("{key} needs a value"))
        } else {
            Ok(())
        }
    };
    match key {
        "name" => {
            need(value)?;
            case.name = Some(value.to_string());
        }
        "tool" | "resource" | "prompt" => {
            need(value)?;
            spec.kind = Some(match key {
                "tool" => TargetKind::Tool,
                "resource" => TargetKind::Resource,
                _ => TargetKind::Prompt,
            });
            spec.target = value.to_string();
        }
        "args" => spec.args = Some(json_value(key, value, base, true)?),
        "annotations" => spec.annotations = Some(json_value(key, value, base, true)?),
        "tool_def" => spec.tool_def = Some(json_value(key, value, base, true)?),
        "assigns" => spec.assigns = Some(json_value(key, value, base, true)?),
        "taint" => {
            need(value)?;
            spec.taint
                .extend(value.split_whitespace().map(str::to_string));
        }
        "principal" => {
            need(value)?;
            spec.principal = Some(value.to_string());
        }
        "no_approver" => spec.no_approver = flag(key, value)?,
        "taint_unknown" => spec.taint_unknown = flag(key, value)?,
        "local_tool" => spec.local_tool = flag(key, value)?,
        "cwd" => {
            need(value)?;
            spec.cwd = Some(value.to_string());
        }
        "trust_server" => spec.trust_server = flag(key, value)?,
        "lock" => {
            let v = json_value(key, value, base, true)?;
            // A whole lock file, or just its `tools` map.
            let v = if v.get("version").is_some() {
                v
            } else {
                serde_json::json!({"version": 1, "tools": v})
            };
            spec.lock = Some(Lock::parse(&v.to_string()).map_err(|e| format!("lock: {e}"))?);
        }
        "host" => {
            need(value)?;
            case.host.push(parse_host_value(value)?);
        }
        "expect" => case.expect = Some(expect(value)?),
        other => {
            let hint = crate::diagnostics::did_you_mean(other, KEYS)
                .map(|k| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            return Err(format!("unknown directive `{other}`{hint}"));
        }
    }
    Ok(())
}

/// Parses a test file's text. `base` is the folder that relative paths
/// (`policy`, `@FILE` values) are read from.
pub fn parse_test_file(text: &str, base: &std::path::Path) -> Result<TestFile, TestFileError> {
    let mut file = TestFile::default();
    let mut defaults = Case::default();
    let mut current: Option<Case> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |message: String| TestFileError { line, message };
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (key, value) = match trimmed.split_once(char::is_whitespace) {
            Some((k, v)) => (k, v.trim()),
            None => (trimmed, ""),
        };
        match key {
            "case" => {
                if let Some(done) = current.take() {
                    file.cases.push(done);
                }
                let mut case = defaults.clone();
                case.title = if value.is_empty() {
                    format!("line {line}")
                } else {
                    value.to_string()
                };
                case.line = line;
                case.expect = None;
                current = Some(case);
            }
            "policy" => {
                if current.is_some() {
                    return Err(err(
                        "`policy` names the policy file once, before the first case".into(),
                    ));
                }
                if value.is_empty() {
                    return Err(err("policy needs a file path".into()));
                }
                file.policy = Some(value.to_string());
            }
            "uncovered" => {
                let (id, reason) = value
                    .split_once(char::is_whitespace)
                    .map(|(a, b)| (a, b.trim()))
                    .unwrap_or((value, ""));
                if id.is_empty() || reason.is_empty() {
                    return Err(err(
                        "uncovered takes a rule id and the reason no case decides it".into(),
                    ));
                }
                file.uncovered
                    .push((id.to_string(), reason.to_string(), line));
            }
            _ => {
                let target = current.as_mut().unwrap_or(&mut defaults);
                apply(target, key, value, base).map_err(err)?;
            }
        }
    }
    if let Some(done) = current.take() {
        file.cases.push(done);
    }
    for case in &file.cases {
        if case.expect.is_none() {
            return Err(TestFileError {
                line: case.line,
                message: format!("case `{}` has no `expect` line", case.title),
            });
        }
        if case.spec.kind.is_none() {
            return Err(TestFileError {
                line: case.line,
                message: format!(
                    "case `{}` names no request: add `tool`, `resource` or `prompt`",
                    case.title
                ),
            });
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_defaults_cases_and_expectations() {
        let text = "policy p.mcppol\ntrust_server\n\ncase one\n  tool fs/read\n  args {\"a\": null}\n  expect deny source=deny reason=deny_rule rule_id=x\ncase two\n  resource fs/file:///a\n  no_approver\n  expect allow rule_id=null\n";
        let file = parse_test_file(text, std::path::Path::new(".")).unwrap();
        assert_eq!(file.policy.as_deref(), Some("p.mcppol"));
        assert_eq!(file.cases.len(), 2);
        assert_eq!(file.cases[0].line, 4);
        assert!(file.cases[0].spec.trust_server && file.cases[1].spec.trust_server);
        assert_eq!(file.cases[1].expect.as_ref().unwrap().rule_id, Some(None));
        assert!(file.cases[1].spec.no_approver && !file.cases[0].spec.no_approver);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_test_file("case x\n  tol fs/a\n", std::path::Path::new(".")).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("did you mean `tool`"), "{}", e.message);
        let e = parse_test_file("case x\n  tool fs/a\n", std::path::Path::new(".")).unwrap_err();
        assert_eq!(e.line, 1);
    }
}
