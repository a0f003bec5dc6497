//! `mcppol serve` through the binary on a loopback port: the hooks of
//! every host answer as `mcppol hook HOST` does, `/v1/decide` and
//! `/v1/explain` answer as `eval` and `explain --format json` do, the
//! status, bounded bodies, hot reload, and the refusal to listen off
//! loopback.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub(crate) struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start(policy: &Path, state: &Path) -> Server {
    start_with(policy, state, &[])
}

pub(crate) fn start_with(policy: &Path, state: &Path, extra: &[&str]) -> Server {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcppol"))
        .args(["serve", "--listen", "127.0.0.1:0", "--policy"])
        .arg(policy)
        .arg("--state-dir")
        .arg(state)
        .args(extra)
        .env("HOME", "/home/dev")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("mcppol serve: listening on http://")
        .unwrap_or_else(|| panic!("no address: {line:?}"))
        .to_string();
    Server { child, addr }
}

pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: String,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }
}

/// One HTTP/1.1 request on its own connection.
pub(crate) fn http(server: &Server, method: &str, path: &str, body: &[u8]) -> Reply {
    http_as(server, None, method, path, body)
}

/// One request with `token` as its bearer token, if any.
fn http_as(server: &Server, token: Option<&str>, method: &str, path: &str, body: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(&server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        server.addr,
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    // A body over the limit may be refused before it is all sent.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (headers, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = headers.split(' ').nth(1).unwrap_or("0").parse().unwrap();
    Reply {
        status,
        headers: headers.to_ascii_lowercase(),
        body: body.to_string(),
    }
}

fn fixture(host: &str, name: &str) -> String {
    std::fs::read_to_string(format!("tests/fixtures/hosts/{host}/{name}.json")).unwrap()
}

#[test]
fn hooks_decide_and_explain_over_loopback() {
    let state = tempfile::tempdir().unwrap();
    let server = start(Path::new("policies/coding-agent.mcppol"), state.path());

    let r = http(&server, "GET", "/healthz", b"");
    assert_eq!((r.status, r.body.as_str()), (200, "ok\n"));

    // The same answers as `mcppol hook HOST`.
    let r = http(
        &server,
        "POST",
        "/v1/hooks/cline",
        fixture("cline", "PreToolUse").as_bytes(),
    );
    assert_eq!((r.status, r.body.as_str()), (200, "{\"cancel\":false}\n"));
    let denied = fixture("codex", "PreToolUse").replace("git status", "rm -rf /");
    let r = http(&server, "POST", "/v1/hooks/codex", denied.as_bytes());
    assert_eq!(r.status, 200);
    assert!(r.headers.contains("mcppol-exit-status: 2"), "{}", r.headers);
    assert!(
        r.body
            .starts_with("mcppol hook codex: mcppol: deny codex/Bash by rule `no_rm_rf`"),
        "{}",
        r.body
    );

    // Claude Code's http handler: always its hook JSON.
    let claude = json!({"session_id": "s1", "hook_event_name": "PreToolUse", "cwd": "/home/dev/project",
        "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}});
    let r = http(
        &server,
        "POST",
        "/v1/hooks/claude",
        claude.to_string().as_bytes(),
    );
    assert_eq!(r.json()["hookSpecificOutput"]["permissionDecision"], "deny");
    let r = http(&server, "POST", "/v1/hooks/claude", b"{");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["hookSpecificOutput"]["permissionDecision"], "deny");
    let r = http(&server, "POST", "/v1/hooks/nope", b"{}");
    assert_eq!(r.status, 404);

    // Taint carries across requests of a session, as across processes.
    let r = http(
        &server,
        "POST",
        "/v1/hooks/gemini",
        fixture("gemini", "AfterTool").as_bytes(),
    );
    assert_eq!(r.status, 200);
    let r = http(
        &server,
        "POST",
        "/v1/hooks/gemini",
        fixture("gemini", "BeforeTool").as_bytes(),
    );
    assert_eq!(r.json()["decision"], "ask");

    // `/v1/decide`: what `eval` prints.
    let request = json!({"tool": "codex/Bash", "args": {"command": "git status"}, "cwd": "/home/dev/project"});
    let r = http(
        &server,
        "POST",
        "/v1/decide",
        request.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200);
    let eval = crate::common::mcppol()
        .args([
            "eval",
            "--policy",
            "policies/coding-agent.mcppol",
            "--request",
            "-",
        ])
        .write_stdin(request.to_string())
        .output()
        .unwrap();
    let eval: Value = serde_json::from_slice(&eval.stdout).unwrap();
    assert_eq!(r.json(), eval);
    assert_eq!(eval["decision"], "allow");
    let named = json!({"policy": "coding_agent", "tool": "github/get_issue"});
    assert_eq!(
        http(&server, "POST", "/v1/decide", named.to_string().as_bytes()).json()["rule_id"],
        "mcp_reads"
    );
    let r = http(
        &server,
        "POST",
        "/v1/decide",
        br#"{"policy": "nope", "tool": "a/b"}"#,
    );
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]
        .as_str()
        .unwrap()
        .contains("no policy `nope`"));
    let r = http(&server, "POST", "/v1/decide", b"[1]");
    assert_eq!(r.status, 400);

    // `/v1/explain`: what `explain --format json` prints (the store keeps
    // its paths absolute, and so does the explanation).
    let absolute = std::path::absolute("policies/coding-agent.mcppol").unwrap();
    let r = http(
        &server,
        "POST",
        "/v1/explain",
        request.to_string().as_bytes(),
    );
    let explain = crate::common::mcppol()
        .args([
            "explain",
            "--format",
            "json",
            "--policy",
            absolute.to_str().unwrap(),
            "--tool",
            "codex/Bash",
            "--args",
            "{\"command\": \"git status\"}",
            "--cwd",
            "/home/dev/project",
        ])
        .output()
        .unwrap();
    let explain: Value = serde_json::from_slice(&explain.stdout).unwrap();
    assert_eq!(r.json(), explain);

    // Status, and a body over the bound.
    let r = http(&server, "GET", "/v1/status", b"");
    assert!(r.body.contains("coding_agent"), "{}", r.body);
    let big = vec![b' '; (1 << 20) + 1];
    assert_eq!(http(&server, "POST", "/v1/decide", &big).status, 413);
}

