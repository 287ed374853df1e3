//! One installer step as a child process: no shell, stdin closed, stdout and stderr kept (the
//! last [`TAIL_LINES`] lines, for the error message), in a process group of its own so that
//! everything it starts (npm's lifecycle scripts, pip's build backends) is killed with it —
//! on cancellation, on a deadline, and after it exits, so nothing outlives the step.

use std::collections::VecDeque;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use super::InstallError;

/// How many lines of output an error keeps.
pub(crate) const TAIL_LINES: usize = 40;
/// The longest line kept, in characters.
const MAX_LINE: usize = 2000;
/// How long the output readers may take to finish once the group is gone.
const DRAIN: Duration = Duration::from_secs(2);

/// One command line.
pub(crate) struct Step<'a> {
    pub program: &'a str,
    pub args: Vec<String>,
    /// Variables set on top of the inherited environment.
    pub env: &'a [(String, String)],
    /// Killed and reported as failed after this long.
    pub deadline: Option<Duration>,
}

impl Step<'_> {
    /// The command line as shown in messages (quoted where needed; never run by a shell).
    pub(crate) fn command_line(&self) -> String {
        std::iter::once(self.program)
            .chain(self.args.iter().map(String::as_str))
            .map(quote)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs the step to its end and returns its output's tail. A non-zero exit is
    /// [`InstallError::Failed`], a missing program [`InstallError::Unavailable`].
    pub(crate) async fn run(&self, cancel: &CancellationToken) -> Result<String, InstallError> {
        if cancel.is_cancelled() {
            return Err(InstallError::Cancelled);
        }
        let mut command = Command::new(self.program);
        command
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        tracing::debug!(command = %self.command_line(), "installer step");
        let mut child = command.spawn().map_err(|error| {
            if error.kind() == std::io::ErrorKind::NotFound {
                InstallError::Unavailable(missing_program(self.program))
            } else {
                InstallError::Io(format!("cannot start `{}`", self.command_line()), error)
            }
        })?;
        let group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        let kill_group = || {
            if let Some(group) = group {
                // ESRCH (the group is already gone) is the usual case after a clean exit.
                let _ = killpg(group, Signal::SIGKILL);
            }
        };
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let readers = [
            child
                .stdout
                .take()
                .map(|out| tokio::spawn(keep_tail(out, tail.clone()))),
            child
                .stderr
                .take()
                .map(|err| tokio::spawn(keep_tail(err, tail.clone()))),
        ];
        let deadline = async {
            match self.deadline {
                Some(deadline) => tokio::time::sleep(deadline).await,
                None => std::future::pending().await,
            }
        };
        let outcome: Result<ExitStatus, Option<String>> = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(None),
            () = deadline => Err(Some(format!(
                "no end within {} s",
                self.deadline.unwrap_or_default().as_secs()
            ))),
            status = child.wait() => status.map_err(|error| Some(format!("cannot wait for it: {error}"))),
        };
        kill_group();
        if outcome.is_err() {
            let _ = child.wait().await;
        }
        for reader in readers.into_iter().flatten() {
            let abort = reader.abort_handle();
            if tokio::time::timeout(DRAIN, reader).await.is_err() {
                abort.abort();
            }
        }
        let output = tail
            .lock()
            .map(|lines| lines.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        match outcome {
            Ok(status) if status.success() => Ok(output),
            Ok(status) => Err(InstallError::Failed {
                command: self.command_line(),
                status: status.to_string(),
                output,
            }),
            Err(None) => Err(InstallError::Cancelled),
            Err(Some(status)) => Err(InstallError::Failed {
                command: self.command_line(),
                status,
                output,
            }),
        }
    }
}

/// Keeps the last [`TAIL_LINES`] lines of `stream` in `tail`.
async fn keep_tail(stream: impl AsyncRead + Unpin, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text: String = text.trim_end().chars().take(MAX_LINE).collect();
        if text.is_empty() {
            continue;
        }
        if let Ok(mut tail) = tail.lock() {
            if tail.len() == TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(text);
        }
    }
}

/// What to do about a program that is not there.
pub(crate) fn missing_program(program: &str) -> String {
    match Path::new(program).file_name().and_then(|n| n.to_str()) {
        Some("npm") => "npm is not on PATH: install Node.js, which brings npm \
                        (https://nodejs.org, or the system's package manager)"
            .to_owned(),
        Some("python3") => "python3 is not on PATH: install Python 3 with its venv module \
                            (https://www.python.org, or e.g. `apt install python3-venv`)"
            .to_owned(),
        Some("docker") => "docker is not on PATH: install Docker \
                           (https://docs.docker.com/get-docker/)"
            .to_owned(),
        _ => format!("{program} is not there"),
    }
}

/// Whether `program` is an executable file in a directory of `PATH` — the one in `env` when
/// it sets one (as the child would see it), else this process's.
pub(crate) fn on_path(program: &str, env: &[(String, String)]) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let path = match env.iter().rev().find(|(key, _)| key == "PATH") {
        Some((_, path)) => path.into(),
        None => match std::env::var_os("PATH") {
            Some(path) => path,
            None => return false,
        },
    };
    std::env::split_paths(&path).any(|dir| {
        std::fs::metadata(dir.join(program))
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    })
}

fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
