//! The server as the pipeline sees it: a [`Transport`] over the server
//! side of the wire. The host runs the handshake through the proxy; what
//! the server answered is recorded here for the pipeline.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::peer::{Peer, PeerError};
use crate::mcp::{BoxFuture, McpError, Notification, ServerInfo, Transport};

/// Where a governed request records the id the proxy gave the request it
/// sent the server, so a host's cancellation can name it.
pub(crate) type UpstreamSlot = Arc<Mutex<Option<i64>>>;

tokio::task_local! {
    /// The slot of the host request this task serves.
    pub(crate) static SLOT: UpstreamSlot;
    /// Where a `tools/call` served on this task keeps the server's result
    /// as it came, so the host gets it with every key the server sent
    /// (the pipeline's `ToolResult` keeps only the keys it knows).
    pub(crate) static RAW_RESULT: Arc<Mutex<Option<Value>>>;
}

/// Records `id` in the current host request's slot, if any.
pub(crate) fn note_upstream(id: i64) {
    let _ = SLOT.try_with(|slot| {
        *slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(id);
    });
}

/// The server side as a transport.
pub(crate) struct Upstream {
    pub(crate) peer: Arc<Peer>,
    info: OnceLock<ServerInfo>,
    unknown: ServerInfo,
    pub(crate) notes: broadcast::Sender<Notification>,
    timeout: Duration,
}

impl Upstream {
    /// How long the server has to answer a request the proxy sends it.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl Upstream {
    pub(crate) fn new(peer: Arc<Peer>, timeout: Duration) -> Upstream {
        Upstream {
            peer,
            info: OnceLock::new(),
            unknown: ServerInfo::default(),
            notes: broadcast::channel(256).0,
            timeout,
        }
    }

    /// Records the server's answer to `initialize`. Unlike a client of its
    /// own, the proxy refuses no protocol version: what the host and the
    /// server agreed on is theirs, and what a newer version adds passes
    /// through.
    pub(crate) fn initialized(&self, result: &Value) {
        let info = ServerInfo::from_initialize(result).unwrap_or_else(|_| ServerInfo {
            protocol_version: result
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
            info: result.get("serverInfo").cloned().unwrap_or(json!({})),
            instructions: None,
        });
        let _ = self.info.set(info);
    }
}

/// Sends the server a request in the current host request's name (its id
/// noted for the host's cancellation) and waits at most `timeout` for the
/// answer. Past it the server is told, if the request reached its queue
/// and the queue has room (never waited for: a server that reads nothing
/// would hold the answer up), and `None` is returned.
pub(crate) async fn request_within(
    peer: &Peer,
    method: &str,
    params: Option<Value>,
    timeout: Duration,
) -> Option<Result<Value, PeerError>> {
    let sent = AtomicI64::new(0);
    let answer = async {
        let (id, rx) = peer.start_request(method, params).await?;
        sent.store(id, Ordering::Relaxed);
        note_upstream(id);
        let _forget = peer.forget_on_drop(id);
        rx.await
            .unwrap_or_else(|_| Err(PeerError::Closed("the server is gone".into())))
    };
    match tokio::time::timeout(timeout, answer).await {
        Ok(outcome) => Some(outcome),
        Err(_) => {
            let id = sent.load(Ordering::Relaxed);
            if id != 0
                && !peer.notify_now(
                    "notifications/cancelled",
                    Some(json!({"requestId": id, "reason": "timeout"})),
                )
            {
                tracing::debug!(target: "mcppol::proxy", id, "the server's input is full: the cancellation was not sent");
            }
            None
        }
    }
}

fn to_mcp(e: PeerError) -> McpError {
    match e {
        PeerError::Rpc(rpc) => McpError::Rpc(rpc),
        PeerError::Closed(why) => McpError::Transport(why),
    }
}

impl Transport for Upstream {
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(async move {
            match request_within(&self.peer, method, params, self.timeout).await {
                Some(outcome) => {
                    let result = outcome.map_err(to_mcp)?;
                    if method == "tools/call" {
                        let _ = RAW_RESULT.try_with(|slot| {
                            *slot
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                                Some(result.clone());
                        });
                    }
                    Ok(result)
                }
                None => Err(McpError::Timeout(self.timeout)),
            }
        })
    }

    fn notify<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<(), McpError>> {
        Box::pin(async move {
            self.peer.notify(method, params).await;
            Ok(())
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.notes.subscribe()
    }

    fn server(&self) -> &ServerInfo {
        self.info.get().unwrap_or(&self.unknown)
    }
}
