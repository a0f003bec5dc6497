//! One MCP session of the HTTP host side: a whole gateway session (its own
//! servers, its own taint, its caller) fed the host's messages as values.
//! A POST's body, parsed once, is handed to the session
//! ([`HttpSession::receive`]); what the session sends the host is handed
//! to its [`Router`] as it is sent, with no pipe, writer task or second
//! parse between: an answer to the POST waiting for it, anything else (an
//! elicitation, a server's `roots/list`, a notification) to one of the
//! session's open event streams ([`Outbox`]): a POST's stream, or the
//! session's one `GET` stream. A message with no stream to go to is
//! dropped, so a question nobody can answer fails (an ask is then denied),
//! never waits for ever.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::{host, serve_direct, Config, Shared};
use crate::mcp::jsonrpc::{codes, Id, Message, Response};
use crate::mcp::peer::Deliver;
use crate::mcp::RpcError;

/// The most messages waiting on one event stream before more are dropped.
pub(crate) const STREAM_QUEUE: usize = 256;

/// One HTTP session.
pub(crate) struct HttpSession {
    /// The `Mcp-Session-Id` (128 random bits, hex).
    pub(crate) id: String,
    /// The caller the session was opened for (its token's principal).
    pub(crate) principal: Option<String>,
    /// The gateway session the host's messages are given to.
    gw: Arc<Shared>,
    /// Where what the gateway session sends the host goes.
    router: Arc<Router>,
    /// Taken (and sent) to end the session.
    end: Mutex<Option<oneshot::Sender<()>>>,
    /// When a request last came.
    pub(crate) last_seen: Mutex<Instant>,
    /// The gateway session's task: done once every server is reaped.
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl HttpSession {
    /// Starts a session: the gateway session, fed and read directly.
    pub(crate) fn start(id: String, config: Config) -> Arc<HttpSession> {
        let principal = config.principal.clone();
        let router = Arc::new(Router {
            session: id.clone(),
            waiting: Mutex::default(),
            outbox: Mutex::default(),
        });
        let (end, ended) = oneshot::channel::<()>();
        // Ended when told to, or when the session is dropped.
        let ended = async move {
            let _ = ended.await;
        };
        let (gw, session) = serve_direct(config, router.clone(), ended);
        let me = Arc::new(HttpSession {
            id,
            principal,
            gw,
            router,
            end: Mutex::new(Some(end)),
            last_seen: Mutex::new(Instant::now()),
            task: Mutex::new(None),
        });
        *lock(&me.task) = Some(tokio::spawn(session));
        me
    }

    /// Gives the session one message of the host's; false once it has
    /// ended.
    pub(crate) async fn receive(&self, message: Message) -> bool {
        *lock(&self.last_seen) = Instant::now();
        if lock(&self.end).is_none() {
            return false;
        }
        host::on_message(&self.gw, message).await;
        true
    }

    /// Waits for the answer to the request of this id.
    pub(crate) fn expect(&self, id: Id) -> oneshot::Receiver<Response> {
        let (tx, rx) = oneshot::channel();
        lock(&self.router.waiting).insert(id, tx);
        rx
    }

    /// Stops waiting for an answer (the POST went away).
    pub(crate) fn forget(&self, id: &Id) {
        lock(&self.router.waiting).remove(id);
    }

    /// Opens a POST's event stream for what the session sends the host
    /// while it serves the request; closed with [`HttpSession::close_stream`].
    pub(crate) fn open_stream(&self) -> (u64, mpsc::Receiver<Value>) {
        lock(&self.router.outbox).open_post()
    }

    /// Opens the session's `GET` stream; `None` while one is open.
    pub(crate) fn open_listener(&self) -> Option<(u64, mpsc::Receiver<Value>)> {
        *lock(&self.last_seen) = Instant::now();
        lock(&self.router.outbox).open_listener()
    }

    pub(crate) fn close_stream(&self, n: u64) {
        lock(&self.router.outbox).close(n);
    }

    /// Ends the session: its input closes, so every server is stopped and
    /// every request still in flight answered; its `GET` stream ends.
    pub(crate) fn end(&self) {
        if let Some(end) = lock(&self.end).take() {
            let _ = end.send(());
        }
        lock(&self.router.outbox).close_listener();
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
        !lock(&self.router.waiting).is_empty()
    }
}

/// Where what a session sends the host goes, as it is sent.
struct Router {
    /// The session's id, for the logs.
    session: String,
    /// POSTs waiting for their answer, by the request's id.
    waiting: Mutex<HashMap<Id, oneshot::Sender<Response>>>,
    /// The open event streams.
    outbox: Mutex<Outbox>,
}

impl Deliver for Router {
    fn deliver(&self, message: Message) -> Result<(), RpcError> {
        let message = match message {
            Message::Response(answer) => {
                let waiting = lock(&self.waiting).remove(&answer.id);
                if let Some(tx) = waiting {
                    let _ = tx.send(answer);
                }
                return Ok(());
            }
            other => other.to_value(),
        };
        if lock(&self.outbox).deliver(&message, &self.session) {
            return Ok(());
        }
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        tracing::debug!(target: "mcppol::gateway", session = %self.session, method, "no open stream for a message to the host: dropped");
        // A question nobody can be asked fails at once (an ask is then
        // denied with `ask_failed`), rather than waiting for ever.
        if message.get("id").is_some() {
            return Err(RpcError::new(
                codes::INTERNAL_ERROR,
                "mcppol: the HTTP host has no open stream to be asked on",
            ));
        }
        Ok(())
    }

    /// The session is over: so is its `GET` stream.
    fn close(&self) {
        lock(&self.outbox).close_listener();
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
    answer: oneshot::Receiver<Response>,
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
                Ok(a) => Some((Ok(super::http::answer_event(a)), None)),
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
