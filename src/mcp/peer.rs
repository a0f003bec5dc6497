//! One end of a JSON-RPC conversation as seen from this side, whatever
//! role each plays: the writer task that sends it lines (bounded by count
//! and bytes, optionally by how long a line may wait to be taken), the
//! requests sent it by the ids this side chose, their answers delivered
//! by whoever reads its lines ([`Peer::resolve`]), and every one still
//! waiting failed when it closes.
//!
//! The client [`Connection`](super::Connection) is one peer (the server)
//! plus the handshake and a reader that hands the server's requests to a
//! handler; the proxy holds two (the host and the server), each read by
//! the proxy's own relaying code. A request may be given up by its
//! deadline, by the caller's [`CallHandle`], or (when asked) by dropping
//! the future waiting on it: in each case the other side is told
//! (`notifications/cancelled` under the id it knows), never waited for
//! when its queue is full.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, Notify, OwnedSemaphorePermit, Semaphore};

use super::handle::CallHandle;
use super::jsonrpc::{Id, Message, Notification, Request, Response, RpcError};
use super::transport::McpError;

/// The lines queued for the writer before a sender waits.
pub(crate) const QUEUE: usize = 256;
/// The bytes queued for the writer before a sender waits (a line longer
/// than this is queued alone): 256 lines of up to 16 MiB each would be
/// 4 GiB.
pub(crate) const QUEUE_BYTES: usize = 32 << 20;

/// What the writer task does next.
enum Out {
    /// A line, and its place among the queued bytes (given back once it is
    /// written or dropped).
    Line(Vec<u8>, OwnedSemaphorePermit),
    /// Close the stream (for a child: closes its stdin).
    // Closing apart from dropping is the proxy's (feature `cli`), as are
    // the methods marked so below.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    Close,
}

type Waiter = oneshot::Sender<Result<Value, McpError>>;

#[derive(Default)]
struct State {
    pending: HashMap<i64, Waiter>,
    /// Why the side closed, once it has.
    closed: Option<McpError>,
}

/// What the writer task shares with its peer.
#[derive(Clone)]
struct Shared {
    state: Arc<Mutex<State>>,
    /// Woken when the side closes.
    gone: Arc<Notify>,
    /// The queue's bytes (`QUEUE_BYTES` permits); closed when the writer
    /// stops, so nobody waits for room in a queue no longer written.
    bytes: Arc<Semaphore>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records why the side closed (the first reason stays) and wakes
    /// whoever waits for it; the requests waiting are given back.
    fn close(&self, why: McpError) -> HashMap<i64, Waiter> {
        let pending = {
            let mut state = self.lock();
            state.closed.get_or_insert(why);
            std::mem::take(&mut state.pending)
        };
        self.gone.notify_waiters();
        pending
    }
}

/// How a request is waited for.
#[derive(Clone, Copy, Default)]
pub(crate) struct Wait<'a> {
    /// How long the answer may take, the wait for room in the queue
    /// included; past it the side is told (reason `timeout`) and the
    /// request fails with [`McpError::Timeout`].
    pub(crate) timeout: Option<Duration>,
    /// The caller's handle: cancelling it fails the request and tells the
    /// side, with the caller's reason.
    pub(crate) handle: Option<&'a CallHandle>,
    /// The future waiting for the answer dropped before it came (its task
    /// was aborted) tells the side, with this reason.
    pub(crate) cancel_on_drop: Option<&'static str>,
}

