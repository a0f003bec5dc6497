//! `mcppol gateway --listen` for a host that speaks MCP 2026-07-28: no
//! `initialize`, no session; `server/discover`; each request's `_meta` and
//! its routing headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`)
//! checked against the body; the taint kept per principal for
//! `--taint-ttl`, over loopback HTTP in front of the scripted server.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use serde_json::{json, Value};

use crate::gateway_http::{http, start_with, Gateway};

const POLICY: &str = r#"
policy gw {
  default deny
  deny tainted_write: "b/echo" when tainted
  ask confirm: "a/secret"
  allow "a/*", "b/*"
}
"#;

pub(crate) const DANA: &str = "Bearer dana-token-0123456789abcdef";
pub(crate) const OMAR: &str = "Bearer omar-token-0123456789abcdef";

/// A 2026 request's body.
pub(crate) fn body(id: u64, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// POSTs `body` without a session, with `headers` (the routing headers
/// unless the caller gives its own); the status and the JSON answer.
pub(crate) fn post(g: &Gateway, body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let method = body["method"].as_str().unwrap_or("").to_string();
    let name = body["params"]["name"]
        .as_str()
        .or(body["params"]["uri"].as_str())
        .map(String::from);
    let mut all: Vec<(&str, &str)> = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    if !headers.iter().any(|(k, _)| k.starts_with("mcp-")) {
        all.push(("mcp-protocol-version", "2026-07-28"));
        all.push(("mcp-method", &method));
        if let Some(name) = &name {
            all.push(("mcp-name", name));
        }
    }
    all.extend_from_slice(headers);
    let (status, h, text) = http(g, "POST", "/mcp", &all, &body.to_string());
    assert!(
        h.iter().all(|(k, _)| k != "mcp-session-id"),
        "a stateless host is given no session"
    );
    let answer = serde_json::from_str(&text).unwrap_or_else(|_| json!({ "text": text }));
    (status, answer)
}

/// A stateless `tools/call` of `tool` as `auth`'s holder: its result.
pub(crate) fn call(g: &Gateway, auth: &[(&str, &str)], tool: &str) -> Value {
    let (status, answer) = post(
        g,
        &body(
            7,
            "tools/call",
            json!({"name": tool, "arguments": {"n": 1}}),
        ),
        auth,
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["id"], 7, "the host's own id: {answer}");
    answer["result"].clone()
}

fn refused(result: &Value) -> bool {
    result["isError"] == true
        && result["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("rule tainted_write")
}

#[test]
fn a_stateless_host_is_served_without_a_session_and_its_headers_must_match() {
    let dir = tempfile::tempdir().unwrap();
    let g = start_with(dir.path(), POLICY, &["a", "b"], &["--taint-ttl", "2s"]);
    let (status, discover) = post(&g, &body(1, "server/discover", json!({})), &[]);
    assert_eq!(status, 200, "{discover}");
    let r = &discover["result"];
    assert_eq!(r["supportedVersions"][0], "2026-07-28", "{discover}");
    assert_eq!(r["resultType"], "complete");
    assert!(r["capabilities"]["tools"].is_object());

    let (status, tools) = post(&g, &body(2, "tools/list", json!({})), &[]);
    assert_eq!(status, 200, "{tools}");
    assert_eq!(tools["result"]["resultType"], "complete");
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"a__read_file") && names.contains(&"b__echo"),
        "{names:?}"
    );

    // A header that disagrees with the body is refused, never followed.
    let echo = body(3, "tools/call", json!({"name": "b__echo", "arguments": {}}));
    for headers in [
        [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "a__read_file"),
        ],
        [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
            ("mcp-name", "b__echo"),
        ],
        [
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "b__echo"),
        ],
    ] {
        let (status, answer) = post(&g, &echo, &headers);
        assert_eq!(status, 400, "{headers:?}: {answer}");
        assert_eq!(answer["error"]["code"], -32020, "{answer}");
        assert_eq!(answer["id"], 3);
    }
    let mut old = echo.clone();
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2031-01-01");
    let (status, answer) = post(
        &g,
        &old,
        &[
            ("mcp-protocol-version", "2031-01-01"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "b__echo"),
        ],
    );
    assert_eq!(
        (status, &answer["error"]["code"]),
        (400, &json!(-32022)),
        "{answer}"
    );
    assert_eq!(answer["error"]["data"]["supported"], json!(["2026-07-28"]));

    // Taint without a session: each request on its own, the principal's
    // taint carried from one to the next.
    let before = call(&g, &[], "b__echo");
    assert_eq!(before["content"][0]["text"], r#"{"n": 1}"#, "{before}");
    assert_eq!(before["resultType"], "complete");
    let read = call(&g, &[], "a__read_file");
    assert!(!refused(&read), "{read}");
    let after = call(&g, &[], "b__echo");
    assert!(refused(&after), "tainted by a's result: {after}");
    // --taint-ttl after the last result, the taint is forgotten.
    std::thread::sleep(Duration::from_millis(2500));
    let later = call(&g, &[], "b__echo");
    assert!(!refused(&later), "{later}");
}

