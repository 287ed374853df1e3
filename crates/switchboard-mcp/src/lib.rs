//! The one crate of Switchboard that speaks MCP.
//!
//! * [`upstream`]: Switchboard as a client of many servers (stdio children, Streamable HTTP,
//!   legacy SSE, in-process providers), with era negotiation and supervision.
//! * [`front`]: Switchboard as a server (stdio and Streamable HTTP, both eras).
//! * [`jsonrpc`], [`era`] and [`routing_headers`]: the wire format both sides share.
//! * [`seal`]: client-side state sealed with a key ring (session ids, `requestState`), so any
//!   replica of a deployment serves any request.
//!
//! Everything above this crate works on `switchboard-core`'s domain types.

// Errors here (malformed messages, HTTP refusals) are cold paths whose size does not matter;
// boxing them would only obscure the types.
#![allow(clippy::result_large_err)]

pub mod busy_poll;
pub mod era;
mod framing;
pub mod front;
pub mod jsonrpc;
pub mod oauth;
pub mod routing_headers;
pub mod seal;
pub mod upstream;
