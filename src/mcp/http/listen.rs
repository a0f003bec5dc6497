//! The server's own event stream (a GET on the endpoint): where a remote
//! server sends `list_changed` and its other notifications, and its
//! requests, outside any request of the client's. Opened once connected,
//! where the server offers it (405 says it does not); reconnected with
//! backoff when it ends or fails, `Last-Event-ID` resuming it, and given
//! up after [`MAX_FAILURES`] failures in a row.

use std::sync::{Arc, Weak};
use std::time::Duration;

use reqwest::{Method, StatusCode};

use super::body::Events;
use super::session::{check_status, content_type, Shared};
use crate::mcp::transport::McpError;

/// Failures in a row (a stream that could not be opened, or ended with
/// nothing on it) before the client stops asking.
pub(super) const MAX_FAILURES: u32 = 10;
/// The first wait before reconnecting; it doubles with each failure.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait before reconnecting.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How one GET went.
enum Stream {
    /// The server does not offer a stream (405), or answers it with
    /// something that is not one.
    NotOffered,
    /// The stream ended; whether anything came on it.
    Ended { delivered: bool },
}

/// Keeps the server's stream open while the transport lives (it holds
/// only a weak reference, and the transport aborts it on drop).
pub(super) async fn listen(shared: Weak<Shared>) {
    let mut failures = 0u32;
    let mut last_id: Option<String> = None;
    let mut retry: Option<u64> = None;
    loop {
        let Some(strong) = shared.upgrade() else {
            return;
        };
        match open(&strong, &mut last_id, &mut retry).await {
            Ok(Stream::NotOffered) => return,
            Ok(Stream::Ended { delivered: true }) => failures = 0,
            Ok(Stream::Ended { delivered: false }) => failures += 1,
            Err(e) => {
                failures += 1;
                tracing::debug!(target: "mcppol::mcp", url = %strong.url, error = %e, "the server's event stream failed");
            }
        }
        if failures >= MAX_FAILURES {
            tracing::warn!(
                target: "mcppol::mcp",
                url = %strong.url,
                "the server's event stream failed {MAX_FAILURES} times in a row; its notifications outside requests are no longer received"
            );
            return;
        }
        drop(strong);
        tokio::time::sleep(backoff(failures, retry)).await;
    }
}

/// The wait before the next GET: what the server asked for (`retry`,
/// within the bounds), else doubling from [`FIRST_BACKOFF`].
fn backoff(failures: u32, retry: Option<u64>) -> Duration {
    if let Some(ms) = retry {
        return Duration::from_millis(ms).clamp(FIRST_BACKOFF, MAX_BACKOFF);
    }
    FIRST_BACKOFF
        .saturating_mul(1u32 << failures.min(10))
        .min(MAX_BACKOFF)
}

async fn open(
    shared: &Arc<Shared>,
    last_id: &mut Option<String>,
    retry: &mut Option<u64>,
) -> Result<Stream, McpError> {
    let response = shared
        .send_with(Method::GET, None, true, last_id.as_deref(), &Vec::new())
        .await?;
    if response.status() == StatusCode::METHOD_NOT_ALLOWED {
        return Ok(Stream::NotOffered);
    }
    let response = check_status(response).await?;
    if content_type(&response) != "text/event-stream" {
        return Ok(Stream::NotOffered);
    }
    // A stream lives long: only each event is bounded.
    let mut events = Events::new(response, shared.max_message(), usize::MAX);
    let outcome = shared.read_events(&mut events, None).await;
    let delivered = events.delivered > 0;
    if events.last_id.is_some() {
        last_id.clone_from(&events.last_id);
    }
    if events.retry.is_some() {
        *retry = events.retry;
    }
    outcome.map(|_| Stream::Ended { delivered })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_bounds_and_follows_the_server() {
        assert_eq!(backoff(0, None), Duration::from_millis(500));
        assert_eq!(backoff(1, None), Duration::from_secs(1));
        assert_eq!(backoff(3, None), Duration::from_secs(4));
        assert_eq!(backoff(9, None), MAX_BACKOFF);
        assert_eq!(backoff(2, Some(2000)), Duration::from_secs(2));
        assert_eq!(backoff(2, Some(0)), FIRST_BACKOFF);
        assert_eq!(backoff(2, Some(u64::MAX)), MAX_BACKOFF);
    }
}