#[test]
fn policies_reload_while_serving() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.mcppol");
    std::fs::write(&policy, "policy p {\n  allow \"ops/status\"\n}\n").unwrap();
    let server = start(&policy, &dir.path().join("state"));
    let request = br#"{"tool": "ops/status"}"#;
    assert_eq!(
        http(&server, "POST", "/v1/decide", request).json()["decision"],
        "allow"
    );
    std::fs::write(&policy, "policy p {\n  deny \"ops/status\"\n}\n").unwrap();
    let start = Instant::now();
    loop {
        let d = http(&server, "POST", "/v1/decide", request).json();
        if d["decision"] == "deny" {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "not reloaded: {d}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn with_tokens_every_caller_needs_one_and_decides_as_its_principal() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.mcppol");
    std::fs::write(
        &policy,
        "policy p {\n  allow ops: \"ops/status\" when principal == \"dana\"\n}\n",
    )
    .unwrap();
    let tokens = dir.path().join("tokens.json");
    std::fs::write(
        &tokens,
        r#"{"tokens": [{"token": "a-long-random-token-for-dana", "principal": "dana"}]}"#,
    )
    .unwrap();
    let server = start_with(
        &policy,
        &dir.path().join("state"),
        &["--tokens", tokens.to_str().unwrap()],
    );
    let request = br#"{"tool": "ops/status", "principal": "mallory"}"#;
    assert_eq!(http(&server, "GET", "/healthz", b"").status, 200);
    let r = http(&server, "POST", "/v1/decide", request);
    assert_eq!(r.status, 401);
    assert!(
        r.headers.contains("www-authenticate: bearer"),
        "{}",
        r.headers
    );
    assert_eq!(
        http_as(
            &server,
            Some("wrong-token-wrong-token"),
            "GET",
            "/v1/status",
            b""
        )
        .status,
        401
    );
    // The token's principal, not the body's.
    let r = http_as(
        &server,
        Some("a-long-random-token-for-dana"),
        "POST",
        "/v1/decide",
        request,
    );
    assert_eq!(r.json()["decision"], "allow", "{}", r.body);
    // A hook without a token is refused in the host's blocking form.
    let r = http(
        &server,
        "POST",
        "/v1/hooks/cline",
        fixture("cline", "PreToolUse").as_bytes(),
    );
    assert_eq!((r.status, r.json()["cancel"].clone()), (200, json!(true)));
    let r = http(&server, "POST", "/v1/hooks/claude", b"{}");
    assert_eq!(r.json()["hookSpecificOutput"]["permissionDecision"], "deny");
}

