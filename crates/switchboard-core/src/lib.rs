//! Switchboard's domain: the types every other crate speaks (`ToolSpec`, `ToolCall`,
//! `ToolOutcome`, `CallContext`) and the pure logic built on them — configuration, the
//! catalog and its naming rules, schema validation and the call pipeline.
//!
//! This crate never touches sockets, processes or the MCP wire format: upstreams are reached
//! through the [`upstream::Upstream`] trait, and time through [`clock::Clock`], so everything
//! here is testable on paused time and in memory.

pub mod agent;
pub mod approval;
pub mod call_id;
pub mod catalog;
pub mod clock;
pub mod config;
pub mod context;
pub mod file_lock;
pub mod hex;
pub mod hooks;
pub mod idle;
pub mod latency_meta;
pub mod limits;
pub mod llm_names;
pub mod loopback;
pub mod metrics;
pub mod naming;
pub mod offline;
pub mod outcome;
pub mod param_headers;
pub mod pipeline;
pub mod process_group;
pub mod public_address;
pub mod schema;
pub mod server;
pub mod task;
pub mod tier;
pub mod timer_anchor;
pub mod tool;
pub mod trace;
pub mod upstream;

pub use catalog::{Catalog, CatalogEntry, CatalogProblem, ServerSlice};
pub use context::{
    CallContext, Caller, CallerChannel, CallerError, ModernRequest, Principal, Progress,
    ProgressSink, SubjectToken,
};
pub use latency_meta::{LATENCY_META_KEY, LatencyMeta};
pub use outcome::{ToolCall, ToolOutcome, json_kind};
pub use server::ServerId;
pub use tool::{ToolAnnotations, ToolDefinition, ToolSpec};
