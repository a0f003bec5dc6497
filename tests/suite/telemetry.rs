//! Every decision emits a `tracing` event with the decision, source, reason
//! and rule id, and never the arguments.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use mcppol::{PolicySet, Request};
use serde_json::json;

#[test]
fn decisions_are_traced_without_their_arguments() {
    let set = PolicySet::from_text(
        "t.mcppol",
        r#"policy p { deny guard: "fs/*" when args.path escapes "/srv" }"#,
    )
    .unwrap();
    let policy = set.get("p").unwrap();
    let args = json!({"path": "/home/alice/secret-plans.txt"});
    let text = common::capture_logs(tracing::Level::DEBUG, || {
        policy.decide(&Request::tool("fs", "read").with_args(&args));
    });
    for field in [
        "decision=\"deny\"",
        "source=\"deny\"",
        "reason=\"deny_rule\"",
        "rule_id=\"guard\"",
        "policy=p",
    ] {
        assert!(text.contains(field), "missing {field} in {text}");
    }
    assert!(!text.contains("secret-plans"), "arguments leaked: {text}");
}
