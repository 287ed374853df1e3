//! The fixture's tools: the echo set, numbered tools for pagination, or a replayed catalog.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::{Value, json};

use crate::server::Out;

/// How tool calls are answered.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Echo,
    Numbered,
    Replay,
    /// The latency set, its delays times this scale.
    Latency(f64),
}

pub struct Toolset {
    kind: Kind,
    tools: RwLock<Vec<Value>>,
}

fn schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

impl Toolset {
    /// The echo tools. `SWITCHBOARD_FIXTURE_ECHO_DESCRIPTION` replaces echo's description: a
    /// server whose tool says something else after a restart, for the pinning tests.
    pub fn echo() -> Self {
        let description = std::env::var("SWITCHBOARD_FIXTURE_ECHO_DESCRIPTION")
            .unwrap_or_else(|_| "Echoes the message back.".to_owned());
        let tools = vec![
            json!({"name": "echo", "description": description, "inputSchema": schema(json!({"message": {"type": "string"}}), &["message"]),
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "add", "description": "Adds two numbers.", "inputSchema": schema(json!({"a": {"type": "number"}, "b": {"type": "number"}}), &["a", "b"])}),
            json!({"name": "sleep", "description": "Waits ms milliseconds.", "inputSchema": schema(json!({"ms": {"type": "integer", "minimum": 0}}), &["ms"])}),
            json!({"name": "progress", "description": "Reports progress every interval_ms for steps steps.",
                   "inputSchema": schema(json!({"steps": {"type": "integer", "minimum": 1}, "interval_ms": {"type": "integer", "minimum": 0}}), &["steps", "interval_ms"])}),
            json!({"name": "fail", "description": "Returns a tool error.", "inputSchema": schema(json!({"message": {"type": "string"}}), &["message"])}),
            json!({"name": "change_tools", "description": "Adds extra_tool and announces the change.", "inputSchema": schema(json!({}), &[])}),
            json!({"name": "pid", "description": "The server's process id.", "inputSchema": schema(json!({}), &[])}),
        ];
        Self {
            kind: Kind::Echo,
            tools: RwLock::new(tools),
        }
    }

    pub fn latency(scale: f64) -> Self {
        Self {
            kind: Kind::Latency(scale),
            tools: RwLock::new(crate::latency::tools()),
        }
    }

    pub fn numbered(count: usize) -> Self {
        let tools = (0..count)
            .map(|i| json!({"name": format!("tool_{i:03}"), "description": format!("Numbered tool {i}."), "inputSchema": {"type": "object"}}))
            .collect();
        Self {
            kind: Kind::Numbered,
            tools: RwLock::new(tools),
        }
    }

    pub fn replay(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let catalog: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        let entries = catalog
            .get("tools")
            .and_then(Value::as_array)
            .ok_or("the catalog has no tools array")?;
        let mut tools: Vec<Value> = Vec::with_capacity(entries.len());
        for entry in entries {
            let server = entry.get("server").and_then(Value::as_str).unwrap_or("x");
            let name = entry.get("name").and_then(Value::as_str).unwrap_or("tool");
            let mut exposed: String = format!("{server}_{name}")
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .take(60)
                .collect();
            let base = exposed.clone();
            let mut n = 2;
            while tools.iter().any(|t| t["name"] == exposed.as_str()) {
                exposed = format!("{base}{n}");
                n += 1;
            }
            let mut tool = json!({"name": exposed, "inputSchema": entry.get("inputSchema").cloned().unwrap_or(json!({"type": "object"}))});
            for key in ["title", "description", "outputSchema", "annotations"] {
                if let Some(value) = entry.get(key) {
                    tool[key] = value.clone();
                }
            }
            tools.push(tool);
        }
        Ok(Self {
            kind: Kind::Replay,
            tools: RwLock::new(tools),
        })
    }

