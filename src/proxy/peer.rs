//! One side of the proxy's wire (the host or the server): a writer task
//! fed by a channel, and the requests the proxy sent that side, by the id
//! the proxy gave them. The proxy numbers its own requests on each side,
//! so its ids never meet the ids the other side chose (id remapping).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWrite;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};

use crate::mcp::framing::write_line;
use crate::mcp::jsonrpc::{Id, Message, Notification, Request, Response};
use crate::mcp::RpcError;

/// Why a request the proxy sent got no result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PeerError {
    /// The other side answered with an error.
    Rpc(RpcError),
    /// The other side is gone (or was never there), or too much is pending.
    Closed(String),
}

/// The lines queued for one side's writer before a sender waits.
const QUEUE: usize = 256;
/// The bytes queued for one side's writer before a sender waits (a line
/// longer than this is queued alone): 256 lines of up to `--max-line-bytes`
/// (16 MiB) each would be 4 GiB.
pub(crate) const QUEUE_BYTES: usize = 32 << 20;

/// What the writer task does next.
pub(crate) enum Out {
    /// A line, and its place among the queued bytes (given back once it is
    /// written or dropped).
    Line(Vec<u8>, OwnedSemaphorePermit),
    /// Close the stream (for the server: closes its stdin).
    Close,
}

type Waiter = oneshot::Sender<Result<Value, PeerError>>;

#[derive(Default)]
struct State {
    pending: HashMap<i64, Waiter>,
    closed: Option<String>,
}

/// One side of the wire.
pub(crate) struct Peer {
    /// `host` or `server`, for logs and messages.
    pub(crate) side: &'static str,
    out: mpsc::Sender<Out>,
    /// The queue's bytes (`QUEUE_BYTES` permits); closed when the writer
    /// stops.
    bytes: Arc<Semaphore>,
    /// Shared with the writer task, which closes it when this side stops
    /// taking what is written.
    state: Arc<Mutex<State>>,
    /// Woken when the side closes (also shared with the writer task).
    gone: Arc<tokio::sync::Notify>,
    next_id: AtomicI64,
    max_pending: usize,
    writer: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Peer {
    /// A peer writing to `writer` on its own task.
    pub(crate) fn start<W>(side: &'static str, writer: W, max_pending: usize) -> Peer
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Peer::start_with_stall(side, writer, max_pending, None)
    }

    /// A peer whose side must take each line within `stall`: one that
    /// reads nothing for that long is written to no more (its stream is
    /// closed, and every later request fails at once), so a side that
    /// stopped reading cannot hold up the proxy for ever.
    pub(crate) fn start_with_stall<W>(
        side: &'static str,
        writer: W,
        max_pending: usize,
        stall: Option<Duration>,
    ) -> Peer
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, rx) = mpsc::channel(QUEUE);
        let bytes = Arc::new(Semaphore::new(QUEUE_BYTES));
        let state = Arc::new(Mutex::new(State::default()));
        let gone = Arc::new(tokio::sync::Notify::new());
        let task = tokio::spawn(write_loop(
            side,
            writer,
            rx,
            Writer {
                state: state.clone(),
                gone: gone.clone(),
                bytes: bytes.clone(),
            },
            stall,
        ));
        Peer {
            side,
            out,
            bytes,
            state,
            gone,
            next_id: AtomicI64::new(1),
            max_pending,
            writer: Mutex::new(Some(task)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The permits a line of `len` bytes holds in the queue.
    fn permits(len: usize) -> u32 {
        u32::try_from(len.clamp(1, QUEUE_BYTES)).unwrap_or(u32::MAX)
    }

    /// Waits for room for `len` bytes in the queue; `None` once the writer
    /// stopped.
    async fn room(&self, len: usize) -> Option<OwnedSemaphorePermit> {
        self.bytes
            .clone()
            .acquire_many_owned(Peer::permits(len))
            .await
            .ok()
    }

    /// Sends one line as it is (a message relayed untouched), once the
    /// queue has room for it (by count and by bytes).
    pub(crate) async fn send_line(&self, line: Vec<u8>) {
        let Some(room) = self.room(line.len()).await else {
            return;
        };
        let _ = self.out.send(Out::Line(line, room)).await;
    }

    /// Queues a line if there is room now, without waiting.
    fn try_line(&self, line: Vec<u8>) -> bool {
        let Ok(room) = self
            .bytes
            .clone()
            .try_acquire_many_owned(Peer::permits(line.len()))
        else {
            return false;
        };
        self.out.try_send(Out::Line(line, room)).is_ok()
    }

    /// Sends a message.
    pub(crate) async fn send(&self, message: &Message) {
        self.send_line(message.to_line()).await;
    }

    /// Answers a request of this side.
    pub(crate) async fn respond(&self, id: Id, outcome: Result<Value, RpcError>) {
        self.send(&Message::Response(Response { id, outcome }))
            .await;
    }

    /// Sends a notification.
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) {
        self.send(&Message::Notification(Notification {
            method: method.to_string(),
            params,
        }))
        .await;
    }

    /// Sends a notification if the queue has room now, without waiting
    /// (a courtesy such as a cancellation, never worth a hang); `false`
    /// when it was not queued.
    pub(crate) fn notify_now(&self, method: &str, params: Option<Value>) -> bool {
        let line = Message::Notification(Notification {
            method: method.to_string(),
            params,
        })
        .to_line();
        self.try_line(line)
    }

    /// Closes the stream once what was queued before is written, if the
    /// queue has room; when it is full (the side reads nothing, or not
    /// fast enough for a side that is going away), the writer stops and
    /// the stream closes at once. Never waits.
    pub(crate) fn close_now(&self) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.out.try_send(Out::Close) {
            self.stop_writer();
        }
    }

