//! The gateway's life: no child outlives it (stdin closed, SIGTERM, SIGKILL), a caller's cancellation
//! reaches the upstream, list changes reach the client, pass-through names refuse collisions,
//! a closed stderr costs it nothing, a silent connection is closed after `header_timeout` on
//! the front and the admin endpoint.

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use support::*;
use switchboard_fixtures::client::StdioClient;

fn echo_config(dir: &std::path::Path, servers: &[&str]) -> std::path::PathBuf {
    let mut text = String::from("[gateway]\ncall_timeout = \"30s\"\n");
    for id in servers {
        text.push_str(&format!(
            "\n[servers.{id}]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&fixture())
        ));
    }
    write_config(dir, &text)
}

fn gateway(config: &std::path::Path, extra: &[&str]) -> StdioClient {
    let mut command = Command::new(switchboard());
    command
        .arg("--config")
        .arg(config)
        .args(["--log", "error", "serve"])
        .args(extra)
        .stderr(Stdio::null());
    let mut client = StdioClient::spawn(&mut command).expect("gateway");
    client.initialize().expect("initialize");
    client
}

/// Whoever starts the gateway may close its stderr or stop reading it. Log lines that cannot
/// be written are dropped; the gateway keeps its upstreams and answers calls. (tracing used to
/// report the failed write with `eprintln!`, which panicked, killing the task that logged:
/// the supervisor logging "connected" took its server's tools with it.)
#[test]
fn a_gateway_whose_stderr_is_closed_keeps_serving() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = echo_config(dir.path(), &["echo"]);

    // Over stdio, with stderr a pipe nobody reads from the start.
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut command = Command::new(switchboard());
    command
        .arg("--config")
        .arg(&config)
        .args(["--log", "debug", "serve"])
        .stderr(writer);
    let mut client = StdioClient::spawn(&mut command).expect("gateway");
    client.initialize().expect("initialize");
    let result = client
        .request(
            "tools/call",
            json!({"name": "echo__echo", "arguments": {"message": "still here"}}),
        )
        .expect("the call is answered");
    assert_eq!(result["content"][0]["text"], "still here", "{result}");

    // Over HTTP, with stderr closed once the gateway listens.
    let gateway = HttpGateway::start_then_close_stderr(&config);
    let result = python_client(&[
        "--http",
        &gateway.url,
        "call",
        "echo__echo",
        r#"{"message": "still here"}"#,
    ]);
    assert_eq!(result["content"][0]["text"], "still here", "{result}");
}

/// Whoever starts the gateway may pipe its stderr and never read it (MCP clients may ignore
/// stderr): once the pipe is full, log lines are dropped, and the gateway — on stdio, one
/// runtime thread — goes on answering instead of blocking on a log write. Here a server
/// writes 20,000 lines to its stderr, which the gateway logs.
#[test]
fn a_gateway_whose_stderr_is_never_read_keeps_serving() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[servers.echo]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n",
            quoted(&format!(
                "yes a-line-on-the-servers-stderr | head -n 20000 >&2 & exec {} echo",
                fixture()
            ))
        ),
    );
    let (reader, writer) = std::io::pipe().expect("pipe");
    let mut command = Command::new(switchboard());
    command
        .arg("--config")
        .arg(&config)
        .args(["--log", "info", "serve"])
        .stderr(writer);
    let mut client = StdioClient::spawn(&mut command).expect("gateway");
    // On a thread: a gateway that blocks would hold the test for ever, not fail it.
    let (done, answered) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        client.initialize().expect("initialize");
        std::thread::sleep(Duration::from_millis(500));
        for n in 0..20 {
            let result = client
                .request(
                    "tools/call",
                    json!({"name": "echo__echo", "arguments": {"message": format!("call {n}")}}),
                )
                .expect("the call is answered");
            assert_eq!(result["content"][0]["text"], format!("call {n}"));
        }
        let _ = done.send(());
    });
    answered
        .recv_timeout(Duration::from_secs(30))
        .expect("the calls are answered while stderr is never read");
    drop(reader);
}

