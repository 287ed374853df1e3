//! `[gateway.tasks]`: the bounds of the tasks clients start and come back for (MCP tasks).
//!
//! ```toml
//! [gateway.tasks]
//! max_per_caller = 100     # tasks one caller (agent + session) holds at once
//! max_per_agent = 2500     # one agent, all its sessions together (default: max_tasks / 4)
//! max_tasks = 10000        # all callers together
//! default_ttl = "1h"       # kept this long when the client asks for no TTL
//! max_ttl = "24h"          # the longest TTL a client may ask for
//! poll_interval = "500ms"  # how often clients are told to poll
//! ```

use std::time::Duration;

use super::model::TasksConfig;
use super::tree::Node;
use super::validate::Walk;

pub(super) const TASKS_KEYS: [&str; 6] = [
    "max_per_caller",
    "max_per_agent",
    "max_tasks",
    "default_ttl",
    "max_ttl",
    "poll_interval",
];

impl Default for TasksConfig {
    fn default() -> Self {
        Self {
            max_per_caller: 100,
            default_ttl: Duration::from_secs(3600),
            max_ttl: Duration::from_secs(24 * 3600),
            poll_interval: Duration::from_millis(500),
            max_tasks: 10_000,
            max_per_agent: None,
        }
    }
}

impl Walk<'_> {
    pub(super) fn tasks(&mut self, node: &Node, what: &str) -> TasksConfig {
        let mut tasks = TasksConfig::default();
        let mut default_ttl_at = node.pos;
        for (key, key_pos, value) in self.table(node, what) {
            let key_what = format!("{what}.{key}");
            match key.as_str() {
                "max_per_caller" => {
                    if let Some(count) = self.count(value, &key_what) {
                        tasks.max_per_caller = usize::try_from(count).unwrap_or(usize::MAX);
                    }
                }
                "max_per_agent" => {
                    if let Some(count) = self.count(value, &key_what) {
                        tasks.max_per_agent = Some(usize::try_from(count).unwrap_or(usize::MAX));
                    }
                }
                "max_tasks" => {
                    if let Some(count) = self.count(value, &key_what) {
                        tasks.max_tasks = usize::try_from(count).unwrap_or(usize::MAX);
                    }
                }
                "default_ttl" => {
                    default_ttl_at = value.pos;
                    tasks.default_ttl = self.positive_duration(value, &key_what, tasks.default_ttl);
                }
                "max_ttl" => {
                    tasks.max_ttl = self.positive_duration(value, &key_what, tasks.max_ttl)
                }
                "poll_interval" => {
                    tasks.poll_interval =
                        self.positive_duration(value, &key_what, tasks.poll_interval);
                }
                other => self.unknown(*key_pos, other, what, &TASKS_KEYS),
            }
        }
        if tasks.default_ttl > tasks.max_ttl {
            self.problem(
                default_ttl_at,
                format!(
                    "{what}.default_ttl ({:?}) is longer than {what}.max_ttl ({:?})",
                    tasks.default_ttl, tasks.max_ttl
                ),
                Some("raise max_ttl or lower default_ttl".to_owned()),
            );
        }
        tasks
    }

    pub(super) fn positive_duration(
        &mut self,
        node: &Node,
        what: &str,
        current: Duration,
    ) -> Duration {
        match self.duration(node, what) {
            Some(duration) if duration.is_zero() => {
                self.problem(node.pos, format!("{what} must be longer than zero"), None);
                current
            }
            Some(duration) => duration,
            None => current,
        }
    }
}
