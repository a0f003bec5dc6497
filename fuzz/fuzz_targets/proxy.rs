//! The proxy's own handling of what the host and the server send
//! (`mcppol::fuzzing::proxy`: the session `mcppol proxy` runs, over
//! in-memory streams). The input is a script: lines from the host and from
//! the server, interleaved, built from MCP fragments (initialize,
//! `tools/list` pages, `tools/call` with arguments, cancellations,
//! `roots/list`, elicitation answers, wrong and duplicate ids, garbage,
//! lines over the bound), answers to what the proxy asked either side, and
//! waits. Time is paused, so every timeout fires at once. Then the host
//! closes its input, and:
//! - nothing panics, and the session ends (no hang);
//! - every line the proxy wrote to either side is one JSON-RPC message,
//!   with no key twice in an object;
//! - no `tools/call` (nor an in-scope `resources/read` or `prompts/get`)
//!   reached the server unless the policy, decided again here on what
//!   reached the server, does not deny it; one it asks about reached the
//!   server only after the host was asked about that tool and accepted
//!   (decided as an approved tool and as a changed one: the pin outranks
//!   the default, so a changed tool the default denies is asked about);
//! - every host request with an id got at most one answer with that id,
//!   and exactly one unless it was cancelled or the server had already
//!   exited; the proxy answered nothing the host did not ask; the same
//!   for the server's requests;
//! - the proxy's own requests on each side never reuse an id.
#![no_main]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use mcppol::fuzzing::mcp::{Id, Message};
use mcppol::fuzzing::proxy::{serve, Options};
use mcppol::{LoadOptions, Request, Store, ToolApproval, Verdict};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};

const SERVER: &str = "fz";
const MAX_LINE: usize = 4096;
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The policy: deny, ask and allow rules over tools, resources and
/// prompts, a hidden tool, pinned roots.
fn policy(default_ask: bool) -> String {
    format!(
        r#"policy fz {{
  default {}
  scope tools, resources, prompts
  roots "/srv/work"
  tools {{ exclude "fz/secret_*" }}
  deny no_delete: "fz/delete_*"
  deny secret: "fz/read" when args.path matches /secret/
  ask writes: "fz/write" when args.path inside "/srv/work"
  allow reads: "fz/read", "fz/list", "fz/secret_tool"
  allow small: "fz/echo" when args.n < 10
  allow files: resource "fz/file:///srv/work/*"
  deny etc: resource "fz/file:///etc/*"
  allow hello: prompt "fz/hello"
}}
"#,
        if default_ask { "ask" } else { "deny" }
    )
}

const TOOLS: &[&str] = &[
    "read",
    "write",
    "delete_all",
    "echo",
    "list",
    "secret_tool",
    "Read",
    "unlisted",
    "fz/read",
    "",
];
const PATHS: &[&str] = &[
    "/srv/work/a",
    "/srv/work/secret.txt",
    "/etc/passwd",
    "/srv/work/../secret",
    "/srv/workshop",
    "a/b",
];
const NUMBERS: &[i64] = &[1, 9, 10, 100, -1, i64::MAX];
const URIS: &[&str] = &[
    "file:///srv/work/a",
    "file:///etc/passwd",
    "file:///srv/work/../../etc/x",
    "https://x/y",
    "%zz",
];
const PROMPTS: &[&str] = &["hello", "other", "Hello"];
const ROOTS: &[&str] = &[
    "file:///",
    "file:///srv/work/a",
    "file:///etc",
    "https://x",
    "file:///srv/work/../../etc",
];
const HOST_METHODS: &[&str] = &[
    "resources/list",
    "prompts/list",
    "completion/complete",
    "logging/setLevel",
    "Tools/call",
    "tools/call ",
    "resources/templates/list",
    "tasks/get",
];
const HOST_NOTES: &[&str] = &[
    "notifications/initialized",
    "notifications/roots/list_changed",
    "notifications/progress",
    "tools/call",
    "initialize",
];
const SERVER_NOTES: &[&str] = &[
    "notifications/tools/list_changed",
    "notifications/progress",
    "notifications/message",
    "notifications/resources/updated",
    "tools/call",
];
const SERVER_METHODS: &[&str] = &[
    "roots/list",
    "elicitation/create",
    "sampling/createMessage",
    "ping",
    "tools/call",
];
const WORDS: &[&str] = &["allow_once", "allow_always", "deny", "deny_and_halt", ""];

#[derive(Arbitrary, Debug)]
struct Script {
    default_ask: bool,
    small_pending: bool,
    steps: Vec<Step>,
}

