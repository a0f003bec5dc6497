//! One session (`serve`) over in-memory streams, time paused: what the
//! fuzz target `proxy` found, kept as regression tests.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

use super::{serve, EndedBy, Session};
use crate::pipeline::{Baseline, Hook, Matcher};
use crate::store::Store;
use crate::LoadOptions;

const POLICY: &str = r#"policy fz {
  default deny
  ask writes: "fz/write"
  allow reads: "fz/read"
}"#;

/// The two ends the test holds: what the host and the server send, and
/// what the proxy wrote each of them.
struct Wire {
    host: Option<DuplexStream>,
    to_host: Lines<BufReader<DuplexStream>>,
    server: Option<DuplexStream>,
    to_server: Lines<BufReader<DuplexStream>>,
    session: tokio::task::JoinHandle<EndedBy>,
}

fn start() -> Wire {
    start_with(Vec::new())
}

fn start_with(hooks: Vec<Hook>) -> Wire {
    let store = Store::empty(LoadOptions::default());
    store.update("fz", POLICY).unwrap();
    let session = Session {
        server_id: "fz".into(),
        store: Arc::new(store),
        policy_name: "fz".into(),
        baseline: Baseline::FirstListing,
        audit: None,
        approver: None,
        hooks,
        max_line_bytes: 1 << 16,
        max_pending: 16,
        call_timeout: Duration::from_secs(30),
        shape: Some(crate::pipeline::DEFAULT_MAX_RESULT_BYTES),
        protected: crate::protected::Protected::new(),
        state: None,
    };
    let (host, host_in) = tokio::io::duplex(1 << 16);
    let (host_out, to_host) = tokio::io::duplex(1 << 16);
    let (server_in, to_server) = tokio::io::duplex(1 << 16);
    let (server, server_out) = tokio::io::duplex(1 << 16);
    let session = tokio::spawn(serve(
        session,
        host_in,
        host_out,
        server_in,
        server_out,
        |by| async move { by },
    ));
    Wire {
        host: Some(host),
        to_host: BufReader::new(to_host).lines(),
        server: Some(server),
        to_server: BufReader::new(to_server).lines(),
        session,
    }
}

async fn send(to: &mut Option<DuplexStream>, message: Value) {
    let mut line = serde_json::to_vec(&message).unwrap();
    line.push(b'\n');
    to.as_mut().unwrap().write_all(&line).await.unwrap();
}

/// The next line the proxy wrote, within a minute (of paused time).
async fn next(lines: &mut Lines<BufReader<DuplexStream>>) -> Option<Value> {
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the proxy wrote nothing for a minute")
        .unwrap()?;
    Some(serde_json::from_str(&line).unwrap())
}

fn request(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The host initializes (declaring elicitation) and lists the tools; the
/// server lists `read` and `write`.
async fn handshake(w: &mut Wire) {
    let caps = json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "h", "version": "1"}});
    send(&mut w.host, request(json!(1), "initialize", caps)).await;
    let init = next(&mut w.to_server).await.unwrap();
    assert_eq!(init["method"], "initialize");
    let server_caps = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"}});
    send(&mut w.server, result(init["id"].clone(), server_caps)).await;
    assert_eq!(next(&mut w.to_host).await.unwrap()["id"], 1);
    send(&mut w.host, request(json!(2), "tools/list", json!({}))).await;
    let list = next(&mut w.to_server).await.unwrap();
    assert_eq!(list["method"], "tools/list");
    let tools = json!({"tools": [
        {"name": "read", "inputSchema": {"type": "object"}},
        {"name": "write", "inputSchema": {"type": "object"}},
    ]});
    send(&mut w.server, result(list["id"].clone(), tools)).await;
    let listed = next(&mut w.to_host).await.unwrap();
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 2);
}

/// Every line left for the host, until the proxy closes its output.
async fn rest(lines: &mut Lines<BufReader<DuplexStream>>) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(v) = next(lines).await {
        out.push(v);
    }
    out
}

/// Found by the fuzz target: a second request under an id still in flight
/// overwrote the first's entry, so the first could no longer be cancelled
/// and the session's end did not wait for its answer. It is refused.
#[tokio::test(start_paused = true)]
async fn a_request_under_an_id_in_flight_is_refused_and_the_first_goes_on() {
    let mut w = start();
    send(&mut w.host, request(json!(7), "ping", json!({}))).await;
    let ping = next(&mut w.to_server).await.unwrap();
    assert_eq!(ping["method"], "ping");
    send(&mut w.host, request(json!(7), "ping", json!({}))).await;
    let refused = next(&mut w.to_host).await.unwrap();
    assert_eq!(refused["id"], 7);
    assert_eq!(refused["error"]["code"], -32600);
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("already used by a request in flight"));
    // The first is still the one in flight: the server's answer reaches
    // the host under its id, and a cancellation of 7 would name it.
    send(&mut w.server, result(ping["id"].clone(), json!({}))).await;
    assert_eq!(
        next(&mut w.to_host).await.unwrap(),
        result(json!(7), json!({}))
    );
    // Once answered, the id may be used again.
    send(&mut w.host, request(json!(7), "ping", json!({}))).await;
    assert_eq!(next(&mut w.to_server).await.unwrap()["method"], "ping");
    drop(w.host.take());
    assert_eq!(w.session.await.unwrap(), EndedBy::Host);
    let left = rest(&mut w.to_host).await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["id"], 7);
    assert_eq!(left[0]["error"]["code"], -32603);
}

