//! `[[hooks]]`: external commands that see every call (in the style of Claude Code hooks).
//!
//! ```toml
//! [[hooks]]
//! event = "pre_call"          # or "post_call"
//! command = "./scripts/check-call"
//! args = ["--strict"]
//! tools = ["files__*"]        # globs over exposed names or server:tool (default: all)
//! agents = ["npc"]            # default: all
//! timeout = "2s"              # default 5s
//! on_failure = "deny"         # deny (fail closed, the default) | allow (fail open)
//! ```

use std::path::PathBuf;
use std::time::Duration;

use super::model::{HookConfig, HookEvent};
use super::tree::{Node, Value};
use super::validate::Walk;

pub(super) const HOOK_KEYS: [&str; 7] = [
    "event",
    "command",
    "args",
    "tools",
    "agents",
    "timeout",
    "on_failure",
];

impl Walk<'_> {
    pub(super) fn hooks(&mut self, node: &Node) -> Vec<HookConfig> {
        let Value::Array(items) = &node.value else {
            self.problem(
                node.pos,
                format!(
                    "hooks must be an array of tables ([[hooks]]), found {}",
                    node.value.kind()
                ),
                None,
            );
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(index, item)| self.hook(item, &format!("hooks[{index}]")))
            .collect()
    }

    fn hook(&mut self, node: &Node, what: &str) -> Option<HookConfig> {
        let mut event = None;
        let mut command = None;
        let mut hook = HookConfig {
            event: HookEvent::PreCall,
            command: PathBuf::new(),
            args: Vec::new(),
            tools: Vec::new(),
            agents: Vec::new(),
            timeout: Duration::from_secs(5),
            fail_open: false,
        };
        for (key, key_pos, value) in self.table(node, what) {
            let key_what = format!("{what}.{key}");
            match key.as_str() {
                "event" => {
                    event = match self.string(value, &key_what).as_deref() {
                        Some("pre_call") => Some(HookEvent::PreCall),
                        Some("post_call") => Some(HookEvent::PostCall),
                        Some(other) => {
                            self.problem(
                                value.pos,
                                format!("{key_what} '{other}' is not known"),
                                Some("use \"pre_call\" or \"post_call\"".to_owned()),
                            );
                            None
                        }
                        None => None,
                    };
                }
                "command" => command = self.os_string(value, &key_what).filter(|c| !c.is_empty()),
                "args" => hook.args = self.os_strings(value, &key_what),
                "tools" => hook.tools = self.strings(value, &key_what),
                "agents" => hook.agents = self.strings(value, &key_what),
                "timeout" => hook.timeout = self.duration(value, &key_what).unwrap_or(hook.timeout),
                "on_failure" => match self.string(value, &key_what).as_deref() {
                    Some("deny") => hook.fail_open = false,
                    Some("allow") => hook.fail_open = true,
                    Some(other) => self.problem(
                        value.pos,
                        format!("{key_what} '{other}' is not known"),
                        Some("use \"deny\" (fail closed) or \"allow\" (fail open)".to_owned()),
                    ),
                    None => {}
                },
                other => self.unknown(*key_pos, other, what, &HOOK_KEYS),
            }
        }
        let present = |key: &str| node.get(key).is_some();
        if !present("event") {
            self.problem(
                node.pos,
                format!("{what} needs \"event\" (\"pre_call\" or \"post_call\")"),
                None,
            );
        }
        if !present("command") {
            self.problem(node.pos, format!("{what} needs \"command\""), None);
        }
        hook.event = event?;
        hook.command = PathBuf::from(command?);
        Some(hook)
    }
}
