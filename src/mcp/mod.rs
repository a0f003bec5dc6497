//! MCP on the wire: JSON-RPC 2.0 messages, newline-delimited framing with a
//! bounded line, the [`Transport`] trait the pipeline and the proxy run on,
//! a transport over a child process's stdio, and an in-memory one with a
//! scripted server for tests.

pub mod connection;
pub mod framing;
pub mod jsonrpc;
pub mod memory;
pub mod stdio;
pub mod transport;

pub use connection::{ConnectOptions, Connection};
pub use framing::{FrameError, LineReader, DEFAULT_MAX_LINE_BYTES};
pub use jsonrpc::{Id, Message, Notification, RpcError};
pub use memory::{FakeServer, MemoryTransport};
pub use stdio::StdioTransport;
pub use transport::{
    BoxFuture, DefaultHandler, McpError, Page, RequestHandler, ServerInfo, Transport,
    PROTOCOL_VERSIONS,
};
