//! Sandboxed stdio servers end to end: a real Python SDK server whose tools try what a sandbox
//! must stop — read outside its paths, write into the gateway's config directory, read the
//! gateway's secret (its own environment and the gateway's `/proc` entry), fork 1,000
//! processes, allocate 4 GiB, open a TCP connection — each refused inside the server (the
//! tool answers the error), while the same server unsandboxed succeeds at each, and the
//! gateway and both servers keep answering afterwards (and, as root, UDP is stopped by the
//! server's own network namespace). `status` says what is in force.

mod support;

use std::net::TcpListener;
use std::process::Command;

use serde_json::{Value, json};
use support::*;

/// The text of each call's first content item.
fn texts(results: &Value) -> Vec<String> {
    results
        .as_array()
        .expect("an array of results")
        .iter()
        .map(|r| r["content"][0]["text"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// The Python SDK client's `calls` through a stdio gateway on `config` (one session), with
/// one more variable in the gateway's environment: the text of each result.
fn calls(config: &std::path::Path, plan: &Value, env: (&str, &str)) -> Vec<String> {
    let output = Command::new(venv_bin().join("python"))
        .arg(repo_root().join("e2e/py/client.py"))
        .args(["--stdio", "calls", &plan.to_string(), "--"])
        .arg(switchboard())
        .arg("--config")
        .arg(config)
        .arg("serve")
        .env(env.0, env.1)
        .output()
        .expect("run the client");
    assert!(
        output.status.success(),
        "client failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    texts(&stdout_json(&output))
}

#[test]
fn a_sandboxed_server_is_refused_what_its_unsandboxed_twin_may_do() {
    let dir = tempfile::tempdir().expect("temp dir");
    let conf = dir.path().join("conf");
    let private = dir.path().join("private");
    let work = dir.path().join("work");
    for d in [&conf, &private, &work] {
        std::fs::create_dir_all(d).expect("dir");
    }
    let secret_file = private.join("secret.txt");
    std::fs::write(&secret_file, "s3cret").expect("secret");
    let python = venv_bin().join("python");
    let script = repo_root().join("e2e/py/sandbox_probe.py");
    let server = format!(
        "command = {}\nargs = [{}]\n",
        quoted(&python.display().to_string()),
        quoted(&script.display().to_string())
    );
    let config = write_config(
        &conf,
        &format!(
            "[gateway.sandbox]\nmemory = \"1GiB\"\ncpu = \"1m\"\nfiles = 256\nprocesses = 64\nwritable = [{}]\nnetwork = \"none\"\n\n[servers.boxed]\n{server}\n[servers.free]\n{server}sandbox = false\n",
            quoted(&work.display().to_string())
        ),
    );
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let port = listener.local_addr().expect("address").port();
    let attempts = |server: &str| {
        let tool = |name: &str| format!("{server}__{name}");
        vec![
            json!([tool("read_file"), {"path": secret_file.display().to_string()}]),
            json!([tool("write_file"), {"path": conf.join(format!("{server}.toml")).display().to_string(), "text": "x"}]),
            json!([tool("get_env"), {"name": "SWITCHBOARD_TEST_SECRET"}]),
            json!([tool("parent_environ"), {"name": "SWITCHBOARD_TEST_SECRET"}]),
            json!([tool("fork_many"), {"count": 1000}]),
            json!([tool("allocate"), {"mib": 4096}]),
            json!([tool("connect"), {"host": "127.0.0.1", "port": port}]),
        ]
    };
    let mut plan = attempts("boxed");
    plan.extend(attempts("free"));
    // Afterwards: the sandboxed server still answers, and may write where it was allowed.
    plan.push(json!(["boxed__write_file", {"path": work.join("ok.txt").display().to_string(), "text": "fine"}]));
    plan.push(json!(["boxed__get_env", {"name": "PATH"}]));
    // UDP is outside Landlock's rules; as root the server's own network namespace stops it.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
    let udp_port = udp.local_addr().expect("address").port();
    for server in ["boxed", "free"] {
        plan.push(json!([format!("{server}__send_udp"), {"host": "127.0.0.1", "port": udp_port}]));
    }
    let texts = calls(
        &config,
        &Value::Array(plan),
        ("SWITCHBOARD_TEST_SECRET", "gateway-only"),
    );
    let (boxed, rest) = texts.split_at(7);
    let (free, after) = rest.split_at(7);
    let refused = [
        ("read", "Permission denied"),
        ("write", "Permission denied"),
        ("env", "not set"),
        ("parent env", "Permission denied"),
        ("fork", "error: after "),
        ("allocate", "MemoryError"),
        ("connect", "Permission denied"),
    ];
    for ((what, why), text) in refused.iter().zip(boxed) {
        assert!(
            text.starts_with("error:") && text.contains(why),
            "boxed {what}: {text}"
        );
    }
    assert_eq!(free[0], "read: s3cret");
    assert_eq!(free[1], "wrote");
    assert_eq!(free[2], "env: gateway-only");
    assert_eq!(free[4], "forked 1000");
    assert_eq!(free[5], "allocated 4096 MiB");
    assert_eq!(free[6], "connected");
    assert_eq!(after[0], "wrote");
    assert!(after[1].starts_with("env: "), "{}", after[1]);
    if is_root() {
        assert!(after[2].starts_with("error:"), "boxed UDP: {}", after[2]);
    }
    assert_eq!(after[3], "sent");
    assert!(!conf.join("boxed.toml").exists());
}

#[test]
fn status_shows_which_protections_are_in_force() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(
        dir.path(),
        &format!(
            "[servers.boxed]\ncommand = {}\nargs = [\"echo\"]\n[servers.boxed.sandbox]\nfiles = 64\nnetwork = \"loopback\"\n",
            quoted(&fixture())
        ),
    );
    let status = |args: &[&str]| {
        Command::new(switchboard())
            .arg("--config")
            .arg(&config)
            .args(args)
            .output()
            .expect("run switchboard")
    };
    let status_json = stdout_json(&status(&["status", "--json"]));
    let output = status(&["status"]);
    let sandbox = &status_json["servers"][0]["sandbox"];
    assert_eq!(sandbox["limits"], json!(["files 64"]), "{status_json:#}");
    assert_eq!(sandbox["env"], "filtered");
    assert!(
        sandbox["network"]
            .as_str()
            .is_some_and(|n| n.starts_with("not enforced")),
        "{sandbox}"
    );
    assert_eq!(status_json["servers"][0]["state"], "up", "{status_json:#}");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("    sandbox: limits files 64; env filtered; fs "),
        "{text}"
    );
}

/// The launcher on its own: what the exec'd command inherits.
#[test]
fn the_launcher_sets_limits_and_no_new_privs_before_it_execs() {
    let run = |flags: &[&str], script: &str| {
        let output = Command::new(switchboard())
            .arg("sandbox-exec")
            .args(flags)
            .args(["--", "/bin/sh", "-c", script])
            .output()
            .expect("run the launcher");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).trim().to_owned(),
            String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        )
    };
    let (code, out, _) = run(
        &["--files", "32", "--cpu", "7", "--memory", "2147483648"],
        "ulimit -n; ulimit -t; ulimit -v",
    );
    assert_eq!(code, Some(0));
    assert_eq!(
        out, "32\n7\n2097152",
        "files, cpu seconds, KiB of address space"
    );
    // `exec` keeps the launcher's pid, whose /proc entry the server may read.
    let (_, out, _) = run(&[], "exec grep NoNewPrivs /proc/self/status");
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        ["NoNewPrivs:", "1"]
    );
    let (code, _, err) = run(&["--memory", "lots"], "true");
    assert_eq!(code, Some(126));
    assert!(err.contains("--memory lots: not a number"), "{err}");
    let output = Command::new(switchboard())
        .args(["sandbox-exec", "--", "/nonexistent/server"])
        .output()
        .expect("run the launcher");
    assert_eq!(output.status.code(), Some(127));
    let has_nobody = std::fs::read_to_string("/etc/passwd")
        .is_ok_and(|passwd| passwd.lines().any(|l| l.starts_with("nobody:x:65534:")));
    if is_root() && has_nobody {
        let (code, out, _) = run(&["--user", "nobody"], "id -u");
        assert_eq!((code, out.as_str()), (Some(0), "65534"));
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find(|l| l.starts_with("Uid:"))
            .is_some_and(|l| l.split_whitespace().nth(2) == Some("0"))
    })
}

