#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `explain` runs the decision procedure itself with a recorder: its
//! decision must be `decide`'s for every request, and its trace must end
//! where the decision was made, naming each rule once, in file order.

use mcppol::{
    Decision, ExplainStep, Explanation, Outcome, Policy, PolicySet, Reason, Request, Source, Stage,
    TargetKind, ToolApproval,
};
use proptest::prelude::*;
use serde_json::{json, Value};

/// The explanation agrees with the decision, and its steps with both.
fn check(policy: &Policy, request: &Request<'_>, decided: &Decision, explained: &Explanation) {
    let trace = explained.render(policy);
    assert_eq!(&explained.decision, decided, "{request:?}\n{trace}");
    let last_line = trace.lines().last().unwrap_or_default();
    let expected = format!(
        "decision: {} (source: {}, reason: {}, rule_id: {})",
        decided.decision.as_str(),
        decided.source.as_str(),
        decided.reason.as_str(),
        decided.rule_id.as_deref().unwrap_or("null"),
    );
    assert!(last_line.starts_with(&expected), "{trace}");
    let json = explained.to_json(policy);
    assert_eq!(
        json["decision"]["decision"],
        decided.decision.as_str(),
        "{trace}"
    );
    let last: &ExplainStep = explained.steps.last().expect("a step at least");
    // The last step is where the decision was made.
    match (&decided.rule_id, decided.source) {
        (Some(id), _) => {
            assert_eq!(last.rule_id.as_ref(), Some(id), "{trace}");
            let failed = decided.reason == Reason::PredicateFailed
                || (decided.reason == Reason::NoApprover
                    && last.outcome == Outcome::PredicateFailed);
            let want = if failed {
                Outcome::PredicateFailed
            } else {
                Outcome::Matched
            };
            assert_eq!(last.outcome, want, "{trace}");
        }
        (None, source) => {
            let stage = match (source, decided.reason) {
                (Source::Default, Reason::OutOfScope) => Stage::Scope,
                (Source::Default, _) => Stage::Default,
                (Source::Visibility, _) => Stage::Visibility,
                (Source::Pin, _) => Stage::Pin,
                (Source::Request, _) => Stage::Request,
                (other, _) => panic!("{other:?} decided without a rule\n{trace}"),
            };
            assert_eq!(
                (last.stage, last.outcome),
                (stage, Outcome::Decided),
                "{trace}"
            );
        }
    }
    // Every step but the last let the request through; each rule is named
    // once, and the rule stages come in the procedure's order.
    let order = |s: Stage| match s {
        Stage::Request => 0,
        Stage::Scope => 1,
        Stage::Visibility => 2,
        Stage::Deny => 3,
        Stage::Pin => 4,
        Stage::Ask => 5,
        Stage::Allow => 6,
        _ => 7,
    };
    let mut ids = std::collections::HashSet::new();
    for pair in explained.steps.windows(2) {
        assert!(order(pair[0].stage) <= order(pair[1].stage), "{trace}");
    }
    for step in &explained.steps[..explained.steps.len() - 1] {
        assert!(
            !matches!(
                step.outcome,
                Outcome::Matched | Outcome::PredicateFailed | Outcome::Decided
            ),
            "{trace}"
        );
        if let Some(id) = &step.rule_id {
            assert!(ids.insert(id.clone()), "{id} named twice\n{trace}");
        }
    }
}

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
                                check(policy, &request, &decided, &explained);
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

