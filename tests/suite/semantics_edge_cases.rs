//! Decision cases for issue 8 (nothing widens access), in the style of the
//! conformance cases: one policy, one request, the whole decision.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mcppol::{Policy, PolicySet, Request};
use serde_json::Value;
use std::sync::Arc;

fn load(text: &str) -> Arc<Policy> {
    let set =
        PolicySet::from_text("test.mcppol", text).unwrap_or_else(|e| panic!("{}", e.render(false)));
    set.pick(None).unwrap().clone()
}

/// (decision, source, reason, rule_id).
fn d(policy: &Policy, request: &Request<'_>) -> (String, String, String, Option<String>) {
    let x = policy.decide(request);
    (
        x.decision.as_str().into(),
        x.source.as_str().into(),
        x.reason.as_str().into(),
        x.rule_id.map(|r| r.to_string()),
    )
}

fn is(
    decision: &str,
    source: &str,
    reason: &str,
    rule: Option<&str>,
) -> (String, String, String, Option<String>) {
    (
        decision.into(),
        source.into(),
        reason.into(),
        rule.map(String::from),
    )
}

/// Arguments parsed from JSON text, as a host receives them.
fn args(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

// ------------------------------------------------------------------ `!=`

#[test]
fn not_equal_on_a_missing_principal_is_a_failure_that_denies() {
    let p = load(r#"policy p { deny * when principal != "dana"  allow * }"#);
    assert_eq!(
        d(&p, &Request::tool("s", "t")),
        is("deny", "deny", "predicate_failed", Some("deny:0"))
    );
    assert_eq!(
        d(&p, &Request::tool("s", "t").with_principal("dana")).0,
        "allow"
    );
    assert_eq!(
        d(&p, &Request::tool("s", "t").with_principal("eve")),
        is("deny", "deny", "deny_rule", Some("deny:0"))
    );
}

#[test]
fn an_allow_with_not_equal_does_not_match_a_missing_value() {
    let p = load(
        r#"policy p { default deny
        allow "s/t" when args.mode != "admin"
        allow "s/u" when principal != "eve" }"#,
    );
    let none = args("{}");
    assert_eq!(
        d(&p, &Request::tool("s", "t").with_args(&none)),
        is("deny", "default", "no_rule", None)
    );
    assert_eq!(
        d(&p, &Request::tool("s", "u")),
        is("deny", "default", "no_rule", None)
    );
    let user = args(r#"{"mode": "user"}"#);
    assert_eq!(d(&p, &Request::tool("s", "t").with_args(&user)).0, "allow");
}

#[test]
fn not_equal_on_missing_assigns_and_list_elements() {
    let p = load(r#"policy p { ask "s/*" when assigns.team != "core"  allow * }"#);
    assert_eq!(
        d(&p, &Request::tool("s", "t")),
        is("ask", "ask", "predicate_failed", Some("ask:0"))
    );
    let core = args(r#"{"team": "core"}"#);
    assert_eq!(
        d(&p, &Request::tool("s", "t").with_assigns(&core)).0,
        "allow"
    );
}

// --------------------------------------------------------------- numbers

#[test]
fn integers_beyond_doubles_compare_exactly() {
    let p = load(
        r#"policy p { default deny
        deny big: "pay/*" when args.amount > 10000000000000000
        allow "pay/*" }"#,
    );
    let one_more = args(r#"{"amount": 10000000000000001}"#);
    assert_eq!(
        d(&p, &Request::tool("pay", "send").with_args(&one_more)),
        is("deny", "deny", "deny_rule", Some("big"))
    );
    let same = args(r#"{"amount": 10000000000000000}"#);
    assert_eq!(
        d(&p, &Request::tool("pay", "send").with_args(&same)).0,
        "allow"
    );
}

#[test]
fn unsigned_and_signed_extremes_compare_exactly() {
    let p = load(
        r#"policy p { default deny
        allow "s/max" when args.n >= 18446744073709551615
        allow "s/min" when args.n < -9223372036854775807
        allow "s/mid" when args.n > 9007199254740992 and args.n < 9007199254740994 }"#,
    );
    let max = args(r#"{"n": 18446744073709551615}"#);
    assert_eq!(d(&p, &Request::tool("s", "max").with_args(&max)).0, "allow");
    let less = args(r#"{"n": 18446744073709551614}"#);
    assert_eq!(d(&p, &Request::tool("s", "max").with_args(&less)).0, "deny");
    let min = args(r#"{"n": -9223372036854775808}"#);
    assert_eq!(d(&p, &Request::tool("s", "min").with_args(&min)).0, "allow");
    let mid = args(r#"{"n": 9007199254740993}"#);
    assert_eq!(d(&p, &Request::tool("s", "mid").with_args(&mid)).0, "allow");
}

#[test]
fn integers_against_decimals_compare_exactly() {
    let p = load(
        r#"policy p { default deny
        allow "s/a" when args.n > 9007199254740992.0
        allow "s/b" when args.n < 2.5 and args.n > 1.5
        allow "s/c" when args.n == 3 }"#,
    );
    // 9007199254740993 rounds to 9007199254740992.0 as a double.
    let n = args(r#"{"n": 9007199254740993}"#);
    assert_eq!(d(&p, &Request::tool("s", "a").with_args(&n)).0, "allow");
    let two = args(r#"{"n": 2}"#);
    assert_eq!(d(&p, &Request::tool("s", "b").with_args(&two)).0, "allow");
    let three = args(r#"{"n": 3.0}"#);
    assert_eq!(d(&p, &Request::tool("s", "c").with_args(&three)).0, "allow");
}

#[test]
fn an_integer_beyond_64_bits_makes_an_ordering_test_fail() {
    let p = load(
        r#"policy p { default deny
        deny cap: "pay/big" when args.amount > 1000
        allow "pay/*" when args.amount > 0 }"#,
    );
    let huge = args(r#"{"amount": 100000000000000000000}"#);
    assert_eq!(
        d(&p, &Request::tool("pay", "big").with_args(&huge)),
        is("deny", "deny", "predicate_failed", Some("cap"))
    );
    // In an allow a failure is no match.
    assert_eq!(
        d(&p, &Request::tool("pay", "small").with_args(&huge)),
        is("deny", "default", "no_rule", None)
    );
}

// ---------------------------------------------------------------- Kleene

#[test]
fn false_and_unknown_is_false() {
    // args.s > 1 fails (a string); args.n == 1 is false.
    let p = load(r#"policy p { deny "s/t" when args.n == 1 and args.s > 1  allow * }"#);
    let a = args(r#"{"n": 2, "s": "x"}"#);
    assert_eq!(
        d(&p, &Request::tool("s", "t").with_args(&a)),
        is("allow", "allow", "allow_rule", Some("allow:0"))
    );
    let b = args(r#"{"n": 1, "s": "x"}"#);
    assert_eq!(
        d(&p, &Request::tool("s", "t").with_args(&b)),
        is("deny", "deny", "predicate_failed", Some("deny:0"))
    );
}

#[test]
fn true_or_unknown_is_true() {
    let p = load(
        r#"policy p { default deny
        allow "s/t" when args.n == 1 or args.s > 1 }"#,
    );
    let a = args(r#"{"n": 1, "s": "x"}"#);
    assert_eq!(
        d(&p, &Request::tool("s", "t").with_args(&a)),
        is("allow", "allow", "allow_rule", Some("allow:0"))
    );
    let b = args(r#"{"n": 2, "s": "x"}"#);
    assert_eq!(
        d(&p, &Request::tool("s", "t").with_args(&b)),
        is("deny", "default", "no_rule", None)
    );
}

#[test]
fn not_unknown_is_unknown() {
    let deny = load(r#"policy p { deny "s/t" when not (args.s > 1)  allow * }"#);
    let allow = load(r#"policy p { default deny  allow "s/t" when not (args.s > 1) }"#);
    let a = args(r#"{"s": "x"}"#);
    let r = Request::tool("s", "t").with_args(&a);
    assert_eq!(
        d(&deny, &r),
        is("deny", "deny", "predicate_failed", Some("deny:0"))
    );
    assert_eq!(d(&allow, &r), is("deny", "default", "no_rule", None));
}

#[test]
fn unless_of_unknown_is_unknown() {
    let p = load(r#"policy p { ask "s/t" unless args.s > 1  allow * }"#);
    let a = args(r#"{"s": "x"}"#);
    assert_eq!(
        d(&p, &Request::tool("s", "t").with_args(&a)),
        is("ask", "ask", "predicate_failed", Some("ask:0"))
    );
}

// ---------------------------------------------------------- resource URIs

const PROJECT: &str = r#"policy p {
    scope tools, resources
    default deny
    deny resource "*/file:///etc/*"
    allow resource "fs/file:///home/dev/project/*"
}"#;

#[test]
fn dot_segments_cannot_climb_out_of_an_allowed_folder() {
    let p = load(PROJECT);
    assert_eq!(
        d(
            &p,
            &Request::resource("fs", "file:///home/dev/project/../../../etc/passwd")
        ),
        is("deny", "deny", "deny_rule", Some("deny:0"))
    );
    assert_eq!(
        d(
            &p,
            &Request::resource("fs", "file:///home/dev/project/../../dana/.ssh/id_rsa")
        ),
        is("deny", "default", "no_rule", None)
    );
    assert_eq!(
        d(
            &p,
            &Request::resource("fs", "file:///home/dev/project/src/../README.md")
        ),
        is("allow", "allow", "allow_rule", Some("allow:0"))
    );
}

#[test]
fn encoded_dots_and_case_are_normalized_first() {
    let p = load(PROJECT);
    for uri in [
        "file:///home/dev/project/%2E%2E/%2e%2e/%2E%2E/etc/passwd",
        "FILE:///etc/passwd",
        "file:///%65tc/passwd",
        "file:///home/dev/project/./.././../../etc/shadow",
    ] {
        assert_eq!(
            d(&p, &Request::resource("fs", uri)),
            is("deny", "deny", "deny_rule", Some("deny:0")),
            "{uri}"
        );
    }
}

#[test]
fn a_uri_that_cannot_be_normalized_is_denied_before_any_rule() {
    let p = load(
        r#"policy p { scope tools, resources
        allow resource "*" }"#,
    );
    for uri in [
        "file:///home/dev/project/..%2F..%2Fetc/passwd",
        "file:///home/dev/project/a%5C..%5C..%5Cetc",
        "file:///home/dev/project/a%00.txt",
        "file:///home/dev/project/a\\..\\..\\etc",
        "file:///home/dev/project/%zz",
        "file:///home/dev/project/%",
    ] {
        assert_eq!(
            d(&p, &Request::resource("fs", uri)),
            is("deny", "request", "bad_uri", None),
            "{uri}"
        );
    }
    // Tools and prompts are names, not URIs.
    assert_eq!(
        d(&p, &Request::tool("fs", "a%zz")),
        is("ask", "default", "no_rule", None)
    );
}

/// Issue 22, item 1: WHATWG and Python parsers drop tabs and newlines, so a
/// server read `.\t.` as `..`; every spelling of `/etc/passwd` reached it.
#[test]
fn white_space_control_characters_and_other_file_spellings_cannot_reach_etc() {
    let p = load(
        r#"policy p { scope tools, resources
        deny etc: resource "*/file:///etc/*"
        allow sandbox: resource "files/file:///srv/sandbox/*"
        allow any: resource "open/*" }"#,
    );
    for uri in [
        "file:///srv/sandbox/.\t./secret.txt",
        "file:///srv/sandbox/.\n./.\r./etc/passwd",
        " file:///etc/passwd",
        "file:///e\ttc/passwd",
        "file:///etc/passwd\n",
        "file:///srv/sandbox/\u{7f}",
        "file:///srv/sandbox/caf\u{e9}",
        "file:///srv/sandbox/a b",
        "file://evil.example/etc/passwd",
    ] {
        for server in ["files", "open"] {
            assert_eq!(
                d(&p, &Request::resource(server, uri)),
                is("deny", "request", "bad_uri", None),
                "{uri:?}"
            );
        }
    }
    for uri in [
        "file://localhost/etc/passwd",
        "file://LOCALHOST/etc/passwd",
        "file:/etc/passwd",
        "file:////etc/passwd",
        "file:///srv/sandbox/../../etc/passwd",
    ] {
        assert_eq!(
            d(&p, &Request::resource("open", uri)),
            is("deny", "deny", "deny_rule", Some("etc")),
            "{uri:?}"
        );
    }
    // The one spelling the rules see is the one an allow names.
    assert_eq!(
        d(
            &p,
            &Request::resource("files", "file://localhost/srv/sandbox/a.txt")
        ),
        is("allow", "allow", "allow_rule", Some("sandbox"))
    );
    assert_eq!(
        d(
            &p,
            &Request::resource("files", "file:///srv/sandbox/caf%C3%A9")
        ),
        is("allow", "allow", "allow_rule", Some("sandbox"))
    );
}

/// Issue 22, item 8: the pin only tightens. A changed tool that only the
/// `deny` default decides stays denied by it; where a rule or an `ask`
/// default would ask or allow, the pin asks (or denies, without an
/// approver).
#[test]
fn the_pin_only_tightens() {
    use mcppol::ToolApproval;
    let deny_default = load(
        r#"policy p { default deny
        allow "fs/list_*"
        ask "fs/write_*" }"#,
    );
    let changed = |server, tool| Request::tool(server, tool).with_approval(ToolApproval::Changed);
    assert_eq!(
        d(&deny_default, &changed("fs", "read_file")),
        is("deny", "default", "no_rule", None)
    );
    assert_eq!(
        d(
            &deny_default,
            &changed("fs", "read_file").without_approver()
        ),
        is("deny", "default", "no_rule", None)
    );
    assert_eq!(
        d(&deny_default, &changed("fs", "list_dir")),
        is("ask", "pin", "definition_changed", None)
    );
    assert_eq!(
        d(&deny_default, &changed("fs", "write_file")),
        is("ask", "pin", "definition_changed", None)
    );
    assert_eq!(
        d(&deny_default, &changed("fs", "list_dir").without_approver()),
        is("deny", "pin", "definition_changed", None)
    );
    let ask_default = load(r#"policy p { allow "fs/list_*" }"#);
    assert_eq!(
        d(&ask_default, &changed("fs", "read_file")),
        is("ask", "pin", "definition_changed", None)
    );
    let text = deny_default
        .explain(&changed("fs", "read_file"))
        .render(&deny_default);
    assert!(text.contains("the pin only tightens"), "{text}");
    let text = deny_default
        .explain(&changed("fs", "list_dir"))
        .render(&deny_default);
    assert!(text.contains("allow rule `allow:0` would allow"), "{text}");
}

#[test]
fn explain_shows_the_normalized_uri() {
    let p = load(PROJECT);
    let r = Request::resource("fs", "file:///home/dev/project/../../../etc/passwd");
    let text = p.explain(&r).render(&p);
    assert!(
        text.contains("is matched as `file:///etc/passwd`"),
        "{text}"
    );
    let bad = Request::resource("fs", "file:///a%2Fb");
    let text = p.explain(&bad).render(&p);
    assert!(text.contains("cannot be normalized"), "{text}");
    assert!(
        text.contains("decision: deny (source: request, reason: bad_uri, rule_id: null)"),
        "{text}"
    );
}

// ---------------------------------------------------------- server ids

#[test]
fn a_request_naming_a_server_with_a_slash_is_refused() {
    let p = load(r#"policy p { allow "a/b/c"  allow * }"#);
    assert_eq!(
        d(&p, &Request::tool("a/b", "c")),
        is("deny", "request", "bad_server", None)
    );
    assert_eq!(d(&p, &Request::tool("a", "b/c")).0, "allow");
}

#[test]
fn explain_agrees_with_decide_on_resource_uris() {
    let p = load(PROJECT);
    for server in ["fs", "web", "a/b"] {
        for uri in [
            "file:///home/dev/project/a.txt",
            "file:///home/dev/project/../../../etc/passwd",
            "FILE:///ETC/passwd",
            "file:///etc/%70asswd",
            "file:///home/dev/project/%2e%2e/x",
            "file:///a%2Fb",
            "file:///a%",
            "docs/../readme.md",
            "",
        ] {
            let r = Request::resource(server, uri);
            let explained = p.explain(&r);
            assert_eq!(explained.decision, p.decide(&r), "{server} {uri}");
        }
    }
}
