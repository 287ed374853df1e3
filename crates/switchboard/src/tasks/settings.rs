//! The bounds of the task store (`[gateway.tasks]`): how many tasks a caller, an agent and
//! everyone may hold, the TTLs a client gets and may ask for, and how often it is told to poll.

use std::time::Duration;

/// Bounds of the task store.
#[derive(Debug, Clone)]
pub struct TaskSettings {
    /// Tasks one caller may hold at once, running and finished (the oldest finished task whose
    /// result was fetched makes room first).
    pub max_per_caller: usize,
    /// Tasks one agent may hold at once, all its sessions together (the same making room).
    pub max_per_agent: usize,
    /// TTL of a task whose client asked for none.
    pub default_ttl: Duration,
    /// The longest TTL a client may ask for.
    pub max_ttl: Duration,
    /// How often clients are told to poll.
    pub poll_interval: Duration,
    /// Tasks all callers together may hold.
    pub max_tasks: usize,
}

impl TaskSettings {
    /// The settings of `[gateway.tasks]`.
    pub fn of(config: &switchboard_core::config::TasksConfig) -> Self {
        Self {
            max_per_caller: config.max_per_caller,
            max_per_agent: config.agent_limit(),
            default_ttl: config.default_ttl,
            max_ttl: config.max_ttl,
            poll_interval: config.poll_interval,
            max_tasks: config.max_tasks,
        }
    }
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self::of(&switchboard_core::config::TasksConfig::default())
    }
}
