//! Command hooks with real child processes: deny, rewrite, replace, and the failure rules
//! (crash, timeout, garbage, too long an answer, a decision not understood) fail closed or
//! open as configured; full pipes do not hang a call, and nothing a hook starts outlives it.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Named, plan};
use switchboard::{Host, HostOptions, command_hooks};
use switchboard_core::config::{HookConfig, HookEvent};
use switchboard_core::pipeline::Governance;
use switchboard_core::{CallContext, ToolOutcome};

fn script(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    let mut permissions = std::fs::metadata(&path).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&path, permissions).expect("chmod");
    path
}

fn hook(
    event: HookEvent,
    command: std::path::PathBuf,
    tools: &[&str],
    fail_open: bool,
) -> HookConfig {
    HookConfig {
        event,
        command,
        args: vec![],
        tools: tools.iter().map(|t| (*t).to_owned()).collect(),
        agents: vec![],
        timeout: Duration::from_millis(500),
        fail_open,
    }
}

async fn host_with(hooks: &[HookConfig]) -> Host {
    let governance = Governance {
        hooks: command_hooks(hooks),
        ..Governance::default()
    };
    let options = HostOptions {
        governance: Arc::new(governance),
        agents: BTreeMap::new(),
        ..HostOptions::default()
    };
    let host = Host::start(
        vec![plan(
            Named {
                id: "t",
                tools: &["echo", "guarded", "slow", "broken", "lenient"],
            },
            "",
        )],
        options,
    );
    host.ready().await;
    host
}

async fn call(host: &Host, tool: &str, text: &str) -> ToolOutcome {
    let arguments = json!({"text": text})
        .as_object()
        .cloned()
        .unwrap_or_default();
    host.call(&CallContext::default(), tool, arguments)
        .await
        .expect("an outcome")
}

/// A call that must end within 10 s, so a hook that hangs the gateway fails the test rather
/// than hanging it.
async fn call_within_10s(host: &Host, tool: &str, text: &str) -> ToolOutcome {
    tokio::time::timeout(Duration::from_secs(10), call(host, tool, text))
        .await
        .expect("the call ended within 10 s")
}

#[tokio::test]
async fn command_hooks_allow_deny_rewrite_and_replace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seen = dir.path().join("seen.json");
    let pre = script(
        dir.path(),
        "pre",
        &format!(
            r#"input=$(cat); echo "$input" > '{}'
case "$input" in
  *'"tool":"t__guarded"'*) echo "guarded tools need a ticket" >&2; exit 2;;
  *'"text":"shout"'*) echo '{{"arguments": {{"text": "SHOUTED"}}}}';;
  *'"text":"no"'*) echo '{{"decision": "deny", "reason": "said no"}}';;