impl<'a> Wait<'a> {
    /// A request given up after `timeout`, or when `handle` is cancelled:
    /// what the client connection and the proxy's server side both send.
    pub(crate) fn within(timeout: Duration, handle: Option<&'a CallHandle>) -> Wait<'a> {
        Wait {
            timeout: Some(timeout),
            handle,
            cancel_on_drop: None,
        }
    }
}

/// Takes a peer's messages as they are sent, in order, without waiting
/// and without a writer task: an HTTP session's router, which hands an
/// answer to the POST waiting for it and anything else to an event
/// stream's bounded queue. Nothing is serialized or parsed on the way.
pub(crate) trait Deliver: Send + Sync {
    /// Takes one message. A request that nobody can be asked is refused
    /// with the error it fails with (so it never waits for ever).
    fn deliver(&self, message: Message) -> Result<(), RpcError>;
    /// Nothing more will be sent.
    fn close(&self);
}

/// Where a peer's messages go.
enum Output {
    /// The writer task's queue (a pipe, a socket): serialized lines.
    Queue(mpsc::Sender<Out>),
    /// Handed over as they are sent ([`Deliver`]); the flag: closed.
    Direct(Arc<dyn Deliver>, std::sync::atomic::AtomicBool),
}

/// One side of the conversation.
pub(crate) struct Peer {
    /// `host` or `server`, for logs and messages.
    pub(crate) side: &'static str,
    out: Output,
    shared: Shared,
    next_id: AtomicI64,
    max_pending: usize,
    writer: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Peer {
    /// A peer writing to `writer` on its own task (on the current tokio
    /// runtime), with at most `max_pending` requests waiting for answers.
    /// With a `stall`, the side must take each line within it: one that
    /// reads nothing for that long is written to no more (its stream is
    /// closed, and every later request fails at once), so a side that
    /// stopped reading cannot hold this one up for ever.
    pub(crate) fn start<W>(
        side: &'static str,
        writer: W,
        max_pending: usize,
        stall: Option<Duration>,
    ) -> Peer
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, rx) = mpsc::channel(QUEUE);
        let shared = Shared {
            state: Arc::new(Mutex::new(State::default())),
            gone: Arc::new(Notify::new()),
            bytes: Arc::new(Semaphore::new(QUEUE_BYTES)),
        };
        let task = tokio::spawn(write_loop(side, writer, rx, shared.clone(), stall));
        Peer {
            side,
            out: Output::Queue(out),
            shared,
            next_id: AtomicI64::new(1),
            max_pending,
            writer: Mutex::new(Some(task)),
        }
    }

