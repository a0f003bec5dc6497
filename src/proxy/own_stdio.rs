//! The process's own stdin and stdout as the host's side of a session.
//! `tokio::io::stdin()` and `stdout()` do each read and write on the
//! blocking pool: every message would cross to another thread and back.
//! When they are pipes (as an MCP host starts a stdio server), they are
//! read and written on the runtime's own thread instead, as the child's
//! pipes are; anything else (a file, a terminal) keeps tokio's.

use tokio::io::{AsyncRead, AsyncWrite};

/// The host's input: fd 0.
pub(crate) fn stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let pipe = std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .and_then(tokio::net::unix::pipe::Receiver::from_owned_fd);
        if let Ok(pipe) = pipe {
            return Box::new(pipe);
        }
    }
    Box::new(tokio::io::stdin())
}

/// The host's output: fd 1.
pub(crate) fn stdout() -> Box<dyn AsyncWrite + Unpin + Send> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let pipe = std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .and_then(tokio::net::unix::pipe::Sender::from_owned_fd);
        if let Ok(pipe) = pipe {
            return Box::new(pipe);
        }
    }
    Box::new(tokio::io::stdout())
}