fn child_pids(client: &mut StdioClient, servers: &[&str]) -> Vec<u32> {
    servers
        .iter()
        .map(|id| {
            let result = client
                .request("tools/call", json!({"name": format!("{id}__pid")}))
                .expect("pid");
            result["content"][0]["text"]
                .as_str()
                .and_then(|t| t.parse().ok())
                .expect("a pid")
        })
        .collect()
}

#[test]
fn no_child_outlives_the_gateway() {
    let dir = tempfile::tempdir().expect("tempdir");
    let servers = ["a", "b", "c"];
    let config = echo_config(dir.path(), &servers);

    let mut closed = gateway(&config, &[]);
    let pids = child_pids(&mut closed, &servers);
    assert!(pids.iter().all(|pid| alive(*pid)));
    let reaper = children_named(closed.pid(), "sh");
    assert_eq!(reaper.len(), 1, "one reaper watches the servers' groups");
    let status = closed
        .close_and_wait(Duration::from_secs(10))
        .expect("exits when stdin closes");
    assert!(status.success(), "{status:?}");
    assert!(
        wait_for(Duration::from_secs(5), || pids
            .iter()
            .chain(&reaper)
            .all(|pid| group_members(*pid).is_empty())
            .then_some(()))
        .is_some(),
        "orphans: {pids:?}, reaper {reaper:?}"
    );

    let mut terminated = gateway(&config, &[]);
    let pids = child_pids(&mut terminated, &servers);
    let gateway_pid = nix::unistd::Pid::from_raw(i32::try_from(terminated.pid()).expect("pid"));
    nix::sys::signal::kill(gateway_pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let status = terminated
        .wait(Duration::from_secs(10))
        .expect("exits on SIGTERM");
    assert!(
        status.success(),
        "exit code 0 after SIGTERM, got {status:?}"
    );
    assert!(
        wait_for(Duration::from_secs(5), || pids
            .iter()
            .all(|pid| !alive(*pid))
            .then_some(()))
        .is_some(),
        "orphans: {pids:?}"
    );
}

/// Every live process (a zombie counts as gone) as (pid, command name, parent, group), from
/// `/proc`.
fn processes() -> Vec<(u32, String, u32, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // "pid (comm) state ppid pgrp ..."
            let (head, rest) = stat.rsplit_once(')')?;
            let name = head.split_once('(')?.1.to_owned();
            let fields: Vec<&str> = rest.split_whitespace().collect();
            if fields.first() == Some(&"Z") {
                return None;
            }
            Some((
                pid,
                name,
                fields.get(1)?.parse().ok()?,
                fields.get(2)?.parse().ok()?,
            ))
        })
        .collect()
}

/// The live processes of a process group.
fn group_members(pgid: u32) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|(_, _, _, group)| *group == pgid)
        .map(|(pid, ..)| pid)
        .collect()
}

/// The live children of `parent` running `name`.
fn children_named(parent: u32, name: &str) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|(_, command, ppid, _)| *ppid == parent && command == name)
        .map(|(pid, ..)| pid)
        .collect()
}

#[test]
fn a_killed_gateway_leaves_no_server_behind() {
    // A server whose group keeps a process that does not stop when stdin closes, like an
    // `npx` wrapper's node process with a timer.
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[servers.lingering]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n",
        quoted(&format!("sleep 600 & exec {} echo", fixture()))
    );
    let config = write_config(dir.path(), &text);
    let mut client = gateway(&config, &[]);
    let pgid = child_pids(&mut client, &["lingering"])[0];
    assert_eq!(group_members(pgid).len(), 2, "the server and its sleep");
    let gateway_pid = nix::unistd::Pid::from_raw(i32::try_from(client.pid()).expect("pid"));
    nix::sys::signal::kill(gateway_pid, nix::sys::signal::Signal::SIGKILL).expect("SIGKILL");
    assert!(
        wait_for(Duration::from_secs(5), || group_members(pgid)
            .is_empty()
            .then_some(()))
        .is_some(),
        "left behind: {:?}",
        group_members(pgid)
    );
}

