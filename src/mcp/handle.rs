//! [`CallHandle`]: what the caller of a governed request and the transport
//! that sends it share, passed down explicitly (in
//! [`CallOptions::handle`](crate::pipeline::CallOptions::handle), then to
//! [`Transport::request_with`](super::Transport::request_with)) so that it
//! reaches every task the request runs on, an around hook's included.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};
use tokio::sync::Notify;

use super::peer::Peer;
use super::transport::McpError;

/// A handle on the requests sent for one call: its holder can cancel them
/// ([`CallHandle::cancel`]): each one still waiting fails, the server is
/// told (`notifications/cancelled` with the id it knows), and none is sent
/// for the call afterwards. Clones share one state.
///
/// ```
/// use mcppol::mcp::CallHandle;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let handle = CallHandle::new();
/// // Given to the pipeline with `CallOptions::default().handle(handle.clone())`;
/// // then, from another task, when the call is no longer wanted:
/// handle.cancel(Some("the user closed the dialog")).await;
/// assert!(handle.is_cancelled());
/// # });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct CallHandle {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    state: Mutex<State>,
    /// Woken when the handle is cancelled.
    woken: Notify,
}

#[derive(Default)]
struct State {
    /// The params of the cancellation (without `requestId`), once cancelled.
    cancelled: Option<Value>,
    /// The requests sent for the call and not yet answered: where, and
    /// under which id.
    sent: Vec<(Arc<Peer>, i64)>,
    /// A result the transport kept for the caller (the proxy keeps the
    /// server's `tools/call` result as it came, every key in its place).
    // The proxy's alone (feature `cli`).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    kept: Option<Value>,
}

impl CallHandle {
    /// Whether `other` is a clone of this handle (the same call).
    // The gateway's alone (feature `cli`).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn same(&self, other: &CallHandle) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl fmt::Debug for CallHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallHandle")
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// The requests a cancellation took off a handle, still to be told.
pub(crate) struct Cancelled {
    params: Value,
    sent: Vec<(Arc<Peer>, i64)>,
}

impl Cancelled {
    /// Tells each side the requests sent it are cancelled, under the id
    /// it knows (the params as given, `requestId` set), waiting for room
    /// in its queue.
    pub(crate) async fn tell(self) {
        for (peer, id) in self.sent {
            let mut params = self.params.clone();
            params["requestId"] = Value::from(id);
            peer.notify("notifications/cancelled", Some(params)).await;
        }
    }
}

impl CallHandle {
    /// A handle not cancelled.
    pub fn new() -> CallHandle {
        CallHandle::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the handle was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.lock().cancelled.is_some()
    }

    /// Cancels the call: every request sent for it and still waiting fails
    /// (`McpError::Transport`), the server is told with `reason` (as soon
    /// as its queue has room), and a request made for the call afterwards
    /// fails without being sent.
    pub async fn cancel(&self, reason: Option<&str>) {
        let params = match reason {
            Some(reason) => json!({ "reason": reason }),
            None => json!({}),
        };
        self.cancel_requests(params).tell().await;
    }

    /// Cancels the call at once, as [`CallHandle::cancel`], with `params`
    /// the cancellation's params as the caller sent them (`requestId` is
    /// set for each request; an object is expected): the requests are
    /// failed and taken now, before any await, so the task serving the
    /// call may be aborted next without losing one; they are told by
    /// [`Cancelled::tell`].
    pub(crate) fn cancel_requests(&self, params: Value) -> Cancelled {
        let params = if params.is_object() {
            params
        } else {
            json!({})
        };
        let sent = {
            let mut state = self.lock();
            state.cancelled.get_or_insert_with(|| params.clone());
            std::mem::take(&mut state.sent)
        };
        self.inner.woken.notify_waiters();
        for (peer, id) in &sent {
            peer.fail(*id, CallHandle::cancelled_error());
        }
        Cancelled { params, sent }
    }

    /// Waits until the handle is cancelled.
    pub async fn cancelled(&self) {
        loop {
            // Registered before the check: a cancellation in between still wakes it.
            let woken = self.inner.woken.notified();
            if self.is_cancelled() {
                return;
            }
            woken.await;
        }
    }

    /// The params of the cancellation (without `requestId`), once cancelled:
    /// what a transport that does not register its requests tells its
    /// server with.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn cancellation(&self) -> Option<Value> {
        self.lock().cancelled.clone()
    }

    /// The error of a request the handle cancelled.
    pub(crate) fn cancelled_error() -> McpError {
        McpError::Transport("the request was cancelled".into())
    }

    /// Records a request sent for the call; when the handle is already
    /// cancelled, the params to tell the side with instead (`requestId`
    /// set).
    pub(crate) fn register(&self, peer: &Arc<Peer>, id: i64) -> Result<(), Value> {
        let mut state = self.lock();
        if let Some(params) = &state.cancelled {
            let mut params = params.clone();
            params["requestId"] = Value::from(id);
            return Err(params);
        }
        state.sent.push((peer.clone(), id));
        Ok(())
    }

    /// Takes a request off the handle (answered or given up); `false` when
    /// a cancellation took it first.
    pub(crate) fn unregister(&self, peer: &Arc<Peer>, id: i64) -> bool {
        let mut state = self.lock();
        let found = state
            .sent
            .iter()
            .position(|(p, i)| *i == id && Arc::ptr_eq(p, peer));
        match found {
            Some(at) => {
                state.sent.swap_remove(at);
                true
            }
            None => false,
        }
    }

    /// Keeps a result for the caller (the last one kept stays).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn keep(&self, result: Value) {
        self.lock().kept = Some(result);
    }

    /// The result kept, taken.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn take_kept(&self) -> Option<Value> {
        self.lock().kept.take()
    }
}

#[cfg(all(test, feature = "test-util"))]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::mcp::{FakeServer, MemoryTransport, Transport};

    /// A transport of the caller's own gets the default `request_with`:
    /// a cancelled handle stops the wait, and sends nothing afterwards.
    #[tokio::test(start_paused = true)]
    async fn any_transport_stops_waiting_once_the_handle_is_cancelled() {
        let server = FakeServer::new().tool_async(json!({"name": "slow"}), |_| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(json!({}))
        });
        let transport = Arc::new(MemoryTransport::new(server));
        let handle = CallHandle::new();
        let call = tokio::spawn({
            let (transport, handle) = (transport.clone(), handle.clone());
            async move {
                let params = json!({"name": "slow", "arguments": {}});
                transport
                    .request_with("tools/call", Some(params), &handle)
                    .await
            }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        handle.cancel(Some("not wanted")).await;
        let outcome = tokio::time::timeout(Duration::from_secs(5), call).await;
        assert_eq!(
            outcome.unwrap().unwrap(),
            Err(CallHandle::cancelled_error())
        );
        let again = transport.request_with("tools/list", None, &handle).await;
        assert_eq!(again, Err(CallHandle::cancelled_error()));
        assert_eq!(transport.fake().requests().len(), 1);
    }
}