    /// Writes what is queued, then closes the stream; waits up to `grace`
    /// in all (then stops the writer).
    pub(crate) async fn finish(&self, grace: Duration) {
        let mut task = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let finished = tokio::time::timeout(grace, async {
            let _ = self.out.send(Out::Close).await;
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
    fn stop_writer(&self) {
        let task = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            task.abort();
        }
    }

    /// Sends a request under a new id of the proxy's; the id and where its
    /// answer will arrive.
    pub(crate) async fn start_request(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<(i64, oneshot::Receiver<Result<Value, PeerError>>), PeerError> {
        // Room in the queue first (its bytes, then a place): waiting for
        // it is the only await here, and giving it up (a timeout, a
        // cancelled task) leaves nothing behind. Once there is room, the
        // request is recorded and queued with no await between, so none
        // is recorded and never sent.
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let line = Message::Request(Request {
            id: Id::Number(id),
            method: method.to_string(),
            params,
        })
        .to_line();
        let gone = || {
            let why = self.lock().closed.clone();
            PeerError::Closed(why.unwrap_or_else(|| format!("the {} is gone", self.side)))
        };
        let Some(room) = self.room(line.len()).await else {
            return Err(gone());
        };
        let permit = match self.out.reserve().await {
            Ok(permit) => permit,
            Err(_) => return Err(gone()),
        };
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.lock();
            if let Some(why) = &state.closed {
                return Err(PeerError::Closed(why.clone()));
            }
            if state.pending.len() >= self.max_pending {
                return Err(PeerError::Closed(format!(
                    "more than {} requests are waiting for the {}",
                    self.max_pending, self.side
                )));
            }
            state.pending.insert(id, tx);
        }
        permit.send(Out::Line(line, room));
        Ok((id, rx))
    }

    /// Sends a request and waits for its answer (no deadline: the caller
    /// sets one when it wants one).
    #[cfg(test)]
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, PeerError> {
        let (id, rx) = self.start_request(method, params).await?;
        let _forget = Forget { peer: self, id };
        match rx.await {
            Ok(outcome) => outcome,
            Err(_) => Err(PeerError::Closed(format!("the {} is gone", self.side))),
        }
    }

    /// Sends a request and waits for its answer, like [`Peer::request`];
    /// given up before its answer (the task waiting on it was cancelled or
    /// timed out), the side is told so: `notifications/cancelled` with the
    /// request's id and `reason`, so a dialog the request opened there is
    /// closed, not left for a person to answer in vain.
    pub(crate) async fn request_or_cancel(
        &self,
        method: &str,
        params: Option<Value>,
        reason: &'static str,
    ) -> Result<Value, PeerError> {
        let (id, rx) = self.start_request(method, params).await?;
        let mut guard = CancelOnDrop {
            peer: self,
            id,
            reason,
            armed: true,
        };
        let outcome = match rx.await {
            Ok(outcome) => outcome,
            Err(_) => Err(PeerError::Closed(format!("the {} is gone", self.side))),
        };
        // Answered, or the side is gone: nothing to cancel.
        guard.armed = false;
        outcome
    }

    /// Stops waiting for a request (its answer, if any, is dropped).
    pub(crate) fn forget(&self, id: i64) {
        self.lock().pending.remove(&id);
    }

    /// Delivers an answer from this side; `false` when nothing waited for it.
    pub(crate) fn resolve(&self, id: &Id, outcome: Result<Value, RpcError>) -> bool {
        let Id::Number(n) = id else {
            return false;
        };
        let waiter = self.lock().pending.remove(n);
        match waiter {
            Some(tx) => {
                let _ = tx.send(outcome.map_err(PeerError::Rpc));
                true
            }
            None => false,
        }
    }

    /// This side is gone: every request waiting on it fails, and so does
    /// every later one.
    pub(crate) fn close(&self, why: &str) {
        let pending = {
            let mut state = self.lock();
            state.closed.get_or_insert_with(|| why.to_string());
            std::mem::take(&mut state.pending)
        };
        self.gone.notify_waiters();
        for (_, tx) in pending {
            let _ = tx.send(Err(PeerError::Closed(why.to_string())));
        }
    }

    /// Waits until this side is closed; why.
    pub(crate) async fn closed(&self) -> String {
        loop {
            // Registered before the check: a close in between still wakes it.
            let woken = self.gone.notified();
            if let Some(why) = self.lock().closed.clone() {
                return why;
            }
            woken.await;
        }
    }

    /// How many of the proxy's requests wait on this side.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.lock().pending.len()
    }
}

/// Removes a request from the pending map when its waiter goes away
/// (answered, timed out or cancelled).
pub(crate) struct Forget<'a> {
    peer: &'a Peer,
    id: i64,
}