#[derive(Arbitrary, Debug)]
enum Step {
    Host(HostMsg),
    Server(ServerMsg),
    /// Answers the proxy's nth unanswered request to the host.
    HostAnswer(u8, Answer),
    /// Answers the proxy's nth unanswered request to the server.
    ServerAnswer(u8, Answer),
    HostRaw(Raw),
    ServerRaw(Raw),
    Wait(Wait),
    /// The server's output ends (it exited).
    ServerExit,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Wait {
    Tick,
    Second,
    Minute,
    Long,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum RpcId {
    Small(u8),
    Text(u8),
    Big(bool),
}

impl RpcId {
    fn value(self) -> Value {
        match self {
            RpcId::Small(n) => json!(n % 6),
            RpcId::Text(n) => json!(["a", "b", "1", ""][usize::from(n % 4)]),
            RpcId::Big(neg) => json!(if neg { i64::MIN } else { i64::MAX }),
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Args {
    path: Option<u8>,
    n: Option<u8>,
    extra: bool,
    not_object: bool,
}

impl Args {
    fn value(&self) -> Value {
        if self.not_object {
            return json!(["/srv/work/a"]);
        }
        let mut m = serde_json::Map::new();
        if let Some(p) = self.path {
            m.insert("path".into(), json!(pick(PATHS, p)));
        }
        if let Some(n) = self.n {
            let v = if n % 7 == 6 {
                json!("5")
            } else {
                json!(NUMBERS[usize::from(n) % NUMBERS.len()])
            };
            m.insert("n".into(), v);
        }
        if self.extra {
            m.insert("content".into(), json!({"deep": [1, {"x": null}]}));
        }
        Value::Object(m)
    }
}

#[derive(Arbitrary, Debug)]
enum HostMsg {
    Initialize {
        id: RpcId,
        elicitation: bool,
        roots: bool,
        old_version: bool,
    },
    List {
        id: RpcId,
        cursor: bool,
    },
    Call {
        id: RpcId,
        tool: u8,
        args: Args,
        meta: bool,
        no_args: bool,
    },
    CallNotification {
        tool: u8,
        args: Args,
    },
    Cancel {
        id: RpcId,
    },
    Read {
        id: RpcId,
        uri: u8,
    },
    Prompt {
        id: RpcId,
        name: u8,
    },
    Ping {
        id: RpcId,
    },
    Other {
        id: RpcId,
        method: u8,
    },
    Notify {
        method: u8,
    },
}

#[derive(Arbitrary, Debug)]
enum ServerMsg {
    /// An answer under a fixed id (right, wrong or duplicate).
    Answer {
        id: RpcId,
        answer: Answer,
    },
    Notify {
        method: u8,
    },
    /// A notification whose params are large for their wire size (a list
    /// of zeros, far larger parsed), or hold a key twice: relayed as the
    /// bytes they were, or (a key twice) parsed once.
    BigNotify {
        method: u8,
        kib: u8,
        twice: bool,
    },
    Cancelled {
        id: RpcId,
    },
    Request {
        id: RpcId,
        method: u8,
    },
}

#[derive(Arbitrary, Debug, Clone)]
enum Answer {
    /// What the request's method expects.
    Fitting {
        variant: u8,
        next_page: bool,
    },
    Error {
        code: u8,
    },
    Odd {
        which: u8,
    },
    Accept {
        word: u8,
    },
    Decline,
    Roots {
        uris: Vec<u8>,
    },
}

#[derive(Arbitrary, Debug)]
enum Raw {
    Bytes(Vec<u8>),
    /// A line over the bound by this much.
    Long(u16),
    Empty,
    Batch,
    NullId,
    BadVersion,
    Crlf,
}

fn pick<'a>(table: &[&'a str], n: u8) -> &'a str {
    table[usize::from(n) % table.len()]
}

fn line(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(v).unwrap_or_default();
    out.push(b'\n');
    out
}

/// A tool's definition; `variant`'s bits pick the description, the
/// annotations and the schema (a change of description is a rug pull).
fn tool_def(name: &str, variant: u8) -> Value {
    let mut t = json!({
        "name": name,
        "description": if variant & 1 == 1 { "changed" } else { "a tool" },
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "n": {}}},
    });
    if variant & 2 == 2 {
        t["annotations"] = json!({"readOnlyHint": true});
    }
    if variant & 4 == 4 {
        t["inputSchema"] = json!({"type": "object", "required": ["path"]});
    }
    t
}

