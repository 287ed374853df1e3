//! `servers test`: connect a copy of a server — the configured one, or an entry not added yet
//! — beside the fleet, negotiate, list its tools, judge, and close it. Nothing is added and
//! the running server, if any, is not touched.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use switchboard_core::ServerId;
use switchboard_core::config::edit::{self, ServerEntry};
use switchboard_core::config::{Config, Format, GatewayEnvironment, Origin};
use switchboard_mcp::upstream::{ServerState, Supervisor, SupervisorObserver};
use tokio::time::Instant;

use super::ChangeError;
use crate::Host;

/// What a test connection found.
#[derive(Debug, Clone, Serialize)]
pub struct TestReport {
    pub server: String,
    pub transport: &'static str,
    /// `ok` (up, with tools), `no_tools` (up, listing nothing) or `failed`.
    pub verdict: &'static str,
    pub era: Option<String>,
    pub protocol_version: Option<String>,
    pub tools: usize,
    /// Tokens of its tool definitions as JSON (o200k): what listing it costs a model.
    pub listing_tokens: usize,
    pub tool_names: Vec<String>,
    /// Tools whose input schema does not compile (they would be quarantined).
    pub problems: Vec<String>,
    pub error: Option<String>,
    /// From starting the connection to its tools listed.
    pub connect_ms: f64,
}

/// Hears nothing: the test connection is no part of the catalog.
struct Unheard;

impl SupervisorObserver for Unheard {
    fn status_changed(&self, _server: &ServerId) {}
}

impl Host {
    /// Connects a copy of `server` — as `entry` describes it, else as the running
    /// configuration has it (disabled servers too) — and reports what it serves.
    pub async fn test_server(
        &self,
        server: &str,
        entry: Option<&ServerEntry>,
    ) -> Result<TestReport, ChangeError> {
        let config = self
            .config()
            .ok_or_else(|| ChangeError::NotFound(server.to_owned()))?;
        test_server(
            &config,
            server,
            entry,
            self.inner.options.token_counter,
            self.inner.options.sandbox_launcher.as_deref(),
        )
        .await
    }
}

/// Connects a copy of `server` — as `entry` describes it (under `config`'s gateway
/// settings), else as `config` has it — and reports what it serves.
pub async fn test_server(
    config: &Config,
    server: &str,
    entry: Option<&ServerEntry>,
    count_tokens: crate::TokenCounter,
    sandbox_launcher: Option<&std::path::Path>,
) -> Result<TestReport, ChangeError> {
    {
        let config = match entry {
            Some(entry) => config_of_entry(server, entry, Some(config))?,
            None => config.clone(),
        };
        let settings = config
            .server(server)
            .ok_or_else(|| ChangeError::NotFound(server.to_owned()))?;
        let plan = crate::assemble::plan(&config, settings, sandbox_launcher)
            .map_err(|error| ChangeError::Invalid(vec![error.to_string()]))?;
        let began = Instant::now();
        let supervisor = Supervisor::start(plan.spec.clone(), Arc::new(Unheard));
        let bound = plan.spec.connect_timeout + Duration::from_secs(1);
        let _ = tokio::time::timeout(bound, supervisor.settled()).await;
        let connect_ms = began.elapsed().as_secs_f64() * 1000.0;
        let status = supervisor.status();
        supervisor.stop().await;
        let definitions: Vec<_> = status.tools.iter().map(|t| &t.definition).collect();
        let listing = serde_json::to_string(&definitions).unwrap_or_default();
        let up = status.state == ServerState::Up;
        Ok(TestReport {
            server: server.to_owned(),
            transport: plan.spec.endpoint.transport_label(),
            verdict: match (up, status.tools.is_empty()) {
                (false, _) => "failed",
                (true, true) => "no_tools",
                (true, false) => "ok",
            },
            era: status.era.as_ref().map(|era| era.label().to_owned()),
            protocol_version: status.era.as_ref().map(|era| era.version().to_owned()),
            tools: status.tools.len(),
            listing_tokens: if up { count_tokens(&listing) } else { 0 },
            tool_names: status
                .tools
                .iter()
                .map(|t| t.definition.name.clone())
                .collect(),
            problems: status
                .tools
                .iter()
                .filter_map(|t| {
                    let error = t.schema.as_ref().err()?;
                    Some(format!("{}: {error}", t.definition.name))
                })
                .collect(),
            error: status.error,
            connect_ms,
        })
    }
}

/// A config holding only `entry` as `server`, under the running gateway's settings,
/// validated like a file.
pub(crate) fn config_of_entry(
    server: &str,
    entry: &ServerEntry,
    running: Option<&Config>,
) -> Result<Config, ChangeError> {
    let text = edit::add_server("", Format::Toml, server, entry).map_err(ChangeError::from_edit)?;
    let mut config = Config::parse(
        &text,
        Origin::Inline,
        Format::Toml,
        &GatewayEnvironment::new(),
    )
    .map_err(super::invalid)?;
    if let Some(running) = running {
        config.gateway = running.gateway.clone();
    }
    Ok(config)
}
