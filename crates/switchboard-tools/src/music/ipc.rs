//! A client of mpv's JSON IPC protocol over its unix socket: newline-delimited JSON, each
//! request `{"command": [...], "request_id": N}` answered by a line carrying the same
//! `request_id` and `"error": "success"` (with `data`) or the reason it failed. Events and
//! answers to other requests are skipped. Requests may be pipelined: [`Ipc::run`] writes a
//! batch at once and collects the answers.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// How long a batch of requests may take before the player is taken for hung.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);

/// The longest line accepted from mpv (answers here are short; a longer line is garbage).
const MAX_LINE_BYTES: usize = 1 << 20;

/// The connection failed: mpv is gone or hung (its refusals are answers, not this).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct IpcError(pub String);

/// One connection to mpv.
pub(crate) struct Ipc {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    next_id: u64,
    line: String,
}

impl Ipc {
    pub(crate) async fn connect(socket: &Path) -> std::io::Result<Self> {
        let (reader, writer) = UnixStream::connect(socket).await?.into_split();
        Ok(Self {
            reader: BufReader::new(reader),
            writer,
            next_id: 1,
            line: String::new(),
        })
    }

    /// One request; its answer's `data` (`null` when it has none) or mpv's refusal.
    pub(crate) async fn command(
        &mut self,
        command: Value,
    ) -> Result<Result<Value, String>, IpcError> {
        let mut answers = self.run(vec![command]).await?;
        Ok(answers.pop().unwrap_or_else(|| Err("no answer".to_owned())))
    }

    /// Sends every request, then reads until each is answered; the answers in request order.
    pub(crate) async fn run(
        &mut self,
        commands: Vec<Value>,
    ) -> Result<Vec<Result<Value, String>>, IpcError> {
        let first = self.next_id;
        let count = commands.len();
        let mut batch = String::new();
        for command in commands {
            batch.push_str(&json!({"command": command, "request_id": self.next_id}).to_string());
            batch.push('\n');
            self.next_id += 1;
        }
        match tokio::time::timeout(ANSWER_TIMEOUT, self.exchange(batch, first, count)).await {
            Ok(answers) => answers,
            Err(_) => Err(IpcError(format!(
                "mpv did not answer within {} s",
                ANSWER_TIMEOUT.as_secs()
            ))),
        }
    }

    async fn exchange(
        &mut self,
        batch: String,
        first: u64,
        count: usize,
    ) -> Result<Vec<Result<Value, String>>, IpcError> {
        let lost = |error: std::io::Error| IpcError(format!("lost the connection to mpv: {error}"));
        self.writer
            .write_all(batch.as_bytes())
            .await
            .map_err(lost)?;
        let mut answers: Vec<Option<Result<Value, String>>> = vec![None; count];
        let mut missing = count;
        while missing > 0 {
            self.line.clear();
            let read = self.reader.read_line(&mut self.line).await.map_err(lost)?;
            if read == 0 {
                return Err(IpcError("mpv closed its IPC connection".to_owned()));
            }
            if self.line.len() > MAX_LINE_BYTES {
                return Err(IpcError("mpv sent an overlong line".to_owned()));
            }
            let Ok(message) = serde_json::from_str::<Value>(&self.line) else {
                continue;
            };
            let Some(id) = message.get("request_id").and_then(Value::as_u64) else {
                continue; // an event
            };
            let Some(slot) = id
                .checked_sub(first)
                .and_then(|index| usize::try_from(index).ok())
                .and_then(|index| answers.get_mut(index))
            else {
                continue; // a late answer to an earlier batch
            };
            if slot.is_none() {
                missing -= 1;
            }
            *slot = Some(match message.get("error").and_then(Value::as_str) {
                Some("success") => Ok(message.get("data").cloned().unwrap_or(Value::Null)),
                Some(error) => Err(error.to_owned()),
                None => Err("an answer without a status".to_owned()),
            });
        }
        Ok(answers.into_iter().flatten().collect())
    }
}
