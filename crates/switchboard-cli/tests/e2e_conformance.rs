//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, run on Node 22)
//! in server mode against the gateway, in pass-through mode (`prefix_tools = false`) in front
//! of `switchboard-fixture conformance` (whose tasks the gateway runs) and
//! `switchboard-fixture conformance-tasks` (a server that runs its own tasks, relayed). Every
//! scenario of the active suite must pass, for 2025-11-25 and for 2026-07-28; against the
//! full 2026-07-28 requirements every check must pass except the known gaps listed in
//! `e2e/conformance-2026-07-28-gaps.yml` — and an entry listed there that starts passing
//! fails the test too, so the list stays true.

mod support;

use std::process::Command;

use support::*;

fn run_suite(url: &str, selection: &[&str]) -> (bool, String) {
    let conformance = prerequisite(
        node_bin().join("conformance"),
        "the conformance suite (e2e/node_modules)",
    );
    let output = Command::new(conformance)
        .args(["server", "--url", url])
        .args(selection)
        .env("PATH", node_path())
        .output()
        .expect("run the conformance suite");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// The gateway in pass-through mode in front of the conformance fixture and of the fixture
/// that runs 2026-07-28 tasks itself (`conformance-tasks`, relayed), with its directory.
fn conformance_gateway() -> (tempfile::TempDir, HttpGateway) {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[gateway]\nprefix_tools = false\n\n[servers.conformance]\ncommand = {fixture}\nargs = [\"conformance\"]\n\n[servers.conformance-tasks]\ncommand = {fixture}\nargs = [\"conformance-tasks\"]\n",
        fixture = quoted(&fixture())
    );
    let config = write_config(dir.path(), &text);
    let gateway = HttpGateway::start(&config, &[]);
    (dir, gateway)
}

/// The "Total: N passed, M failed" line of a report, and N.
fn total(report: &str) -> (String, u32) {
    let line = report
        .lines()
        .rev()
        .find(|line| line.starts_with("Total:"))
        .unwrap_or("no total line")
        .to_owned();
    let passed = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    (line, passed)
}

#[test]
fn conformance_suite_passes_in_both_eras() {
    let (_dir, gateway) = conformance_gateway();
    for spec_version in ["2025-11-25", "2026-07-28"] {
        let (success, report) = run_suite(&gateway.url, &["--spec-version", spec_version]);
        let summary = report
            .lines()
            .skip_while(|line| !line.contains("SUMMARY"))
            .collect::<Vec<_>>()
            .join("\n");
        let (total, passed) = total(&report);
        assert!(
            success && total.ends_with(" 0 failed"),
            "conformance {spec_version}: {total}\n{summary}"
        );
        assert!(
            passed >= 30,
            "conformance {spec_version} ran too few checks: {total}"
        );
    }
}

#[test]
fn the_full_2026_07_28_requirements_fail_only_where_the_gaps_file_says() {
    let (_dir, gateway) = conformance_gateway();
    let gaps = repo_root().join("e2e/conformance-2026-07-28-gaps.yml");
    let gaps = gaps.display().to_string();
    let (success, report) = run_suite(
        &gateway.url,
        &["--requirements", "2026-07-28", "--expected-failures", &gaps],
    );
    let (total, passed) = total(&report);
    let verdict: String = report
        .lines()
        .skip_while(|line| !line.contains("Unexpected failures") && !line.contains("Stale"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        success && report.contains("Baseline check passed"),
        "conformance --requirements 2026-07-28: {total}\n{verdict}"
    );
    assert!(passed >= 120, "too few checks passed: {total}");
    // The suite does not flag a listed gap that now passes: every entry must still fail, or
    // the list is out of date. Expected failures are reported as "~ entry"; scenarios the
    // requirements do not score (tasks, custom headers) only in the summary, as "✗ entry: …".
    let listed = std::fs::read_to_string(&gaps).expect("gaps file");
    for scenario in listed
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
    {
        let still_fails = report.lines().any(|line| {
            line.trim() == format!("~ {scenario}") || line.starts_with(&format!("✗ {scenario}:"))
        });
        assert!(
            still_fails,
            "{scenario} is listed as a gap in {gaps} but did not fail: remove it from the list"
        );
    }
}

/// A server that answers `input_required` (2026-07-28 multi-round requests) gets its answers
/// from the official Python SDK client in both eras: a modern client answers the result and
/// sends the call again, which the gateway passes on with the server's state; a legacy client
/// is asked by the gateway itself, by elicitation during the call, round after round.
#[test]
fn a_server_that_asks_for_input_gets_its_answers_in_both_eras() {
    let (_dir, gateway) = conformance_gateway();
    for era in ["modern", "legacy"] {
        for (tool, answer) in [
            (
                "test_input_required_result_request_state",
                "Confirmed; state-ok.",
            ),
            (
                "test_input_required_result_multi_round",
                "Both rounds done.",
            ),
        ] {
            let result = python_client(&[
                "--era",
                era,
                "--http",
                &gateway.url,
                "--elicit",
                "accept",
                "call",
                tool,
            ]);
            assert_eq!(
                result["content"][0]["text"], answer,
                "{era} client, {tool}: {result}"
            );
        }
    }
    // A legacy client that cannot be asked gets an error result that says why.
    let result = python_client(&[
        "--era",
        "legacy",
        "--http",
        &gateway.url,
        "call",
        "test_input_required_result_elicitation",
    ]);
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("elicitation/create, which the client did not declare"),
        "{text}"
    );
}

/// A prompt whose server answers `prompts/get` with `input_required` is got like a tool is
/// called: a modern client answers and retries, a legacy one is asked by the gateway by
/// elicitation mid-request; a legacy client that cannot be asked gets an error saying why.
#[test]
fn a_prompt_that_asks_for_input_is_answered_in_both_eras() {
    let (_dir, gateway) = conformance_gateway();
    for era in ["modern", "legacy"] {
        let result = python_client(&[
            "--era",
            era,
            "--http",
            &gateway.url,
            "--elicit",
            "accept",
            "prompt",
            "test_input_required_result_prompt",
        ]);
        // `--elicit accept` answers {"approve": true}: the context the prompt reads is empty.
        assert_eq!(
            result["messages"][0]["content"]["text"], "Use this context: ",
            "{era} client: {result}"
        );
    }
    let output = python_client_output(&[
        "--era",
        "legacy",
        "--http",
        &gateway.url,
        "prompt",
        "test_input_required_result_prompt",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("prompt 'test_input_required_result_prompt' asked for input by elicitation/create, which the client did not declare"),
        "{stderr}"
    );
}

/// The other way round: a 2025-era server that asks mid-call (`elicitation/create` while its
/// call runs) gets the answer of a 2026-07-28 client, which the gateway asks through
/// `input_required` and whose retried call it hands back to the waiting server.
#[test]
fn a_server_that_asks_mid_call_gets_a_modern_clients_answer() {
    let (_dir, gateway) = conformance_gateway();
    let result = python_client(&[
        "--era",
        "modern",
        "--http",
        &gateway.url,
        "--elicit",
        "accept",
        "call",
        "test_elicitation",
        r#"{"message": "Proceed?"}"#,
    ]);
    assert_eq!(
        result["content"][0]["text"], r#"User response: action=accept, content={"approve":true}"#,
        "{result}"
    );
}