/// The answer to a request of `method`.
fn answer_value(method: &str, answer: &Answer, pages: &mut u32) -> Result<Value, Value> {
    match answer {
        Answer::Error { code } => {
            let code = [-32603, -32601, -32602, -32000, 0][usize::from(*code) % 5];
            Err(json!({"code": code, "message": "no"}))
        }
        Answer::Odd { which } => Ok([
            json!(null),
            json!([]),
            json!("x"),
            json!({"tools": "no"}),
            json!({"tools": [{"name": 1}]}),
            json!({"content": "x", "isError": "yes"}),
            json!({"action": "accept"}),
            json!({"roots": [{"uri": 3}]}),
            json!({"structuredContent": {"a": 1}, "content": []}),
        ][usize::from(*which) % 9]
            .clone()),
        Answer::Accept { word } => Ok(json!({
            "action": "accept",
            "content": {"decision": pick(WORDS, *word)}
        })),
        Answer::Decline => Ok(json!({"action": "decline"})),
        Answer::Roots { uris } => Ok(json!({
            "roots": uris.iter().take(4).map(|u| json!({"uri": pick(ROOTS, *u), "name": "r"})).collect::<Vec<_>>()
        })),
        Answer::Fitting { variant, next_page } => Ok(match method {
            "initialize" => json!({
                "protocolVersion": if variant % 2 == 0 { "2025-11-25" } else { "2025-06-18" },
                "capabilities": {"tools": {"listChanged": true}, "resources": {}, "prompts": {}},
                "serverInfo": {"name": "fz", "version": "1"}
            }),
            "tools/list" => {
                *pages += 1;
                // The low three bits: how many tools (from the first of
                // TOOLS on); the others: their definitions.
                let n = usize::from(variant & 7);
                let tools: Vec<Value> = TOOLS
                    .iter()
                    .take(n)
                    .map(|name| tool_def(name, variant >> 3))
                    .collect();
                let mut page = json!({ "tools": tools });
                if *next_page && *pages < 4 {
                    page["nextCursor"] = json!(format!("p{pages}"));
                }
                page
            }
            "tools/call" => match variant % 4 {
                0 => json!({"content": [{"type": "text", "text": "ok"}]}),
                1 => json!({"content": [{"type": "text", "text": "bad"}], "isError": true}),
                2 => json!({"content": [], "structuredContent": {"n": 1}}),
                _ => json!({"content": [{"type": "text", "text": "x".repeat(300)}]}),
            },
            "resources/read" => json!({"contents": [{"uri": "file:///srv/work/a", "text": "t"}]}),
            "prompts/get" => json!({"messages": []}),
            "roots/list" => json!({"roots": [{"uri": pick(ROOTS, *variant)}]}),
            "elicitation/create" => json!({
                "action": "accept",
                "content": {"decision": pick(WORDS, *variant)}
            }),
            _ => json!({}),
        }),
    }
}

fn response(id: &Value, outcome: Result<Value, Value>) -> Value {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    }
}

fn host_line(m: &HostMsg) -> Vec<u8> {
    let request = |id: RpcId, method: &str, params: Value| {
        line(&json!({"jsonrpc": "2.0", "id": id.value(), "method": method, "params": params}))
    };
    match m {
        HostMsg::Initialize {
            id,
            elicitation,
            roots,
            old_version,
        } => {
            let mut caps = json!({});
            if *elicitation {
                caps["elicitation"] = json!({});
            }
            if *roots {
                caps["roots"] = json!({"listChanged": true});
            }
            request(
                *id,
                "initialize",
                json!({
                    "protocolVersion": if *old_version { "2025-06-18" } else { "2025-11-25" },
                    "capabilities": caps,
                    "clientInfo": {"name": "host", "version": "1"}
                }),
            )
        }
        HostMsg::List { id, cursor } => request(
            *id,
            "tools/list",
            if *cursor {
                json!({"cursor": "p1"})
            } else {
                json!({})
            },
        ),
        HostMsg::Call {
            id,
            tool,
            args,
            meta,
            no_args,
        } => {
            let mut params = json!({"name": pick(TOOLS, *tool)});
            if !*no_args {
                params["arguments"] = args.value();
            }
            if *meta {
                params["_meta"] = json!({"progressToken": 1});
            }
            request(*id, "tools/call", params)
        }
        HostMsg::CallNotification { tool, args } => line(&json!({
            "jsonrpc": "2.0", "method": "tools/call",
            "params": {"name": pick(TOOLS, *tool), "arguments": args.value()}
        })),
        HostMsg::Cancel { id } => line(&json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id.value(), "reason": "user"}
        })),
        HostMsg::Read { id, uri } => {
            request(*id, "resources/read", json!({"uri": pick(URIS, *uri)}))
        }
        HostMsg::Prompt { id, name } => request(
            *id,
            "prompts/get",
            json!({"name": pick(PROMPTS, *name), "arguments": {"a": "b"}}),
        ),
        HostMsg::Ping { id } => request(*id, "ping", json!({})),
        HostMsg::Other { id, method } => request(*id, pick(HOST_METHODS, *method), json!({})),
        HostMsg::Notify { method } => line(&json!({
            "jsonrpc": "2.0", "method": pick(HOST_NOTES, *method), "params": {}
        })),
    }
}

