//! A lean stdio MCP client: newline-delimited JSON-RPC over a child's pipes, no SDK, so the
//! client is not what is measured.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{Context, bail};
use serde_json::{Value, json};

pub struct StdioClient {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
}

impl StdioClient {
    pub fn spawn(command: &mut Command) -> anyhow::Result<Self> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("spawning the target")?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("stdout")?);
        Ok(Self {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 1,
            line: String::new(),
        })
    }

    /// Sends a request and returns its result, skipping notifications.
    pub fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let stdin = self.stdin.as_mut().context("stdin closed")?;
        writeln!(stdin, "{message}")?;
        stdin.flush()?;
        loop {
            self.line.clear();
            if self.stdout.read_line(&mut self.line)? == 0 {
                bail!("the target closed its stdout during {method}");
            }
            let value: Value = serde_json::from_str(&self.line)
                .with_context(|| format!("not JSON: {}", self.line))?;
            if value.get("id") == Some(&json!(id)) {
                if let Some(error) = value.get("error") {
                    bail!("{method} failed: {error}");
                }
                return Ok(value.get("result").cloned().unwrap_or(Value::Null));
            }
        }
    }

    pub fn notify(&mut self, method: &str) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("stdin closed")?;
        writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": method}))?;
        Ok(stdin.flush()?)
    }

    /// The legacy handshake.
    pub fn initialize(&mut self) -> anyhow::Result<Value> {
        let result = self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        )?;
        self.notify("notifications/initialized")?;
        Ok(result)
    }
}

impl Drop for StdioClient {
    /// Closes stdin so a gateway shuts down cleanly (and stops its own children), then kills
    /// whatever is still running after a few seconds.
    fn drop(&mut self) {
        drop(self.stdin.take());
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
