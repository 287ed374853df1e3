//! One installer step as a child process: no shell, stdin closed, stdout and stderr kept (the
//! last [`TAIL_LINES`] lines, for the error message), in a process group of its own so that
//! everything it starts (npm's lifecycle scripts, pip's build backends) is killed with it —
//! on cancellation, at its deadline (a hung `docker pull` or postinstall script must not hold
//! an install open for ever), and after it exits, so nothing outlives the step.
//!
//! A step sees only the variables an installer needs ([`passed_to_installers`]: `PATH`,
//! `HOME`, locale, proxies, CA bundles, `npm_config_*`, `PIP_*`, `DOCKER_*` and the like) and
//! those its install sets: the gateway's own environment — tokens, `SWITCHBOARD_SECRET_*`,
//! cloud credentials — never reaches a package's install scripts.
//!
//! Installs are background work: every step runs at low CPU priority (`nice -n 10`), where
//! util-linux's `chrt` and `ionice` are there also in the SCHED_IDLE policy (`chrt --idle 0`)
//! and the idle IO class (`ionice -c 3 -t`), so that npm or pip yields the CPU to the
//! gateway's calls. These are plain programs run in front of the step's (no shell), each
//! `exec`ing the next, so the step keeps its pid and process group; what they set is inherited
//! by everything the step starts. Without `nice` on `PATH` the step runs at normal priority.

use std::collections::VecDeque;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard_core::process_group::ProcessGroup;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use super::InstallError;

/// Whether the gateway's variable `name` is passed on to installer steps: what npm, pip,
/// uv and docker need to find their programs, caches, registries, proxies and certificates,
/// nothing else.
pub(crate) fn passed_to_installers(name: &str) -> bool {
    const NAMES: [&str; 20] = [
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "TMPDIR",
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_RUNTIME_DIR",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "NODE_EXTRA_CA_CERTS",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "REGISTRY_AUTH_FILE",
        "CONTAINER_HOST",
    ];
    const PREFIXES: [&str; 7] = [
        "LC_",
        "npm_config_",
        "NPM_CONFIG_",
        "PIP_",
        "UV_",
        "DOCKER_",
        "CONTAINERS_",
    ];
    const PROXIES: [&str; 4] = ["http_proxy", "https_proxy", "no_proxy", "all_proxy"];
    NAMES.contains(&name)
        || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
        || PROXIES.iter().any(|proxy| name.eq_ignore_ascii_case(proxy))
}

/// How many lines of output an error keeps.
pub(crate) const TAIL_LINES: usize = 40;
/// The longest line kept, in characters.
const MAX_LINE: usize = 2000;
/// How long the output readers may take to finish once the group is gone.
const DRAIN: Duration = Duration::from_secs(2);
/// How much `nice` lowers a step's CPU priority.
pub(crate) const NICENESS: i32 = 10;

/// One command line.
pub(crate) struct Step<'a> {
    pub program: &'a str,
    pub args: Vec<String>,
    /// Variables set on top of the environment passed on ([`passed_to_installers`]).
    pub env: &'a [(String, String)],
    /// Killed with its process group, and reported as [`InstallError::TimedOut`], after
    /// this long.
    pub deadline: Duration,
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

    /// Whether the program can be started: an executable file when it is a path, else on the
    /// `PATH` the child sees.
    fn program_found(&self) -> bool {
        if self.program.contains('/') {
            executable(Path::new(self.program))
        } else {
            on_path(self.program, self.env)
        }
    }

    /// Runs the step to its end and returns its output's tail. A non-zero exit is
    /// [`InstallError::Failed`], a missing program [`InstallError::Unavailable`].
    pub(crate) async fn run(&self, cancel: &CancellationToken) -> Result<String, InstallError> {
        if cancel.is_cancelled() {
            return Err(InstallError::Cancelled);
        }
        let mut command = match low_priority().await {
            // Only for a program that is there: else `nice` would report it (exit 127)
            // instead of the spawn failing with `NotFound`, which says how to get it.
            Some(prefix) if self.program_found() => {
                let mut command = Command::new(&prefix[0]);
                command.args(&prefix[1..]).arg(self.program);
                command
            }
            _ => Command::new(self.program),
        };
        command
            .args(&self.args)
            .env_clear()
            .envs(
                std::env::vars_os()
                    .filter(|(name, _)| name.to_str().is_some_and(passed_to_installers)),
            )
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
        // Killed whole when dropped: once the step ends (below), or with this future.
        let group = ProcessGroup::led_by(child.id());
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
        let outcome: Result<ExitStatus, Stopped> = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Stopped::Cancelled),
            () = tokio::time::sleep(self.deadline) => Err(Stopped::TimedOut),
            status = child.wait() => status.map_err(|error| Stopped::Lost(error.to_string())),
        };
        // After a clean exit the group is usually gone already (ESRCH).
        drop(group);
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
            Err(Stopped::Cancelled) => Err(InstallError::Cancelled),
            Err(Stopped::TimedOut) => Err(InstallError::TimedOut {
                command: self.command_line(),
                after: self.deadline,
                output,
            }),
            Err(Stopped::Lost(error)) => Err(InstallError::Failed {
                command: self.command_line(),
                status: format!("cannot wait for it: {error}"),
                output,
            }),
        }
    }
}

