//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, run on Node 22)
//! in server mode against the gateway, in pass-through mode (`prefix_tools = false`) in front
//! of `switchboard-fixture conformance`. Every scenario of the active suite must pass, for
//! 2025-11-25 and for 2026-07-28.

mod support;

use std::process::Command;

use support::*;

fn run_suite(url: &str, spec_version: &str) -> (bool, String) {
    let conformance = prerequisite(
        node_bin().join("conformance"),
        "the conformance suite (e2e/node_modules)",
    );
    let output = Command::new(conformance)
        .args(["server", "--url", url, "--spec-version", spec_version])
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
    for spec_version in ["2025-11-25", "2026-07-28"] {
        let (success, report) = run_suite(&gateway.url, spec_version);
        let summary = report
            .lines()
            .skip_while(|line| !line.contains("SUMMARY"))
            .collect::<Vec<_>>()
            .join("\n");
        let total = report
            .lines()
            .rev()
            .find(|line| line.starts_with("Total:"))
            .unwrap_or("no total line")
            .to_owned();
        assert!(
            success && total.ends_with(" 0 failed"),
            "conformance {spec_version}: {total}\n{summary}"
        );
        let passed: u32 = total
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(
            passed >= 30,
            "conformance {spec_version} ran too few checks: {total}"
        );
    }
}
