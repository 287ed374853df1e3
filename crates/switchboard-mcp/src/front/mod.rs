//! Switchboard as an MCP server: the gateway front.
//!
//! [`Backend`] is what the front serves (the Host implements it); [`dispatch`] answers one
//! JSON-RPC request in either era; [`stdio`] and [`http`] carry requests in and answers out.
//! `tools/call` is its own module (`tool_call`). While a call runs, an upstream's requests and
//! log messages go back to a legacy client through its [`relay`], and to a modern one through
//! its request's [`modern_caller`], whose questions [`parked`] turns into `input_required`
//! rounds. `request_params` checks params whose wrong types would otherwise read as absent. [`tasks`] answers the task methods and task-augmented calls of both eras.
//! Both eras are spoken on the same endpoint: a request is modern when its `_meta` carries
//! the 2026-07-28 protocol version, legacy otherwise; on HTTP a modern request first passes
//! the [`envelope`] checks.

pub mod backend;
pub mod dispatch;
pub mod envelope;
pub mod http;
pub mod modern_caller;
pub mod parked;
pub mod relay;
mod request_params;
pub mod span;
pub mod stdio;
mod stdio_outbox;
pub mod subscriptions;
pub mod tasks;
mod tool_call;

pub use backend::{Backend, ListsVersion, ServerIdentity};
pub use dispatch::Dispatcher;
