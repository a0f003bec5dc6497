#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `explain` walks the rules itself; its decision must be `decide`'s, for
//! every request.

use mcppol::{PolicySet, Request, TargetKind, ToolApproval};
use proptest::prelude::*;
use serde_json::{json, Value};

fn bundled() -> Vec<PolicySet> {
    let mut sets = Vec::new();
    for path in [
        "policies/filesystem.mcppol",
        "policies/github.mcppol",
        "policies/mail.mcppol",
        "policies/strict.mcppol",
        "tests/fixtures/ok/language_example.mcppol",
    ] {
        let text = std::fs::read_to_string(path).unwrap();
        sets.push(PolicySet::from_text(path, &text).unwrap());
    }
    sets
}

const SERVERS: &[&str] = &[
    "fs", "github", "mail", "web", "wiki", "ci", "docs", "ops", "git", "search", "tickets", "admin",
];
const NAMES: &[&str] = &[
    "read_text_file",
    "write_file",
    "move_file",
    "read_multiple_files",
    "list_allowed_directories",
    "delete_repository",
    "Delete-Repo",
    "get_user",
    "create_issue",
    "push_files",
    "force_push",
    "merge_pull_request",
    "send_message",
    "reply_all",
    "search",
    "fetch",
    "get_page",
    "get_build",
    "rerun_build",
    "restart_service",
    "get_status",
    "drop_table",
    "list_secret_alerts",
    "close",
    "query",
    "admin_x",
    "repo://a/b",
    "inbox://1",
    "file:///etc/passwd",
    "summarize",
];

fn args_variants() -> Vec<Value> {
    vec![
        json!({}),
        json!({"path": "/srv/sandbox/a.txt"}),
        json!({"path": "/etc/passwd"}),
        json!({"path": 42}),
        json!({"path": "/srv/sandbox/.env"}),
        json!({"paths": ["/srv/sandbox/a", "/tmp/b"]}),
        json!({"paths": ["/srv/sandbox/a"]}),
        json!({"source": "/srv/sandbox/a", "destination": "/tmp/x"}),
        json!({"branch": "main"}),
        json!({"to": "a@example.com"}),
        json!({"to": "x@evil.test", "attachments": []}),
        json!({"to": 7, "recipient_count": 30}),
        json!({"attempt": 2}),
        json!({"attempt": "two"}),
        json!({"id": "T-12"}),
    ]
}

#[test]
fn explain_agrees_with_decide_on_bundled_policies() {
    let sets = bundled();
    let args = args_variants();
    let annotations = [
        json!({}),
        json!({"readOnlyHint": true, "destructiveHint": false}),
    ];
    let assigns = json!({"team": "ops", "role": "admin"});
    let taints: [&[&str]; 3] = [&[], &["web"], &["docs", "github"]];
    let mut checked = 0usize;
    for set in &sets {
        for policy in set.iter() {
            for server in SERVERS {
                for name in NAMES {
                    for (i, a) in args.iter().enumerate() {
                        for kind in TargetKind::ALL {
                            if kind != TargetKind::Tool && i > 1 {
                                continue;
                            }
                            let approvals = [
                                ToolApproval::Approved,
                                ToolApproval::New,
                                ToolApproval::Changed,
                            ];
                            for approval in [approvals[i % 3], approvals[(i + 1) % 3]] {
                                let taint = taints[(i + checked) % 3];
                                let mut request = Request::new(kind, server, name)
                                    .with_args(a)
                                    .with_annotations(&annotations[i % 2])
                                    .with_taint(taint)
                                    .with_approval(approval)
                                    .with_trusted_server(i % 3 == 0);
                                if i % 4 == 1 {
                                    request = request.without_approver();
                                }
                                if i % 5 == 2 {
                                    request = request.with_principal("dana").with_assigns(&assigns);
                                }
                                let decided = policy.decide(&request);
                                let explained = policy.explain(&request);
                                assert_eq!(
                                    explained.decision,
                                    decided,
                                    "policy {} request {request:?}\n{}",
                                    policy.name(),
                                    explained.render(policy)
                                );
                                let last = explained.steps.last().unwrap();
                                if let Some(id) = &decided.rule_id {
                                    assert_eq!(last.rule_id.as_ref(), Some(id));
                                }
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 20_000, "{checked}");
}

/// Random small policies built from fragments, against random requests.
fn rule_strategy() -> impl Strategy<Value = String> {
    let effect = prop::sample::select(vec!["deny", "ask", "allow"]);
    let target = prop::sample::select(vec![
        "*",
        "\"a/x\"",
        "\"a/*\"",
        "\"x\"",
        "\"*/X-y\"",
        "\"a\" ~ /^x/",
        "\"b/x_y\"",
        "\"?/x\"",
    ]);
    let cond = prop::sample::select(vec![
        "",
        " when args.n > 3",
        " when args.s matches /^ok/",
        " when not (args.n > 3)",
        " when tainted",
        " when annotation.read_only",
        " when args.p inside \"/r\"",
        " when args.p escapes \"/r\"",
        " when exists args.s or args.n == 1",
        " unless args.s in [\"ok\", 1]",
        " when host.flag",
        " when args.n != 1",
        " when principal != \"p\"",
        " when args.n == 5 and args.s > 1",
        " when args.n == 5 or args.s > 1",
        " when not (args.n > 3 and args.s > 1)",
        " when args.n > 10000000000000000",
    ]);
    (effect, target, cond).prop_map(|(e, t, c)| format!("{e} {t}{c}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    #[test]
    fn explain_agrees_with_decide_on_random_policies(
        rules in prop::collection::vec(rule_strategy(), 0..8),
        default_deny in any::<bool>(),
        new_tools in any::<bool>(),
        pin in any::<bool>(),
        trusted in any::<bool>(),
    ) {
        let text = format!(
            "policy p {{\n default {}\n allow_new_tools {}\n pin_tools {}\n{}\n{}\n}}\n",
            if default_deny { "deny" } else { "ask" },
            if new_tools { "on" } else { "off" },
            if pin { "on" } else { "off" },
            if trusted { " trusted \"a\"" } else { "" },
            rules.join("\n"),
        );
        let set = PolicySet::from_text("p.mcppol", &text).unwrap();
        let policy = set.get("p").unwrap();
        let argsets = [json!({}), json!({"n": 5, "s": "ok", "p": "/r/a"}), json!({"n": "x", "s": 3, "p": "/q"}), json!({"n": 1, "p": ["/r/a", "/t"]}), serde_json::from_str::<serde_json::Value>(r#"{"n": 100000000000000000000, "s": "ok"}"#).unwrap(), json!({"n": 10000000000000001u64})];
        let ann = json!({"readOnlyHint": true});
        for (server, name) in [("a", "x"), ("a", "X-y"), ("b", "x_y"), ("c", "x"), ("a", "y")] {
            for (i, a) in argsets.iter().enumerate() {
                for approval in [ToolApproval::Approved, ToolApproval::New, ToolApproval::Changed] {
                    let taint: &[&str] = if i % 2 == 0 { &["w"] } else { &[] };
                    let mut request = Request::tool(server, name)
                        .with_args(a)
                        .with_annotations(&ann)
                        .with_taint(taint)
                        .with_approval(approval);
                    if i == 3 { request = request.without_approver(); }
                    let decided = policy.decide(&request);
                    let explained = policy.explain(&request);
                    prop_assert_eq!(&explained.decision, &decided, "{}\n{}", text, explained.render(policy));
                }
            }
        }
    }
}
