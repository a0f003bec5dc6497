//! What arrives from the server: answers to the proxy's requests
//! delivered; notifications relayed as they came (and shown to the
//! pipeline: `tools/list_changed` lists again); the server's requests
//! relayed to the host under a new id, except `roots/list` while the
//! policy pins roots.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::AsyncRead;

use super::host::closed;
use super::roots;
use super::Shared;
use crate::mcp::framing::{FrameError, GrowingBufReader, LineReader};
use crate::mcp::jsonrpc::{Id, Message, Notification, Request, Response};
use crate::mcp::peer::Wait;
use crate::mcp::{CallHandle, RpcError};

/// Reads the server until its output ends (it exited) or breaks the bound.
pub(crate) async fn read<R: AsyncRead + Unpin>(shared: Arc<Shared>, output: R) {
    // Given up at the first line over the bound: not read to its end,
    // which may never come.
    let mut lines = LineReader::new(
        GrowingBufReader::new(output, super::READ_BUFFER),
        shared.max_line_bytes,
    )
    .stop_at_bound();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) => on_line(&shared, line).await,
            Ok(None) => return,
            Err(FrameError::TooLong { max }) => {
                // A server that breaks the bound is not trusted to frame
                // the rest: the session ends.
                tracing::error!(target: "mcppol::proxy", max, "the server sent a line over the bound: stopping");
                return;
            }
            Err(FrameError::Io(e)) => {
                tracing::warn!(target: "mcppol::proxy", error = %e, "reading the server failed");
                return;
            }
        }
    }
}

/// Whether a member was present (whatever its value, `null` included).
#[derive(Default)]
struct Seen(bool);

impl<'de> serde::Deserialize<'de> for Seen {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d)?;
        Ok(Seen(true))
    }
}

/// A server notification the proxy only relays, read without building
/// its params: they are checked to be JSON and kept as the bytes they
/// were (a parsed message can be tens of times its wire size).
#[derive(serde::Deserialize)]
struct RawNote<'a> {
    jsonrpc: &'a str,
    method: String,
    #[serde(borrow, default)]
    params: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    id: Seen,
    #[serde(default)]
    result: Seen,
    #[serde(default)]
    error: Seen,
}

/// A JSON value read only to check that no object in it holds a key
/// twice: nothing is built but the keys of the object being read.
struct UniqueKeys;

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueKeysVisitor)
    }
}

struct UniqueKeysVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueKeysVisitor {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKeys, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(UniqueKeys)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<UniqueKeys, A::Error> {
        let mut keys: std::collections::HashSet<std::borrow::Cow<'de, str>> =
            std::collections::HashSet::new();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if !keys.insert(key) {
                return Err(serde::de::Error::custom("a key twice"));
            }
            map.next_value::<UniqueKeys>()?;
        }
        Ok(UniqueKeys)
    }
}

/// The line to relay for a notification the proxy does nothing with but
/// pass on (not a cancellation, not `list_changed`): written again, its
/// members in the proxy's own words, its params as they came. `None` for
/// any other line, or one this reading refuses (a member twice, say),
/// which then takes the full path.
pub(crate) fn relayed_note(line: &[u8]) -> Option<Vec<u8>> {
    relayed_note_if(line, true, |method| {
        !matches!(
            method,
            "notifications/cancelled" | "notifications/tools/list_changed"
        )
    })
}

/// [`relayed_note`] for the notifications whose method `relay` accepts.
/// A line that cannot hold one (no `"notifications/` in it, nor, when
/// `any_method`, a `"method"` member) is not read here at all: a call or
/// an answer is parsed once, on the full path.
pub(crate) fn relayed_note_if(
    line: &[u8],
    any_method: bool,
    relay: impl Fn(&str) -> bool,
) -> Option<Vec<u8>> {
    // A string (a member's name, a method) written with escapes would not
    // be found: that line takes the full path, which reads it as well.
    let text = std::str::from_utf8(line).ok()?;
    let may_hold = if any_method {
        text.contains("\"method\"")
    } else {
        text.contains("\"notifications/")
    };
    if !may_hold {
        return None;
    }
    let note: RawNote<'_> = serde_json::from_slice(line).ok()?;
    if note.jsonrpc != "2.0" || note.id.0 || note.result.0 || note.error.0 || !relay(&note.method) {
        return None;
    }
    let mut out = Vec::with_capacity(line.len() + 48);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    serde_json::to_writer(&mut out, &note.method).ok()?;
    if let Some(params) = note.params {
        let raw = params.get();
        if !(raw.starts_with('{') || raw.starts_with('[')) {
            return None;
        }
        // A key twice, at any depth, reads one way to one parser and
        // another way to the next: such a line takes the full path, which
        // writes each key once.
        if serde_json::from_str::<UniqueKeys>(raw).is_err() {
            return None;
        }
        out.extend_from_slice(br#","params":"#);
        out.extend_from_slice(raw.as_bytes());
    }
    out.extend_from_slice(b"}\n");
    Some(out)
}

async fn on_line(shared: &Arc<Shared>, line: &[u8]) {
    if let Some(out) = relayed_note(line) {
        shared.host.send_line(out).await;
        return;
    }
    let message = match Message::parse(line) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(target: "mcppol::proxy", error = %e, "the server sent a line that is not JSON-RPC: dropped");
            return;
        }
    };
    match message {
        Message::Response(Response { id, outcome }) => {
            if !shared.server.resolve(&id, outcome) {
                tracing::debug!(target: "mcppol::proxy", %id, "an answer from the server to no pending request");
            }
        }
        Message::Notification(n) => on_notification(shared, n).await,
        Message::Request(r) => start(shared, r),
    }
}

