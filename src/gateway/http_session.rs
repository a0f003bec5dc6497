//! One MCP session of the HTTP host side: a whole gateway session (its own
//! servers, its own taint, its caller) run over two in-memory pipes, as
//! the stdio side runs over stdin and stdout. What a POST carries is
//! written to the session as one line; what the session writes is routed
//! back: an answer to the POST waiting for it, anything else (an
//! elicitation, a server's `roots/list`, a notification) to the session's
//! open event streams, the most recent first. A message with no stream to
//! go to is dropped, so a question nobody can answer fails (an ask is then
//! denied), never waits for ever.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::{mpsc, oneshot};

use super::{serve, Config};
use crate::mcp::framing::{FrameError, LineReader};

/// How much a session's pipes buffer each way.
const PIPE_BYTES: usize = 1 << 20;

/// The most messages waiting on one event stream before more are dropped.
pub(crate) const STREAM_QUEUE: usize = 256;

/// One HTTP session.
pub(crate) struct HttpSession {
    /// The `Mcp-Session-Id` (128 random bits, hex).
    pub(crate) id: String,
    /// The caller the session was opened for (its token's principal).
    pub(crate) principal: Option<String>,
    /// What the session reads: closed (taken) to end it.
    input: tokio::sync::Mutex<Option<DuplexStream>>,
    /// POSTs waiting for their answer, by the request id's JSON text.
    waiting: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// Open event streams, oldest first.
    streams: Mutex<Vec<(u64, mpsc::Sender<Value>)>>,
    next_stream: std::sync::atomic::AtomicU64,
    /// When a request last came.
    pub(crate) last_seen: Mutex<Instant>,
    /// The gateway session's task: done once every server is reaped.
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl HttpSession {
    /// Starts a session: the gateway session on its pipes, and the task
    /// that routes what it writes.
    pub(crate) fn start(id: String, config: Config, max_line_bytes: usize) -> Arc<HttpSession> {
        let principal = config.principal.clone();
        let (input, gateway_in) = tokio::io::duplex(PIPE_BYTES);
        let (gateway_out, output) = tokio::io::duplex(PIPE_BYTES);
        let (_gw, session) = serve(config, gateway_in, gateway_out);
        let me = Arc::new(HttpSession {
            id,
            principal,
            input: tokio::sync::Mutex::new(Some(input)),
            waiting: Mutex::default(),
            streams: Mutex::default(),
            next_stream: std::sync::atomic::AtomicU64::new(0),
            last_seen: Mutex::new(Instant::now()),
            task: Mutex::new(None),
        });
        *lock(&me.task) = Some(tokio::spawn(session));
        tokio::spawn(route(Arc::downgrade(&me), output, max_line_bytes));
        me
    }

    /// Writes one message to the session; false once it has ended.
    pub(crate) async fn send(&self, message: &Value) -> bool {
        *lock(&self.last_seen) = Instant::now();
        let mut line = match serde_json::to_vec(message) {
            Ok(l) => l,
            Err(_) => return false,
        };
        line.push(b'\n');
        let mut input = self.input.lock().await;
        match input.as_mut() {
            Some(pipe) => pipe.write_all(&line).await.is_ok(),
            None => false,
        }
    }

    /// Waits for the answer to the request of this id (its JSON text).
    pub(crate) fn expect(&self, id: String) -> oneshot::Receiver<Value> {
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id, tx);
        rx
    }

    /// Stops waiting for an answer (the POST went away).
    pub(crate) fn forget(&self, id: &str) {
        lock(&self.waiting).remove(id);
    }

    /// Opens an event stream for what the session sends the host; closed
    /// with [`HttpSession::close_stream`].
    pub(crate) fn open_stream(&self) -> (u64, mpsc::Receiver<Value>) {
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        let n = self
            .next_stream
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.streams).push((n, tx));
        (n, rx)
    }

    pub(crate) fn close_stream(&self, n: u64) {
        lock(&self.streams).retain(|(k, _)| *k != n);
    }

    /// Ends the session: its input closes, so every server is stopped and
    /// every request still in flight answered.
    pub(crate) async fn end(&self) {
        self.input.lock().await.take();
    }

    /// Waits until the session has stopped every server.
    pub(crate) async fn stopped(&self) {
        let task = lock(&self.task).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    /// Whether a POST is still waiting for an answer.
    pub(crate) fn busy(&self) -> bool {
        !lock(&self.waiting).is_empty()
    }
}

/// Routes each line the session writes until it ends.
async fn route(session: std::sync::Weak<HttpSession>, output: DuplexStream, max_line_bytes: usize) {
    let mut lines = LineReader::new(BufReader::new(output), max_line_bytes);
    loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) | Err(FrameError::Io(_)) => return,
            Err(FrameError::TooLong { .. }) => continue,
        };
        let Ok(message) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let Some(session) = session.upgrade() else {
            return;
        };
        let is_answer = message.get("method").is_none()
            && (message.get("result").is_some() || message.get("error").is_some());
        if is_answer {
            let key = message.get("id").map(Value::to_string).unwrap_or_default();
            let waiting = lock(&session.waiting).remove(&key);
            if let Some(tx) = waiting {
                let _ = tx.send(message);
            }
            continue;
        }
        // The most recent stream first: it is the POST whose request
        // the question is most likely about.
        let streams: Vec<mpsc::Sender<Value>> = lock(&session.streams)
            .iter()
            .rev()
            .map(|(_, tx)| tx.clone())
            .collect();
        let mut sent = false;
        for tx in streams {
            if tx.try_send(message.clone()).is_ok() {
                sent = true;
                break;
            }
        }
        if !sent {
            let method = message.get("method").and_then(Value::as_str).unwrap_or("");
            tracing::debug!(target: "mcppol::gateway", session = %session.id, method, "no open stream for a message to the host: dropped");
            // A question nobody can be asked fails at once (an ask is then
            // denied with `ask_failed`), rather than waiting for ever.
            if let Some(id) = message.get("id") {
                let refusal = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": crate::mcp::codes::INTERNAL_ERROR,
                    "message": "mcppol: the HTTP host has no open stream to be asked on"}});
                session.send(&refusal).await;
            }
        }
    }
}

/// Closes its event stream when the POST's response is dropped (answered,
/// or the client went away).
struct StreamGuard {
    session: Arc<HttpSession>,
    n: u64,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.session.close_stream(self.n);
    }
}

/// The event stream of one POST: what the session asks the host while it
/// serves the request, then the answer, which ends it.
pub(crate) fn events(
    session: Arc<HttpSession>,
    n: u64,
    questions: mpsc::Receiver<Value>,
    answer: oneshot::Receiver<Value>,
) -> impl futures_util::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>>
{
    let guard = StreamGuard { session, n };
    futures_util::stream::unfold(Some((guard, questions, answer)), |state| async move {
        let (guard, mut questions, mut answer) = state?;
        tokio::select! {
            biased;
            q = questions.recv() => q.map(|q| {
                    (Ok(super::http::event(&q)), Some((guard, questions, answer)))
                }),
            a = &mut answer => match a {
                // The answer ends the stream (the guard goes with it).
                Ok(a) => Some((Ok(super::http::event(&a)), None)),
                Err(_) => None,
            },
        }
    })
}