#[test]
fn cancelling_a_call_cancels_it_upstream() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("cancelled.log");
    let text = format!(
        "[servers.slow]\ncommand = {}\nargs = [\"echo\"]\nenv = {{ FIXTURE_CANCEL_LOG = {} }}\n",
        quoted(&fixture()),
        quoted(&log.display().to_string())
    );
    let config = write_config(dir.path(), &text);
    let gateway_bin = switchboard().display().to_string();
    let config_arg = config.display().to_string();
    let stdio = python_client(&[
        "--era",
        "legacy",
        "cancel",
        "slow__sleep",
        r#"{"ms": 20000}"#,
        "1",
        "--stdio",
        "--",
        &gateway_bin,
        "--config",
        &config_arg,
        "--log",
        "error",
        "serve",
    ]);
    assert_eq!(stdio["cancelled"], true);
    let seen = wait_for(Duration::from_secs(5), || {
        std::fs::read_to_string(&log)
            .ok()
            .filter(|t| t.contains("cancelled"))
    });
    assert!(
        seen.is_some(),
        "the upstream never saw the cancellation (stdio, legacy)"
    );
    std::fs::remove_file(&log).expect("reset the log");

    let http = HttpGateway::start(&config, &[]);
    let answer = python_client(&[
        "--era",
        "modern",
        "--http",
        &http.url,
        "cancel",
        "slow__sleep",
        r#"{"ms": 20000}"#,
        "1",
    ]);
    assert_eq!(answer["cancelled"], true);
    let seen = wait_for(Duration::from_secs(5), || {
        std::fs::read_to_string(&log)
            .ok()
            .filter(|t| t.contains("cancelled"))
    });
    assert!(
        seen.is_some(),
        "the upstream never saw the cancellation (HTTP, modern: closed stream)"
    );
}

#[test]
fn upstream_list_changes_reach_the_client() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = echo_config(dir.path(), &["live"]);
    let mut client = gateway(&config, &[]);
    let before = client.request("tools/list", json!({})).expect("list");
    assert!(!before.to_string().contains("live__extra_tool"));
    // The notification may come before or after the call's answer: read both, in any order
    // (`request` would skip a notification that arrives first).
    client
        .send_line(r#"{"jsonrpc":"2.0","id":"change","method":"tools/call","params":{"name":"live__change_tools"}}"#)
        .expect("change");
    let (mut announced, mut answered) = (false, false);
    for _ in 0..40 {
        let message = client.read_message().expect("a message");
        if message["method"] == "notifications/tools/list_changed" {
            announced = true;
        }
        if message["id"] == "change" {
            answered = true;
        }
        if announced && answered {
            break;
        }
    }
    assert!(
        announced,
        "no notifications/tools/list_changed reached the client"
    );
    // The catalog follows the upstream's change (a start-up change may have been announced
    // too; the client re-lists until it sees the new tool, as a real client would).
    let started = std::time::Instant::now();
    loop {
        let after = client.request("tools/list", json!({})).expect("list");
        if after.to_string().contains("live__extra_tool") {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{after}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let call = client
        .request(
            "tools/call",
            json!({"name": "live__extra_tool", "arguments": {"message": "new"}}),
        )
        .expect("call");
    assert_eq!(call["content"][0]["text"], "new");
}

#[test]
fn pass_through_names_refuse_collisions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = echo_config(dir.path(), &["one", "two"]);
    let output = Command::new(switchboard())
        .arg("--config")
        .arg(&config)
        .args(["serve", "--no-prefix"])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--no-prefix: tool names collide") && stderr.contains("'echo'"),
        "{stderr}"
    );

    let single = echo_config(dir.path(), &["only"]);
    let mut client = gateway(&single, &["--no-prefix"]);
    let call = client
        .request(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "bare"}}),
        )
        .expect("bare name");
    assert_eq!(call["content"][0]["text"], "bare");
}