async fn on_notification(shared: &Arc<Shared>, n: Notification) {
    if n.method == "notifications/cancelled" {
        // The server cancelled a request it sent the host: pass it on under
        // the host side's id, and stop waiting for it.
        let id = n
            .params
            .as_ref()
            .and_then(|p| p.get("requestId").cloned())
            .and_then(|v| serde_json::from_value::<Id>(v).ok());
        let relayed = id.and_then(|id| Shared::lock(&shared.relayed).remove(&id));
        if let Some((handle, abort)) = relayed {
            // Taken before the task stops; none when it was not sent to
            // the host yet (and now it will not be).
            let cancelled = handle.cancel_requests(n.params.unwrap_or(json!({})));
            abort.abort();
            cancelled.tell().await;
        }
        return;
    }
    if n.method == "notifications/tools/list_changed" {
        // The pipeline is told only what it reads (that the tools
        // changed), never the params: a notification held there until
        // the next call would be held parsed, many times its size.
        let _ = shared.upstream.notes.send(Notification {
            method: n.method.clone(),
            params: None,
        });
        if let Some(p) = shared.pipeline.get().cloned() {
            relist(shared, p);
        }
    }
    // Written again from what was read, never the line as it came (see
    // host.rs: a key twice reads one way here and may read another there).
    // What waits for room in the host's queue is the line, not the parsed
    // message.
    let out = Message::Notification(n).to_line();
    shared.host.send_line(out).await;
}

/// Lists the tools again and compares (a changed definition is logged);
/// the next call sees the new listing in any case. One listing at a time:
/// a `list_changed` that comes during one makes one more after it, so a
/// flood of them makes a few listings, not one each.
fn relist(shared: &Arc<Shared>, p: Arc<crate::pipeline::Pipeline>) {
    {
        let mut relist = Shared::lock(&shared.relist);
        if relist.running {
            relist.again = true;
            return;
        }
        relist.running = true;
    }
    let shared = shared.clone();
    tokio::spawn(async move {
        loop {
            if let Err(e) = p.refresh_tools().await {
                tracing::warn!(target: "mcppol::proxy", error = %e, "listing the tools again failed");
            }
            let mut relist = Shared::lock(&shared.relist);
            if !relist.again {
                relist.running = false;
                return;
            }
            relist.again = false;
        }
    });
}

fn start(shared: &Arc<Shared>, request: Request) {
    let task_shared = shared.clone();
    let server_id = request.id.clone();
    let handle = CallHandle::new();
    let task_handle = handle.clone();
    // The task's abort handle is recorded before it can finish: it takes
    // the same lock to remove its entry.
    let mut relayed = Shared::lock(&shared.relayed);
    let task = tokio::spawn(async move {
        let id = request.id.clone();
        let outcome = serve(&task_shared, request, &task_handle).await;
        Shared::lock(&task_shared.relayed).remove(&id);
        task_shared.server.respond(id, outcome).await;
    });
    relayed.insert(server_id, (handle, task.abort_handle()));
}

/// One request of the server's, relayed to the host for the request
/// `handle` cancels.
async fn serve(
    shared: &Arc<Shared>,
    request: Request,
    handle: &CallHandle,
) -> Result<Value, RpcError> {
    let pinned = shared
        .store
        .get(&shared.policy_name)
        .and_then(|p| p.roots().map(<[String]>::to_vec));
    match (request.method.as_str(), pinned) {
        ("roots/list", Some(pinned)) => {
            let answer = ask_host(shared, "roots/list", request.params, handle).await;
            let host_roots = match answer {
                Ok(v) => v
                    .get("roots")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
                Err(e) => {
                    tracing::warn!(target: "mcppol::proxy", code = e.code, "the host did not list its roots: the server gets none");
                    Vec::new()
                }
            };
            let (kept, dropped) = roots::pin(&host_roots, &pinned);
            for uri in &dropped {
                tracing::warn!(target: "mcppol::proxy", root = %uri, "a root of the host outside every pinned root was dropped");
            }
            Ok(json!({ "roots": kept }))
        }
        (method, _) => ask_host(shared, method, request.params, handle).await,
    }
}

