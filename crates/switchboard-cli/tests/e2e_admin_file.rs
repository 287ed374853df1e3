//! The admin file names the gateway operators reach. Two gateways on one admin file: the
//! first, still running, keeps it. A stdio `serve` launched beside a running HTTP gateway
//! (as a desktop client would) neither takes the file over nor removes it when it exits, so
//! operator commands keep reaching the HTTP one; a start that fails leaves it alone too.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use support::*;

/// The pid the admin file at `path` names.
fn owner(path: &std::path::Path) -> Option<u64> {
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    file["pid"].as_u64()
}

/// Where `status` on `config` finds its answer ("gateway at URL" or "local ...").
fn status_source(config: &std::path::Path, admin: &str) -> String {
    let output = run_bare(config, &["status", "--json", "--admin-file", admin]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout_json(&output)["source"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// An HTTP gateway on a config of its own, with its admin file in the same temp dir: the
/// dir (kept while the test runs), the config, the admin file and its argument, the gateway.
fn first_gateway() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    String,
    HttpGateway,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), "[gateway]\n");
    let admin = dir.path().join("admin.json");
    let admin_arg = admin.display().to_string();
    let first = HttpGateway::start(&config, &["--admin-file", &admin_arg]);
    (dir, config, admin, admin_arg, first)
}

/// A stdio gateway started beside a running HTTP gateway on the same config and admin file
/// leaves that gateway's file alone, running and after it exits.
#[test]
fn a_second_gateway_leaves_the_first_gateways_admin_file_alone() {
    let (_dir, config, admin, admin_arg, mut first) = first_gateway();
    let first_pid = u64::from(first.child.id());
    assert_eq!(owner(&admin), Some(first_pid));
    let reaches_first = status_source(&config, &admin_arg);
    assert!(reaches_first.starts_with("gateway at "), "{reaches_first}");

    let mut second = Command::new(switchboard())
        .arg("--config")
        .arg(&config)
        .args(["serve", "--admin-file", &admin_arg])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a stdio gateway");
    let stderr = second.stderr.take().expect("stderr");
    let (lines, said) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    // The second gateway speaks of the admin file once it has decided about it.
    let notice = said
        .iter()
        .find(|line| line.contains(&admin_arg))
        .expect("the second gateway says what it did with the admin file");
    assert!(notice.contains("keeps the file"), "{notice}");
    assert!(notice.contains("--admin-file"), "{notice}");
    assert_eq!(
        owner(&admin),
        Some(first_pid),
        "the second gateway took the admin file over"
    );
    assert_eq!(status_source(&config, &admin_arg), reaches_first);

    // Its client goes away: the second gateway exits, the first's file stays.
    drop(second.stdin.take());
    wait_for(Duration::from_secs(15), || second.try_wait().ok().flatten())
        .expect("the stdio gateway exits when its stdin closes");
    assert_eq!(
        owner(&admin),
        Some(first_pid),
        "the exiting second gateway removed or replaced the first's admin file"
    );
    assert_eq!(status_source(&config, &admin_arg), reaches_first);

    first.terminate();
    assert!(!admin.exists(), "the first gateway removed its own file");
}

/// The admin file names the gateway that serves: a second `serve` that cannot start (its
/// port is taken) leaves the first one's file alone, and a gateway that stops removes its
/// own.
#[test]
fn the_admin_file_belongs_to_the_gateway_that_serves() {
    let (_dir, config, admin, admin_arg, mut first) = first_gateway();
    assert_eq!(owner(&admin), Some(u64::from(first.child.id())));
    let second = Command::new(switchboard())
        .arg("--config")
        .arg(&config)
        .args([
            "serve",
            "--http",
            &first.authority(),
            "--admin-file",
            &admin_arg,
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run a second gateway");
    assert!(!second.status.success(), "the port is taken");
    assert_eq!(
        owner(&admin),
        Some(u64::from(first.child.id())),
        "the failed start left the running gateway's admin file"
    );
    first.terminate();
    assert!(
        !admin.exists(),
        "the stopped gateway removed its admin file"
    );
}

/// A gateway left unadvertised takes the admin file once the gateway that kept it stops,
/// so operator commands reach the one still running.
#[test]
fn an_unadvertised_gateway_takes_the_file_once_the_first_stops() {
    let (_dir, config, admin, admin_arg, mut first) = first_gateway();
    assert_eq!(owner(&admin), Some(u64::from(first.child.id())));
    let second = HttpGateway::start(&config, &["--admin-file", &admin_arg]);
    let second_pid = u64::from(second.child.id());
    assert_eq!(owner(&admin), Some(u64::from(first.child.id())));

    first.terminate();
    let taken = wait_for(Duration::from_secs(20), || {
        (owner(&admin) == Some(second_pid)).then_some(())
    });
    assert!(
        taken.is_some(),
        "the second gateway did not take the file: {:?}",
        owner(&admin)
    );
    let reaches = status_source(&config, &admin_arg);
    assert!(reaches.starts_with("gateway at "), "{reaches}");
    drop(second);
    assert!(
        wait_for(Duration::from_secs(15), || (!admin.exists()).then_some(())).is_some(),
        "the second gateway removed its file when it stopped"
    );
}