    /// A peer whose messages are handed to `to` as they are sent (no
    /// writer task, no bytes), with at most `max_pending` requests waiting
    /// for answers. The gateway's HTTP sessions use it (feature `http`).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn direct(side: &'static str, to: Arc<dyn Deliver>, max_pending: usize) -> Peer {
        Peer {
            side,
            out: Output::Direct(to, std::sync::atomic::AtomicBool::new(false)),
            shared: Shared {
                state: Arc::new(Mutex::new(State::default())),
                gone: Arc::new(Notify::new()),
                bytes: Arc::new(Semaphore::new(QUEUE_BYTES)),
            },
            next_id: AtomicI64::new(1),
            max_pending,
            writer: Mutex::new(None),
        }
    }

    /// Hands a message to a direct peer's receiver; `false` once it is
    /// closed. A request it refuses is failed with its error.
    fn hand_over(
        &self,
        to: &dyn Deliver,
        closed: &std::sync::atomic::AtomicBool,
        message: Message,
    ) -> bool {
        if closed.load(Ordering::Acquire) {
            return false;
        }
        let id = match &message {
            Message::Request(Request {
                id: Id::Number(n), ..
            }) => Some(*n),
            _ => None,
        };
        if let Err(e) = to.deliver(message) {
            if let Some(id) = id {
                self.fail(id, McpError::Rpc(e));
            }
        }
        true
    }

    /// Closes a direct peer (once).
    fn close_direct(to: &dyn Deliver, closed: &std::sync::atomic::AtomicBool) {
        if !closed.swap(true, Ordering::AcqRel) {
            to.close();
        }
    }

    /// The permits a line of `len` bytes holds in the queue.
    fn permits(len: usize) -> u32 {
        u32::try_from(len.clamp(1, QUEUE_BYTES)).unwrap_or(u32::MAX)
    }

    /// Waits for room for `len` bytes in the queue; `None` once the writer
    /// stopped.
    async fn room(&self, len: usize) -> Option<OwnedSemaphorePermit> {
        self.shared
            .bytes
            .clone()
            .acquire_many_owned(Peer::permits(len))
            .await
            .ok()
    }

    /// Sends one line as it is (a message relayed untouched), once the
    /// queue has room for it (by count and by bytes); `false` when the
    /// writer has stopped.
    pub(crate) async fn send_line(&self, line: Vec<u8>) -> bool {
        let out = match &self.out {
            Output::Queue(out) => out,
            Output::Direct(..) => return self.line_to_direct(&line),
        };
        let Some(room) = self.room(line.len()).await else {
            return false;
        };
        out.send(Out::Line(line, room)).await.is_ok()
    }

    /// A line for a direct peer: handed over as the message it holds (a
    /// line that holds none is dropped: a direct receiver takes messages).
    fn line_to_direct(&self, line: &[u8]) -> bool {
        let Output::Direct(to, closed) = &self.out else {
            return false;
        };
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        match Message::parse(line) {
            Ok(message) => self.hand_over(to.as_ref(), closed, message),
            Err(_) => {
                tracing::debug!(target: "mcppol::mcp", side = self.side, "a line that is no message: not handed over");
                !closed.load(Ordering::Acquire)
            }
        }
    }

    /// Queues a line if there is room now, without waiting.
    pub(crate) fn try_line(&self, line: Vec<u8>) -> bool {
        let out = match &self.out {
            Output::Queue(out) => out,
            Output::Direct(..) => return self.line_to_direct(&line),
        };
        let Ok(room) = self
            .shared
            .bytes
            .clone()
            .try_acquire_many_owned(Peer::permits(line.len()))
        else {
            return false;
        };
        out.try_send(Out::Line(line, room)).is_ok()
    }

    /// Sends a message (handed over as it is to a direct peer).
    async fn send(&self, message: Message) -> bool {
        match &self.out {
            Output::Queue(_) => self.send_line(message.to_line()).await,
            Output::Direct(to, closed) => self.hand_over(to.as_ref(), closed, message),
        }
    }

    /// Answers a request of this side.
    pub(crate) async fn respond(&self, id: Id, outcome: Result<Value, RpcError>) {
        self.send(Message::Response(Response { id, outcome })).await;
    }

    /// Sends a notification; `false` when the writer has stopped.
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) -> bool {
        self.send(Message::Notification(Notification {
            method: method.to_string(),
            params,
        }))
        .await
    }

    /// Sends a notification if the queue has room now, without waiting
    /// (a courtesy such as a cancellation, never worth a hang); `false`
    /// when it was not queued.
    pub(crate) fn notify_now(&self, method: &str, params: Option<Value>) -> bool {
        let message = Message::Notification(Notification {
            method: method.to_string(),
            params,
        });
        match &self.out {
            Output::Queue(_) => self.try_line(message.to_line()),
            Output::Direct(to, closed) => self.hand_over(to.as_ref(), closed, message),
        }
    }

    /// Tells the side a request of ours is cancelled, if the queue has
    /// room now.
    fn tell_cancelled(&self, params: Value) {
        let id = params.get("requestId").cloned();
        if !self.notify_now("notifications/cancelled", Some(params)) {
            tracing::debug!(target: "mcppol::mcp", side = self.side, id = ?id, "the queue is full: the cancellation was not sent");
        }
    }

    /// Closes the stream once what was queued before is written, if the
    /// queue has room; when it is full (the side reads nothing, or not
    /// fast enough for a side that is going away), the writer stops and
    /// the stream closes at once. Never waits.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn close_now(&self) {
        match &self.out {
            Output::Queue(out) => {
                if let Err(mpsc::error::TrySendError::Full(_)) = out.try_send(Out::Close) {
                    self.stop_writer();
                }
            }
            Output::Direct(to, closed) => Peer::close_direct(to.as_ref(), closed),
        }
    }

    /// Writes what is queued, then closes the stream; waits up to `grace`
    /// in all (then stops the writer).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) async fn finish(&self, grace: Duration) {
        let out = match &self.out {
            Output::Queue(out) => out,
            Output::Direct(to, closed) => return Peer::close_direct(to.as_ref(), closed),
        };
        let mut task = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let finished = tokio::time::timeout(grace, async {
            let _ = out.send(Out::Close).await;
            if let Some(task) = &mut task {
                let _ = task.await;
            }
        })
        .await;
        if finished.is_err() {
            if let Some(task) = &task {
                task.abort();
            }
        }
    }

    /// Stops the writer task at once (dropping the stream, which closes it).
    pub(crate) fn stop_writer(&self) {
        if let Output::Direct(to, closed) = &self.out {
            Peer::close_direct(to.as_ref(), closed);
        }
        let task = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            task.abort();
        }
    }

    /// Why the side closed, or `the SIDE is gone` when it stopped without
    /// a reason.
    fn gone(&self) -> McpError {
        self.closed_now()
            .unwrap_or_else(|| McpError::Transport(format!("the {} is gone", self.side)))
    }

    /// Sends a request under a new id of this side's; the id and where its
    /// answer will arrive.
    async fn start_request(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<(i64, oneshot::Receiver<Result<Value, McpError>>), McpError> {
        // Room in the queue first (its bytes, then a place): waiting for
        // it is the only await here, and giving it up (a timeout, a
        // cancelled task) leaves nothing behind. Once there is room, the
        // request is recorded and queued with no await between, so none
        // is recorded and never sent.
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = Message::Request(Request {
            id: Id::Number(id),
            method: method.to_string(),
            params,
        });
        let out = match &self.out {
            Output::Queue(out) => out,
            Output::Direct(to, closed) => {
                if closed.load(Ordering::Acquire) {
                    return Err(self.gone());
                }
                let rx = self.wait_for(id)?;
                self.hand_over(to.as_ref(), closed, message);
                return Ok((id, rx));
            }
        };
        let line = message.to_line();
        let Some(room) = self.room(line.len()).await else {
            return Err(self.gone());
        };
        let Ok(place) = out.reserve().await else {
            return Err(self.gone());
        };
        let rx = self.wait_for(id)?;
        place.send(Out::Line(line, room));
        Ok((id, rx))
    }

    /// Records a request of this id as waiting for its answer, within
    /// `max_pending`, unless the side has closed.
    fn wait_for(&self, id: i64) -> Result<oneshot::Receiver<Result<Value, McpError>>, McpError> {
        let (tx, rx) = oneshot::channel();
        let mut state = self.shared.lock();
        if let Some(why) = &state.closed {
            return Err(why.clone());
        }
        if state.pending.len() >= self.max_pending {
            return Err(McpError::Transport(format!(
                "{} requests are already waiting for the {}, the most allowed",
                self.max_pending, self.side
            )));
        }
        state.pending.insert(id, tx);
        Ok(rx)
    }

    /// Sends a request and waits for its answer as `wait` says (with no
    /// deadline, no handle and nothing on drop, for as long as the side
    /// is open).
    pub(crate) async fn request(
        self: &Arc<Self>,
        method: &str,
        params: Option<Value>,
        wait: Wait<'_>,
    ) -> Result<Value, McpError> {
        if let Some(handle) = wait.handle {
            if handle.is_cancelled() {
                return Err(CallHandle::cancelled_error());
            }
        }
        let sent = AtomicI64::new(0);
        let answer = async {
            let (id, rx) = self.start_request(method, params).await?;
            sent.store(id, Ordering::Relaxed);
            let mut guard = Sent {
                peer: self,
                id,
                handle: wait.handle,
                cancel_on_drop: wait.cancel_on_drop,
            };
            if let Some(handle) = wait.handle {
                if let Err(params) = handle.register(self, id) {
                    // Cancelled while the request waited for room: it
                    // went out, so the side is told at once.
                    guard.cancel_on_drop = None;
                    self.tell_cancelled(params);
                    return Err(CallHandle::cancelled_error());
                }
            }
            let outcome = match rx.await {
                Ok(outcome) => outcome,
                Err(_) => Err(self.gone()),
            };
            // Answered, or the side is gone: nothing to cancel.
            guard.cancel_on_drop = None;
            outcome
        };
        let Some(timeout) = wait.timeout else {
            return answer.await;
        };
        match tokio::time::timeout(timeout, answer).await {
            Ok(outcome) => outcome,
            Err(_) => {
                // Tell the side to stop working on it (if it reached the
                // queue); it may not care.
                let id = sent.load(Ordering::Relaxed);
                if id != 0 {
                    self.tell_cancelled(json!({"requestId": id, "reason": "timeout"}));
                }
                Err(McpError::Timeout(timeout))
            }
        }
    }

    /// Stops waiting for a request (its answer, if any, is dropped).
    fn forget(&self, id: i64) {
        self.shared.lock().pending.remove(&id);
    }

    /// Fails a request still waiting with `why` (a cancellation).
    pub(crate) fn fail(&self, id: i64, why: McpError) {
        let waiter = self.shared.lock().pending.remove(&id);
        if let Some(tx) = waiter {
            let _ = tx.send(Err(why));
        }
    }

    /// Delivers an answer from this side; `false` when nothing waited for it.
    pub(crate) fn resolve(&self, id: &Id, outcome: Result<Value, RpcError>) -> bool {
        let Id::Number(n) = id else {
            return false;
        };
        let waiter = self.shared.lock().pending.remove(n);
        match waiter {
            Some(tx) => {
                let _ = tx.send(outcome.map_err(McpError::Rpc));
                true
            }
            None => false,
        }
    }

    /// This side is gone: every request waiting on it fails with `why`,
    /// and so does every later one (the first reason given stays).
    pub(crate) fn close(&self, why: McpError) {
        for (_, tx) in self.shared.close(why.clone()) {
            let _ = tx.send(Err(why.clone()));
        }
    }

    /// Why this side closed, if it has.
    pub(crate) fn closed_now(&self) -> Option<McpError> {
        self.shared.lock().closed.clone()
    }

    /// Waits until this side is closed; why.
    pub(crate) async fn closed(&self) -> McpError {
        loop {
            // Registered before the check: a close in between still wakes it.
            let woken = self.shared.gone.notified();
            if let Some(why) = self.closed_now() {
                return why;
            }
            woken.await;
        }
    }

    /// How many requests wait on this side.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.shared.lock().pending.len()
    }
}

