//! Independent MCP peers for Switchboard's tests and benchmarks: the `switchboard-fixture`
//! servers (the binary) and [`client::StdioClient`], a lean stdio client with no SDK so that
//! what is measured or tested is the gateway, not the client.

pub mod client;