fn server_line(m: &ServerMsg, pages: &mut u32) -> Vec<u8> {
    match m {
        ServerMsg::Answer { id, answer } => line(&response(
            &id.value(),
            answer_value("tools/call", answer, pages),
        )),
        ServerMsg::Notify { method } => line(&json!({
            "jsonrpc": "2.0", "method": pick(SERVER_NOTES, *method), "params": {}
        })),
        ServerMsg::BigNotify { method, kib, twice } => {
            // Up to 4 KiB of `0,` (some under the line bound, some over):
            // each zero a whole `Value` once parsed.
            let zeros = vec!["0"; usize::from(*kib % 8 + 1) * 256].join(",");
            let dup = if *twice { r#","data":1,"data":2"# } else { "" };
            let text = format!(
                r#"{{"jsonrpc":"2.0","method":"{}","params":{{"data":[{zeros}]{dup}}}}}"#,
                pick(SERVER_NOTES, *method)
            );
            let mut bytes = text.into_bytes();
            bytes.push(b'\n');
            bytes
        }
        ServerMsg::Cancelled { id } => line(&json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id.value()}
        })),
        ServerMsg::Request { id, method } => {
            let method = pick(SERVER_METHODS, *method);
            let params = match method {
                "elicitation/create" => {
                    json!({"message": "m", "requestedSchema": {"type": "object"}})
                }
                "sampling/createMessage" => json!({"messages": [], "maxTokens": 1}),
                "tools/call" => json!({"name": "read", "arguments": {}}),
                _ => json!({}),
            };
            line(&json!({"jsonrpc": "2.0", "id": id.value(), "method": method, "params": params}))
        }
    }
}

fn raw_line(r: &Raw) -> Vec<u8> {
    let mut out = match r {
        Raw::Bytes(b) => b.iter().take(MAX_LINE * 4).copied().collect(),
        Raw::Long(extra) => {
            let filler = "x".repeat(MAX_LINE + usize::from(*extra));
            line(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"f": filler}}))
        }
        Raw::Empty => Vec::new(),
        Raw::Batch => {
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_all"}}]"#
                .to_vec()
        }
        Raw::NullId => {
            br#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"delete_all"}}"#
                .to_vec()
        }
        Raw::BadVersion => {
            br#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"delete_all"}}"#
                .to_vec()
        }
        Raw::Crlf => b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\r".to_vec(),
    };
    if out.last() != Some(&b'\n') {
        out.push(b'\n');
    }
    out
}

/// The lines one side received, and whether its stream ended.
#[derive(Default)]
struct Received {
    lines: Vec<Vec<u8>>,
    ended: bool,
}

type Log = Arc<Mutex<Received>>;

fn lock(log: &Log) -> std::sync::MutexGuard<'_, Received> {
    log.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn collect<R: tokio::io::AsyncRead + Unpin + Send + 'static>(reader: R, log: Log) {
    tokio::spawn(async move {
        let mut reader = BufReader::new(reader);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    assert_eq!(
                        buf.last(),
                        Some(&b'\n'),
                        "a line the proxy wrote without its newline"
                    );
                    buf.pop();
                    lock(&log).lines.push(buf.clone());
                }
            }
        }
        lock(&log).ended = true;
    });
}

/// Writes a line; `false` when the proxy did not take it within a second
/// (it stopped reading that side), and then nothing more is written there.
async fn write<W: AsyncWrite + Unpin>(w: &mut Option<W>, bytes: &[u8]) -> bool {
    let Some(writer) = w.as_mut() else {
        return false;
    };
    let ok = matches!(
        tokio::time::timeout(Duration::from_secs(1), writer.write_all(bytes)).await,
        Ok(Ok(()))
    );
    if !ok {
        *w = None;
    }
    ok
}

/// Whether `bytes` hold a line over the bound (the server's ends the
/// session).
fn over_bound(bytes: &[u8]) -> bool {
    bytes.split(|&b| b == b'\n').any(|l| l.len() >= MAX_LINE)
}

/// JSON read only to find an object with a key twice (JSON parsers differ
/// on which one counts).
struct NoDuplicateKeys;

