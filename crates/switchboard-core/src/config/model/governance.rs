//! What bounds and checks calls: `limits` (rates, concurrency, queueing), `cost` and `quota`
//! (an agent's budget), and `[[hooks]]` (external commands that see or deny calls).

use std::path::PathBuf;
use std::time::Duration;

/// `limits = { ... }` of the gateway, an agent, a server or a tool.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LimitsConfig {
    /// Requests per minute (GCRA).
    pub per_minute: Option<f64>,
    /// Requests allowed back to back above the steady rate.
    pub burst: Option<u32>,
    /// Calls in flight at once.
    pub max_concurrent: Option<u32>,
    /// How long an over-limit call waits for its turn before it is refused.
    pub queue: Option<Duration>,
}

impl LimitsConfig {
    pub fn is_empty(&self) -> bool {
        self.per_minute.is_none() && self.max_concurrent.is_none()
    }
}

/// `cost` of a server's or tool's calls.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CostConfig {
    pub fixed: f64,
    pub per_second: f64,
}

/// `quota` of an agent: a cost budget over a sliding window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuotaConfig {
    pub cost: f64,
    pub window: Duration,
}

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    PreCall,
    PostCall,
}

/// One `[[hooks]]` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct HookConfig {
    pub event: HookEvent,
    pub command: PathBuf,
    pub args: Vec<String>,
    /// Globs of the tools it sees (empty = all).
    pub tools: Vec<String>,
    /// Agents it sees (empty = all).
    pub agents: Vec<String>,
    pub timeout: Duration,
    /// true: a failing hook lets the call go on; false: it denies the call.
    pub fail_open: bool,
}
