//! Hot reload end to end: hand edits of a real config file, saved as editors save, followed
//! by a running gateway — servers removed with their calls in flight, restarted alone,
//! replacements that fail, invalid files located, `--no-watch` with SIGHUP, symlinks.

mod support;

use std::time::Duration;

use support::live::*;
use support::*;

#[test]
fn a_hand_edit_removing_a_server_lets_its_call_in_flight_finish() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_servers(dir.path());
    let live = Live::start(dir.path(), config.clone(), &[]);
    let pid_b = live.pid("b");
    let pid_a = live.pid("a");

    let slow = live.call_in_flight("b", 3000);
    let text = std::fs::read_to_string(&config).expect("read");
    let without_b = text
        .split("[servers.b]")
        .next()
        .expect("before b")
        .to_owned();
    save_like_an_editor(&config, &without_b);
    let status = wait_status(&live, "b removed", |status| server(status, "b").is_none());
    assert!(server(&status, "a").is_some(), "{status}");

    // New calls to b's tools are refused as unknown at once...
    let refused = live.call_output("b__echo", r#"{"message": "x"}"#);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.to_lowercase().contains("unknown tool"), "{stderr}");
    // ...while the call already on b finishes there, with its result.
    let finished = finish(slow);
    assert_eq!(text_of(&finished), "slept 3000 ms", "{finished}");
    assert_eq!(finished["isError"], false, "{finished}");
    // Then b's process group is gone, and a kept its process.
    assert_exits(pid_b, "b's process outlived its removal");
    assert_eq!(live.pid("a"), pid_a);
}

#[test]
fn a_hand_edit_restarts_only_the_changed_server_and_a_bad_replacement_keeps_the_old() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_servers(dir.path());
    let live = Live::start(dir.path(), config.clone(), &[]);
    let (pid_a, pid_b) = (live.pid("a"), live.pid("b"));
    let original = std::fs::read_to_string(&config).expect("read");

    // b's args change: b restarts (new process, generation 2), a is untouched.
    let changed = original.replacen(
        "[servers.b]   # the second one\ncommand",
        "[servers.b]   # the second one\nenv = { MARK = \"2\" }\ncommand",
        1,
    );
    assert_ne!(changed, original);
    save_like_an_editor(&config, &changed);
    wait_status(&live, "b restarted", |status| {
        server(status, "b").is_some_and(|b| b["generation"] == 2 && b["state"] == "up")
    });
    let new_pid_b = live.pid("b");
    assert_ne!(new_pid_b, pid_b, "b did not restart");
    assert_eq!(live.pid("a"), pid_a, "a restarted though it did not change");
    assert_exits(pid_b, "b's old process outlived its replacement");

    // A replacement that cannot start: b keeps serving on its previous settings, and the
    // failure is reported.
    let broken = changed.replacen(
        &format!("env = {{ MARK = \"2\" }}\ncommand = {}", quoted(&fixture())),
        "env = { MARK = \"2\" }\ncommand = \"/nonexistent/no-such-server\"",
        1,
    );
    assert_ne!(broken, changed);
    save_like_an_editor(&config, &broken);
    let status = wait_status(&live, "b's failed change reported", |status| {
        server(status, "b").is_some_and(|b| b["change_error"].is_string())
    });
    let b = server(&status, "b").expect("b");
    assert_eq!(b["state"], "up", "{b}");
    assert!(
        b["change_error"]
            .as_str()
            .is_some_and(|e| e.contains("no-such-server") || e.contains("did not come up")),
        "{b}"
    );
    assert_eq!(
        live.pid("b"),
        new_pid_b,
        "b was replaced by a broken server"
    );
    assert_eq!(live.pid("a"), pid_a);
}

