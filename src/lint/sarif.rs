//! `mcppol check --format sarif`: diagnostics as one SARIF 2.1.0 log, the
//! format code-scanning UIs (GitHub, GitLab, VS Code's SARIF viewer) read.
//!
//! One run; the driver's rules are the codes that occur (with the lint's
//! summary when the code is a lint); each result names its rule by id and
//! index and points at the file, line and column range of the entry.

use serde_json::{json, Value};

use super::by_code;
use crate::diagnostics::{Diagnostic, Severity};

/// The SARIF schema URI written in the log.
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The SARIF log of these diagnostics.
pub fn log(diagnostics: &[Diagnostic]) -> Value {
    let mut codes: Vec<&'static str> = diagnostics.iter().map(|d| d.code).collect();
    codes.sort_unstable();
    codes.dedup();
    let rules: Vec<Value> = codes
        .iter()
        .map(|code| {
            let mut rule = json!({ "id": code });
            if let Some(lint) = by_code(code) {
                rule["name"] = json!(lint.name);
                rule["shortDescription"] = json!({ "text": lint.summary });
                rule["help"] = json!({
                    "text": format!("see docs/checker.md, section `{}`; silence with `# mcppol: allow({})`", lint.name, lint.name)
                });
                rule["defaultConfiguration"] = json!({ "level": "warning" });
            }
            rule
        })
        .collect();
    let results: Vec<Value> = diagnostics
        .iter()
        .map(|d| {
            let (line, column) = d.line_col();
            let (end_line, end_column) = d.source.line_col(d.span.end);
            let mut text = d.message.clone();
            if let Some(help) = &d.help {
                text.push_str("\nhelp: ");
                text.push_str(help);
            }
            json!({
                "ruleId": d.code,
                "ruleIndex": codes.iter().position(|c| *c == d.code).unwrap_or(0),
                "level": match d.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                },
                "message": { "text": text },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": uri(&d.source.name) },
                        "region": {
                            "startLine": line,
                            "startColumn": column,
                            "endLine": end_line,
                            "endColumn": end_column,
                        }
                    }
                }]
            })
        })
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "mcppol",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                }
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    })
}

/// A URI for a path as given on the command line: relative paths stay
/// relative (`/` separators, no `./`), absolute ones become `file://` URIs.
fn uri(path: &str) -> String {
    let path = path.replace('\\', "/");
    let path = path.strip_prefix("./").unwrap_or(&path);
    let escaped: String = path
        .chars()
        .map(|c| match c {
            ' ' => "%20".to_string(),
            '%' => "%25".to_string(),
            '#' => "%23".to_string(),
            '?' => "%3F".to_string(),
            c => c.to_string(),
        })
        .collect();
    if escaped.starts_with('/') {
        format!("file://{escaped}")
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::uri;

    #[test]
    fn uris() {
        assert_eq!(uri("./policies/a b.mcppol"), "policies/a%20b.mcppol");
        assert_eq!(uri("/srv/p#1.mcppol"), "file:///srv/p%231.mcppol");
    }
}