/// Found by the fuzz target: a call waiting on the person (an
/// elicitation the host never answers) when the server exited got no
/// answer: the session waited two seconds for it and closed the host's
/// output. The host's side is given up at the end, and the call is
/// answered.
#[tokio::test(start_paused = true)]
async fn a_call_waiting_on_the_person_is_answered_when_the_server_exits() {
    let mut w = start();
    handshake(&mut w).await;
    let args = json!({"name": "write", "arguments": {"path": "/a"}});
    send(&mut w.host, request(json!(3), "tools/call", args)).await;
    let ask = next(&mut w.to_host).await.unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    drop(w.server.take());
    assert_eq!(w.session.await.unwrap(), EndedBy::Server);
    let left = rest(&mut w.to_host).await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["id"], 3);
    assert_eq!(left[0]["result"]["isError"], true);
    let text = left[0]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("reason ask_failed"), "{text}");
    // Nothing more reached the server.
    let more = tokio::time::timeout(Duration::from_secs(5), w.to_server.next_line()).await;
    assert!(matches!(more, Err(_) | Ok(Ok(None))), "{more:?}");
}

/// The same when the host closes its input while the person is asked: it
/// can no longer answer, and the call is answered before the output
/// closes.
#[tokio::test(start_paused = true)]
async fn a_call_waiting_on_the_person_is_answered_when_the_host_closes_its_input() {
    let mut w = start();
    handshake(&mut w).await;
    let args = json!({"name": "write", "arguments": {"path": "/a"}});
    send(&mut w.host, request(json!(3), "tools/call", args)).await;
    assert_eq!(
        next(&mut w.to_host).await.unwrap()["method"],
        "elicitation/create"
    );
    drop(w.host.take());
    assert_eq!(w.session.await.unwrap(), EndedBy::Host);
    let left = rest(&mut w.to_host).await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["id"], 3);
    let text = left[0]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("reason ask_failed"), "{text}");
}

/// Found while writing the fuzz target (which now checks that no line the
/// proxy writes has a key twice, and has a seed for it): a notification
/// was relayed as the line that came, so a host line with `"method"` twice
/// (`tools/call`, then a notification's) was passed on because the proxy
/// reads the last, and a server whose JSON parser keeps the first read an
/// ungoverned `tools/call`. Notifications are written again from what was
/// read, both ways.
#[tokio::test(start_paused = true)]
async fn a_notification_is_written_again_never_relayed_as_it_came() {
    let mut w = start();
    let smuggled = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_all"},"method":"notifications/progress"}
"#;
    w.host.as_mut().unwrap().write_all(smuggled).await.unwrap();
    let line = w.to_server.next_line().await.unwrap().unwrap();
    assert_eq!(
        line,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"name":"delete_all"}}"#
    );
    let from_server = br#"{"jsonrpc":"2.0","method":"sampling/createMessage","method":"notifications/message","params":{}}
"#;
    w.server
        .as_mut()
        .unwrap()
        .write_all(from_server)
        .await
        .unwrap();
    let line = w.to_host.next_line().await.unwrap().unwrap();
    assert_eq!(
        line,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#
    );
}

/// An around hook runs on a task of its own, which the task-local that
/// once carried the upstream id did not reach: a call sent through one
/// was never cancelled when the host cancelled. The host request's handle
/// goes down with the call, so the server is told, under the id it knows.
#[tokio::test(start_paused = true)]
async fn a_call_sent_through_an_around_hook_is_cancelled_upstream() {
    let wrap = Hook::around(
        "wrap",
        Matcher::pattern("*"),
        |_call, next, _ctx| async move { next.run().await },
    );
    let mut w = start_with(vec![wrap]);
    handshake(&mut w).await;
    let args = json!({"name": "read", "arguments": {"path": "/a"}});
    send(&mut w.host, request(json!(5), "tools/call", args)).await;
    let call = next(&mut w.to_server).await.unwrap();
    assert_eq!(call["method"], "tools/call");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 5, "reason": "bored"}});
    send(&mut w.host, cancel).await;
    assert_eq!(
        next(&mut w.to_server).await.unwrap(),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": call["id"], "reason": "bored"}})
    );
    // The cancelled call gets no answer, even when the server's comes.
    send(
        &mut w.server,
        result(call["id"].clone(), json!({"content": []})),
    )
    .await;
    drop(w.host.take());
    assert_eq!(w.session.await.unwrap(), EndedBy::Host);
    let left = rest(&mut w.to_host).await;
    assert!(left.is_empty(), "{left:?}");
}
