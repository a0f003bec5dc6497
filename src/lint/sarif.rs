//! `mcppol check --format sarif`: diagnostics as one SARIF 2.1.0 log, the
//! format code-scanning UIs (GitHub, GitLab, VS Code's SARIF viewer) read.
//!
//! One run; the driver's rules are the codes that occur, each with a short
//! and a full description and a help link (a code-scanning page shows
//! these beside every result); each result names its rule by id and index
//! and points at the file, line and column range of the entry.
//!
//! An error code's words are its registry entry's (`diagnostics::codes`,
//! the same as `docs/diagnostics.md`); a lint's full description is the
//! "What." paragraph of its section in `docs/checker.md`, read from the
//! page itself so that the two cannot drift.

use serde_json::{json, Value};

use super::{by_code, Lint};
use crate::diagnostics::{codes, Diagnostic, Severity};

/// The checker's page, whose lint sections give the full descriptions.
const CHECKER_PAGE: &str = include_str!("../../docs/checker.md");

/// Where the docs pages are: the repository's, when the package names one
/// (an absolute link, as SARIF asks), else the checkout's own `docs/`.
fn docs_base() -> String {
    match env!("CARGO_PKG_REPOSITORY").trim_end_matches('/') {
        "" => String::new(),
        repository => format!("{repository}/blob/main/"),
    }
}

/// The "What." paragraph of the lint's section of `docs/checker.md`, on
/// one line.
fn lint_detail(lint: &Lint) -> Option<String> {
    let heading = format!("### `{}`", lint.name);
    let section = CHECKER_PAGE.split_once(&heading)?.1;
    let section = section.split("\n### ").next().unwrap_or(section);
    let paragraph = section
        .split("\n\n")
        .find(|p| p.trim_start().starts_with("**What"))?;
    let text = paragraph.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = text
        .split_once(".** ")
        .map_or(text.as_str(), |(_, rest)| rest)
        .to_string();
    Some(text)
}

/// The rule a lint's results name.
fn lint_rule(lint: &Lint) -> Value {
    let summary = capitalized(lint.summary);
    json!({
        "id": lint.code,
        "name": lint.name,
        "shortDescription": { "text": summary },
        "fullDescription": { "text": lint_detail(lint).unwrap_or_else(|| summary.clone()) },
        "help": {
            "text": format!("see docs/checker.md, section `{}`; silence with `# mcppol: allow({})`", lint.name, lint.name)
        },
        "helpUri": format!("{}docs/checker.md#{}", docs_base(), lint.name),
        "defaultConfiguration": { "level": "warning" },
    })
}

/// The rule an error code's results name.
fn error_rule(code: &str) -> Value {
    let Some(entry) = codes::lookup(code) else {
        // Every code is registered (a test holds the source to it); a log
        // is still written whole if one were not.
        return json!({
            "id": code,
            "shortDescription": { "text": code },
            "fullDescription": { "text": code },
            "helpUri": format!("{}docs/diagnostics.md", docs_base()),
        });
    };
    let short = entry
        .meaning
        .split([':', ';'])
        .next()
        .unwrap_or(entry.meaning)
        .trim();
    json!({
        "id": code,
        "name": code.rsplit("::").next().unwrap_or(code),
        "shortDescription": { "text": capitalized(short) },
        "fullDescription": { "text": format!("{}.", capitalized(entry.meaning)) },
        "help": { "text": format!("{}.", capitalized(entry.fix)) },
        "helpUri": format!("{}docs/diagnostics.md#{code}", docs_base()),
        "defaultConfiguration": { "level": "error" },
    })
}

/// `text` with its first letter a capital, as a description starts.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The SARIF schema URI written in the log.
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The SARIF log of these diagnostics.
pub fn log(diagnostics: &[Diagnostic]) -> Value {
    let mut codes: Vec<&'static str> = diagnostics.iter().map(|d| d.code).collect();
    codes.sort_unstable();
    codes.dedup();
    let rules: Vec<Value> = codes
        .iter()
        .map(|code| by_code(code).map_or_else(|| error_rule(code), lint_rule))
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
    use super::*;
    use crate::lint::LINTS;

    /// The fragment of a help link, and the page it is on.
    fn anchor_of(rule: &Value) -> (String, String) {
        let uri = rule["helpUri"].as_str().unwrap_or_default();
        let (page, anchor) = uri.split_once('#').unwrap_or((uri, ""));
        let page = page.rsplit("docs/").next().unwrap_or(page);
        (page.to_string(), anchor.to_string())
    }

    #[test]
    fn every_rule_has_both_descriptions_and_a_link_to_an_anchor_that_exists() {
        let diagnostics_page = include_str!("../../docs/diagnostics.md");
        let rules = codes::ALL
            .iter()
            .map(|c| error_rule(c.code))
            .chain(LINTS.iter().map(lint_rule));
        let mut seen = 0;
        for rule in rules {
            seen += 1;
            let id = rule["id"].as_str().unwrap_or_default().to_string();
            for key in ["shortDescription", "fullDescription", "help"] {
                let text = rule[key]["text"].as_str().unwrap_or_default();
                assert!(text.len() > 8, "{id}: {key} is {text:?}");
            }
            let (page, anchor) = anchor_of(&rule);
            let found = match page.as_str() {
                "diagnostics.md" => diagnostics_page.contains(&format!("<a id=\"{anchor}\"></a>")),
                // GitHub's anchor of a "### `name`" heading is the name.
                "checker.md" => CHECKER_PAGE.contains(&format!("\n### `{anchor}`\n")),
                _ => false,
            };
            assert!(found, "{id}: no anchor `{anchor}` on {page}");
        }
        assert_eq!(seen, codes::ALL.len() + LINTS.len());
    }

    #[test]
    fn a_lints_full_description_is_its_what_paragraph() {
        let lint = by_code("mcppol::lint::shadowed_ask").unwrap_or(&LINTS[0]);
        let detail = lint_detail(lint).unwrap_or_default();
        assert!(detail.starts_with("The same for an ask rule"), "{detail}");
        assert!(!detail.contains('\n'), "{detail}");
        for lint in LINTS {
            let detail = lint_detail(lint);
            assert!(
                detail
                    .as_ref()
                    .is_some_and(|d| d.len() > lint.summary.len() / 2),
                "{}: {detail:?}",
                lint.name
            );
        }
    }

    #[test]
    fn uris() {
        assert_eq!(uri("./policies/a b.mcppol"), "policies/a%20b.mcppol");
        assert_eq!(uri("/srv/p#1.mcppol"), "file:///srv/p%231.mcppol");
    }
}