impl Peer {
    /// A guard that forgets request `id` when dropped.
    pub(crate) fn forget_on_drop(&self, id: i64) -> Forget<'_> {
        Forget { peer: self, id }
    }
}

/// Forgets a request when dropped and, while armed (no answer came),
/// tells the side it is cancelled (when its queue has room: a courtesy
/// never waited for).
struct CancelOnDrop<'a> {
    peer: &'a Peer,
    id: i64,
    reason: &'static str,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        self.peer.forget(self.id);
        if self.armed
            && !self.peer.notify_now(
                "notifications/cancelled",
                Some(serde_json::json!({"requestId": self.id, "reason": self.reason})),
            )
        {
            tracing::debug!(target: "mcppol::proxy", side = self.peer.side, id = self.id, "the queue is full: the cancellation was not sent");
        }
    }
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.peer.forget(self.id);
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
    shared: Writer,
    stall: Option<Duration>,
) {
    write_lines(side, writer, rx, &shared, stall).await;
    // Nobody waits for room in a queue no longer written.
    shared.bytes.close();
}

/// What the writer task shares with its peer.
struct Writer {
    state: Arc<Mutex<State>>,
    gone: Arc<tokio::sync::Notify>,
    bytes: Arc<Semaphore>,
}

async fn write_lines<W: AsyncWrite + Unpin>(
    side: &'static str,
    mut writer: W,
    mut rx: mpsc::Receiver<Out>,
    shared: &Writer,
    stall: Option<Duration>,
) {
    while let Some(next) = rx.recv().await {
        // The line's bytes are given back once it is written.
        let (line, _room) = match next {
            Out::Line(line, room) => (line, room),
            Out::Close => return,
        };
        let written = match stall {
            None => write_line(&mut writer, &line)
                .await
                .map_err(|e| failed(side, &e)),
            Some(stall) => {
                match tokio::time::timeout(stall, write_line(&mut writer, &line)).await {
                    Ok(done) => done.map_err(|e| failed(side, &e)),
                    Err(_) => {
                        let why = format!(
                            "the {side} read nothing for {}",
                            humantime::format_duration(stall)
                        );
                        tracing::warn!(target: "mcppol::proxy", side, "{why}: no more is written to it");
                        Err(why)
                    }
                }
            }
        };
        if let Err(why) = written {
            tracing::debug!(target: "mcppol::proxy", side, error = %why, "writing failed");
            let mut state = shared
                .state
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            state.closed.get_or_insert(why);
            drop(state);
            shared.gone.notify_waiters();
            return;
        }
    }
}

