//! Reading a remote server's answers within bounds: a JSON body no longer
//! than one message may be, and a server-sent-event stream read event by
//! event, each event no longer than one message, the whole response no
//! longer than its total. The SSE syntax itself is `sse-stream`'s.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use sse_stream::{Sse, SseByteStream};

use crate::mcp::transport::McpError;

/// How much a single read may run past a bound before it is noticed: the
/// counting happens per chunk the connection hands over, not per byte.
const CHUNK_SLACK: usize = 64 * 1024;

/// Why reading a body stopped: the connection, or a bound.
#[derive(Debug, thiserror::Error)]
pub(super) enum BodyError {
    /// The connection failed.
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    /// The body ran past a bound (the message says which).
    #[error("{0}")]
    TooLarge(String),
}

impl BodyError {
    fn into_mcp(self) -> McpError {
        match self {
            BodyError::Http(e) => McpError::Transport(format!(
                "reading the server's answer failed: {}",
                super::describe(&e)
            )),
            BodyError::TooLarge(m) => McpError::Protocol(m),
        }
    }
}

/// Reads a whole body of at most `max` bytes.
pub(crate) async fn read_bounded(
    response: reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, McpError> {
    if let Some(length) = response.content_length() {
        if length > max as u64 {
            return Err(too_large_message(max));
        }
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| BodyError::Http(e).into_mcp())?;
        if body.len() + chunk.len() > max {
            return Err(too_large_message(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn too_large_message(max: usize) -> McpError {
    McpError::Protocol(format!(
        "the server sent a message of more than {max} bytes"
    ))
}

type Chunks = Pin<Box<dyn Stream<Item = Result<Bytes, BodyError>> + Send>>;

/// A server-sent-event stream read one event at a time, within bounds.
pub(super) struct Events {
    events: SseByteStream<Chunks>,
    since_event: Arc<AtomicUsize>,
    max_event: usize,
    /// The id of the last event that carried one (for `Last-Event-ID`).
    pub(super) last_id: Option<String>,
    /// The reconnection delay the server asked for, in milliseconds.
    pub(super) retry: Option<u64>,
    /// How many messages were read.
    pub(super) delivered: usize,
}

impl Events {
    /// Reads `response`'s body as events of at most `max_event` bytes of
    /// data each, the whole body at most `max_total` bytes.
    pub(super) fn new(response: reqwest::Response, max_event: usize, max_total: usize) -> Events {
        let since_event = Arc::new(AtomicUsize::new(0));
        let counter = since_event.clone();
        let mut total = 0usize;
        // The parser buffers an event until its end: the counting before it
        // is what keeps an event that never ends from growing without bound.
        let chunks = response.bytes_stream().map(move |chunk| {
            let chunk = chunk?;
            total = total.saturating_add(chunk.len());
            let pending = counter.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len();
            if total > max_total {
                return Err(BodyError::TooLarge(format!(
                    "the server's answer ran past {max_total} bytes"
                )));
            }
            if pending > max_event.saturating_add(CHUNK_SLACK) {
                return Err(BodyError::TooLarge(format!(
                    "the server sent an event of more than {max_event} bytes"
                )));
            }
            Ok(chunk)
        });
        Events {
            events: SseByteStream::new(Box::pin(chunks) as Chunks),
            since_event,
            max_event,
            last_id: None,
            retry: None,
            delivered: 0,
        }
    }

    /// The next event's data (events with no data, such as a stream's
    /// opening event that only carries an id, are skipped); `None` at the
    /// end of the stream.
    pub(super) async fn next_data(&mut self) -> Result<Option<String>, McpError> {
        loop {
            let event: Sse = match self.events.next().await {
                None => return Ok(None),
                Some(Ok(event)) => event,
                Some(Err(e)) => return Err(sse_error(e)),
            };
            self.since_event.store(0, Ordering::Relaxed);
            if let Some(id) = event.id {
                self.last_id = Some(id);
            }
            if event.retry.is_some() {
                self.retry = event.retry;
            }
            let Some(data) = event.data else { continue };
            if data.len() > self.max_event {
                return Err(McpError::Protocol(format!(
                    "the server sent an event of more than {} bytes",
                    self.max_event
                )));
            }
            if data.trim().is_empty() {
                continue;
            }
            // Only `message` events (the default) carry JSON-RPC.
            match event.event.as_deref() {
                None | Some("message") => {
                    self.delivered += 1;
                    return Ok(Some(data));
                }
                Some(_) => continue,
            }
        }
    }
}

fn sse_error(e: sse_stream::Error) -> McpError {
    match e {
        sse_stream::Error::Body(inner) => match inner.downcast::<BodyError>() {
            Ok(body) => body.into_mcp(),
            Err(other) => {
                McpError::Transport(format!("reading the server's events failed: {other}"))
            }
        },
        other => McpError::Protocol(format!("the server's event stream is malformed: {other}")),
    }
}
