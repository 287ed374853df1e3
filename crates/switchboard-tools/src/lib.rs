//! Built-in tools: useful with nothing else installed. Each is a
//! [`switchboard_core::upstream::ToolProvider`], served in-process by the Host or standalone
//! over stdio by `switchboard tool-server NAME`.

pub mod clock;

use std::sync::Arc;

use switchboard_core::clock::SystemClock;
use switchboard_core::upstream::ToolProvider;

/// Names of every built-in provider, for config validation and help texts.
pub const BUILTINS: [&str; 1] = ["clock"];

/// The built-in provider with this name, on the system clock.
pub fn builtin(name: &str) -> Option<Arc<dyn ToolProvider>> {
    match name {
        "clock" => Some(Arc::new(clock::Clock::new(Arc::new(SystemClock)))),
        _ => None,
    }
}