/// Why a side closed (or a request to it failed), in words: the text a
/// transport or protocol error was given, any other error as displayed.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn why(e: McpError) -> String {
    match e {
        McpError::Transport(why) | McpError::Protocol(why) => why,
        other => other.to_string(),
    }
}

/// A request sent and not yet answered: forgotten when its waiter goes
/// away (answered, timed out, cancelled, dropped), taken off the caller's
/// handle, and, while `cancel_on_drop` is set, the side told it is
/// cancelled.
struct Sent<'a> {
    peer: &'a Arc<Peer>,
    id: i64,
    handle: Option<&'a CallHandle>,
    cancel_on_drop: Option<&'static str>,
}

impl Drop for Sent<'_> {
    fn drop(&mut self) {
        self.peer.forget(self.id);
        // A handle that no longer holds the request cancelled it, and told
        // the side itself.
        let mine = self.handle.is_none_or(|h| h.unregister(self.peer, self.id));
        if let (Some(reason), true) = (self.cancel_on_drop, mine) {
            self.peer
                .tell_cancelled(json!({"requestId": self.id, "reason": reason}));
        }
    }
}

/// Writes what is queued until told to close. When writing fails, or a
/// line is not taken within `stall`, the side is closed: the queue goes
/// (a sender waiting for room gets an error at once) and later requests
/// fail; the requests already sent wait for their answers (or deadlines).
async fn write_loop<W: AsyncWrite + Unpin>(
    side: &'static str,
    writer: W,
    rx: mpsc::Receiver<Out>,
    shared: Shared,
    stall: Option<Duration>,
) {
    write_lines(side, writer, rx, &shared, stall).await;
    shared.bytes.close();
}

