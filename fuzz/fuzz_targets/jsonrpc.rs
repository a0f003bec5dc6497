//! JSON-RPC framing and message handling of `mcppol::mcp` on a server's
//! arbitrary output:
//! - every line parses to a message or an error, and a message written out
//!   again parses to the same message;
//! - the line reader never returns a line over its bound or with a newline,
//!   and always reaches the end of the stream;
//! - a client connection (handshake, `tools/list` pages, `tools/call`)
//!   talking to a server that answers with the fuzzer's chunks ends every
//!   request with a result or an error: no panic, no hang (time is paused
//!   and auto-advanced, so a request that gets no answer times out).
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use mcppol::fuzzing::mcp::{LineReader, Message};
use mcppol::mcp::{ConnectOptions, Connection, Transport};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const MAX_LINE: usize = 256;

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("no runtime: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    for line in data.split(|&b| b == b'\n') {
        if let Ok(message) = Message::parse(line) {
            let out = message.to_line();
            assert_eq!(
                out.iter().filter(|&&b| b == b'\n').count(),
                1,
                "one line out"
            );
            assert_eq!(
                Message::parse(&out[..out.len() - 1]),
                Ok(message),
                "round trip"
            );
        }
    }

    let rt = runtime();
    rt.block_on(async {
        let mut reader = LineReader::new(data, 16);
        let mut steps = 0;
        loop {
            steps += 1;
            assert!(steps <= data.len() + 2, "the line reader does not advance");
            match reader.next_line().await {
                Ok(Some(line)) => {
                    assert!(line.len() <= 16 && !line.contains(&b'\n'), "{line:?}");
                }
                Ok(None) => break,
                Err(mcppol::fuzzing::mcp::FrameError::TooLong { .. }) => {}
                Err(e) => panic!("reading a slice failed: {e}"),
            }
        }

        // The server: after each line the client writes, the next chunk of
        // the input (chunks end at NUL bytes); then the end of the stream.
        let (client, server) = tokio::io::duplex(1 << 16);
        let (client_read, client_write) = tokio::io::split(client);
        let (server_read, mut server_write) = tokio::io::split(server);
        let chunks: Vec<Vec<u8>> = data.split(|&b| b == 0).map(<[u8]>::to_vec).collect();
        let script = tokio::spawn(async move {
            let mut from_client = BufReader::new(server_read).lines();
            for chunk in chunks {
                match from_client.next_line().await {
                    Ok(Some(_)) => {}
                    _ => return,
                }
                if server_write.write_all(&chunk).await.is_err() {
                    return;
                }
            }
            // Dropping the writer ends the stream the client reads.
        });
        let options = ConnectOptions {
            max_line_bytes: MAX_LINE,
            request_timeout: Duration::from_secs(5),
            ..ConnectOptions::default()
        };
        let outcome = tokio::time::timeout(Duration::from_secs(600), async {
            let conn =
                Connection::connect(BufReader::new(client_read), client_write, options).await?;
            let listed = conn.list_all_tools().await;
            let called = conn.call_tool("t", serde_json::json!({}), None).await;
            if let Ok(v) = &called {
                assert!(v.is_object(), "a tools/call result that is not an object");
            }
            let _ = listed;
            Ok::<_, mcppol::mcp::McpError>(())
        })
        .await;
        assert!(outcome.is_ok(), "the connection hung past every timeout");
        script.abort();
    });
});
