//! Switchboard as an MCP client: one supervised connection per configured server.
//!
//! `transport` is the seam; `stdio` and `http` carry bytes; `client` speaks JSON-RPC;
//! `session` negotiates the era and lists tools; `supervisor` keeps it all alive (one
//! connection, or a pool of stdio processes); `tasks` follows a server's own task for a
//! call that is one; `inprocess` adapts built-in tool providers;
//! `process_group` kills a child with everything it started (a stdio server, a command hook);
//! `reaper` kills those groups if this process dies without doing it.

pub mod client;
pub mod http;
pub mod inprocess;
pub mod process_group;
pub mod reaper;
pub mod session;
mod span;
mod stdin;
pub mod stdio;
pub mod supervisor;
pub mod tasks;
pub mod transport;
mod waiting;

pub use session::EraChoice;
pub use stdio::{StdioCommand, Wrapper};
pub use supervisor::{
    Endpoint, InstanceCall, InstanceCount, ServerState, ServerStatus, Supervisor,
    SupervisorObserver, UpstreamSpec,
};