/// Random small policies built from fragments: rules of every kind, with
/// and without a `tools {}` block and a `scope`.
fn rule_strategy() -> impl Strategy<Value = (TargetKind, String)> {
    let effect = prop::sample::select(vec!["deny", "ask", "allow"]);
    let kind = prop::sample::select(TargetKind::ALL.to_vec());
    let target = prop::sample::select(vec![
        "*",
        "\"a/x\"",
        "\"a/*\"",
        "\"x\"",
        "\"*/X-y\"",
        "\"a\" ~ /^x/",
        "\"b/x_y\"",
        "\"?/x\"",
        "\"a/file:///r/*\"",
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
    (effect, kind, target, cond).prop_map(|(e, k, t, c)| {
        let word = match k {
            TargetKind::Tool => "",
            TargetKind::Resource => " resource",
            _ => " prompt",
        };
        (k, format!("{e}{word} {t}{c}"))
    })
}

const TOOLS_BLOCKS: &[&str] = &[
    "",
    " tools { include \"a/*\" }",
    " tools { exclude \"*/x\" }",
    " tools { include \"a/x\", \"b/*\" ; exclude \"a\" ~ /^X/ }",
    " tools { exclude \"c/*\" ; include \"*/x\" }",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
    #[test]
    fn explain_agrees_with_decide_on_random_policies(
        rules in prop::collection::vec(rule_strategy(), 0..8),
        default_deny in any::<bool>(),
        new_tools in any::<bool>(),
        pin in any::<bool>(),
        trusted in any::<bool>(),
        scope in 0..4usize,
        tools in 0..TOOLS_BLOCKS.len(),
    ) {
        let (resources, prompts) = (scope & 1 == 1, scope & 2 == 2);
        let scope_line = match (resources, prompts) {
            (false, false) => "",
            (true, false) => " scope tools, resources",
            (false, true) => " scope tools, prompts",
            (true, true) => " scope tools, resources, prompts",
        };
        // Rules of a kind the scope leaves out do not load: leave them out.
        let rules: Vec<&str> = rules
            .iter()
            .filter(|(k, _)| match k {
                TargetKind::Resource => resources,
                TargetKind::Prompt => prompts,
                _ => true,
            })
            .map(|(_, r)| r.as_str())
            .collect();
        let text = format!(
            "policy p {{\n default {}\n allow_new_tools {}\n pin_tools {}\n{}\n{}\n{}\n{}\n}}\n",
            if default_deny { "deny" } else { "ask" },
            if new_tools { "on" } else { "off" },
            if pin { "on" } else { "off" },
            if trusted { " trusted \"a\"" } else { "" },
            scope_line,
            TOOLS_BLOCKS[tools],
            rules.join("\n"),
        );
        let set = PolicySet::from_text("p.mcppol", &text).map_err(|e| e.render(false));
        prop_assert!(set.is_ok(), "{}\n{}", text, set.err().unwrap_or_default());
        let set = set.unwrap();
        let policy = set.get("p").unwrap();
        let argsets = [json!({}), json!({"n": 5, "s": "ok", "p": "/r/a"}), json!({"n": "x", "s": 3, "p": "/q"}), json!({"n": 1, "p": ["/r/a", "/t"]}), serde_json::from_str::<serde_json::Value>(r#"{"n": 100000000000000000000, "s": "ok"}"#).unwrap(), json!({"n": 10000000000000001u64})];
        let ann = json!({"readOnlyHint": true});
        let names = [("a", "x"), ("a", "X-y"), ("b", "x_y"), ("c", "x"), ("a", "y"), ("a", "file:///r/../r/x"), ("a", "file:///r/x"), ("a", "%zz")];
        for kind in TargetKind::ALL {
            for (server, name) in names {
                for (i, a) in argsets.iter().enumerate() {
                    for approval in [ToolApproval::Approved, ToolApproval::New, ToolApproval::Changed] {
                        let taint: &[&str] = if i % 2 == 0 { &["w"] } else { &[] };
                        let mut request = Request::new(kind, server, name)
                            .with_args(a)
                            .with_annotations(&ann)
                            .with_taint(taint)
                            .with_approval(approval);
                        if i == 3 { request = request.without_approver(); }
                        if i == 1 { request = request.with_principal("p"); }
                        let decided = policy.decide(&request);
                        let explained = policy.explain(&request);
                        check(policy, &request, &decided, &explained);
                    }
                }
            }
        }
    }
}
