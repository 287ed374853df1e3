//! The stdio transport: the server is a child process speaking newline-delimited JSON-RPC on
//! its stdin and stdout.
//!
//! The child runs in its own process group, so the whole group (an `npx` wrapper and the node
//! process under it) is killed together when the connection is closed or dropped — no orphans;
//! if this process dies without doing that, the [`reaper`](super::reaper) does it
//! ([`ProcessGroup`]).
//! Its stderr is forwarded to the log under the server's name. A line longer than the message
//! limit is skipped ([`crate::framing`]), failing only the request it answers; lines that are
//! not JSON are logged and remembered, so a failure to start can say what the server printed
//! instead.
//!
//! An answer read from stdout goes straight to the request waiting for it, on the reading
//! task's thread, when nothing read before it still waits in the inbound channel (so it
//! overtakes nothing): the way through the channel and the client's reading task cost each
//! call a wake-up of another thread ([`Transport::answer_directly`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::io::{AsyncRead, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

use super::process_group::ProcessGroup;
use super::stdin::Stdin;
use super::transport::{DirectAnswers, Inbound, OfferedAnswers, Opened, Transport, TransportError};
use crate::framing::{Unread, read_bounded_line};
use crate::jsonrpc::{Message, RpcError, code};

/// How to start the child.
#[derive(Debug, Clone)]
pub struct StdioCommand {
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub max_message_bytes: usize,
    /// A program that starts the command for it, as `program args… -- command args…`
    /// (the sandbox launcher, which confines itself and then execs the command).
    pub wrapper: Option<Wrapper>,
    /// When set, the child gets only these of the gateway's environment variables (those
    /// that are set), then `env`; when `None`, the gateway's whole environment, then `env`.
    pub keep_env: Option<Vec<String>>,
}

/// The program a [`StdioCommand`] is run under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapper {
    pub program: PathBuf,
    pub args: Vec<String>,
}

struct StdioTransport {
    stdin: Stdin<ChildStdin>,
    group: Arc<ProcessGroup>,
    /// The child's exit status once it exited (set by the task that waits on it).
    exited: tokio::sync::watch::Receiver<Option<std::process::ExitStatus>>,
    last_garbage: Arc<Mutex<Option<String>>>,
    /// Where answers may go directly, once the client offers it (read by the reading task).
    answers: Arc<OfferedAnswers>,
}

impl StdioTransport {
    /// Why a line could not be written: most often the server exited (before reading it, or
    /// at once, as a broken one does), which its status says when it is known already; the
    /// reader's "closed stdout" says the same when it notices first.
    fn stdin_closed(&self) -> String {
        let status = *self.exited.borrow();
        match status {
            Some(status) => format!("the server exited ({status}); its stdin is closed"),
            None => "the server's stdin is closed (exited?)".to_owned(),
        }
    }
}

impl Transport for StdioTransport {
    fn send(&self, message: Message) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            if self.stdin.send(message.to_bytes()).await.is_ok() {
                return Ok(());
            }
            Err(TransportError::new(self.stdin_closed()))
        })
    }

    fn answer_directly(&self, answers: Weak<dyn DirectAnswers>) {
        self.answers.offer(answers);
    }

    fn diagnostics(&self) -> Option<String> {
        let garbage = self.last_garbage.lock().ok()?.clone()?;
        Some(format!(
            "the server printed non-JSON on stdout: '{garbage}'"
        ))
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.group.terminate();
            let mut exited = self.exited.clone();
            let mut gone = async || exited.wait_for(Option::is_some).await.is_ok();
            if tokio::time::timeout(Duration::from_secs(2), gone())
                .await
                .is_err()
            {
                self.group.kill();
                gone().await;
            }
            self.group.kill();
        })
    }
}

