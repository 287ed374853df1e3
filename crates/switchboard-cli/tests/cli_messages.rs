//! What the command line says when it cannot do what was asked: each cause once, the
//! choices that exist, and hints that fit the question (regressions found walking through the
//! docs as a new user).

mod support;

use std::path::Path;

use support::*;

/// A config of the clock alone, as `dir`'s ./switchboard.toml (which `isolated` finds).
fn clock_config(dir: &Path) {
    write_config(dir, "[servers.clock]\nbuiltin = \"clock\"\n");
}

/// An error whose message names its source, and reports it as its source too, was printed
/// with the source twice (`cannot read catalog F: No such file … (os error 2): No such file …
/// (os error 2)`).
#[test]
fn an_error_names_its_cause_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    clock_config(dir.path());
    let missing = dir.path().join("missing.json");
    let output = isolated(
        dir.path(),
        &[
            "tools",
            "--catalog",
            &missing.display().to_string(),
            "--format",
            "mcp",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot read catalog"), "{stderr}");
    assert_eq!(stderr.matches("(os error 2)").count(), 1, "{stderr}");
}

/// `--count-tokens` on a table listing named the LLM renderings but left out
/// openai-responses and openai-realtime, which it takes.
#[test]
fn count_tokens_without_a_rendering_names_every_rendering() {
    let dir = tempfile::tempdir().expect("tempdir");
    clock_config(dir.path());
    let output = isolated(dir.path(), &["tools", "--count-tokens"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "--format mcp, mcp-compact, openai, openai-responses, openai-realtime, anthropic, gemini, compact or toon"
        ),
        "{stderr}"
    );
}

/// `status --local` said "no gateway running on this config" even while one ran: it shows
/// a Host of its own because it was asked to, and says so.
#[test]
fn status_local_says_it_was_asked_for() {
    let dir = tempfile::tempdir().expect("tempdir");
    clock_config(dir.path());
    let output = isolated(dir.path(), &["status", "--local", "--json"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stdout_json(&output)["source"], "local (--local)");
    let output = isolated(dir.path(), &["status", "--json"]);
    assert_eq!(
        stdout_json(&output)["source"],
        "local (no gateway running on this config)"
    );
}

/// A call outside an agent's view pointed at `switchboard tools`, which lists every tool,
/// the refused one included: the hint names the agent's own listing.
#[test]
fn an_unknown_tool_for_an_agent_points_at_that_agents_tools() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_config(
        dir.path(),
        "[servers.clock]\nbuiltin = \"clock\"\n[servers.dice]\nbuiltin = \"dice\"\n\n\
         [agents.npc]\nallow = [\"dice:*\"]\n",
    );
    let output = isolated(dir.path(), &["call", "--agent", "npc", "clock__now"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("unknown tool: clock__now")
            && stderr.contains(
                "hint: `switchboard tools --agent npc` lists the tools agent npc can call"
            ),
        "{stderr}"
    );
    let output = isolated(dir.path(), &["call", "nope__x"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("hint: `switchboard tools` lists the tools that can be called"),
        "{stderr}"
    );
}

/// `tools --tier` with a tier the config does not define said only "unknown tier": like
/// `serve --tier`, it names the tiers there are.
#[test]
fn an_unknown_tier_names_the_configured_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    clock_config(dir.path());
    let output = isolated(dir.path(), &["tools", "--tier", "warp"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("unknown tier 'warp' (the config defines: fast, standard, deep)"),
        "{stderr}"
    );
}
