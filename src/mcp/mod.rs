//! MCP on the wire: JSON-RPC 2.0 messages, newline-delimited framing with a
//! bounded line, the [`Transport`] trait the pipeline and the proxy run on,
//! one role-agnostic peer that the client connection and the proxy share,
//! a transport over a child process's stdio, (feature `http`) one to a
//! remote server over streamable HTTP, and (feature `test-util`) an
//! in-memory one with a scripted server for tests.

// The modules are the crate's own; what a host uses is re-exported below.
pub(crate) mod connect;
pub(crate) mod connection;
pub(crate) mod framing;
pub(crate) mod handle;
#[cfg(feature = "http")]
pub(crate) mod http;
pub(crate) mod jsonrpc;
#[cfg(feature = "test-util")]
pub(crate) mod memory;
pub(crate) mod peer;
pub(crate) mod stdio;
pub(crate) mod transport;

pub use connect::{connect, ServerConnection};
pub use connection::{ConnectOptions, Connection, DEFAULT_MAX_PENDING, MAX_SERVER_REQUESTS};
pub use framing::DEFAULT_MAX_LINE_BYTES;
pub use handle::CallHandle;
#[cfg(feature = "http")]
pub use http::{HttpTransport, MAX_REDIRECTS, RESPONSE_MESSAGES_BOUND};
pub use jsonrpc::{codes, Notification, RpcError};
#[cfg(feature = "test-util")]
pub use memory::{text_result, FakeServer, MemoryTransport, ToolHandler, MAX_RECORDED};
pub use stdio::StdioTransport;
pub use transport::{
    BoxFuture, DefaultHandler, McpError, Page, RequestHandler, ServerInfo, Transport,
    DISCOVER_TIMEOUT, MAX_LIST_ITEMS, MAX_PAGES, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION,
    PROTOCOL_VERSIONS, STATELESS_PROTOCOL_VERSIONS,
};

// The wire format itself (messages, ids, line framing) is not API: the
// crate's own connection and proxy use it.
#[allow(unused_imports)]
pub(crate) use framing::{FrameError, LineReader};
#[allow(unused_imports)]
pub(crate) use jsonrpc::{Id, Message};
