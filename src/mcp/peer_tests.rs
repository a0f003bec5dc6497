//! The peer's unit tests: ids, bounds, closing, the stall bound, and
//! each way a request is given up.

use super::*;
use serde_json::json;
use std::sync::Arc;
use tokio::io::AsyncBufReadExt;

#[tokio::test]
async fn numbers_requests_resolves_and_fails_them_on_close() {
    let (w, r) = tokio::io::duplex(4096);
    let peer = Arc::new(Peer::start("server", w, 2, None));
    let (id1, rx1) = peer.start_request("ping", None).await.unwrap();
    let (id2, rx2) = peer.start_request("tools/list", None).await.unwrap();
    assert_eq!((id1, id2), (1, 2));
    // The bound on pending requests.
    assert!(matches!(
        peer.start_request("x", None).await,
        Err(McpError::Transport(m)) if m.contains("2 requests are already waiting for the server")
    ));
    let mut lines = tokio::io::BufReader::new(r).lines();
    let first: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(first, json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    assert!(peer.resolve(&Id::Number(1), Ok(json!({}))));
    assert!(!peer.resolve(&Id::Number(1), Ok(json!({}))));
    assert!(!peer.resolve(&Id::String("1".into()), Ok(json!({}))));
    assert_eq!(rx1.await.unwrap(), Ok(json!({})));
    peer.close(McpError::Transport("the server exited".into()));
    assert_eq!(
        rx2.await.unwrap(),
        Err(McpError::Transport("the server exited".into()))
    );
    assert_eq!(peer.pending(), 0);
    assert!(matches!(
        peer.request("ping", None, Wait::default()).await,
        Err(McpError::Transport(_))
    ));
    // Closed already: `closed` answers at once.
    assert_eq!(
        peer.closed().await,
        McpError::Transport("the server exited".into())
    );
}

#[tokio::test]
async fn closed_wakes_when_the_side_closes() {
    let (w, _r) = tokio::io::duplex(64);
    let peer = Arc::new(Peer::start("host", w, 4, None));
    let waiting = tokio::spawn({
        let peer = peer.clone();
        async move { peer.closed().await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!waiting.is_finished());
    peer.close(McpError::Transport("the host closed its input".into()));
    let why = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(why, McpError::Transport("the host closed its input".into()));
}

/// Fills the queue of a peer whose side reads nothing (a 64-byte pipe).
fn full_peer(stall: Option<Duration>) -> (Peer, tokio::io::DuplexStream) {
    let (w, r) = tokio::io::duplex(64);
    let peer = Peer::start("server", w, 10_000, stall);
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
        matches!(&next, Err(McpError::Transport(m)) if m == "the server read nothing for 50ms"),
        "{next:?}"
    );
    assert!(!peer.notify_now("notifications/message", None));
    // The request already sent waits for its answer or its deadline.
    assert_eq!(peer.pending(), 1);
    drop(rx);
}

/// The next line the side got, as JSON.
async fn next_line(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::io::DuplexStream>>,
) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    serde_json::from_str(&line).unwrap()
}

#[tokio::test]
async fn a_cancelled_handle_fails_its_requests_and_tells_the_side_once() {
    let (w, r) = tokio::io::duplex(4096);
    let peer = Arc::new(Peer::start("server", w, 8, None));
    let mut lines = tokio::io::BufReader::new(r).lines();
    let handle = CallHandle::new();
    let waiting = tokio::spawn({
        let (peer, handle) = (peer.clone(), handle.clone());
        async move {
            let wait = Wait {
                handle: Some(&handle),
                ..Wait::default()
            };
            peer.request("tools/call", None, wait).await
        }
    });
    assert_eq!(next_line(&mut lines).await["id"], 1);
    handle
        .cancel_requests(json!({"requestId": "h-7", "reason": "bored", "x": 1}))
        .tell()
        .await;
    assert_eq!(waiting.await.unwrap(), Err(CallHandle::cancelled_error()));
    // The host's params, under the id the side knows, each key in its place.
    assert_eq!(
        next_line(&mut lines).await,
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": 1, "reason": "bored", "x": 1}})
    );
    // Nothing is sent for the call afterwards.
    let wait = Wait {
        handle: Some(&handle),
        ..Wait::default()
    };
    assert_eq!(
        peer.request("tools/call", None, wait).await,
        Err(CallHandle::cancelled_error())
    );
    assert_eq!(peer.pending(), 0);
    peer.notify("notifications/message", None).await;
    assert_eq!(
        next_line(&mut lines).await["method"],
        "notifications/message"
    );
}

#[tokio::test(start_paused = true)]
async fn a_request_past_its_deadline_is_cancelled_with_reason_timeout() {
    let (w, r) = tokio::io::duplex(4096);
    let peer = Arc::new(Peer::start("server", w, 8, None));
    let mut lines = tokio::io::BufReader::new(r).lines();
    let wait = Wait {
        timeout: Some(Duration::from_millis(500)),
        ..Wait::default()
    };
    assert_eq!(
        peer.request("tools/call", None, wait).await,
        Err(McpError::Timeout(Duration::from_millis(500)))
    );
    assert_eq!(peer.pending(), 0);
    assert_eq!(next_line(&mut lines).await["id"], 1);
    assert_eq!(
        next_line(&mut lines).await["params"],
        json!({"requestId": 1, "reason": "timeout"})
    );
}

#[tokio::test]
async fn a_request_dropped_before_its_answer_tells_the_side_only_when_asked() {
    let (w, r) = tokio::io::duplex(4096);
    let peer = Arc::new(Peer::start("host", w, 8, None));
    let mut lines = tokio::io::BufReader::new(r).lines();
    for (reason, id) in [(None, 1), (Some("given up"), 2)] {
        let wait = Wait {
            cancel_on_drop: reason,
            ..Wait::default()
        };
        let gave_up =
            tokio::time::timeout(Duration::from_millis(50), peer.request("x", None, wait)).await;
        assert!(gave_up.is_err());
        assert_eq!(next_line(&mut lines).await["id"], id);
        assert_eq!(peer.pending(), 0);
    }
    // Only the second was told (the first's drop sent nothing).
    assert_eq!(
        next_line(&mut lines).await["params"],
        json!({"requestId": 2, "reason": "given up"})
    );
    // An answered request tells nothing when dropped.
    let answered = tokio::spawn({
        let peer = peer.clone();
        async move {
            let wait = Wait {
                cancel_on_drop: Some("given up"),
                ..Wait::default()
            };
            peer.request("y", None, wait).await
        }
    });
    assert_eq!(next_line(&mut lines).await["id"], 3);
    assert!(peer.resolve(&Id::Number(3), Ok(json!({"ok": true}))));
    assert_eq!(answered.await.unwrap(), Ok(json!({"ok": true})));
    peer.notify("notifications/message", None).await;
    assert_eq!(
        next_line(&mut lines).await["method"],
        "notifications/message"
    );
}

/// A direct peer's receiver: what it was handed, and whether it refuses
/// requests (as an HTTP session with no stream open does).
#[derive(Default)]
struct Taken {
    messages: Mutex<Vec<Message>>,
    refuse: std::sync::atomic::AtomicBool,
    closed: std::sync::atomic::AtomicBool,
}

impl Deliver for Taken {
    fn deliver(&self, message: Message) -> Result<(), RpcError> {
        let refused = self.refuse.load(Ordering::Relaxed) && matches!(message, Message::Request(_));
        self.messages.lock().unwrap().push(message);
        if refused {
            return Err(RpcError::new(-32603, "nobody to ask"));
        }
        Ok(())
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
    }
}

#[tokio::test]
async fn a_direct_peer_hands_over_each_message_in_order_and_fails_a_refused_request() {
    let taken = Arc::new(Taken::default());
    let peer = Arc::new(Peer::direct("host", taken.clone(), 4));
    peer.notify("notifications/progress", Some(json!({"progress": 1})))
        .await;
    peer.respond(Id::Number(7), Ok(json!({"ok": true}))).await;
    let asking = tokio::spawn({
        let peer = peer.clone();
        async move {
            peer.request("elicitation/create", None, Wait::default())
                .await
        }
    });
    while taken.messages.lock().unwrap().len() < 3 {
        tokio::task::yield_now().await;
    }
    let lines: Vec<Vec<u8>> = taken
        .messages
        .lock()
        .unwrap()
        .iter()
        .map(Message::to_line)
        .collect();
    assert_eq!(
        lines,
        [
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n".to_vec(),
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\n".to_vec(),
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"elicitation/create\"}\n".to_vec(),
        ]
    );
    // Its answer comes back through `resolve`, as a read one does.
    assert!(peer.resolve(&Id::Number(1), Ok(json!({"action": "accept"}))));
    assert_eq!(asking.await.unwrap(), Ok(json!({"action": "accept"})));
    // A request the receiver refuses fails at once with its error.
    taken.refuse.store(true, Ordering::Relaxed);
    assert_eq!(
        peer.request("roots/list", None, Wait::default()).await,
        Err(McpError::Rpc(RpcError::new(-32603, "nobody to ask")))
    );
    assert_eq!(peer.pending(), 0);
    // Closed: nothing more is handed over, and the receiver is told once.
    peer.finish(Duration::from_secs(1)).await;
    assert!(taken.closed.load(Ordering::Relaxed));
    assert!(!peer.notify("notifications/message", None).await);
    assert!(matches!(
        peer.request("ping", None, Wait::default()).await,
        Err(McpError::Transport(_))
    ));
    assert_eq!(taken.messages.lock().unwrap().len(), 4);
}