/// `[gateway] header_timeout` reaches both listeners of `serve`: a connection that sends half
/// a request's headers is closed once it passes, on the MCP front and on the admin endpoint.
#[test]
fn silent_connections_are_closed_after_the_configured_header_timeout() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), "[gateway]\nheader_timeout = \"300ms\"\n");
    let admin = dir.path().join("admin.json");
    let admin_arg = admin.display().to_string();
    let gateway = HttpGateway::start(&config, &["--admin-file", &admin_arg]);
    let admin_url = wait_for(Duration::from_secs(10), || {
        let file: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&admin).ok()?).ok()?;
        file["url"].as_str().map(str::to_owned)
    })
    .expect("the gateway writes its admin file");
    for authority in [gateway.authority(), admin_url.replace("http://", "")] {
        let mut stream = std::net::TcpStream::connect(&authority).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("read timeout");
        stream
            .write_all(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .expect("write");
        let started = std::time::Instant::now();
        let mut read = Vec::new();
        // An end of stream or a reset: closed; the read timing out: still open.
        let still_open = matches!(stream.read_to_end(&mut read),
            Err(error) if matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut));
        assert!(
            !still_open,
            "{authority}: a half-sent head still holds its connection after 5 s"
        );
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "{authority}: closed before the timeout"
        );
    }
}

/// An operator command reaches the gateway only if it runs the config the command would
/// load — `./switchboard.toml` included, as `status` judges — so a command typed in another
/// project's directory never changes this gateway.
#[test]
fn an_operator_command_never_reaches_a_gateway_running_another_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), "[gateway]\n");
    let admin = dir.path().join("admin.json");
    let admin_arg = admin.display().to_string();
    let _gateway = HttpGateway::start(&config, &["--admin-file", &admin_arg]);
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    std::fs::write(elsewhere.join("switchboard.toml"), "[gateway]\n").expect("write");
    let run = |args: &[&str]| {
        Command::new(switchboard())
            .args(args)
            .current_dir(&elsewhere)
            .env("SWITCHBOARD_ADMIN_FILE", &admin)
            .env("XDG_CONFIG_HOME", dir.path().join("no-user-config"))
            .env_remove("SWITCHBOARD_CONFIG")
            .output()
            .expect("run switchboard")
    };
    let refused = run(&["servers", "list"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains("switchboard.toml") && stderr.contains("the config this command loads"),
        "{stderr}"
    );
    let config_arg = config.display().to_string();
    let reached = run(&["--config", &config_arg, "servers", "list"]);
    assert!(
        reached.status.success(),
        "{}",
        String::from_utf8_lossy(&reached.stderr)
    );
}

/// `tier set --session` of a session the gateway does not hold is refused (404, exit 1), not
/// reported done while nothing changed.
#[test]
fn a_tier_for_an_unknown_session_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), "[gateway]\n");
    let admin = dir.path().join("admin.json");
    let admin_arg = admin.display().to_string();
    let _gateway = HttpGateway::start(&config, &["--admin-file", &admin_arg]);
    let output = run_switchboard(
        &config,
        &[
            "tier",
            "set",
            "fast",
            "--session",
            "typo",
            "--admin-file",
            &admin_arg,
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no session 'typo'"), "{stderr}");
}

/// The pids of processes whose command line holds `marker`.
fn pids_with(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| String::from_utf8_lossy(&line).contains(marker))
        })
        .filter(|pid| alive(*pid))
        .collect()
}

/// A server removed while it is still starting (its handshake not answered yet) leaves no
/// process behind: nothing else could close it.
#[test]
fn a_server_removed_mid_handshake_leaves_no_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = format!("slow-start-{}", std::process::id());
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\nconnect_timeout = \"60s\"\n\n[servers.slow]\ncommand = {}\nargs = [\"echo\", \"--start-delay-ms\", \"60000\", \"--name\", {}]\n",
            quoted(&fixture()),
            quoted(&marker)
        ),
    );
    let admin = dir.path().join("admin.json");
    let admin_arg = admin.display().to_string();
    let _gateway = HttpGateway::start(&config, &["--admin-file", &admin_arg]);
    let child = wait_for(Duration::from_secs(10), || {
        pids_with(&marker).first().copied()
    })
    .expect("the server's process starts");
    let removed = run_switchboard(
        &config,
        &["servers", "remove", "slow", "--admin-file", &admin_arg],
    );
    assert!(
        removed.status.success(),
        "{}",
        String::from_utf8_lossy(&removed.stderr)
    );
    assert!(
        wait_for(Duration::from_secs(10), || (!alive(child)).then_some(())).is_some(),
        "the removed server's process {child} still runs"
    );
}
