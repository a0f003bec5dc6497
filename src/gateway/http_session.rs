//! One MCP session of the HTTP host side: a whole gateway session (its own
//! servers, its own taint, its caller) run over two in-memory pipes, as
//! the stdio side runs over stdin and stdout. What a POST carries is
//! written to the session as one line; what the session writes is routed
//! back: an answer to the POST waiting for it, anything else (an
//! elicitation, a server's `roots/list`, a notification) to one of the
//! session's open event streams ([`Outbox`]): a POST's stream, or the
//! session's one `GET` stream. A message with no stream to go to is
//! dropped, so a question nobody can answer fails (an ask is then denied),
//! never waits for ever.

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
    /// The open event streams.
    outbox: Mutex<Outbox>,
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
            outbox: Mutex::default(),
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

    /// Opens a POST's event stream for what the session sends the host
    /// while it serves the request; closed with [`HttpSession::close_stream`].
    pub(crate) fn open_stream(&self) -> (u64, mpsc::Receiver<Value>) {
        lock(&self.outbox).open_post()
    }

    /// Opens the session's `GET` stream; `None` while one is open.
    pub(crate) fn open_listener(&self) -> Option<(u64, mpsc::Receiver<Value>)> {
        *lock(&self.last_seen) = Instant::now();
        lock(&self.outbox).open_listener()
    }

    pub(crate) fn close_stream(&self, n: u64) {
        lock(&self.outbox).close(n);
    }

    /// Ends the session: its input closes, so every server is stopped and
    /// every request still in flight answered; its `GET` stream ends.
    pub(crate) async fn end(&self) {
        self.input.lock().await.take();
        lock(&self.outbox).close_listener();
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
            Ok(None) | Err(FrameError::Io(_)) => {
                // The session is over: so is its GET stream.
                if let Some(session) = session.upgrade() {
                    lock(&session.outbox).close_listener();
                }
                return;
            }
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
        let sent = lock(&session.outbox).deliver(&message, &session.id);
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

/// Closes its event stream when the response is dropped (a POST's
/// answered, or the client went away).
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

/// The session's `GET` stream: what the session sends the host that is
/// no POST's (a server's `list_changed`, say), until the client goes away,
/// the session ends, or the client reads so slowly that its queue fills
/// (then the stream ends after what is queued: the gateway never waits
/// for a reader).
pub(crate) fn listen(
    session: Arc<HttpSession>,
    n: u64,
    messages: mpsc::Receiver<Value>,
) -> impl futures_util::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>>
{
    let guard = StreamGuard { session, n };
    futures_util::stream::unfold((guard, messages), |(guard, mut messages)| async move {
        let message = messages.recv().await?;
        Some((Ok(super::http::event(&message)), (guard, messages)))
    })
}

/// Where what the session sends the host goes: the event streams of the
/// POSTs in flight, and the session's one `GET` stream. Every queue is
/// bounded ([`STREAM_QUEUE`]) and written without waiting.
#[derive(Default)]
pub(crate) struct Outbox {
    /// The POSTs' streams, oldest first.
    posts: Vec<(u64, mpsc::Sender<Value>)>,
    /// The `GET` stream, when one is open.
    listener: Option<(u64, mpsc::Sender<Value>)>,
    next: u64,
}

impl Outbox {
    fn number(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    fn open_post(&mut self) -> (u64, mpsc::Receiver<Value>) {
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        let n = self.number();
        self.posts.push((n, tx));
        (n, rx)
    }

    /// One `GET` stream a session: a second while the first is open is
    /// refused (the client would not know which one it reads).
    fn open_listener(&mut self) -> Option<(u64, mpsc::Receiver<Value>)> {
        if self
            .listener
            .as_ref()
            .is_some_and(|(_, tx)| !tx.is_closed())
        {
            return None;
        }
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        let n = self.number();
        self.listener = Some((n, tx));
        Some((n, rx))
    }

    fn close(&mut self, n: u64) {
        self.posts.retain(|(k, _)| *k != n);
        if self.listener.as_ref().is_some_and(|(k, _)| *k == n) {
            self.listener = None;
        }
    }

    /// Ends the `GET` stream once what is queued on it is sent.
    fn close_listener(&mut self) {
        self.listener = None;
    }

    /// Queues a message for the host; false when no stream took it. A
    /// request, and a progress notification, are about a POST's request:
    /// the most recent POST's stream first, then the `GET` stream; any
    /// other notification (a listing changed, a resource updated) goes to
    /// the `GET` stream first. A `GET` stream whose queue is full is
    /// closed: its reader loses it, the gateway does not wait.
    fn deliver(&mut self, message: &Value, session: &str) -> bool {
        let about_a_post = message.get("id").is_some()
            || message.get("method").and_then(Value::as_str) == Some("notifications/progress");
        if about_a_post && self.to_posts(message) {
            return true;
        }
        if let Some((_, tx)) = &self.listener {
            match tx.try_send(message.clone()) {
                Ok(()) => return true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::warn!(target: "mcppol::gateway", session, "the host reads its GET stream too slowly: the stream is closed");
                    self.listener = None;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => self.listener = None,
            }
        }
        !about_a_post && self.to_posts(message)
    }

    /// The most recent POST's stream that has room.
    fn to_posts(&self, message: &Value) -> bool {
        self.posts
            .iter()
            .rev()
            .any(|(_, tx)| tx.try_send(message.clone()).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn note(method: &str) -> Value {
        json!({"jsonrpc": "2.0", "method": method})
    }

    #[test]
    fn notifications_go_to_the_get_stream_and_questions_to_the_post_first() {
        let mut out = Outbox::default();
        let (_, mut post) = out.open_post();
        let (_, mut get) = out.open_listener().unwrap();
        assert!(out.open_listener().is_none(), "one GET stream a session");
        let changed = note("notifications/tools/list_changed");
        let question = json!({"jsonrpc": "2.0", "id": 7, "method": "elicitation/create"});
        assert!(out.deliver(&changed, "s"));
        assert!(out.deliver(&question, "s"));
        assert_eq!(get.try_recv().unwrap(), changed);
        assert_eq!(post.try_recv().unwrap(), question);
        assert!(get.try_recv().is_err() && post.try_recv().is_err());
        // Without a POST in flight, a question goes to the GET stream;
        // without any stream, nothing takes it.
        drop(post);
        assert!(out.deliver(&question, "s"));
        assert_eq!(get.try_recv().unwrap(), question);
        drop(get);
        assert!(!out.deliver(&changed, "s"));
        assert!(out.listener.is_none(), "a GET stream gone is forgotten");
        assert!(out.open_listener().is_some(), "and another may be opened");
    }

    #[test]
    fn a_slow_get_reader_loses_its_stream_and_never_blocks() {
        let mut out = Outbox::default();
        let (_, mut get) = out.open_listener().unwrap();
        let changed = note("notifications/resources/list_changed");
        for _ in 0..STREAM_QUEUE {
            assert!(out.deliver(&changed, "s"));
        }
        // The queue is full: the next message closes the stream at once.
        assert!(!out.deliver(&changed, "s"));
        assert!(out.listener.is_none());
        // What was queued is still read, then the stream ends.
        let mut read = 0;
        while get.try_recv().is_ok() {
            read += 1;
        }
        assert_eq!(read, STREAM_QUEUE);
        assert!(get.is_closed());
        let (_, _again) = out.open_listener().unwrap();
    }
}