/// A P-256 signing key and its public JWK (`kid` "k1"), as the gateway's
/// JWT tests make them: a PKCS#8 wrapper around a scalar from a digest.
fn jwt_key_pair() -> (jsonwebtoken::EncodingKey, Value) {
    use sha2::Digest;
    let seed = format!("{:?}/serve-jwks", std::time::SystemTime::now());
    let scalar = sha2::Sha256::digest(seed.as_bytes());
    let mut der = vec![
        0x30, 0x41, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02,
        0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x04, 0x27, 0x30, 0x25,
        0x02, 0x01, 0x01, 0x04, 0x20,
    ];
    der.extend_from_slice(&scalar);
    let signing = jsonwebtoken::EncodingKey::from_ec_der(&der);
    let jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&signing, jsonwebtoken::Algorithm::ES256)
        .unwrap();
    let mut public = serde_json::to_value(&jwk).unwrap();
    public["kid"] = json!("k1");
    public["use"] = json!("sig");
    (signing, public)
}

fn jwt(key: &jsonwebtoken::EncodingKey, claims: &Value) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some("k1".to_string());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

#[test]
fn with_jwks_a_signed_token_names_the_principal_and_a_bad_one_is_401() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.mcppol");
    std::fs::write(
        &policy,
        "policy p {\n  allow ops: \"ops/status\" when principal == \"dana\"\n}\n",
    )
    .unwrap();
    let (key, public) = jwt_key_pair();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({ "keys": [public] }).to_string()).unwrap();
    let server = start_with(
        &policy,
        &dir.path().join("state"),
        &[
            "--jwks",
            jwks.to_str().unwrap(),
            "--issuer",
            "https://idp.test",
            "--audience",
            "mcppol",
        ],
    );
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 300;
    let claims = |sub: &str, aud: &str| json!({"iss": "https://idp.test", "aud": aud, "sub": sub, "exp": exp});
    let dana = jwt(&key, &claims("dana", "mcppol"));
    let omar = jwt(&key, &claims("omar", "mcppol"));
    let elsewhere = jwt(&key, &claims("dana", "another-service"));
    let request = br#"{"tool": "ops/status", "principal": "mallory"}"#;

    assert_eq!(http(&server, "GET", "/healthz", b"").status, 200);
    // No token, a token for another audience, a token that is not a JWT:
    // 401 before anything else.
    let r = http(&server, "POST", "/v1/decide", request);
    assert_eq!(r.status, 401);
    assert!(
        r.headers.contains("www-authenticate: bearer"),
        "{}",
        r.headers
    );
    let r = http_as(&server, Some(&elsewhere), "POST", "/v1/decide", request);
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.body.contains("invalid token"), "{}", r.body);
    let r = http_as(&server, Some("not.a.jwt"), "GET", "/v1/status", b"");
    assert_eq!(r.status, 401);
    // The token's `sub` is the principal, whatever the body says.
    let r = http_as(&server, Some(&dana), "POST", "/v1/decide", request);
    assert_eq!(
        (r.status, r.json()["decision"].clone()),
        (200, json!("allow")),
        "{}",
        r.body
    );
    // Another principal: no rule allows it, the default (ask) applies.
    let r = http_as(&server, Some(&omar), "POST", "/v1/decide", request);
    assert_eq!(r.json()["source"], "default", "{}", r.body);
    assert_eq!(
        http_as(&server, Some(&dana), "GET", "/v1/status", b"").status,
        200
    );
    // A hook without a token is refused in the host's blocking form.
    let r = http(&server, "POST", "/v1/hooks/claude", b"{}");
    assert_eq!(r.json()["hookSpecificOutput"]["permissionDecision"], "deny");
}

