//! Shared helpers of the Host tests: in-process providers and server plans, and the fixture
//! servers' binary for the tests that start real children. Not every test uses every helper.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard::ServerPlan;
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{CallContext, ServerId, ToolDefinition, ToolOutcome};
use switchboard_mcp::upstream::{Endpoint, EraChoice, UpstreamSpec};

/// A provider whose tools echo their own name.
pub struct Named {
    pub id: &'static str,
    pub tools: &'static [&'static str],
}

impl ToolProvider for Named {
    fn name(&self) -> &str {
        self.id
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        self.tools
            .iter()
            .map(|tool| {
                ToolDefinition::new(*tool, format!("The {tool} tool"), json!({"type": "object"}))
            })
            .collect()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        _arguments: Map<String, Value>,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            let text = _arguments.get("text").and_then(Value::as_str).unwrap_or("");
            let mut outcome = ToolOutcome::text(format!("{}:{tool}{text}", self.id));
            // `"structured": true`: the text again as structured content.
            if _arguments.get("structured") == Some(&Value::Bool(true)) {
                outcome.structured_content = Some(serde_json::json!({"text": text}));
            }
            // `"resource": "TEXT"`: an embedded text resource too, and an image.
            if let Some(resource) = _arguments.get("resource").and_then(Value::as_str) {
                outcome.content.push(json!({"type": "resource",
                    "resource": {"uri": "note://long", "mimeType": "text/plain", "text": resource}}));
                outcome
                    .content
                    .push(json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}));
            }
            Ok(outcome)
        })
    }
}

pub fn plan(provider: Named, category: &str) -> ServerPlan {
    let id = provider.id;
    let mut plan = plan_of(id, Arc::new(provider));
    plan.category = category.to_owned();
    plan
}

/// The plan of an in-process server `id` (prefix `id`) served by `provider`.
pub fn plan_of(id: &str, provider: Arc<dyn ToolProvider>) -> ServerPlan {
    ServerPlan {
        spec: UpstreamSpec {
            id: ServerId::new(id),
            endpoint: Endpoint::InProcess(provider),
            era: EraChoice::Auto,
            connect_timeout: Duration::from_secs(1),
            discover_timeout: Duration::from_secs(1),
            max_message_bytes: 1 << 20,
            instances: std::num::NonZeroU8::MIN,
        },
        prefix: id.to_owned(),
        overrides: BTreeMap::new(),
        call_timeout: Duration::from_secs(5),
        category: String::new(),
        fingerprint: String::new(),
        pinned: false,
    }
}

/// The fixture servers' binary (`switchboard-fixture`, built by `cargo build --workspace
/// --bins`), beside the test binary's directory.
pub fn fixture() -> String {
    let exe = std::env::current_exe().expect("test binary path");
    let path = exe
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join("switchboard-fixture"))
        .expect("target dir");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace --bins` first",
        path.display()
    );
    path.display().to_string()
}

/// A PostgreSQL of the test's own (`switchboard-testkit`) with every migration applied, as
/// `switchboard migrate` does.
pub async fn migrated_postgres() -> switchboard_testkit::postgres::Postgres {
    let postgres =
        switchboard_testkit::postgres::Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    switchboard_ledger::postgres::migrate::migrate_url(&postgres.url())
        .await
        .expect("migrate");
    postgres
}

/// A valid TOML config `text`, as if read from `path`.
pub fn parse_config(text: &str, path: &Path) -> switchboard_core::config::Config {
    use switchboard_core::config::{Config, Format, MapEnvironment, Origin};
    Config::parse(
        text,
        Origin::from(path),
        Format::Toml,
        &MapEnvironment::default(),
    )
    .expect("valid config")
}

/// `switchboard-fixture http-echo` on a free loopback port, killed when dropped.
pub struct Echo {
    child: std::process::Child,
    /// Where it listens, `127.0.0.1:PORT`.
    pub address: String,
}

impl Echo {
    pub fn start() -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(fixture())
            .arg("http-echo")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start the echo fixture");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("its address");
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the fixture said {line:?}"))
            .to_owned();
        Self { child, address }
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
