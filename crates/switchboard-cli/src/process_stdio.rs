//! The process's own stdin and stdout as async streams.
//!
//! `tokio::io::stdin()`/`stdout()` run every read and write on tokio's blocking thread pool: a
//! thread handoff per message, which profiling showed as the largest share of the stdio
//! gateway's added latency. When stdin and stdout are pipes — the normal case for an MCP
//! server started by a client — they are driven through the reactor instead (non-blocking
//! pipe ends, like the upstream children's pipes). Terminals and files fall back to tokio's
//! blocking-pool streams.

use std::fs::File;
use std::os::fd::AsFd;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

/// The process's stdin, as an async reader.
pub fn stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    let pipe = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| pipe::Receiver::from_file(File::from(fd)).ok());
    match pipe {
        Some(receiver) => Box::new(receiver),
        None => Box::new(tokio::io::stdin()),
    }
}

/// The process's stdout, as an async writer.
pub fn stdout() -> Box<dyn AsyncWrite + Unpin + Send> {
    let pipe = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| pipe::Sender::from_file(File::from(fd)).ok());
    match pipe {
        Some(sender) => Box::new(sender),
        None => Box::new(tokio::io::stdout()),
    }
}