/// Starts the child and wires its pipes.
pub fn spawn(server: &str, spec: &StdioCommand) -> Result<Opened, TransportError> {
    let mut command = match &spec.wrapper {
        Some(wrapper) => {
            let mut command = Command::new(&wrapper.program);
            command.args(&wrapper.args).arg("--").arg(&spec.command);
            command
        }
        None => Command::new(&spec.command),
    };
    if let Some(keep) = &spec.keep_env {
        command.env_clear();
        for name in keep {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
    }
    command
        .args(&spec.args)
        .envs(&spec.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().map_err(|error| {
        // The OS says "not found" for a missing working directory too: name the right one.
        if let Some(cwd) = spec.cwd.as_ref().filter(|cwd| !cwd.is_dir()) {
            return TransportError::new(format!(
                "cannot start '{}': its working directory {} does not exist",
                spec.command,
                cwd.display()
            ));
        }
        let hint = if error.kind() == std::io::ErrorKind::NotFound {
            " (is it installed and on PATH?)"
        } else {
            ""
        };
        TransportError::new(format!("cannot start '{}': {error}{hint}", spec.command))
    })?;
    let group = Arc::new(ProcessGroup::of(&child));
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(TransportError::new("the child's pipes were not created"));
    };
    let (inbound_tx, inbound) = mpsc::channel::<Inbound>(256);
    let last_garbage = Arc::new(Mutex::new(None::<String>));
    let answers = Arc::new(OfferedAnswers::default());
    let (exited_tx, exited) = tokio::sync::watch::channel(None);
    tokio::spawn(watch_exit(
        child,
        exited_tx,
        inbound_tx.clone(),
        group.clone(),
    ));
    tokio::spawn(forward_stderr(server.to_owned(), stderr));
    tokio::spawn(read_messages(
        Reading {
            server: server.to_owned(),
            inbound: inbound_tx,
            answers: answers.clone(),
            max_bytes: spec.max_message_bytes,
            last_garbage: last_garbage.clone(),
        },
        stdout,
    ));
    let transport = StdioTransport {
        stdin: Stdin::start(stdin),
        group,
        exited,
        last_garbage,
        answers,
    };
    Ok(Opened {
        transport: Arc::new(transport),
        inbound,
    })
}

/// Waits for the child to exit, and then says so: the connection is closed with its status,
/// and what is left of its process group is killed. A server that dies while a process it
/// started still holds its pipes (a helper that inherited its stdout) would otherwise look
/// alive to the gateway — no end of its stdout — and never be restarted.
async fn watch_exit(
    mut child: Child,
    exited: tokio::sync::watch::Sender<Option<std::process::ExitStatus>>,
    inbound: mpsc::Sender<Inbound>,
    group: Arc<ProcessGroup>,
) {
    let Ok(status) = child.wait().await else {
        return;
    };
    let _ = exited.send(Some(status));
    let _ = inbound
        .send(Inbound::Closed(format!("the server exited ({status})")))
        .await;
    group.kill();
}

/// The longest stderr line logged whole; past it a line is logged in pieces of this size.
const MAX_STDERR_LINE: usize = 16 * 1024;

/// Logs the server's stderr line by line until it closes. Read as bytes: a line that is not
/// UTF-8 is logged with replacement characters, and one without an end is logged in pieces,
/// so neither stops the reading — a pipe left unread would block or kill the server at its
/// next write.
async fn forward_stderr(server: String, stderr: impl AsyncRead + Unpin) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        let read = tokio::io::AsyncBufReadExt::fill_buf(&mut reader).await;
        let chunk = match read {
            Ok([]) | Err(_) => break,
            Ok(chunk) => chunk,
        };
        let room = MAX_STDERR_LINE.saturating_sub(line.len()).max(1);
        let (taken, ended) = match chunk.iter().position(|byte| *byte == b'\n') {
            Some(at) if at < room => (at + 1, true),
            _ => (chunk.len().min(room), false),
        };
        line.extend_from_slice(&chunk[..taken]);
        tokio::io::AsyncBufReadExt::consume(&mut reader, taken);
        if ended || line.len() >= MAX_STDERR_LINE {
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            tracing::info!(target: "switchboard::upstream::stderr", server = %server, "{text}");
            line.clear();
        }
    }
    if !line.is_empty() {
        let text = String::from_utf8_lossy(&line);
        tracing::info!(target: "switchboard::upstream::stderr", server = %server, "{text}");
    }
}