    /// One page of `tools/list`.
    pub fn list(&self, cursor: Option<&str>, page_size: usize) -> Result<Value, (i64, String)> {
        let tools = self
            .tools
            .read()
            .map_err(|_| (-32603, "poisoned".to_owned()))?;
        let start = match cursor {
            None => 0,
            Some(cursor) => cursor
                .strip_prefix("page-")
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| *n < tools.len())
                .ok_or((-32602, format!("invalid cursor: {cursor}")))?,
        };
        let end = start.saturating_add(page_size).min(tools.len());
        let mut result = json!({"tools": tools[start..end]});
        if end < tools.len() {
            result["nextCursor"] = json!(format!("page-{end}"));
        }
        Ok(result)
    }

    fn has(&self, name: &str) -> bool {
        self.tools
            .read()
            .map(|tools| tools.iter().any(|t| t["name"] == name))
            .unwrap_or(false)
    }
}

/// One tool call in flight.
pub struct Call {
    pub params: Value,
    pub cancelled: Arc<AtomicBool>,
    pub out: Out,
    pub toolset: Arc<Toolset>,
}

fn text(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}]})
}

impl Call {
    /// Whether the call answers without waiting on anything (no sleep, no progress steps).
    pub fn is_instant(&self) -> bool {
        match self.toolset.kind {
            Kind::Numbered | Kind::Replay => true,
            Kind::Latency(_) => false,
            Kind::Echo => matches!(
                self.params.get("name").and_then(Value::as_str),
                Some("echo" | "extra_tool" | "add" | "fail" | "pid")
            ),
        }
    }

    pub fn run(&self) -> Result<Value, (i64, String)> {
        let name = self
            .params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let args = self.params.get("arguments").cloned().unwrap_or(json!({}));
        if !self.toolset.has(name) {
            return Err((-32602, format!("Unknown tool: {name}")));
        }
        match self.toolset.kind {
            Kind::Numbered => return Ok(text(format!("{name} called"))),
            Kind::Replay => return Ok(text(args.to_string())),
            Kind::Latency(scale) => {
                return crate::latency::run(name, &args, scale, |delay| self.wait(delay))
                    .ok_or_else(|| (-32602, format!("Unknown tool: {name}")));
            }
            Kind::Echo => {}
        }
        let number = |key: &str| args.get(key).and_then(Value::as_f64).unwrap_or(0.0);
        Ok(match name {
            "echo" | "extra_tool" => {
                let message = args.get("message").and_then(Value::as_str).unwrap_or("");
                let mut result = text(message);
                result["structuredContent"] = json!({"message": message});
                result
            }
            "add" => text(format!("{}", number("a") + number("b"))),
            "sleep" => {
                let ms = number("ms") as u64;
                self.wait(Duration::from_millis(ms));
                text(format!("slept {ms} ms"))
            }
            "progress" => {
                let steps = number("steps") as u64;
                let interval = Duration::from_millis(number("interval_ms") as u64);
                let token = self
                    .params
                    .get("_meta")
                    .and_then(|m| m.get("progressToken"))
                    .cloned();
                for step in 1..=steps {
                    if !self.wait(interval) {
                        break;
                    }
                    if let Some(token) = &token {
                        self.out.notify("notifications/progress", json!({"progressToken": token, "progress": step, "total": steps, "message": format!("step {step} of {steps}")}));
                    }
                }
                text(format!("done after {steps} steps"))
            }
            "fail" => {
                let mut result = text(
                    args.get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("failed"),
                );
                result["isError"] = json!(true);
                result
            }
            "change_tools" => {
                if let Ok(mut tools) = self.toolset.tools.write()
                    && !tools.iter().any(|t| t["name"] == "extra_tool")
                {
                    tools.push(json!({"name": "extra_tool", "description": "Appeared later.", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}));
                }
                self.out
                    .notify("notifications/tools/list_changed", json!({}));
                text("changed")
            }
            "pid" => text(std::process::id().to_string()),
            _ => return Err((-32602, format!("Unknown tool: {name}"))),
        })
    }

    /// Sleeps unless cancelled first; returns false when cancelled.
    fn wait(&self, duration: Duration) -> bool {
        let step = Duration::from_millis(5);
        let mut left = duration;
        while !left.is_zero() {
            if self.cancelled.load(Ordering::SeqCst) {
                return false;
            }
            let nap = left.min(step);
            std::thread::sleep(nap);
            left -= nap;
        }
        !self.cancelled.load(Ordering::SeqCst)
    }
}
