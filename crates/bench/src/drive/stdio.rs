//! A stdio target for `bench drive`: the child with its pipes, requests written with ids, and
//! answers read on a thread of their own and handed over with the moment they arrived, so a
//! silent target is a timeout, not a hang. The last lines of its stderr are kept for the
//! error when it dies.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

use super::{Era, Plan, Round};
use crate::era;

/// An answer read from a stdio target: its id, when it arrived, and the message.
type Answer = (u64, Instant, Value);

/// A stdio target with its pipes: requests are written here, answers arrive from a reader
/// thread; the last lines of its stderr are kept for the error when it dies.
pub(super) struct StdioPipe {
    pub(super) child: Child,
    stdin: ChildStdin,
    answers: Receiver<Result<Answer, String>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_reader: std::thread::JoinHandle<()>,
    next_id: u64,
}

/// Lines of a stdio target's stderr kept for its error message.
const STDERR_LINES: usize = 20;

impl StdioPipe {
    pub(super) fn spawn(command: &[String], plan: &Plan) -> anyhow::Result<Self> {
        let (program, args) = command.split_first().context("no stdio command after --")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {program}"))?;
        let stdin = child.stdin.take().context("the target's stdin")?;
        let stdout = child.stdout.take().context("the target's stdout")?;
        let stderr_pipe = child.stderr.take().context("the target's stderr")?;
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let tail = stderr.clone();
        let stderr_reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                if let Ok(mut tail) = tail.lock() {
                    if tail.len() == STDERR_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            }
        });
        let (sender, answers) = mpsc::channel();
        std::thread::spawn(move || read_answers(BufReader::with_capacity(1 << 20, stdout), sender));
        let mut pipe = Self {
            child,
            stdin,
            answers,
            stderr,
            stderr_reader,
            next_id: 1,
        };
        pipe.open(plan)?;
        Ok(pipe)
    }

    /// The era's opening: `initialize` and its notification, or `server/discover`.
    fn open(&mut self, plan: &Plan) -> anyhow::Result<()> {
        let (method, params) = match plan.era {
            Era::Legacy => ("initialize", era::initialize_params()),
            Era::Modern => {
                let mut params = Map::new();
                era::add_modern_meta(&mut params);
                ("server/discover", Value::Object(params))
            }
        };
        let (id, _) = self.send(&|id| {
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
        })?;
        let (answered, _, answer) = self.next_answer(plan.timeout, 0)?;
        if answered != id || answer.get("result").is_none() {
            bail!(
                "{method} failed (does the target speak the {} era?): {answer}",
                plan.era.version()
            );
        }
        if plan.era == Era::Legacy {
            self.write(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
        }
        Ok(())
    }

    /// `calls` calls with at most `plan.concurrency` of them in flight, pausing `gap` after
    /// each answer.
    pub(super) fn round(
        &mut self,
        plan: &Plan,
        calls: usize,
        gap: Duration,
        line: &dyn Fn(u64) -> String,
    ) -> anyhow::Result<Round> {
        let mut round = Round::default();
        let mut in_flight: HashMap<u64, Instant> = HashMap::with_capacity(plan.concurrency);
        let started = Instant::now();
        let mut sent = 0;
        while sent < calls || !in_flight.is_empty() {
            while sent < calls && in_flight.len() < plan.concurrency {
                let (id, sent_at) = self.send(line)?;
                in_flight.insert(id, sent_at);
                sent += 1;
            }
            let (id, at, answer) = self.next_answer(plan.timeout, sent - in_flight.len())?;
            match in_flight.remove(&id) {
                Some(sent_at) => round.record(at.duration_since(sent_at), &answer),
                None => bail!("the target answered id {id}, which is not in flight: {answer}"),
            }
            if !gap.is_zero() {
                std::thread::sleep(gap);
            }
        }
        round.elapsed = started.elapsed();
        Ok(round)
    }

    /// Writes `line` of the next id; returns that id and when it was sent (before the line
    /// was built, as the HTTP client's timing counts building the body).
    fn send(&mut self, line: &dyn Fn(u64) -> String) -> anyhow::Result<(u64, Instant)> {
        let id = self.next_id;
        self.next_id += 1;
        let sent_at = Instant::now();
        self.write(&line(id))?;
        Ok((id, sent_at))
    }

    fn write(&mut self, line: &str) -> anyhow::Result<()> {
        // The line and its newline in one write, as the SDKs' stdio transports send a message:
        // the target reads it whole with one wake-up.
        let mut message = String::with_capacity(line.len() + 1);
        message.push_str(line);
        message.push('\n');
        let written = self.stdin.write_all(message.as_bytes());
        if let Err(error) = written {
            bail!("cannot write to the target: {error}{}", self.died());
        }
        Ok(())
    }

    /// The next answer, or why none came within `timeout` (`done` calls were answered).
    fn next_answer(&mut self, timeout: Duration, done: usize) -> anyhow::Result<Answer> {
        match self.answers.recv_timeout(timeout) {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(reason)) => bail!("{reason}"),
            Err(RecvTimeoutError::Timeout) => {
                bail!("no answer from the target for {timeout:?} ({done} answered so far)")
            }
            Err(RecvTimeoutError::Disconnected) => {
                bail!(
                    "the target closed its stdout after {done} answers{}",
                    self.died()
                )
            }
        }
    }

    /// How the target ended, with its last stderr lines, if it has.
    fn died(&mut self) -> String {
        let status = match exit_status(&mut self.child, Duration::from_millis(200)) {
            Some(status) => {
                // Its stderr ends with it: give the reader a moment to take the last lines.
                let deadline = Instant::now() + Duration::from_millis(200);
                while !self.stderr_reader.is_finished() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                format!(" (it exited: {status})")
            }
            None => String::new(),
        };
        let tail = self
            .stderr
            .lock()
            .map(|lines| lines.iter().cloned().collect::<Vec<_>>().join("\n  "))
            .unwrap_or_default();
        if tail.is_empty() {
            status
        } else {
            format!("{status}; its stderr ended with:\n  {tail}")
        }
    }
}

impl Drop for StdioPipe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The child's exit status, if it exits within `limit`.
fn exit_status(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reads the target's stdout: every answer (a message with a numeric id and no method) is
/// sent on with the moment it arrived; notifications and server requests are skipped.
fn read_answers(mut stdout: impl BufRead, answers: mpsc::Sender<Result<Answer, String>>) {
    let mut line = String::new();
    loop {
        line.clear();
        match stdout.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let at = Instant::now();
        if line.trim().is_empty() {
            continue;
        }
        let message = match serde_json::from_str::<Value>(&line) {
            Ok(message) => message,
            Err(error) => {
                let _ = answers.send(Err(format!(
                    "the target wrote a line that is not JSON ({error}): {}",
                    line.trim_end()
                )));
                return;
            }
        };
        if message.get("method").is_some() {
            continue;
        }
        let Some(id) = message.get("id").and_then(Value::as_u64) else {
            let _ = answers.send(Err(format!("an answer without a numeric id: {message}")));
            return;
        };
        if answers.send(Ok((id, at, message))).is_err() {
            return;
        }
    }
}