/// Why a step was stopped before it exited.
enum Stopped {
    Cancelled,
    TimedOut,
    /// Waiting for it failed.
    Lost(String),
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

/// The programs (absolute paths, with their arguments) that run a step at low priority:
/// `ionice -c 3 -t chrt --idle 0 nice -n 10`, less `ionice` or `chrt` where they are not
/// there (or, for `chrt`, cannot set the policy here); `None` without `nice`. Looked up once,
/// on this process's `PATH`.
async fn low_priority() -> Option<&'static [String]> {
    static PREFIX: tokio::sync::OnceCell<Option<Vec<String>>> = tokio::sync::OnceCell::const_new();
    PREFIX
        .get_or_init(|| async {
            let nice = find("nice")?;
            let mut prefix = Vec::new();
            // util-linux's `ionice` only (older BusyBox ones lack -t): idle IO class; -t: run
            // the step even where the class cannot be set.
            if let Some(ionice) = find("ionice") {
                prefix.extend([ionice, "-c".into(), "3".into(), "-t".into()]);
            }
            // SCHED_IDLE: the step runs only when nothing else wants the core, and a woken
            // gateway thread preempts it at once, which niceness alone does not give. On 2
            // cores (`bench manager`: echo calls' p99 while 3 npm installs run / idle) it was
            // 12–23× at normal priority, ~6× with `nice -n 10`, ~2.5× with SCHED_IDLE.
            // `chrt` has no "ignore failure", so it is tried once first.
            if let Some(chrt) = find("chrt") {
                let works = Command::new(&chrt)
                    .args(["--idle", "0"])
                    .arg(&nice)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .await
                    .is_ok_and(|status| status.success());
                if works {
                    prefix.extend([chrt, "--idle".into(), "0".into()]);
                } else {
                    tracing::debug!("chrt --idle fails here: installer steps run niced only");
                }
            }
            prefix.extend([nice, "-n".into(), NICENESS.to_string()]);
            Some(prefix)
        })
        .await
        .as_deref()
}

/// `program`'s absolute path in a directory of this process's `PATH`; BusyBox's applets are
/// left out (their options differ).
fn find(program: &str) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_absolute() && executable(candidate))
        .filter(|found| {
            !std::fs::canonicalize(found)
                .is_ok_and(|real| real.file_name().is_some_and(|name| name == "busybox"))
        })
        .map(|found| found.display().to_string())
}

fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Whether `program` is an executable file in a directory of `PATH` — the one in `env` when
/// it sets one (as the child would see it), else this process's.
pub(crate) fn on_path(program: &str, env: &[(String, String)]) -> bool {
    let path = match env.iter().rev().find(|(key, _)| key == "PATH") {
        Some((_, path)) => path.into(),
        None => match std::env::var_os("PATH") {
            Some(path) => path,
            None => return false,
        },
    };
    std::env::split_paths(&path).any(|dir| executable(&dir.join(program)))
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