impl<'de> serde::Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicateKeysVisitor)
    }
}

struct NoDuplicateKeysVisitor;

impl<'de> serde::de::Visitor<'de> for NoDuplicateKeysVisitor {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        while a.next_element::<NoDuplicateKeys>()?.is_some() {}
        Ok(NoDuplicateKeys)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error;
        let mut keys = std::collections::HashSet::new();
        while let Some(k) = a.next_key::<String>()? {
            if !keys.insert(k.clone()) {
                return Err(A::Error::custom(format!("the key {k:?} twice")));
            }
            a.next_value::<NoDuplicateKeys>()?;
        }
        Ok(NoDuplicateKeys)
    }
}

/// A line the proxy wrote: a JSON-RPC message, or (JSON-RPC 2.0, for a
/// line whose id could not be read) an error response with a null id;
/// never with a key twice in an object (read differently by different
/// parsers, it could carry a message past the proxy).
fn check_line(side: &str, l: &[u8]) -> Option<Message> {
    if let Err(e) = serde_json::from_slice::<NoDuplicateKeys>(l) {
        assert!(
            e.is_syntax() || e.is_eof() || !e.to_string().contains("twice"),
            "the proxy wrote the {side} a line with {e}: {}",
            String::from_utf8_lossy(l)
        );
    }
    match Message::parse(l) {
        Ok(m) => Some(m),
        Err(e) => {
            let v: Value = serde_json::from_slice(l).unwrap_or_else(|_| {
                panic!(
                    "the proxy wrote the {side} a line that is not JSON ({e}): {}",
                    String::from_utf8_lossy(l)
                )
            });
            let ok = v.get("jsonrpc") == Some(&json!("2.0"))
                && v.get("id") == Some(&Value::Null)
                && v.get("result").is_none()
                && v["error"]["code"].is_i64()
                && v["error"]["message"].is_string()
                && v.as_object().is_some_and(|o| o.len() == 3);
            assert!(
                ok,
                "the proxy wrote the {side} a line that is not JSON-RPC ({e}): {v}"
            );
            None
        }
    }
}

/// The messages one side sent, each with its step: a chunk sent at once
/// may hold several lines, and a line over the bound is no message (the
/// proxy refuses it unread).
fn messages(sent: &[(usize, Vec<u8>)]) -> Vec<(usize, Message)> {
    let mut out = Vec::new();
    for (step, chunk) in sent {
        for l in chunk.split(|&b| b == b'\n') {
            if l.len() >= MAX_LINE {
                continue;
            }
            if let Ok(m) = Message::parse(l) {
                out.push((*step, m));
            }
        }
    }
    out
}

/// The requests one side sent (by id, the steps) and the proxy's answers.
fn requests_and_answers(
    sent: &[(usize, Vec<u8>)],
    answers: &[Message],
) -> (HashMap<Id, Vec<usize>>, HashMap<Id, usize>) {
    let mut requests: HashMap<Id, Vec<usize>> = HashMap::new();
    for (step, m) in messages(sent) {
        if let Message::Request(r) = m {
            requests.entry(r.id).or_default().push(step);
        }
    }
    let mut answered: HashMap<Id, usize> = HashMap::new();
    for m in answers {
        if let Message::Response(r) = m {
            *answered.entry(r.id.clone()).or_default() += 1;
        }
    }
    (requests, answered)
}

/// A script written as text (what `seed.sh` writes), after a first line
/// `#!proxy [ask] [small]`: `H LINE` and `S LINE` send a line from the host
/// and from the server as it is; `h NTH VARIANT` and `s NTH VARIANT [more]`
/// answer the proxy's nth unanswered request to the host or the server with
/// what its method expects; `w` waits a second, `W` past the call timeout;
/// `x` ends the server's output.
fn text_script(data: &[u8]) -> Option<Script> {
    let rest = data.strip_prefix(b"#!proxy")?;
    let mut lines = rest.split(|&b| b == b'\n');
    let header = lines.next().unwrap_or_default();
    let has = |w: &[u8]| header.windows(w.len()).any(|x| x == w);
    let mut steps = Vec::new();
    let number = |words: &[&[u8]], i: usize| -> u8 {
        words
            .get(i)
            .and_then(|w| std::str::from_utf8(w).ok())
            .and_then(|w| w.parse().ok())
            .unwrap_or(0)
    };
    for l in lines {
        let words: Vec<&[u8]> = l.split(|&b| b == b' ').collect();
        let payload = || l.get(2..).unwrap_or_default().to_vec();
        steps.push(match l.first() {
            Some(b'H') => Step::HostRaw(Raw::Bytes(payload())),
            Some(b'S') => Step::ServerRaw(Raw::Bytes(payload())),
            Some(b'h') => Step::HostAnswer(
                number(&words, 1),
                Answer::Fitting {
                    variant: number(&words, 2),
                    next_page: false,
                },
            ),
            Some(b's') => Step::ServerAnswer(
                number(&words, 1),
                Answer::Fitting {
                    variant: number(&words, 2),
                    next_page: words.get(3) == Some(&&b"more"[..]),
                },
            ),
            Some(b'w') => Step::Wait(Wait::Second),
            Some(b'W') => Step::Wait(Wait::Long),
            Some(b'x') => Step::ServerExit,
            _ => continue,
        });
    }
    Some(Script {
        default_ask: has(b"ask"),
        small_pending: has(b"small"),
        steps,
    })
}

