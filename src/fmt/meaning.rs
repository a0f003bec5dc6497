//! Formatting keeps the meaning: the same compiled rules (spans left out)
//! and the same decisions, on the corpus and on random policies. A unit
//! test, since the compiled rules are not public.

use proptest::prelude::*;
use serde_json::json;

use super::{format, FmtError};
use crate::{PolicySet, Request, TargetKind, ToolApproval};

fn fmt(origin: &str, text: &str) -> String {
    match format(origin, text) {
        Ok(s) => s,
        Err(FmtError::Syntax(d)) => panic!("{origin}: syntax errors: {d:?}"),
        Err(FmtError::Unsafe(m)) => panic!("{origin}: {m}"),
    }
}

/// The compiled policies, spans left out: what a file means.
fn meaning(origin: &str, text: &str) -> String {
    let set = PolicySet::from_text(origin, text).unwrap_or_else(|e| panic!("{}", e.render(false)));
    crate::fuzzing::meaning(&set)
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

#[test]
fn formatting_keeps_the_compiled_rules_of_the_corpus() {
    let files = corpus();
    assert!(files.len() > 5, "{}", files.len());
    for (origin, text) in files {
        let once = fmt(&origin, &text);
        assert_eq!(
            meaning(&origin, &text),
            meaning(&origin, &once),
            "{origin} changed meaning"
        );
    }
}

// ------------------------------------------------------------- property

fn spaced(parts: Vec<(String, u8)>) -> String {
    let mut out = String::new();
    for (part, sep) in parts {
        out.push_str(&part);
        out.push_str(match sep % 6 {
            0 => " ",
            1 => "\n  ",
            2 => " ; ",
            3 => "  # note\n",
            4 => "\n\n\n",
            _ => "\t",
        });
    }
    out
}

fn rule() -> impl Strategy<Value = String> {
    let effect = prop::sample::select(vec!["deny", "ask", "allow", "deny id_a:", "allow id_b:"]);
    let kind = prop::sample::select(vec!["", " resource", " prompt"]);
    let targets = prop::sample::select(vec![
        "*",
        "\"a/x\"",
        "\"a/*\", \"b/y\"",
        "\"x\"",
        "\"s\" ~ /^r\\/e/",
        "\"a/x\" ,\"b/*\",\"c/?\"",
    ]);
    let cond = prop::sample::select(vec![
        "",
        " when args.n > 3",
        " when args.s matches /^ok#/",
        " when not (args.n>3 and tainted)",
        " when tainted(ignore: [\"w\"]) or principal == \"p\"",
        " when annotation.read_only and (args.p inside \"/r\" or args[\"k k\"][0] escapes \"/r\")",
        " unless args.s in [\"ok\",1 ,null]",
        " when not not exists args.z",
        " when (args.a == 1 and args.b == 2) and (args.c == {\"x\": [1]} or args.d != false)",
    ]);
    (effect, kind, targets, cond).prop_map(|(e, k, t, c)| format!("{e}{k} {t}{c}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    #[test]
    fn fmt_is_idempotent_and_keeps_meaning(
        rules in prop::collection::vec((rule(), any::<u8>()), 0..8),
        settings in any::<u8>(),
    ) {
        let mut body = Vec::new();
        body.push(("scope tools, resources, prompts".to_string(), settings));
        if settings % 3 == 0 {
            body.push(("tools { include \"a/*\" ; exclude \"*/x\" }".to_string(), settings / 3));
        }
        // Ids must stay unique: number them.
        let mut n = 0;
        for (r, sep) in rules {
            n += 1;
            body.push((r.replace("id_a:", &format!("id_a{n}:")).replace("id_b:", &format!("id_b{n}:")), sep));
        }
        let text = format!("# head\npolicy p {{ {}}}\n", spaced(body));
        prop_assume!(PolicySet::from_text("p.mcppol", &text).is_ok());
        let once = fmt("p.mcppol", &text);
        prop_assert_eq!(&fmt("p.mcppol", &once), &once);
        prop_assert_eq!(meaning("p.mcppol", &text), meaning("p.mcppol", &once));
        prop_assert_eq!(decisions("p.mcppol", &text), decisions("p.mcppol", &once));
    }
}