async fn write_lines<W: AsyncWrite + Unpin>(
    side: &'static str,
    mut writer: W,
    mut rx: mpsc::Receiver<Out>,
    shared: &Shared,
    stall: Option<Duration>,
) {
    // Every line queued when the writer wakes is written in one batch and
    // flushed once: a pipe with several lines waiting takes them in one
    // write, not one each. A line alone is written as it is, uncopied.
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut rooms: Vec<OwnedSemaphorePermit> = Vec::new();
    let mut batch: Vec<u8> = Vec::new();
    while let Some(next) = rx.recv().await {
        let mut close = false;
        let mut bytes = 0;
        let mut next = Some(next);
        while let Some(out) = next.take() {
            match out {
                Out::Line(line, room) => {
                    bytes += line.len();
                    lines.push(line);
                    // The line's bytes are given back once it is written.
                    rooms.push(room);
                }
                Out::Close => {
                    close = true;
                    break;
                }
            }
            if bytes < BATCH_BYTES {
                next = rx.try_recv().ok();
            }
        }
        let out: &[u8] = match lines.as_slice() {
            [] => &[],
            [line] if line.last() == Some(&b'\n') => line,
            _ => {
                batch.clear();
                for line in &lines {
                    batch.extend_from_slice(line);
                    if line.last() != Some(&b'\n') {
                        batch.push(b'\n');
                    }
                }
                &batch
            }
        };
        let written = match stall {
            None => write_batch(&mut writer, out)
                .await
                .map_err(|e| failed(side, &e)),
            Some(stall) => match tokio::time::timeout(stall, write_batch(&mut writer, out)).await {
                Ok(done) => done.map_err(|e| failed(side, &e)),
                Err(_) => {
                    let why = format!(
                        "the {side} read nothing for {}",
                        humantime::format_duration(stall)
                    );
                    tracing::warn!(target: "mcppol::mcp", side, "{why}: no more is written to it");
                    Err(why)
                }
            },
        };
        lines.clear();
        rooms.clear();
        if batch.capacity() > BATCH_BYTES {
            // A long line's buffer is not kept for the session.
            batch = Vec::new();
        }
        if let Err(why) = written {
            tracing::debug!(target: "mcppol::mcp", side, error = %why, "writing failed");
            // The requests already sent keep waiting: their answers may
            // still come.
            let mut state = shared.lock();
            state.closed.get_or_insert(McpError::Transport(why));
            drop(state);
            shared.gone.notify_waiters();
            return;
        }
        if close {
            return;
        }
    }
}

/// The bytes a batch gathers before it is written (a longer line is
/// written alone).
const BATCH_BYTES: usize = 256 << 10;

/// Writes a batch of whole lines and flushes; nothing when it is empty.
async fn write_batch<W: AsyncWrite + Unpin>(w: &mut W, batch: &[u8]) -> std::io::Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    w.write_all(batch).await?;
    w.flush().await
}

fn failed(side: &str, e: &std::io::Error) -> String {
    format!("writing to the {side} failed: {e}")
}

#[cfg(test)]
#[path = "peer_tests.rs"]
mod tests;
