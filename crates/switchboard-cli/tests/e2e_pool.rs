//! A stdio server run as a pool (`instances = N`) by the real binary: `status` shows how many
//! of its processes are up, a stdio gateway spreads calls over them, each process's log and
//! stderr lines carry its instance's label, and a hand edit of `instances` on a running HTTP
//! gateway moves the server's calls to a new pool.

mod support;

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::{Value, json};
use support::live::{Live, assert_exits, save_like_an_editor, server, two_servers, wait_status};
use support::run_bare as run;
use support::*;
use switchboard_fixtures::client::StdioClient;

fn pool_config(dir: &std::path::Path) -> std::path::PathBuf {
    let fixture = quoted(&fixture());
    write_config(
        dir,
        &format!(
            "[gateway]\ncall_timeout = \"20s\"\nconnect_timeout = \"10s\"\n\n\
             [servers.echo]\ncommand = {fixture}\nargs = [\"echo\"]\ninstances = 3\n\n\
             [servers.crashy]\ncommand = {fixture}\nargs = [\"crash-after\", \"--calls\", \"1\"]\ninstances = 2\n\n\
             [servers.single]\ncommand = {fixture}\nargs = [\"echo\"]\n"
        ),
    )
}

#[test]
fn status_shows_how_many_instances_of_a_pool_are_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = pool_config(dir.path());
    let output = run(&config, &["status", "--json", "--local"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let status = stdout_json(&output);
    let echo = server(&status, "echo").expect("echo");
    assert_eq!(echo["state"], "up", "{echo}");
    assert_eq!(
        echo["instances"],
        json!({"up": 3, "configured": 3}),
        "{echo}"
    );
    assert_eq!(echo["tools"], 7, "{echo}");
    assert_eq!(
        server(&status, "single").expect("single")["instances"],
        Value::Null
    );

    let output = run(&config, &["status", "--local"]);
    let table = String::from_utf8_lossy(&output.stdout);
    let line = |id: &str| {
        table
            .lines()
            .find(|line| line.starts_with(id))
            .unwrap_or_else(|| panic!("no line for {id}:\n{table}"))
            .to_owned()
    };
    assert!(line("echo ").contains(" up 3/3 "), "{table}");
    assert!(line("crashy ").contains(" up 2/2 "), "{table}");
    assert!(line("single ").contains(" up "), "{table}");
    assert!(!line("single ").contains('/'), "{table}");
}

#[test]
fn a_gateway_spreads_calls_over_a_pool_and_labels_each_instances_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = pool_config(dir.path());
    let log = dir.path().join("gateway.log");
    let mut command = Command::new(switchboard());
    command
        .arg("--config")
        .arg(&config)
        .args(["--log", "info", "serve"])
        .stderr(std::fs::File::create(&log).expect("log file"));
    let mut client = StdioClient::spawn(&mut command).expect("gateway");
    client.initialize().expect("initialize");

    let mut call = |name: &str, arguments: Value| {
        let result = client
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_ne!(result["isError"], true, "{name}: {result}");
        result["content"][0]["text"]
            .as_str()
            .expect("text")
            .to_owned()
    };
    let pids: BTreeSet<String> = (0..3).map(|_| call("echo__pid", json!({}))).collect();
    assert_eq!(pids.len(), 3, "three calls, three processes: {pids:?}");
    // Each of crashy's two processes answers one call, then exits saying so on stderr.
    for message in ["one", "two"] {
        assert_eq!(call("crashy__echo", json!({"message": message})), message);
    }
    let status = client
        .close_and_wait(std::time::Duration::from_secs(10))
        .expect("the gateway exits when stdin closes");
    assert!(status.success(), "{status:?}");

    let log = std::fs::read_to_string(&log).expect("read the log");
    for label in ["crashy#1", "crashy#2"] {
        assert!(
            log.lines()
                .any(|line| line.contains(label) && line.contains("crashing after 1 calls")),
            "no stderr line of {label}:\n{log}"
        );
    }
    for label in ["echo#1", "echo#2", "echo#3"] {
        assert!(
            log.lines()
                .any(|line| line.contains(label) && line.contains("connected")),
            "{label} did not log its connection:\n{log}"
        );
    }
    assert!(
        log.lines().any(|line| line.contains("single")
            && line.contains("connected")
            && !line.contains("single#")),
        "a server of one instance keeps its plain name:\n{log}"
    );
}

#[test]
fn a_hand_edit_of_instances_moves_calls_to_a_new_pool_and_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_servers(dir.path());
    let live = Live::start(dir.path(), config.clone(), &[]);
    let (pid_a, pid_b) = (live.pid("a"), live.pid("b"));
    let original = std::fs::read_to_string(&config).expect("read");

    let pooled = original.replacen(
        "[servers.b]   # the second one\n",
        "[servers.b]   # the second one\ninstances = 3\n",
        1,
    );
    assert_ne!(pooled, original);
    save_like_an_editor(&config, &pooled);
    wait_status(&live, "b runs three instances", |status| {
        server(status, "b").is_some_and(|b| {
            b["generation"] == 2 && b["instances"] == json!({"up": 3, "configured": 3})
        })
    });
    let pids: BTreeSet<u32> = (0..3).map(|_| live.pid("b")).collect();
    assert_eq!(pids.len(), 3, "{pids:?}");
    assert!(!pids.contains(&pid_b), "{pids:?}");
    assert_exits(
        pid_b,
        "b's single process outlived the pool that replaced it",
    );
    assert_eq!(live.pid("a"), pid_a, "a restarted though it did not change");

    save_like_an_editor(&config, &original);
    wait_status(&live, "b back to one process", |status| {
        server(status, "b").is_some_and(|b| b["generation"] == 3 && b["instances"].is_null())
    });
    for pid in pids {
        assert_exits(pid, "a pooled process outlived its replacement");
    }
}