#[test]
fn an_invalid_hand_edit_changes_nothing_and_status_locates_it_until_fixed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_servers(dir.path());
    let live = Live::start(dir.path(), config.clone(), &[]);
    let original = std::fs::read_to_string(&config).expect("read");

    let invalid = original.replacen(
        "connect_timeout = \"5s\"",
        "connect_timeout = \"5 parsecs\"",
        1,
    );
    save_like_an_editor(&config, &invalid);
    let status = wait_status(&live, "the located error", |status| {
        status["live"]["file_error"].is_object()
    });
    let problems = status["live"]["file_error"]["problems"].to_string();
    assert!(problems.contains("switchboard.toml:4:"), "{problems}");
    assert!(problems.contains("connect_timeout"), "{problems}");
    // Calls keep working on the last good configuration.
    let result = live.call("a__echo", r#"{"message": "still here"}"#);
    assert_eq!(text_of(&result), "still here");
    // The text table shows it too.
    let table = live.cli(&["status"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains("the config file is invalid"), "{table}");

    save_like_an_editor(&config, &original);
    wait_status(&live, "the error cleared", |status| {
        status["live"]["file_error"].is_null()
    });
}

#[test]
fn with_no_watch_a_hand_edit_waits_for_sighup_and_a_wrong_config_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_servers(dir.path());
    let live = Live::start(dir.path(), config.clone(), &["--no-watch"]);
    let text = std::fs::read_to_string(&config).expect("read");
    let without_b = text
        .split("[servers.b]")
        .next()
        .expect("before b")
        .to_owned();
    save_like_an_editor(&config, &without_b);
    // Not followed: the gateway's revision does not move while the file is quiet.
    let revision = live.status()["revision"].clone();
    std::thread::sleep(Duration::from_millis(800));
    let status = live.status();
    assert!(
        server(&status, "b").is_some(),
        "--no-watch followed a hand edit"
    );
    assert_eq!(status["revision"], revision);
    // A change through the CLI now would be based on a stale file: refused.
    let refused = live.cli(&["servers", "add", "c", "--builtin", "clock"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("changed on disk") && stderr.contains("[conflict]"),
        "{stderr}"
    );

    let pid = nix::unistd::Pid::from_raw(i32::try_from(live.gateway.child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).expect("SIGHUP");
    wait_status(&live, "b removed after SIGHUP", |status| {
        server(status, "b").is_none()
    });

    // A CLI change naming another config than the gateway runs is refused, not misapplied.
    let other = dir.path().join("other.toml");
    std::fs::write(&other, "").expect("write");
    let admin = live.admin.display().to_string();
    let output = run_switchboard(
        &other,
        &[
            "servers",
            "add",
            "c",
            "--builtin",
            "clock",
            "--admin-file",
            &admin,
        ],
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not") && stderr.contains("other.toml"),
        "{stderr}"
    );
}

#[test]
fn a_config_reached_through_a_symlink_is_followed_when_its_target_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = dir.path().join("checkout");
    std::fs::create_dir(&real).expect("mkdir");
    let target = two_servers(&real);
    let link = dir.path().join("switchboard.toml");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let live = Live::start(dir.path(), link, &[]);
    assert!(server(&live.status(), "b").is_some());
    let text = std::fs::read_to_string(&target).expect("read");
    let without_b = text
        .split("[servers.b]")
        .next()
        .expect("before b")
        .to_owned();
    // Edited where it really lives, as an editor saves there.
    save_like_an_editor(&target, &without_b);
    wait_status(
        &live,
        "b removed after an edit of the link's target",
        |status| server(status, "b").is_none(),
    );
}

/// `switchboard reload` fails (exit 1, "not applied") when a server's new settings did not
/// come up, so a script can tell; the previous settings keep serving.
#[test]
fn a_reload_whose_change_did_not_take_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_servers(dir.path());
    let live = Live::start(dir.path(), config.clone(), &["--no-watch"]);
    let pid_b = live.pid("b");
    let original = std::fs::read_to_string(&config).expect("read");
    let broken = original.replacen(
        &format!(
            "[servers.b]   # the second one\ncommand = {}",
            quoted(&fixture())
        ),
        "[servers.b]   # the second one\ncommand = \"/nonexistent/no-such-server\"",
        1,
    );
    assert_ne!(broken, original);
    std::fs::write(&config, broken).expect("edit");
    let reloaded = live.cli(&["reload"]);
    let stdout = String::from_utf8_lossy(&reloaded.stdout);
    assert_eq!(reloaded.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("restarted b: not applied"), "{stdout}");
    assert_eq!(
        live.pid("b"),
        pid_b,
        "b keeps serving on its previous settings"
    );
}
