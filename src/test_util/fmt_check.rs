//! What the `fmt` tests share: formatting that must succeed, the decisions
//! of a policy over a spread of requests (to compare before and after
//! formatting), and the corpus of policy files. Used by the integration
//! suite (`tests/suite/fmt.rs`) and by the formatter's unit test
//! (`src/fmt/meaning.rs`), so both check against one spread.

use crate::{format, PolicySet, Request, TargetKind, ToolApproval};
use serde_json::json;

/// Formats `text`, panicking with the reason when it cannot be formatted.
pub fn fmt(origin: &str, text: &str) -> String {
    format(origin, text).unwrap_or_else(|e| panic!("{origin}: {e:?}"))
}

/// Decisions over a spread of requests, to compare before and after.
pub fn decisions(origin: &str, text: &str) -> Vec<String> {
    let set = PolicySet::from_text(origin, text).unwrap();
    let args = [
        json!({}),
        json!({"path": "/srv/a", "mode": "r", "n": 2, "id": "T-1"}),
        json!({"path": "/etc", "source": "/srv/x", "destination": "/tmp", "branch": "main", "to": "a@example.com"}),
        json!({"path": 3, "attempt": 2, "paths": ["/srv/sandbox/a"], "odd key": [{"name": "z"}]}),
    ];
    let names = [
        ("fs", "read_text_file"),
        ("fs", "write_file"),
        ("fs", "read"),
        ("github", "delete_repo"),
        ("github", "create_issue"),
        ("git", "push_force"),
        ("mail", "send"),
        ("docs", "x"),
        ("x", "y"),
        ("a", "b"),
        ("t", "close"),
        ("ops", "restart_service"),
        ("fs", "secret_x"),
    ];
    let mut out = Vec::new();
    for p in set.iter() {
        for (server, name) in names {
            for (i, a) in args.iter().enumerate() {
                for kind in TargetKind::ALL {
                    let taint: &[&str] = if i % 2 == 1 { &["web"] } else { &[] };
                    let approval = [
                        ToolApproval::Approved,
                        ToolApproval::New,
                        ToolApproval::Changed,
                    ][i % 3];
                    let r = Request::new(kind, server, name)
                        .with_args(a)
                        .with_taint(taint)
                        .with_approval(approval)
                        .with_principal("dana");
                    // Formatting may move a rule to another line: the
                    // decision, not where its rule is written, must stay.
                    let mut d = p.decide(&r);
                    d.line = None;
                    out.push(format!("{} {server}/{name} {i} {}", p.name(), d.to_json()));
                }
            }
        }
    }
    out
}

/// Every policy file of the fmt fixtures, `policies/` and the ok fixtures.
pub fn corpus() -> Vec<(String, String)> {
    let mut files = Vec::new();
    for dir in ["tests/fixtures/fmt", "policies", "tests/fixtures/ok"] {
        let mut entries: Vec<_> =
            std::fs::read_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
        entries.sort();
        for path in entries {
            if path.extension().is_some_and(|e| e == "mcppol") {
                let text = std::fs::read_to_string(&path).unwrap();
                files.push((path.display().to_string(), text));
            }
        }
    }
    files
}
