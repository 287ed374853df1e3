//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, run on Node 22)
//! in server mode against the gateway, in pass-through mode (`prefix_tools = false`) in front
//! of `switchboard-fixture conformance`. Every scenario of the active suite must pass, for
//! 2025-11-25 and for 2026-07-28, and so must the 2026-07-28 scenarios outside it that the
//! gateway implements (the routing headers' validation).

mod support;

use std::process::Command;

use support::*;

/// Scenarios outside the active suite that the gateway must pass too.
const EXTRA_SCENARIOS: &[&str] = &["http-header-validation"];

fn run_suite(url: &str, spec_version: &str, scenario: Option<&str>) -> (bool, String) {
    let conformance = prerequisite(
        node_bin().join("conformance"),
        "the conformance suite (e2e/node_modules)",
    );
    let mut args = vec!["server", "--url", url, "--spec-version", spec_version];
    if let Some(scenario) = scenario {
        args.extend(["--scenario", scenario]);
    }
    let output = Command::new(conformance)
        .args(args)
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

#[test]
fn conformance_suite_passes_in_both_eras() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[gateway]\nprefix_tools = false\n\n[servers.conformance]\ncommand = {}\nargs = [\"conformance\"]\n",
        quoted(&fixture())
    );
    let config = write_config(dir.path(), &text);
    let gateway = HttpGateway::start(&config, &[]);
    let runs = [("2025-11-25", None), ("2026-07-28", None)]
        .into_iter()
        .chain(EXTRA_SCENARIOS.iter().map(|s| ("2026-07-28", Some(*s))));
    for (spec_version, scenario) in runs {
        let label = format!("{spec_version} {}", scenario.unwrap_or("active suite"));
        let (success, report) = run_suite(&gateway.url, spec_version, scenario);
        // A suite ends on "Total: N passed, M failed", one scenario on "Passed: N/T, M failed, …".
        let summary = report
            .lines()
            .skip_while(|line| !line.contains("SUMMARY") && !line.contains("Checks:"))
            .collect::<Vec<_>>()
            .join("\n");
        let total = report
            .lines()
            .rev()
            .find(|line| line.starts_with("Total:") || line.starts_with("Passed:"))
            .unwrap_or("no total line")
            .to_owned();
        assert!(
            success && total.contains(" 0 failed"),
            "conformance {label}: {total}\n{summary}"
        );
        let passed: u32 = total
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.split('/').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let least = if scenario.is_some() { 5 } else { 30 };
        assert!(
            passed >= least,
            "conformance {label} ran too few checks: {total}"
        );
    }
}
