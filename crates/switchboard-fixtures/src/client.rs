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
    /// Spawns the target with piped stdin and stdout; stderr is the caller's choice.
    pub fn spawn(command: &mut Command) -> anyhow::Result<Self> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("spawning the target")?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().context("stdout")?);
        Ok(Self {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 1,
            line: String::new(),
        })
    }

    /// Sends a request and returns its result, skipping notifications; a JSON-RPC error is
    /// an `Err`.
    pub fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let answer = self.exchange(method, params)?;
        if let Some(error) = answer.get("error") {
            bail!("{method} failed: {error}");
        }
        Ok(answer.get("result").cloned().unwrap_or(Value::Null))
    }

    /// Sends a request and returns the whole answer (`result` or `error`), skipping
    /// notifications.
    pub fn exchange(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send_line(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        )?;
        loop {
            let value = self.read_message()?;
            if value.get("id") == Some(&json!(id)) {
                return Ok(value);
            }
        }
    }

    /// Sends a request and waits for its answer without building it as a JSON value (only
    /// the `id` is read), so a benchmark measures the server rather than this client's
    /// parser. Returns the answer's size in bytes; a JSON-RPC error is an `Err`.
    pub fn request_lean(&mut self, method: &str, params: &Value) -> anyhow::Result<usize> {
        #[derive(serde::Deserialize)]
        struct Envelope {
            id: Option<u64>,
            error: Option<serde::de::IgnoredAny>,
        }
        let id = self.next_id;
        self.next_id += 1;
        self.send_line(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        )?;
        loop {
            self.line.clear();
            if self.stdout.read_line(&mut self.line)? == 0 {
                bail!("the target closed its stdout during {method}");
            }
            let Ok(envelope) = serde_json::from_str::<Envelope>(&self.line) else {
                continue;
            };
            if envelope.id == Some(id) {
                if envelope.error.is_some() {
                    bail!("{method} failed: {}", self.line.trim());
                }
                return Ok(self.line.len());
            }
        }
    }

    /// Writes one raw line (for malformed-input tests).
    pub fn send_line(&mut self, line: &str) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("stdin closed")?;
        writeln!(stdin, "{line}")?;
        Ok(stdin.flush()?)
    }

    /// Reads the next message, whatever it is.
    pub fn read_message(&mut self) -> anyhow::Result<Value> {
        self.line.clear();
        if self.stdout.read_line(&mut self.line)? == 0 {
            bail!("the target closed its stdout");
        }
        serde_json::from_str(&self.line).with_context(|| format!("not JSON: {}", self.line))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes stdin and waits up to `limit` for the process to exit.
    pub fn close_and_wait(
        &mut self,
        limit: std::time::Duration,
    ) -> Option<std::process::ExitStatus> {
        drop(self.stdin.take());
        self.wait(limit)
    }

    /// Waits up to `limit` for the process to exit.
    pub fn wait(&mut self, limit: std::time::Duration) -> Option<std::process::ExitStatus> {
        let started = std::time::Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if started.elapsed() > limit {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    pub fn notify(&mut self, method: &str, params: Value) -> anyhow::Result<()> {
        self.send_line(&json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string())
    }

    /// The legacy handshake.
    pub fn initialize(&mut self) -> anyhow::Result<Value> {
        let result = self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        )?;
        self.notify("notifications/initialized", json!({}))?;
        Ok(result)
    }
}

impl Drop for StdioClient {
    /// Closes stdin so a gateway shuts down cleanly (and stops its own children), then kills
    /// whatever is still running after a few seconds.
    fn drop(&mut self) {
        if self
            .close_and_wait(std::time::Duration::from_secs(5))
            .is_some()
        {
            return;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