/// The npm reference servers (node under a directory of its own) and a Python one start and
/// serve under a strict default sandbox: what they need to start is found and made readable.
#[test]
fn the_reference_servers_run_under_the_gateways_default_sandbox() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("root");
    let root = root.canonicalize().expect("canonical root");
    let note = root.join("note.txt");
    std::fs::write(&note, "hello from the sandbox\n").expect("note");
    let node = node_bin();
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\nconnect_timeout = \"20s\"\n\n[gateway.sandbox]\nmemory = \"4GiB\"\nfiles = 512\nprocesses = 256\nwritable = [{root}]\nnetwork = \"none\"\n\n[servers.everything]\ncommand = {}\n\n[servers.fs]\ncommand = {}\nargs = [{root}]\n\n[servers.time]\ncommand = {}\n",
            quoted(&node.join("mcp-server-everything").display().to_string()),
            quoted(&node.join("mcp-server-filesystem").display().to_string()),
            quoted(&venv_bin().join("mcp-server-time").display().to_string()),
            root = quoted(&root.display().to_string()),
        ),
    );
    let plan = json!([
        ["everything__echo", {"message": "boxed"}],
        ["fs__read_text_file", {"path": note.display().to_string()}],
        ["time__get_current_time", {"timezone": "Europe/Berlin"}],
    ]);
    let texts = calls(&config, &plan, ("PATH", &node_path()));
    assert_eq!(texts[0], "Echo: boxed");
    assert_eq!(texts[1].trim(), "hello from the sandbox");
    assert!(texts[2].contains("Europe/Berlin"), "{}", texts[2]);
}

/// `servers add` writes the sandbox its flags ask for into the entry, and the running
/// gateway starts the new server in it (`status` says so).
#[test]
fn servers_add_carries_a_sandbox() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = support::live::two_servers(dir.path());
    let live = support::live::Live::start(dir.path(), config.clone(), &[]);
    let fixture = fixture();
    let added = live.json(&[
        "servers",
        "add",
        "boxed",
        "--json",
        "--memory",
        "1GiB",
        "--network",
        "loopback",
        "--",
        &fixture,
        "echo",
    ]);
    assert_eq!(added["servers"][0]["state"], "up", "{added}");
    let written = std::fs::read_to_string(&config).expect("read");
    assert!(
        written.ends_with("sandbox = { memory = \"1GiB\", network = \"loopback\" }\n"),
        "{written}"
    );
    let status = live.status();
    let boxed = status["servers"]
        .as_array()
        .and_then(|servers| servers.iter().find(|s| s["server"] == "boxed"))
        .expect("boxed in status");
    assert_eq!(
        boxed["sandbox"]["limits"],
        json!(["memory 1073741824"]),
        "{boxed:#}"
    );
    // The flags go with stdio servers only, and refuse --no-sandbox beside a setting.
    let refused = live.cli(&[
        "servers",
        "add",
        "web",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--network",
        "none",
    ]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("stdio server"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}