esac"#,
            seen.display()
        ),
    );
    let post = script(
        dir.path(),
        "post",
        r#"input=$(cat); case "$input" in *'"text":"secret"'*) echo '{"result": {"content": [{"type": "text", "text": "[redacted]"}]}}';; esac"#,
    );
    let host = host_with(&[
        hook(HookEvent::PreCall, pre, &[], false),
        hook(HookEvent::PostCall, post, &["t:echo"], false),
    ])
    .await;
    assert_eq!(
        call(&host, "t__echo", "hello").await.text_content(),
        "t:echohello"
    );
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&seen).expect("hook saw the call"))
            .expect("json");
    assert_eq!(input["event"], "pre_call");
    assert_eq!(input["tool"], "t__echo");
    assert_eq!(input["upstream_tool"], "echo");
    assert_eq!(input["arguments"], json!({"text": "hello"}));
    assert_eq!(input["call_id"].as_str().map(str::len), Some(26));

    let guarded = call(&host, "t__guarded", "x").await;
    assert!(guarded.is_error);
    assert!(
        guarded
            .text_content()
            .ends_with(": guarded tools need a ticket"),
        "{}",
        guarded.text_content()
    );
    let said_no = call(&host, "t__echo", "no").await;
    assert!(
        said_no.is_error && said_no.text_content().ends_with("said no"),
        "{}",
        said_no.text_content()
    );
    assert_eq!(
        call(&host, "t__echo", "shout").await.text_content(),
        "t:echoSHOUTED"
    );
    assert_eq!(
        call(&host, "t__echo", "secret").await.text_content(),
        "[redacted]"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn failing_hooks_fail_closed_unless_told_otherwise() {
    let dir = tempfile::tempdir().expect("tempdir");
    let slow = script(dir.path(), "slow", "exec sleep 30");
    let broken = script(dir.path(), "broken", "echo 'not json'");
    let crash = script(dir.path(), "crash", "echo boom >&2; exit 1");
    let host = host_with(&[
        hook(HookEvent::PreCall, slow, &["t__slow"], false),
        hook(HookEvent::PreCall, broken, &["t__broken"], false),
        hook(HookEvent::PreCall, crash.clone(), &["t__guarded"], false),
        hook(HookEvent::PreCall, crash, &["t__lenient"], true),
        hook(
            HookEvent::PreCall,
            dir.path().join("missing"),
            &["t__echo"],
            true,
        ),
    ])
    .await;
    let started = Instant::now();
    let timed_out = call(&host, "t__slow", "x").await;
    assert!(
        timed_out.is_error && timed_out.text_content().contains("no answer within 500 ms"),
        "{}",
        timed_out.text_content()
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the hook was killed at its timeout"
    );
    let garbage = call(&host, "t__broken", "x").await;
    assert!(
        garbage.text_content().contains("not JSON"),
        "{}",
        garbage.text_content()
    );
    let crashed = call(&host, "t__guarded", "x").await;
    assert!(
        crashed.is_error
            && crashed
                .text_content()
                .contains("exited with status 1: boom"),
        "{}",
        crashed.text_content()
    );
    assert_eq!(
        call(&host, "t__lenient", "x").await.text_content(),
        "t:lenientx",
        "fail-open"
    );
    assert_eq!(
        call(&host, "t__echo", "x").await.text_content(),
        "t:echox",
        "a missing command fails open too"
    );
    host.shutdown().await;
}

/// Regression: the input was written before the timeout began and before anything read the
/// hook's output, so a hook that answered 100 KB before reading a large input (both pipes
/// full), or never read it, hung the call for good.
#[tokio::test]
async fn a_large_input_neither_deadlocks_a_hook_nor_escapes_its_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chatty = script(
        dir.path(),
        "chatty",
        r"head -c 100000 /dev/zero | tr '\0' ' '; cat > /dev/null",
    );
    let deaf = script(dir.path(), "deaf", "exec sleep 30");
    let host = host_with(&[
        HookConfig {
            timeout: Duration::from_secs(5),
            ..hook(HookEvent::PreCall, chatty, &["t__echo"], false)
        },
        HookConfig {
            timeout: Duration::from_secs(1),
            ..hook(HookEvent::PreCall, deaf, &["t__slow"], false)
        },
    ])
    .await;
    let large = "many words ".repeat(24 * 1024);
    let answered = call_within_10s(&host, "t__echo", &large).await;
    assert!(
        !answered.is_error && answered.text_content().starts_with("t:echomany words"),
        "{:.200}",
        answered.text_content()
    );
    let unread = call_within_10s(&host, "t__slow", &large).await;
    assert!(
        unread.is_error && unread.text_content().contains("no answer within 1000 ms"),
        "{}",
        unread.text_content()
    );
    host.shutdown().await;
}

/// Regression: a hook's output was read whole and cut afterwards, so an answer of 2 MB was
/// waited for to its end (or the timeout) and then judged by its first megabyte.
#[tokio::test]
async fn an_answer_over_the_limit_fails_at_once_and_stderr_is_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flood = script(
        dir.path(),
        "flood",
        r"head -c 2000000 /dev/zero | tr '\0' ' '; exec sleep 30",
    );
    let noisy = script(
        dir.path(),
        "noisy",
        r"head -c 1000000 /dev/zero | tr '\0' 'e' >&2; exit 2",
    );
    let host = host_with(&[
        HookConfig {
            timeout: Duration::from_secs(5),
            ..hook(HookEvent::PreCall, flood, &["t__echo"], false)
        },
        HookConfig {
            timeout: Duration::from_secs(5),
            ..hook(HookEvent::PreCall, noisy, &["t__guarded"], false)
        },
    ])
    .await;
    let flooded = call_within_10s(&host, "t__echo", "x").await;
    assert!(
        flooded.is_error
            && flooded
                .text_content()
                .contains("answered more than 1048576 bytes on stdout"),
        "{}",
        flooded.text_content()
    );
    let noisy = call_within_10s(&host, "t__guarded", "x").await;
    assert!(
        noisy.is_error && noisy.text_content().ends_with(&"e".repeat(4096)),
        "{:.200}",
        noisy.text_content()
    );
    assert!(noisy.text_content().len() < 4096 + 200, "stderr was cut");
    host.shutdown().await;
}

