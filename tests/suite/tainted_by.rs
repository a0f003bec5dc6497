//! `tainted(by: [...])`: tainted by one of the named servers (never the
//! called tool's own), and the messages for `tainted(...)` written wrong.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mcppol::{PolicySet, Request, Verdict};

const POLICY: &str = r#"
policy p {
  default deny
  deny web_send: "mail/send" when tainted(by: ["web", "inbox"])
  allow "mail/send"
  allow "web/fetch" unless tainted(by: ["web"])
}
"#;

fn decide(server: &str, tool: &str, taint: &[&str]) -> (Verdict, Option<String>) {
    let set = PolicySet::from_text("p.mcppol", POLICY).unwrap();
    let policy = set.get("p").unwrap();
    let d = policy.decide(&Request::tool(server, tool).with_taint(taint));
    (d.decision, d.rule_id.as_deref().map(str::to_string))
}

#[test]
fn taint_from_a_named_server_counts() {
    assert_eq!(
        decide("mail", "send", &["web"]),
        (Verdict::Deny, Some("web_send".into()))
    );
    assert_eq!(decide("mail", "send", &["docs", "inbox"]).0, Verdict::Deny);
}

#[test]
fn taint_from_other_servers_or_none_does_not() {
    assert_eq!(decide("mail", "send", &["docs"]).0, Verdict::Allow);
    assert_eq!(decide("mail", "send", &[]).0, Verdict::Allow);
}

#[test]
fn the_tools_own_server_never_counts() {
    // `web/fetch` with only web's own output in context is not tainted by
    // web, as for plain `tainted`.
    assert_eq!(decide("web", "fetch", &["web"]).0, Verdict::Allow);
    assert_eq!(decide("web", "fetch", &["web", "docs"]).0, Verdict::Allow);
}

fn error_code(text: &str) -> (&'static str, String) {
    let err = PolicySet::from_text("t.mcppol", text).unwrap_err();
    let d = &err.diagnostics[0];
    (d.code, d.message.clone())
}

#[test]
fn tainted_written_wrong_is_named() {
    for (args, says) in [
        (r#"("web")"#, "takes a named list"),
        (r#"(from: ["web"])"#, "takes no argument `from`"),
        (r#"(by: "web")"#, "takes a list of server ids"),
        (r#"(by: ["web"], ignore: ["docs"])"#, "takes one argument"),
        ("(web)", "names no list"),
    ] {
        let text = format!("policy p {{ deny * when tainted{args} }}");
        let (code, message) = error_code(&text);
        assert_eq!(code, "mcppol::parse::bad_tainted", "{text}");
        assert!(message.contains(says), "{text}: {message}");
    }
}

#[test]
fn fmt_and_explain_keep_by() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.mcppol");
    std::fs::write(
        &path,
        "policy p {\n  deny \"mail/send\" when tainted( by :[\"web\",\"inbox\"] )\n}\n",
    )
    .unwrap();
    crate::common::mcppol()
        .arg("fmt")
        .arg(&path)
        .assert()
        .success();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "policy p {\n  deny \"mail/send\" when tainted(by: [\"web\", \"inbox\"])\n}\n"
    );
    let out = crate::common::mcppol()
        .args([
            "explain",
            "--tool",
            "mail/send",
            "--taint",
            "docs",
            "--policy",
        ])
        .arg(&path)
        .assert()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("only [web, inbox] count"), "{text}");
}