fn failed(side: &str, e: &std::io::Error) -> String {
    format!("writing to the {side} failed: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::AsyncBufReadExt;

    #[tokio::test]
    async fn numbers_requests_resolves_and_fails_them_on_close() {
        let (w, r) = tokio::io::duplex(4096);
        let peer = std::sync::Arc::new(Peer::start("server", w, 2));
        let (id1, rx1) = peer.start_request("ping", None).await.unwrap();
        let (id2, rx2) = peer.start_request("tools/list", None).await.unwrap();
        assert_eq!((id1, id2), (1, 2));
        // The bound on pending requests.
        assert!(matches!(
            peer.start_request("x", None).await,
            Err(PeerError::Closed(m)) if m.contains("more than 2")
        ));
        let mut lines = tokio::io::BufReader::new(r).lines();
        let first: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(first, json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        assert!(peer.resolve(&Id::Number(1), Ok(json!({}))));
        assert!(!peer.resolve(&Id::Number(1), Ok(json!({}))));
        assert!(!peer.resolve(&Id::String("1".into()), Ok(json!({}))));
        assert_eq!(rx1.await.unwrap(), Ok(json!({})));
        peer.close("the server exited");
        assert_eq!(
            rx2.await.unwrap(),
            Err(PeerError::Closed("the server exited".into()))
        );
        assert_eq!(peer.pending(), 0);
        assert!(matches!(
            peer.request("ping", None).await,
            Err(PeerError::Closed(_))
        ));
        // Closed already: `closed` answers at once.
        assert_eq!(peer.closed().await, "the server exited");
    }

    #[tokio::test]
    async fn closed_wakes_when_the_side_closes() {
        let (w, _r) = tokio::io::duplex(64);
        let peer = std::sync::Arc::new(Peer::start("host", w, 4));
        let waiting = tokio::spawn({
            let peer = peer.clone();
            async move { peer.closed().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished());
        peer.close("the host closed its input");
        let why = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(why, "the host closed its input");
    }

    /// Fills the queue of a peer whose side reads nothing (a 64-byte pipe).
    fn full_peer(stall: Option<Duration>) -> (Peer, tokio::io::DuplexStream) {
        let (w, r) = tokio::io::duplex(64);
        let peer = Peer::start_with_stall("server", w, 10_000, stall);
        (peer, r)
    }

    async fn fill(peer: &Peer) {
        let mut queued = 0;
        // Twice: the writer takes a line off the queue and blocks on it.
        for _ in 0..2 {
            while peer.notify_now(
                "notifications/message",
                Some(json!({"pad": "x".repeat(100)})),
            ) {
                queued += 1;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(queued > QUEUE, "{queued}");
        assert!(!peer.notify_now("notifications/message", None));
    }

    #[tokio::test]
    async fn a_request_given_up_while_the_queue_is_full_is_not_left_pending() {
        let (peer, _r) = full_peer(None);
        fill(&peer).await;
        let gave_up =
            tokio::time::timeout(Duration::from_millis(50), peer.start_request("ping", None)).await;
        assert!(gave_up.is_err());
        // Nothing recorded that was never sent (it would hold a place of
        // `max_pending` until the side closed).
        assert_eq!(peer.pending(), 0);
    }

    #[tokio::test]
    async fn closing_a_side_that_reads_nothing_is_bounded() {
        let (peer, mut r) = full_peer(None);
        fill(&peer).await;
        peer.close_now();
        // The writer stopped: the stream ends once what it holds is read.
        let mut sink = Vec::new();
        let read = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::io::AsyncReadExt::read_to_end(&mut r, &mut sink),
        )
        .await;
        assert!(matches!(read, Ok(Ok(_))), "{read:?}");
        let (peer, _r) = full_peer(None);
        fill(&peer).await;
        let started = std::time::Instant::now();
        peer.finish(Duration::from_millis(50)).await;
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn a_side_that_takes_nothing_within_the_stall_is_closed() {
        let (peer, _r) = full_peer(Some(Duration::from_millis(50)));
        let (_, rx) = peer
            .start_request("tools/call", Some(json!({"pad": "x".repeat(1000)})))
            .await
            .unwrap();
        // The line does not fit and is not read: after the stall the side
        // is closed, and a request fails at once, saying why.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let next = tokio::time::timeout(Duration::from_secs(5), peer.start_request("ping", None))
            .await
            .unwrap();
        assert!(
            matches!(&next, Err(PeerError::Closed(m)) if m == "the server read nothing for 50ms"),
            "{next:?}"
        );
        assert!(!peer.notify_now("notifications/message", None));
        // The request already sent waits for its answer or its deadline.
        assert_eq!(peer.pending(), 1);
        drop(rx);
    }
}