/// What the task reading the server's stdout needs.
struct Reading {
    server: String,
    inbound: mpsc::Sender<Inbound>,
    answers: Arc<OfferedAnswers>,
    max_bytes: usize,
    last_garbage: Arc<Mutex<Option<String>>>,
}

impl Reading {
    /// Hands one message on: an answer straight to its request when nothing read before
    /// it still waits in the channel, everything else through the channel. False when
    /// nobody listens any more.
    async fn deliver(&self, message: Message) -> bool {
        let message = if self.nothing_queued() {
            match self.answers.hand_over(message) {
                None => return true,
                Some(message) => message,
            }
        } else {
            message
        };
        self.inbound.send(Inbound::Message(message)).await.is_ok()
    }

    fn nothing_queued(&self) -> bool {
        self.inbound.capacity() == self.inbound.max_capacity()
    }
}

async fn read_messages(reading: Reading, stdout: impl AsyncRead + Unpin) {
    let Reading {
        server,
        inbound,
        max_bytes,
        last_garbage,
        ..
    } = &reading;
    let max_bytes = *max_bytes;
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::with_capacity(4096);
    let reason = loop {
        line.clear();
        match read_bounded_line(&mut reader, &mut line, max_bytes).await {
            Ok(0) => {
                let garbage = last_garbage.lock().ok().and_then(|g| g.clone());
                break match garbage {
                    Some(text) => {
                        format!("the server closed stdout; it printed non-JSON output: '{text}'")
                    }
                    None => "the server closed stdout (exited?)".to_owned(),
                };
            }
            Ok(_) => {}
            Err(Unread::TooLarge(Some(id))) => {
                // That one answer fails; the server and the other calls go on.
                let limit = format!(
                    "the server's answer is larger than the {max_bytes}-byte limit (gateway.max_message_bytes)"
                );
                let failed = Message::Error {
                    id: Some(id),
                    error: RpcError::new(code::INTERNAL_ERROR, limit),
                };
                if !reading.deliver(failed).await {
                    return;
                }
                continue;
            }
            Err(Unread::TooLarge(None)) => {
                tracing::warn!(target: "switchboard::upstream", server = %server, "dropped a message over the {max_bytes}-byte limit that answers no request");
                continue;
            }
            Err(Unread::Failed(error)) => {
                break format!("reading the server's stdout failed: {error}");
            }
        }
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            continue;
        }
        match Message::parse(trimmed) {
            Ok(message) => {
                if !reading.deliver(message).await {
                    return;
                }
            }
            Err(malformed) => {
                let text: String = String::from_utf8_lossy(trimmed).chars().take(200).collect();
                tracing::warn!(target: "switchboard::upstream", server = %server, "ignoring invalid message on stdout ({}): {text}", malformed.error.message);
                if let Ok(mut slot) = last_garbage.lock() {
                    *slot = Some(text);
                }
            }
        }
    };
    let _ = inbound.send(Inbound::Closed(reason)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(command: &str, cwd: Option<&str>) -> StdioCommand {
        StdioCommand {
            command: command.to_owned(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: cwd.map(PathBuf::from),
            max_message_bytes: 1 << 20,
            wrapper: None,
            keep_env: None,
        }
    }

    /// Takes every answer it is offered, and keeps their ids.
    #[derive(Default)]
    struct Taken(Mutex<Vec<crate::jsonrpc::RequestId>>);

    impl DirectAnswers for Taken {
        fn answer(&self, message: Message) -> Option<Message> {
            match message {
                Message::Response { id, .. } => {
                    if let Ok(mut taken) = self.0.lock() {
                        taken.push(id);
                    }
                    None
                }
                other => Some(other),
            }
        }
    }

    /// A server that exits while a process it started still holds its stdout is seen to
    /// have exited — its status said — and that process is killed with its group.
    #[tokio::test]
    async fn a_server_that_exits_is_noticed_though_a_child_of_it_holds_its_pipes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let marker = dir.path().join("helper.pid");
        let mut spec = command("sh", None);
        spec.args = vec![
            "-c".to_owned(),
            format!("sleep 30 & echo $! > {}; exit 3", marker.display()),
        ];
        let Opened { mut inbound, .. } = spawn("s", &spec).expect("starts");
        let closed = tokio::time::timeout(std::time::Duration::from_secs(5), async {
            loop {
                match inbound.recv().await {
                    Some(Inbound::Closed(reason)) => return reason,
                    Some(_) => {}
                    None => return "the channel ended".to_owned(),
                }
            }
        })
        .await
        .expect("noticed within 5 s");
        assert!(
            closed.contains("exited") && closed.contains('3'),
            "{closed}"
        );
        let helper: i32 = std::fs::read_to_string(&marker)
            .expect("the helper's pid")
            .trim()
            .parse()
            .expect("a pid");
        let gone = (0..50).any(|_| {
            let alive = std::path::Path::new(&format!("/proc/{helper}")).exists()
                && !std::fs::read_to_string(format!("/proc/{helper}/stat"))
                    .unwrap_or_default()
                    .contains(") Z ");
            if alive {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            !alive
        });
        assert!(gone, "the helper {helper} outlived its server");
    }

    /// A server's stderr is read to its end whatever it holds — a line that is not UTF-8, a
    /// line far longer than any logged whole — so the server never blocks writing to it.
    #[tokio::test]
    async fn stderr_is_drained_whatever_it_holds() {
        let (mut server, gateway) = tokio::io::duplex(64);
        let forwarding = tokio::spawn(forward_stderr("s".to_owned(), gateway));
        let written = tokio::time::timeout(std::time::Duration::from_secs(5), async {
            use tokio::io::AsyncWriteExt;
            server.write_all(b"caf\xe9 \xff\xfe not UTF-8\n").await?;
            server.write_all(&vec![b'x'; 3 * MAX_STDERR_LINE]).await?;
            server.write_all(b"\nafter\n").await?;
            server.shutdown().await
        })
        .await;
        assert!(
            matches!(written, Ok(Ok(()))),
            "the writes went through: {written:?}"
        );
        drop(server);
        tokio::time::timeout(std::time::Duration::from_secs(5), forwarding)
            .await
            .expect("read to the end")
            .expect("joined");
    }

    #[tokio::test]
    async fn an_answer_goes_straight_to_its_request_unless_something_read_before_it_waits() {
        // An answer with nothing ahead of it, then a notification, then an answer behind it.
        let script = r#"printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{}}' '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}' '{"jsonrpc":"2.0","id":2,"result":{}}'; sleep 5"#;
        let mut spec = command("/bin/sh", None);
        spec.args = vec!["-c".into(), script.into()];
        let Opened {
            transport,
            mut inbound,
        } = spawn("s", &spec).expect("starts");
        let taken = Arc::new(Taken::default());
        transport.answer_directly(Arc::downgrade(&taken) as Weak<dyn DirectAnswers>);
        // Nothing is taken off the channel until all three lines are read.
        let read_all = async {
            while inbound.len() < 2 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(5), read_all)
            .await
            .expect("the three lines are read");
        let ids = |taken: &Taken| taken.0.lock().map(|ids| ids.clone()).unwrap_or_default();
        assert_eq!(ids(&taken), [crate::jsonrpc::RequestId::Number(1)]);
        let Some(Inbound::Message(Message::Notification { method, .. })) = inbound.recv().await
        else {
            panic!("the notification comes first on the channel");
        };
        assert_eq!(method, "notifications/message");
        let Some(Inbound::Message(Message::Response { id, .. })) = inbound.recv().await else {
            panic!("the answer read after the notification stays behind it on the channel");
        };
        assert_eq!(id, crate::jsonrpc::RequestId::Number(2));
        transport.close().await;
    }

    #[tokio::test]
    async fn a_missing_working_directory_is_named_not_blamed_on_the_command() {
        let Err(error) = spawn(
            "s",
            &command("/bin/sh", Some("/nonexistent/switchboard-dir")),
        ) else {
            panic!("a child started in a directory that does not exist");
        };
        assert!(
            error
                .0
                .contains("working directory /nonexistent/switchboard-dir does not exist"),
            "{}",
            error.0
        );
        let Err(error) = spawn("s", &command("/nonexistent/switchboard-cmd", None)) else {
            panic!("a command that does not exist started");
        };
        assert!(error.0.contains("is it installed"), "{}", error.0);
    }
}
