//! Every renderer on real tool definitions, dumped at test time from the reference servers
//! the project installs (npm `server-everything` and `server-filesystem`, pinned in
//! `e2e/package-lock.json`), snapshotted with insta. A missing install fails with the command
//! that fixes it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use switchboard_core::ToolDefinition;
use switchboard_fixtures::client::StdioClient;
use switchboard_render::{Format, RenderTool, render};

fn node_bin() -> PathBuf {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../e2e/node_modules/.bin");
    assert!(
        bin.exists(),
        "the npm reference servers are missing at {}: run scripts/install-test-deps.sh",
        bin.display()
    );
    bin
}

/// `tools/list` of one reference server, names kept, every occurrence of `root` replaced by a
/// placeholder so the snapshot does not depend on the machine.
fn dump(server: &str, args: &[&str], root: Option<&Path>) -> Vec<ToolDefinition> {
    let bin = node_bin();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(bin.join(server));
    command.args(args).env("PATH", path).stderr(Stdio::null());
    let mut client = StdioClient::spawn(&mut command).expect("start the server");
    client.initialize().expect("initialize");
    let listed = client.request("tools/list", json!({})).expect("tools/list");
    let mut text = listed["tools"].to_string();
    if let Some(root) = root {
        text = text.replace(&root.display().to_string(), "<ROOT>");
    }
    let tools: Vec<Value> = serde_json::from_str(&text).expect("tools");
    tools
        .into_iter()
        .map(|tool| serde_json::from_value(tool).expect("a tool definition"))
        .collect()
}

fn snapshot_all(label: &str, definitions: &[ToolDefinition], prefix: &str) {
    let names: Vec<String> = definitions
        .iter()
        .map(|d| format!("{prefix}__{}", d.name))
        .collect();
    let tools: Vec<RenderTool<'_>> = definitions
        .iter()
        .zip(&names)
        .map(|(definition, name)| RenderTool { name, definition })
        .collect();
    for format in Format::ALL {
        let rendered = render(format, &tools);
        let pretty = match serde_json::from_str::<Value>(&rendered) {
            Ok(value) => serde_json::to_string_pretty(&value).unwrap_or(rendered),
            Err(_) => rendered,
        };
        insta::assert_snapshot!(format!("{label}__{}", format.name()), pretty);
    }
}

#[test]
fn renderers_on_server_everything() {
    let definitions = dump("mcp-server-everything", &[], None);
    assert!(definitions.len() >= 10, "{}", definitions.len());
    snapshot_all("everything", &definitions, "everything");
}

#[test]
fn renderers_on_server_filesystem() {
    let root = tempfile::tempdir().expect("tempdir");
    let canonical = root.path().canonicalize().expect("canonical");
    let definitions = dump(
        "mcp-server-filesystem",
        &[&canonical.display().to_string()],
        Some(&canonical),
    );
    assert!(
        definitions
            .iter()
            .any(|d| d.name == "read_text_file" || d.name == "read_file")
    );
    snapshot_all("filesystem", &definitions, "fs");
}
