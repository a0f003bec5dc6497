#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `mcppol fmt`: golden output, idempotence, and that formatting keeps the
//! decisions. That it keeps the compiled rules too (and the property test
//! over random policies) is a unit test beside the formatter, in
//! `src/fmt/meaning.rs`, since the compiled rules are not public.

use mcppol::{format, FmtError, PolicySet, Request, TargetKind, ToolApproval};
use serde_json::json;

fn fmt(origin: &str, text: &str) -> String {
    match format(origin, text) {
        Ok(s) => s,
        Err(FmtError::Syntax(d)) => panic!("{origin}: syntax errors: {d:?}"),
        Err(FmtError::Unsafe(m)) => panic!("{origin}: {m}"),
        Err(e) => panic!("{origin}: {e:?}"),
    }
}

/// Decisions over a spread of requests, to compare before and after.
fn decisions(origin: &str, text: &str) -> Vec<String> {
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

fn corpus() -> Vec<(String, String)> {
    let mut files = Vec::new();
    for dir in ["tests/fixtures/fmt", "policies", "tests/fixtures/ok"] {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
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

#[test]
fn golden_output() {
    insta::glob!("..", "fixtures/fmt/*.mcppol", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        insta::assert_snapshot!(fmt(&path.display().to_string(), &text));
    });
}

#[test]
fn idempotent_and_meaning_preserving_on_the_corpus() {
    for (origin, text) in corpus() {
        let once = fmt(&origin, &text);
        let twice = fmt(&origin, &once);
        assert_eq!(once, twice, "{origin} is not idempotent");
        assert_eq!(
            decisions(&origin, &text),
            decisions(&origin, &once),
            "{origin} decides differently"
        );
        for line in once.lines() {
            assert!(!line.ends_with(' '), "{origin}: trailing space in {line:?}");
        }
    }
}

#[test]
fn the_bundled_policies_are_formatted() {
    for (origin, text) in corpus()
        .into_iter()
        .filter(|(o, _)| o.starts_with("policies"))
    {
        assert_eq!(fmt(&origin, &text), text, "run `mcppol fmt {origin}`");
    }
}

#[test]
fn syntax_errors_are_not_formatted() {
    assert!(matches!(
        format("bad.mcppol", "policy p {\n  deny \"a\" \"b\"\n}\n"),
        Err(FmtError::Syntax(_))
    ));
}