fuzz_target!(|data: &[u8]| {
    let script = match text_script(data) {
        Some(s) => s,
        None => match Script::arbitrary_take_rest(Unstructured::new(data)) {
            Ok(s) => s,
            Err(_) => return,
        },
    };
    if script.steps.len() > 64 {
        return;
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("no runtime: {e}"),
    };
    rt.block_on(session(script));
});

async fn session(script: Script) {
    let store = Store::empty(LoadOptions::default());
    let text = policy(script.default_ask);
    if let Err(e) = store.update("fz", &text) {
        panic!("the fuzz policy does not load: {}", e.render(false));
    }
    let store = Arc::new(store);
    let policy = match store.get("fz") {
        Some(p) => p,
        None => panic!("no policy fz"),
    };
    let (host_in_w, host_in_r) = tokio::io::duplex(1 << 16);
    let (host_out_w, host_out_r) = tokio::io::duplex(1 << 16);
    let (server_in_w, server_in_r) = tokio::io::duplex(1 << 16);
    let (server_out_w, server_out_r) = tokio::io::duplex(1 << 16);
    let options = Options {
        server_id: SERVER.into(),
        policy_name: "fz".into(),
        max_line_bytes: MAX_LINE,
        max_pending: if script.small_pending { 2 } else { 64 },
        call_timeout: CALL_TIMEOUT,
    };
    let run = tokio::spawn(serve(
        store.clone(),
        options,
        host_in_r,
        host_out_w,
        server_in_w,
        server_out_r,
    ));
    let to_host: Log = Arc::default();
    let to_server: Log = Arc::default();
    collect(host_out_r, to_host.clone());
    collect(server_in_r, to_server.clone());

    let mut host_w = Some(host_in_w);
    let mut server_w = Some(server_out_w);
    // What each side sent, with the step it was sent at.
    let mut host_sent: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut server_sent: Vec<(usize, Vec<u8>)> = Vec::new();
    // The proxy's requests the script answered, on each side.
    let mut host_answered: Vec<Id> = Vec::new();
    let mut server_answered: Vec<Id> = Vec::new();
    let mut pages = 0u32;
    // The step at which the server's side ended (its output ended, or it
    // sent a line over the bound): the session ends then.
    let mut server_end: Option<usize> = None;

    for (step, s) in script.steps.iter().enumerate() {
        // A line to send the host or the server, if the step has one.
        let mut to_host_line: Option<Vec<u8>> = None;
        let mut to_server_line: Option<Vec<u8>> = None;
        match s {
            Step::Host(m) => to_host_line = Some(host_line(m)),
            Step::HostRaw(r) => to_host_line = Some(raw_line(r)),
            Step::Server(m) => to_server_line = Some(server_line(m, &mut pages)),
            Step::ServerRaw(r) => to_server_line = Some(raw_line(r)),
            Step::HostAnswer(nth, answer) => {
                let pending = unanswered(&to_host, &host_answered);
                if !pending.is_empty() {
                    let (id, method) = &pending[usize::from(*nth) % pending.len()];
                    let v = response(&id_json(id), answer_value(method, answer, &mut pages));
                    host_answered.push(id.clone());
                    to_host_line = Some(line(&v));
                }
            }
            Step::ServerAnswer(nth, answer) => {
                let pending = unanswered(&to_server, &server_answered);
                if !pending.is_empty() {
                    let (id, method) = &pending[usize::from(*nth) % pending.len()];
                    let v = response(&id_json(id), answer_value(method, answer, &mut pages));
                    server_answered.push(id.clone());
                    to_server_line = Some(line(&v));
                }
            }
            Step::Wait(w) => {
                let d = match w {
                    Wait::Tick => Duration::from_millis(5),
                    Wait::Second => Duration::from_secs(1),
                    Wait::Minute => Duration::from_secs(61),
                    Wait::Long => CALL_TIMEOUT * 3,
                };
                tokio::time::sleep(d).await;
            }
            Step::ServerExit => {
                if server_w.take().is_some() {
                    server_end.get_or_insert(step);
                }
            }
        }
        if let Some(l) = to_host_line {
            // The host side is read until the host closes it, whatever
            // happened to the server.
            assert!(
                write(&mut host_w, &l).await,
                "the proxy stopped reading the host"
            );
            host_sent.push((step, l));
        }
        if let Some(l) = to_server_line {
            if server_end.is_none() {
                // A line over the bound ends the session there: the proxy
                // reads no further, and the rest may never be taken.
                let over = over_bound(&l);
                let written = write(&mut server_w, &l).await;
                assert!(written || over, "the proxy stopped reading the server");
                if over {
                    server_end = Some(step);
                }
                server_sent.push((step, l));
            }
        }
        // Paused time moves on only when every task waits: the proxy has
        // handled the step by the time this returns.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // Every deadline passes (the approver's 60 s, the call timeout), then
    // the host closes its input.
    tokio::time::sleep(Duration::from_secs(600)).await;
    let host_ended_step = script.steps.len();
    drop(host_w.take());
    let ended = tokio::time::timeout(Duration::from_secs(3600), run).await;
    assert!(
        ended.is_ok(),
        "the session did not end after the host closed its input"
    );
    drop(server_w.take());
    tokio::time::sleep(Duration::from_secs(1)).await;

    if std::env::var_os("PROXYFUZZ_TRACE").is_some() {
        // The transcript, to read a finding: what each side sent, and what
        // the proxy wrote each side.
        for (step, l) in &host_sent {
            eprintln!(
                "host   -> proxy [{step}] {}",
                String::from_utf8_lossy(l).trim_end()
            );
        }
        for (step, l) in &server_sent {
            eprintln!(
                "server -> proxy [{step}] {}",
                String::from_utf8_lossy(l).trim_end()
            );
        }
        for l in &lock(&to_host).lines {
            eprintln!("proxy  -> host   {}", String::from_utf8_lossy(l));
        }
        for l in &lock(&to_server).lines {
            eprintln!("proxy  -> server {}", String::from_utf8_lossy(l));
        }
    }
    let host_lines: Vec<Message> = lock(&to_host)
        .lines
        .iter()
        .filter_map(|l| check_line("host", l))
        .collect();
    let server_lines: Vec<Message> = lock(&to_server)
        .lines
        .iter()
        .filter_map(|l| check_line("server", l))
        .collect();
    assert!(lock(&to_host).ended, "the host's output was not closed");

    // The proxy's own requests on each side: never the same id twice.
    for (side, lines) in [("host", &host_lines), ("server", &server_lines)] {
        let mut seen = std::collections::HashSet::new();
        for m in lines {
            if let Message::Request(r) = m {
                assert!(
                    seen.insert(r.id.clone()),
                    "the proxy sent the {side} id {} twice",
                    r.id
                );
            }
        }
    }

    // What reached the server: decided again.
    let approver = messages(&host_sent).iter().any(|(_, m)| {
        matches!(m,
            Message::Request(r) if r.method == "initialize"
                && r.params.as_ref().and_then(|p| p.pointer("/capabilities/elicitation")).is_some())
    });
    for m in &server_lines {
        let Message::Request(r) = m else { continue };
        let params = r.params.clone().unwrap_or(Value::Null);
        match r.method.as_str() {
            "tools/call" => {
                let name = params["name"].as_str().unwrap_or_else(|| {
                    panic!("a tools/call without a name reached the server: {params}")
                });
                let args = params.get("arguments").cloned().unwrap_or(json!({}));
                assert!(
                    args.is_object(),
                    "arguments that are not an object reached the server"
                );
                // Decided as an approved tool, and as one whose definition
                // changed since (the pin: deny > pin > ask > allow >
                // default, so a changed tool the policy denies by default
                // is asked about, and a person may allow it).
                let decide = |approval| {
                    let mut request = Request::tool(SERVER, name)
                        .with_args(&args)
                        .with_approval(approval);
                    if !approver {
                        request = request.without_approver();
                    }
                    policy.decide(&request)
                };
                let approved = decide(ToolApproval::Approved);
                let changed = decide(ToolApproval::Changed);
                if approved.decision != Verdict::Allow {
                    assert!(
                        approved.decision == Verdict::Ask || changed.decision == Verdict::Ask,
                        "a denied tools/call reached the server: {name} {args} ({})",
                        approved.to_json()
                    );
                    // Denied unless changed: the person was asked about
                    // the change.
                    let why = if approved.decision == Verdict::Deny {
                        "reason definition_changed"
                    } else {
                        ""
                    };
                    assert!(
                        asked_and_accepted(&host_lines, &host_sent, name, why),
                        "an asked tools/call reached the server though nobody allowed it: {name} {args}"
                    );
                }
            }
            "resources/read" => {
                let uri = params["uri"].as_str().unwrap_or_else(|| {
                    panic!("a resources/read without a uri reached the server: {params}")
                });
                let d = policy.decide(&Request::resource(SERVER, uri));
                assert_eq!(
                    d.decision,
                    Verdict::Allow,
                    "a refused resource read reached the server: {uri}"
                );
            }
            "prompts/get" => {
                let name = params["name"].as_str().unwrap_or_else(|| {
                    panic!("a prompts/get without a name reached the server: {params}")
                });
                let d = policy.decide(&Request::prompt(SERVER, name));
                assert_eq!(
                    d.decision,
                    Verdict::Allow,
                    "a refused prompt get reached the server: {name}"
                );
            }
            _ => {}
        }
    }

    // Every host request: at most one answer per request; at least one
    // unless cancelled or sent once the server had exited.
    let cancels = cancelled(&host_sent);
    let (requests, answered) = requests_and_answers(&host_sent, &host_lines);
    for (id, n) in &answered {
        let asked = requests.get(id).map_or(0, Vec::len);
        assert!(
            *n <= asked,
            "the host got {n} answers with id {id} for {asked} requests"
        );
    }
    let ended_at = server_end.unwrap_or(host_ended_step);
    for (id, steps) in &requests {
        let due = steps.iter().filter(|s| **s < ended_at).count();
        let got = answered.get(id).copied().unwrap_or(0);
        let cancelled = cancels.get(id).copied().unwrap_or(0);
        assert!(
            got + cancelled >= due,
            "the host's request {id} got {got} answers for {due} requests ({cancelled} cancelled)"
        );
    }
    // The server's requests: at most one answer each; none unasked.
    let (requests, answered) = requests_and_answers(&server_sent, &server_lines);
    for (id, n) in &answered {
        let asked = requests.get(id).map_or(0, Vec::len);
        assert!(
            *n <= asked,
            "the server got {n} answers with id {id} for {asked} requests"
        );
    }
}

fn id_json(id: &Id) -> Value {
    match id {
        Id::Number(n) => json!(n),
        Id::String(s) => json!(s),
    }
}

/// The proxy's requests to one side the script has not answered yet.
fn unanswered(log: &Log, answered: &[Id]) -> Vec<(Id, String)> {
    lock(log)
        .lines
        .iter()
        .filter_map(|l| match Message::parse(l) {
            Ok(Message::Request(r)) if !answered.contains(&r.id) => Some((r.id, r.method)),
            _ => None,
        })
        .collect()
}

/// How many cancellations the host sent for each id.
fn cancelled(sent: &[(usize, Vec<u8>)]) -> HashMap<Id, usize> {
    let mut out = HashMap::new();
    for (_, m) in messages(sent) {
        if let Message::Notification(n) = m {
            if n.method == "notifications/cancelled" {
                if let Some(Ok(id)) = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .map(|v| serde_json::from_value::<Id>(v.clone()))
                {
                    *out.entry(id).or_default() += 1;
                }
            }
        }
    }
    out
}

/// Whether the proxy asked the host about tool `name` (an
/// `elicitation/create` whose message holds `why`) and the host accepted
/// with an allow.
fn asked_and_accepted(
    to_host: &[Message],
    host_sent: &[(usize, Vec<u8>)],
    name: &str,
    why: &str,
) -> bool {
    let needle = format!("runs tool `{name}`");
    let asked: Vec<&Id> = to_host
        .iter()
        .filter_map(|m| match m {
            Message::Request(r)
                if r.method == "elicitation/create"
                    && r.params
                        .as_ref()
                        .and_then(|p| p["message"].as_str())
                        .is_some_and(|t| t.contains(&needle) && t.contains(why)) =>
            {
                Some(&r.id)
            }
            _ => None,
        })
        .collect();
    messages(host_sent).iter().any(|(_, m)| {
        matches!(m,
            Message::Response(r) if asked.contains(&&r.id)
                && r.outcome.as_ref().is_ok_and(|v| v["action"] == "accept"
                    && matches!(v.pointer("/content/decision").and_then(Value::as_str),
                        Some("allow_once" | "allow_always"))))
    })
}