/// Sends the host a request for the server, under a new id (which the
/// server's cancellation reaches through `handle`).
async fn ask_host(
    shared: &Shared,
    method: &str,
    params: Option<Value>,
    handle: &CallHandle,
) -> Result<Value, RpcError> {
    let wait = Wait {
        handle: Some(handle),
        ..Wait::default()
    };
    shared
        .host
        .request(method, params, wait)
        .await
        .map_err(closed)
}

/// While the policy pins roots, an edit that changes them is announced to
/// the server (`notifications/roots/list_changed`), so it asks again and
/// gets the new intersection. Only when the host declared `roots`: a server
/// of a host without them does not use them. Runs on a thread of its own
/// (the store's notices are a blocking channel) until the store goes.
pub(crate) fn watch_roots(shared: &Arc<Shared>) {
    let swaps = shared.store.subscribe();
    let handle = tokio::runtime::Handle::current();
    let weak = Arc::downgrade(shared);
    let roots_of = |s: &Shared| {
        s.store
            .get(&s.policy_name)
            .and_then(|p| p.roots().map(<[String]>::to_vec))
    };
    let mut last = roots_of(shared);
    let spawned = std::thread::Builder::new()
        .name("mcppol-roots".into())
        .spawn(move || {
            for _swap in swaps {
                let Some(shared) = weak.upgrade() else {
                    return;
                };
                let now = roots_of(&shared);
                let host_has_roots = shared
                    .host_caps
                    .get()
                    .is_some_and(|c| c.get("roots").is_some());
                if now != last && host_has_roots {
                    tracing::info!(target: "mcppol::proxy", "the pinned roots changed: the server is told to list them again");
                    let server = shared.server.clone();
                    handle.spawn(async move {
                        server.notify("notifications/roots/list_changed", None).await;
                    });
                }
                last = now;
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(target: "mcppol::proxy", error = %e, "cannot watch the pinned roots: an edit of them reaches the server on its next roots/list");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relayed(line: &str) -> Option<Value> {
        relayed_note(line.as_bytes()).map(|l| serde_json::from_slice(&l).unwrap())
    }

    #[test]
    fn a_plain_notification_is_relayed_with_its_params_as_they_came() {
        let out = relayed_note(
            br#"{"method":"notifications/message","params":{"b":1,"a":[1, 2]},"jsonrpc":"2.0","x":1}"#,
        )
        .unwrap();
        assert_eq!(
            out,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"b\":1,\"a\":[1, 2]}}\n"
        );
        assert_eq!(
            relayed(r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#),
            Some(json!({"jsonrpc": "2.0", "method": "notifications/progress"}))
        );
        // Anything else takes the full path: requests, answers, a member
        // twice, params that are not a structure, the notifications the
        // proxy acts on, what is not JSON-RPC 2.0.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","method":"x","result":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/x","method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":{"data":[0],"data":1}}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":[{"a":{"b":1,"b":2}}]}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":3}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
            r#"{"jsonrpc":"1.0","method":"x"}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":{"a":}}"#,
            "not json",
        ] {
            assert_eq!(relayed(line), None, "{line}");
        }
    }

    #[test]
    fn a_line_that_cannot_be_a_notification_is_left_to_the_full_path() {
        use crate::mcp::jsonrpc::Message;
        // An answer, and a notification whose members are spelt with
        // escapes: neither is read here; the full path reads both.
        let answer = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
        assert_eq!(relayed_note(answer), None);
        assert!(matches!(Message::parse(answer), Ok(Message::Response(_))));
        let escaped = br#"{"jsonrpc":"2.0","\u006dethod":"notifications\/message","params":{}}"#;
        assert_eq!(relayed_note(escaped), None);
        assert_eq!(relayed_note_if(escaped, false, |_| true), None);
        match Message::parse(escaped) {
            Ok(Message::Notification(n)) => assert_eq!(n.method, "notifications/message"),
            other => panic!("{:?}", other.map(|m| m.to_line())),
        }
        // A host's call holds no `"notifications/`: not read here.
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#;
        assert_eq!(relayed_note_if(call, false, |_| true), None);
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(relayed_note_if(note, false, |_| true).is_some());
    }
}