/// Whether process `pid` runs (a zombie waiting to be reaped does not).
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// Whether the process whose pid `file` holds ends within 10 s.
async fn ends_within_10s(file: &Path) -> bool {
    let pid = std::fs::read_to_string(file).expect("the hook wrote its child's pid");
    let deadline = Instant::now() + Duration::from_secs(10);
    while running(pid.trim()) {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}

/// Regression: only the hook's own process was killed, and its answer read until every
/// holder of its stdout closed it; a process it left in the background kept the call waiting
/// for the timeout, and outlived it.
#[tokio::test]
async fn what_a_hook_starts_ends_with_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (early, stuck) = (dir.path().join("early.pid"), dir.path().join("stuck.pid"));
    let leaver = script(
        dir.path(),
        "leaver",
        &format!(
            "sleep 30 & echo $! > '{}'; echo 'answered early' >&2; exit 2",
            early.display()
        ),
    );
    let sleeper = script(
        dir.path(),
        "sleeper",
        &format!("sleep 30 & echo $! > '{}'; exec sleep 30", stuck.display()),
    );
    let host = host_with(&[
        HookConfig {
            timeout: Duration::from_secs(5),
            ..hook(HookEvent::PreCall, leaver, &["t__echo"], false)
        },
        HookConfig {
            timeout: Duration::from_secs(1),
            ..hook(HookEvent::PreCall, sleeper, &["t__slow"], false)
        },
    ])
    .await;
    let answered = call_within_10s(&host, "t__echo", "x").await;
    assert!(
        answered.is_error && answered.text_content().ends_with(": answered early"),
        "{}",
        answered.text_content()
    );
    assert!(
        ends_within_10s(&early).await,
        "the hook's background process outlived it"
    );
    let timed_out = call_within_10s(&host, "t__slow", "x").await;
    assert!(
        timed_out.is_error
            && timed_out
                .text_content()
                .contains("no answer within 1000 ms"),
        "{}",
        timed_out.text_content()
    );
    assert!(
        ends_within_10s(&stuck).await,
        "the timed-out hook's background process outlived it"
    );
    host.shutdown().await;
}

/// Regression: only `"decision": "deny"` was read, so Claude Code's `"block"`, any other word,
/// or JSON that is not an object let the call through, and a post-call deny kept the result.
#[tokio::test]
async fn a_decision_not_understood_never_lets_a_call_through() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pre = script(
        dir.path(),
        "pre",
        r#"input=$(cat); case "$input" in
  *'"text":"block"'*) echo '{"decision": "block", "reason": "blocked"}';;
  *'"text":"maybe"'*) echo '{"decision": "maybe"}';;
  *'"text":"list"'*) echo '["deny"]';;
esac"#,
    );
    let post = script(
        dir.path(),
        "post",
        r#"input=$(cat); case "$input" in
  *'"text":"deny"'*) echo '{"decision": "deny", "reason": "not for you"}';;
  *'"text":"ask"'*) echo '{"decision": "ask"}';;
esac"#,
    );
    let host = host_with(&[
        hook(HookEvent::PreCall, pre.clone(), &["t__echo"], false),
        hook(HookEvent::PreCall, pre, &["t__lenient"], true),
        hook(HookEvent::PostCall, post, &["t__guarded"], false),
    ])
    .await;
    let blocked = call(&host, "t__echo", "block").await;
    assert!(
        blocked.is_error && blocked.text_content().ends_with(": blocked"),
        "{}",
        blocked.text_content()
    );
    let unknown = call(&host, "t__echo", "maybe").await;
    assert!(
        unknown.is_error
            && unknown
                .text_content()
                .contains(r#"unknown decision "maybe""#),
        "{}",
        unknown.text_content()
    );
    let list = call(&host, "t__echo", "list").await;
    assert!(
        list.is_error && list.text_content().contains("not an object"),
        "{}",
        list.text_content()
    );
    assert_eq!(
        call(&host, "t__lenient", "maybe").await.text_content(),
        "t:lenientmaybe",
        "on_failure decides: fail-open lets it go on"
    );
    assert_eq!(
        call(&host, "t__guarded", "fine").await.text_content(),
        "t:guardedfine"
    );
    let withheld = call(&host, "t__guarded", "deny").await;
    assert!(
        withheld.is_error
            && withheld.text_content().ends_with(": not for you")
            && !withheld.text_content().contains("t:guarded"),
        "{}",
        withheld.text_content()
    );
    let asked = call(&host, "t__guarded", "ask").await;
    assert!(
        asked.is_error
            && asked.text_content().contains("result withheld")
            && asked.text_content().contains(r#"unknown decision "ask""#),
        "{}",
        asked.text_content()
    );
    host.shutdown().await;
}
