//! Switchboard as an MCP server: the gateway front.
//!
//! [`Backend`] is what the front serves (the Host implements it); [`dispatch`] answers one
//! JSON-RPC request in either era; [`stdio`] and [`http`] carry requests in and answers out.
//! While a call runs, an upstream's requests and log messages go back to a legacy client
//! through its [`relay`], and to a modern one through its request's [`modern_caller`].
//! Both eras are spoken on the same endpoint: a request is modern when its `_meta` carries
//! the 2026-07-28 protocol version, legacy otherwise; on HTTP a modern request first passes
//! the [`envelope`] checks.

pub mod backend;
pub mod dispatch;
pub mod envelope;
pub mod http;
pub mod modern_caller;
pub mod relay;
pub mod stdio;
pub mod subscriptions;

pub use backend::{Backend, ServerIdentity};
pub use dispatch::Dispatcher;