#[test]
fn a_stateless_hosts_taint_is_its_principals() {
    let dir = tempfile::tempdir().unwrap();
    let g = start_with(dir.path(), POLICY, &["a", "b"], &["--tokens", "TOKENS"]);
    let (status, _) = post(&g, &body(1, "tools/list", json!({})), &[]);
    assert_eq!(status, 401, "no token");
    let dana = [("authorization", DANA)];
    let omar = [("authorization", OMAR)];
    call(&g, &dana, "a__read_file");
    assert!(
        refused(&call(&g, &dana, "b__echo")),
        "dana's context holds a's output"
    );
    // omar's is clean: another principal, another taint.
    let o = call(&g, &omar, "b__echo");
    assert!(!refused(&o), "{o}");
}

/// A 2026 `tools/call` of `a__secret` whose `_meta` declares elicitation,
/// with `extra` params (a retry's).
fn ask_call(id: u64, x: u64, extra: Value) -> Value {
    let mut b = body(
        id,
        "tools/call",
        json!({"name": "a__secret", "arguments": {"x": x}}),
    );
    b["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}});
    for (k, v) in extra.as_object().unwrap() {
        b["params"][k] = v.clone();
    }
    b
}

fn answer(state: &str, decision: &str) -> Value {
    json!({"requestState": state, "inputResponses": {"mcppol_approval":
        {"action": "accept", "content": {"decision": decision}}}})
}

#[test]
fn an_ask_is_put_as_input_required_and_only_its_own_retry_settles_it() {
    let dir = tempfile::tempdir().unwrap();
    let g = start_with(dir.path(), POLICY, &["a", "b"], &[]);
    let text = |v: &Value| {
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    // No elicitation declared: nobody can be asked.
    let plain = body(
        1,
        "tools/call",
        json!({"name": "a__secret", "arguments": {}}),
    );
    let (status, a) = post(&g, &plain, &[]);
    assert_eq!(status, 200, "{a}");
    assert!(text(&a).contains("reason ask_failed"), "{a}");

    let asked = |id, x| {
        let (status, a) = post(&g, &ask_call(id, x, json!({})), &[]);
        assert_eq!(status, 200, "{a}");
        let r = &a["result"];
        assert_eq!(r["resultType"], "input_required", "{a}");
        let question = &r["inputRequests"]["mcppol_approval"];
        assert_eq!(question["method"], "elicitation/create", "{a}");
        assert_eq!(question["params"]["mode"], "form", "{a}");
        let message = question["params"]["message"].as_str().unwrap();
        assert!(message.contains("rule confirm"), "{message}");
        r["requestState"].as_str().unwrap().to_string()
    };
    // A retry must repeat its own call: other arguments are refused, and
    // the waiting call is declined.
    let state = asked(2, 1);
    let (_, a) = post(&g, &ask_call(3, 2, answer(&state, "allow_once")), &[]);
    assert_eq!(a["error"]["code"], -32602, "{a}");
    // A requestState is used once.
    let (_, a) = post(&g, &ask_call(4, 1, answer(&state, "allow_once")), &[]);
    assert_eq!(a["error"]["code"], -32602, "{a}");
    assert!(
        a["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown, used or expired"),
        "{a}"
    );
    // The person's deny, then an allow, each by its own retry.
    let state = asked(5, 1);
    let (_, a) = post(&g, &ask_call(6, 1, answer(&state, "deny")), &[]);
    assert!(text(&a).contains("reason ask_denied"), "{a}");
    let state = asked(7, 1);
    let (_, a) = post(&g, &ask_call(8, 1, answer(&state, "allow_once")), &[]);
    assert_eq!(text(&a), "the secret", "{a}");
    assert_eq!(a["result"]["resultType"], "complete");
}