#[test]
fn serve_jwks_needs_issuer_and_audience_and_a_readable_key_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::common::mcppol()
        .args([
            "serve",
            "--policy",
            "policies/coding-agent.mcppol",
            "--jwks",
            "jwks.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--issuer"));
    let missing = dir.path().join("missing.json");
    let out = crate::common::mcppol()
        .args([
            "serve",
            "--listen",
            "0.0.0.0:0",
            "--policy",
            "policies/coding-agent.mcppol",
            "--jwks",
        ])
        .arg(&missing)
        .args(["--issuer", "https://idp.test", "--audience", "mcppol"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: --jwks: "), "{stderr}");
}

#[test]
fn serve_refuses_to_listen_off_loopback() {
    let out = crate::common::mcppol()
        .args([
            "serve",
            "--listen",
            "0.0.0.0:0",
            "--policy",
            "policies/coding-agent.mcppol",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a loopback address, and no --tokens")
    );
}

#[test]
fn print_settings_serve_gives_claude_codes_http_handler() {
    let out = crate::common::mcppol()
        .args([
            "hook",
            "claude",
            "--print-settings",
            "--serve",
            "http://127.0.0.1:8181",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hook = &v["hooks"]["PreToolUse"][0]["hooks"][0];
    assert_eq!(hook["type"], "http");
    assert_eq!(hook["url"], "http://127.0.0.1:8181/v1/hooks/claude");
    let out = crate::common::mcppol()
        .args([
            "hook",
            "codex",
            "--print-settings",
            "--serve",
            "http://127.0.0.1:8181",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `/v1/decide`'s allows take from the policy's budgets (the host acts on
/// them): past the count a call is denied by the budget; an ask is only
/// checked, and other principals keep their own budget.
#[test]
fn decide_counts_allows_against_budgets() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.mcppol");
    std::fs::write(
        &policy,
        "policy p {\n  limit sends: \"*/send\", \"*/merge\" 2 per day per principal\n  ask \"gh/merge\"\n  allow \"mail/send\"\n}\n",
    )
    .unwrap();
    let server = start(&policy, &dir.path().join("state"));
    let ann = br#"{"tool": "mail/send", "principal": "ann"}"#;
    let merge = br#"{"tool": "gh/merge", "principal": "ann"}"#;
    // Asks take nothing.
    for _ in 0..3 {
        assert_eq!(
            http(&server, "POST", "/v1/decide", merge).json()["decision"],
            "ask"
        );
    }
    for _ in 0..2 {
        assert_eq!(
            http(&server, "POST", "/v1/decide", ann).json()["decision"],
            "allow"
        );
    }
    let d = http(&server, "POST", "/v1/decide", ann).json();
    assert_eq!(
        (&d["decision"], &d["source"], &d["reason"], &d["rule_id"]),
        (
            &json!("deny"),
            &json!("limit"),
            &json!("limit_exceeded"),
            &json!("sends")
        )
    );
    // Spent: the ask is refused by the budget before anyone is asked.
    assert_eq!(
        http(&server, "POST", "/v1/decide", merge).json()["source"],
        "limit"
    );
    let bob = br#"{"tool": "mail/send", "principal": "bob"}"#;
    assert_eq!(
        http(&server, "POST", "/v1/decide", bob).json()["decision"],
        "allow"
    );
}

/// Hooks answered by `mcppol serve` count budgets in its store (per
/// session: the host's session id); the same hook run as its own process
/// keeps no counters and denies what a budget matches.
#[test]
fn hooks_count_budgets_in_serve_and_fail_closed_alone() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.mcppol");
    std::fs::write(
        &policy,
        "policy p {\n  limit web: \"*/WebFetch\" 2 per day per session\n  allow \"claude/WebFetch\"\n}\n",
    )
    .unwrap();
    let server = start(&policy, &dir.path().join("state"));
    let event = |session: &str| {
        json!({"session_id": session, "hook_event_name": "PreToolUse", "cwd": "/home/dev",
               "tool_name": "WebFetch", "tool_input": {"url": "https://example.com"}})
        .to_string()
    };
    let decision = |body: &str| {
        let r = http(&server, "POST", "/v1/hooks/claude", body.as_bytes());
        let v: Value = serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("{e}: {}", r.body));
        (
            v["hookSpecificOutput"]["permissionDecision"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            v["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        )
    };
    for _ in 0..2 {
        assert_eq!(decision(&event("s1")).0, "allow");
    }
    let (verdict, reason) = decision(&event("s1"));
    assert_eq!(verdict, "deny");
    assert!(reason.contains("rule `web` (limit_exceeded)"), "{reason}");
    assert_eq!(decision(&event("s2")).0, "allow");

    // Alone, the hook cannot count: denied, and it says why.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcppol"))
        .args(["claude-hook", "--policy"])
        .arg(&policy)
        .arg("--state-dir")
        .arg(dir.path().join("alone"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event("s3").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"deny\""), "{text}");
    assert!(text.contains("keeps no budget counters"), "{text}");
}
