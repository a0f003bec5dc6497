//! One side of the proxy's wire (the host or the server): a writer task
//! fed by a channel, and the requests the proxy sent that side, by the id
//! the proxy gave them. The proxy numbers its own requests on each side,
//! so its ids never meet the ids the other side chose (id remapping).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;
use tokio::io::AsyncWrite;
use tokio::sync::{mpsc, oneshot};

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

/// What the writer task does next.
pub(crate) enum Out {
    Line(Vec<u8>),
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
    state: Mutex<State>,
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
        let (out, rx) = mpsc::channel(256);
        let task = tokio::spawn(write_loop(side, writer, rx));
        Peer {
            side,
            out,
            state: Mutex::new(State::default()),
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

    /// Sends one line as it is (a message relayed untouched).
    pub(crate) async fn send_line(&self, line: Vec<u8>) {
        let _ = self.out.send(Out::Line(line)).await;
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

    /// Closes the stream once what was queued before is written.
    pub(crate) async fn close_stream(&self) {
        let _ = self.out.send(Out::Close).await;
    }

    /// Writes what is queued, then closes the stream; waits up to `grace`.
    pub(crate) async fn finish(&self, grace: std::time::Duration) {
        self.close_stream().await;
        let task = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            let _ = tokio::time::timeout(grace, task).await;
        }
    }

    /// Sends a request under a new id of the proxy's; the id and where its
    /// answer will arrive.
    pub(crate) async fn start_request(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<(i64, oneshot::Receiver<Result<Value, PeerError>>), PeerError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
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
        self.send(&Message::Request(Request {
            id: Id::Number(id),
            method: method.to_string(),
            params,
        }))
        .await;
        Ok((id, rx))
    }

    /// Sends a request and waits for its answer (no deadline: the caller
    /// sets one when it wants one).
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
        for (_, tx) in pending {
            let _ = tx.send(Err(PeerError::Closed(why.to_string())));
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

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.peer.forget(self.id);
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    side: &'static str,
    mut writer: W,
    mut rx: mpsc::Receiver<Out>,
) {
    while let Some(next) = rx.recv().await {
        match next {
            Out::Line(line) => {
                if let Err(e) = write_line(&mut writer, &line).await {
                    tracing::debug!(target: "mcppol::proxy", side, error = %e, "writing failed");
                    return;
                }
            }
            Out::Close => return,
        }
    }
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
    }
}
