//! A server's notifications, passed to the host: a changed listing is
//! announced (after the server's pipeline listed its tools again), and
//! progress, log messages and resource updates are relayed as they came.
//! The rest (a cancellation of the server's own request to the host among
//! them) is not the host's business here.

use std::sync::Arc;

use tokio::sync::broadcast::error::RecvError;

use super::upstream::Live;
use super::Shared;
use crate::mcp::Transport;

/// Relays `server`'s notifications until its connection ends.
pub(crate) async fn forward(gw: Arc<Shared>, server: String, live: Arc<Live>) {
    let mut notes = live.transport.subscribe();
    loop {
        let note = match notes.recv().await {
            Ok(n) => n,
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(target: "mcppol::gateway", server = %server, missed, "notifications of a server were dropped (the host reads too slowly)");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        if !gw.host_ready() {
            // Before the host's handshake is answered: its first listing
            // will see what changed.
            continue;
        }
        match note.method.as_str() {
            "notifications/tools/list_changed" => {
                // The pipeline lists again now, so the host's next listing
                // (and a changed definition's pin) sees the new tools.
                if let Err(e) = live.pipeline.refresh_tools().await {
                    tracing::warn!(target: "mcppol::gateway", server = %server, error = %e, "listing the tools again failed");
                }
                gw.host.notify(&note.method, None).await;
            }
            "notifications/prompts/list_changed" | "notifications/resources/list_changed" => {
                gw.host.notify(&note.method, None).await;
            }
            "notifications/progress"
            | "notifications/message"
            | "notifications/resources/updated" => {
                gw.host.notify(&note.method, note.params).await;
            }
            _ => {}
        }
    }
}
