//! The live-configuration tests' gateway: a real `serve --http` with its own admin file,
//! driven through the CLI, the official Python SDK client and hand edits of its file.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::*;

/// A commented config with two echo servers, `a` and `b`.
pub fn two_servers(dir: &Path) -> PathBuf {
    let fixture = quoted(&fixture());
    let text = format!(
        "# The team's gateway: keep this comment.\n\
         [gateway]\n\
         call_timeout = \"30s\"   # slow tools are fine\n\
         connect_timeout = \"5s\"\n\
         \n\
         # The first echo server.\n\
         [servers.a]\n\
         command = {fixture}\n\
         args = [\"echo\"]\n\
         \n\
         [servers.b]   # the second one\n\
         command = {fixture}\n\
         args = [\"echo\"]\n"
    );
    write_config(dir, &text)
}

/// The gateway and the admin file its CLI commands use.
pub struct Live {
    pub gateway: HttpGateway,
    pub config: PathBuf,
    pub admin: PathBuf,
}

impl Live {
    pub fn start(dir: &Path, config: PathBuf, extra: &[&str]) -> Self {
        Self::start_with_env(dir, config, extra, &[])
    }

    /// Like `start`, with `env` added to the gateway's environment.
    pub fn start_with_env(
        dir: &Path,
        config: PathBuf,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let admin = dir.join("admin.json");
        let admin_arg = admin.display().to_string();
        let mut args = vec!["--admin-file", admin_arg.as_str()];
        args.extend_from_slice(extra);
        let gateway = HttpGateway::start_with_env(&config, &args, env);
        Self {
            gateway,
            config,
            admin,
        }
    }

    /// `switchboard --config CONFIG ARGS... --admin-file ADMIN`.
    pub fn cli(&self, args: &[&str]) -> Output {
        // Before a stdio server's `--`, which ends the options.
        let admin = self.admin.display().to_string();
        let split = args.iter().position(|a| *a == "--").unwrap_or(args.len());
        let mut all: Vec<&str> = args[..split].to_vec();
        all.extend(["--admin-file", admin.as_str()]);
        all.extend_from_slice(&args[split..]);
        run_switchboard(&self.config, &all)
    }

    /// Like `cli`, asserting success; its stdout as JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        let output = self.cli(args);
        assert!(
            output.status.success(),
            "switchboard {args:?} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        stdout_json(&output)
    }

    pub fn status(&self) -> Value {
        self.json(&["status", "--json"])
    }

    /// The Python SDK client's arguments for `action` on a legacy session with the gateway.
    pub fn client_args<'a>(&'a self, action: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec!["--era", "legacy", "--http", self.gateway.url.as_str()];
        args.extend_from_slice(action);
        args
    }

    pub fn call(&self, tool: &str, arguments: &str) -> Value {
        python_client(&self.client_args(&["call", tool, arguments]))
    }

    pub fn call_output(&self, tool: &str, arguments: &str) -> Output {
        python_client_output(&self.client_args(&["call", tool, arguments]))
    }

    /// Starts `SERVER__sleep` for `ms` in the background and waits until the gateway counts
    /// it in flight on that server.
    pub fn call_in_flight(&self, id: &str, ms: u64) -> Child {
        let (tool, arguments) = (format!("{id}__sleep"), format!(r#"{{"ms": {ms}}}"#));
        let slow = python_in_background(&self.client_args(&["call", &tool, &arguments]));
        wait_status(self, "the call in flight", |status| {
            server(status, id).is_some_and(|s| s["in_flight"] == 1)
        });
        slow
    }

    /// Starts the Python SDK client's `watch` (a session that waits for `list_changed`, then
    /// calls `tool`) and returns once its session is open.
    pub fn watch(&self, tool: &str, arguments: &str) -> Child {
        let mut client = python_in_background(&self.client_args(&["watch", tool, arguments]));
        wait_ready(&mut client);
        client
    }

    pub fn pid(&self, server: &str) -> u32 {
        let result = self.call(&format!("{server}__pid"), "{}");
        text_of(&result).parse().expect("a pid")
    }
}

pub fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

pub fn server<'a>(status: &'a Value, id: &str) -> Option<&'a Value> {
    status["servers"]
        .as_array()?
        .iter()
        .find(|s| s["server"] == id)
}

/// The Python SDK client in the background (its stderr piped, to wait for "ready").
pub fn python_in_background(args: &[&str]) -> Child {
    Command::new(venv_bin().join("python"))
        .arg(repo_root().join("e2e/py/client.py"))
        .args(args)
        .env("PATH", node_path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python client")
}

pub fn finish(child: Child) -> Value {
    let output = child.wait_with_output().expect("the Python client ends");
    assert!(
        output.status.success(),
        "the Python SDK client failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout_json(&output)
}

/// Waits until the background client printed `ready` on stderr.
pub fn wait_ready(child: &mut Child) {
    use std::io::BufRead;
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = std::io::BufReader::new(stderr).lines();
    loop {
        let line = lines
            .next()
            .expect("the client ended before it was ready")
            .expect("read");
        if line.trim() == "ready" {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
}

/// Writes `text` over `path` the way editors do: a temp file renamed over the original.
pub fn save_like_an_editor(path: &Path, text: &str) {
    let temp = path.with_extension("swp");
    std::fs::write(&temp, text).expect("write");
    std::fs::rename(&temp, path).expect("rename");
}

/// Waits until `status` satisfies `check`.
pub fn wait_status(live: &Live, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    wait_for(Duration::from_secs(15), || {
        last = live.status();
        check(&last).then(|| last.clone())
    })
    .unwrap_or_else(|| panic!("{what}: not seen within 15 s; last status:\n{last:#}"))
}

/// Processes whose environment holds `marker` (a server started with `--env`).
pub fn processes_marked(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.windows(marker.len()).any(|w| w == marker.as_bytes()))
                && alive(*pid)
        })
        .collect()
}

/// Waits until process `pid` has exited (10 s at most), else fails the test with `what`.
pub fn assert_exits(pid: u32, what: &str) {
    let gone = wait_for(Duration::from_secs(10), || (!alive(pid)).then_some(()));
    assert!(gone.is_some(), "{what} (process {pid} is still running)");
}
