//! A real `redis-server` for one test: no TCP (`--port 0`), a unix socket in a temporary
//! directory, no persistence (`--save '' --appendonly no`). [`Redis::start`] waits until the
//! server answers `PING`; dropping the value kills the server (also when the test panics).
//! [`Redis::stop`] and [`Redis::restart`] make an outage mid-test; the socket path stays the
//! same, so clients configured with [`Redis::url`] find the server again.
//!
//! A missing `redis-server` fails the test with the install hint
//! (`scripts/install-test-deps.sh`), never skips it.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a starting server may take to answer `PING`.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// A running (or, between [`Redis::stop`] and [`Redis::restart`], stopped) Redis server.
pub struct Redis {
    dir: tempfile::TempDir,
    binary: PathBuf,
    child: Option<Child>,
}

impl Redis {
    /// Starts a server and waits until it answers `PING`.
    ///
    /// # Panics
    /// When `redis-server` is not installed (the message says how to install it), or the
    /// server does not answer within ten seconds.
    pub fn start() -> Self {
        let binary = find_binary("redis-server").unwrap_or_else(|| {
            panic!(
                "redis-server is not installed (not on PATH): run `scripts/install-test-deps.sh` \
                 (it installs the redis-server package)"
            )
        });
        let dir = tempfile::Builder::new()
            .prefix("switchboard-redis-")
            .tempdir()
            .unwrap_or_else(|error| panic!("a temporary directory for Redis: {error}"));
        let mut redis = Self {
            dir,
            binary,
            child: None,
        };
        redis.restart();
        redis
    }

    /// The server's unix socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("redis.sock")
    }

    /// The URL clients connect with: `unix:///…/redis.sock`.
    pub fn url(&self) -> String {
        format!("unix://{}", self.socket().display())
    }

    /// Kills the server (SIGKILL: an outage, not a shutdown) and waits for it to exit. What
    /// it held is gone; the socket no longer answers.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_file(self.socket());
    }

    /// Starts the server again on the same socket (empty: nothing was persisted) and waits
    /// until it answers `PING`. Stops a running one first.
    ///
    /// # Panics
    /// When the server cannot be started or does not answer within ten seconds.
    pub fn restart(&mut self) {
        self.stop();
        let socket = self.socket();
        let child = Command::new(&self.binary)
            .args(["--port", "0", "--unixsocket"])
            .arg(&socket)
            .args([
                "--unixsocketperm",
                "700",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("start {}: {error}", self.binary.display()));
        self.child = Some(child);
        let started = Instant::now();
        while !answers_ping(&socket) {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("redis-server exited before answering PING ({status})");
            }
            assert!(
                started.elapsed() < READY_WITHIN,
                "redis-server did not answer PING on {} within {READY_WITHIN:?}",
                socket.display()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Runs one command with `redis-cli` (installed with `redis-server`) and returns what it
    /// printed: for a test to look at or change the server's state behind its clients' backs
    /// (`INFO commandstats`, `CLIENT KILL TYPE pubsub`, a key set directly).
    ///
    /// # Panics
    /// When `redis-cli` is missing (the message says how to install it) or fails.
    pub fn cli(&self, args: &[&str]) -> String {
        let binary = self.binary.with_file_name("redis-cli");
        let binary = if binary.is_file() {
            binary
        } else {
            find_binary("redis-cli").unwrap_or_else(|| {
                panic!(
                    "redis-cli is not installed: run `scripts/install-test-deps.sh` (the redis-server \
                     package brings it)"
                )
            })
        };
        let output = Command::new(&binary)
            .arg("-s")
            .arg(self.socket())
            .args(args)
            .output()
            .unwrap_or_else(|error| panic!("run {}: {error}", binary.display()));
        assert!(
            output.status.success(),
            "redis-cli {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Whether the server answers `PING` now.
    pub fn is_up(&self) -> bool {
        answers_ping(&self.socket())
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether a Redis server on `socket` answers `PING` with `+PONG`.
fn answers_ping(socket: &Path) -> bool {
    let Ok(mut stream) = UnixStream::connect(socket) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut answer = [0_u8; 7];
    stream.read_exact(&mut answer).is_ok() && &answer == b"+PONG\r\n"
}

/// `name` found on PATH.
fn find_binary(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_starts_stops_and_restarts_on_the_same_socket() {
        let mut redis = Redis::start();
        assert!(redis.is_up());
        assert!(redis.url().starts_with("unix:///"));
        redis.stop();
        assert!(!redis.is_up(), "a stopped server does not answer");
        redis.restart();
        assert!(
            redis.is_up(),
            "the restarted server answers on the same socket"
        );
    }
}
