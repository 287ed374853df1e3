//! `switchboard tool-server NAME`: one built-in provider as a standalone MCP server over
//! stdio, so other MCP hosts can use Switchboard's built-in tools.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use switchboard::{Host, HostOptions, ServerPlan};
use switchboard_core::ServerId;
use switchboard_mcp::front::stdio::{self, StdioOptions};
use switchboard_mcp::front::{Dispatcher, ServerIdentity};
use switchboard_mcp::upstream::{Endpoint, EraChoice, UpstreamSpec};
use tokio_util::sync::CancellationToken;

#[derive(Debug, clap::Args)]
pub struct ToolServerArgs {
    /// The built-in provider to serve.
    name: String,
}

pub async fn run(args: ToolServerArgs) -> anyhow::Result<ExitCode> {
    let provider = switchboard_tools::builtin(&args.name).ok_or_else(|| {
        anyhow!(
            "unknown built-in tool server '{}' (available: {})",
            args.name,
            switchboard_tools::BUILTINS.join(", ")
        )
    })?;
    let plan = ServerPlan {
        spec: UpstreamSpec {
            id: ServerId::new(&args.name),
            endpoint: Endpoint::InProcess(provider),
            era: EraChoice::Auto,
            connect_timeout: Duration::from_secs(1),
            discover_timeout: Duration::from_secs(1),
            max_message_bytes: 16 << 20,
        },
        prefix: String::new(),
        overrides: Default::default(),
        call_timeout: Duration::from_secs(60),
    };
    let options = HostOptions {
        identity: ServerIdentity {
            name: format!("switchboard-{}", args.name),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
        },
        ..HostOptions::default()
    };
    let host = Host::start(vec![plan], options);
    let dispatcher = Dispatcher::new(Arc::new(host.clone()), None);
    let options = StdioOptions {
        max_message_bytes: 16 << 20,
        grace: Duration::from_secs(5),
    };
    stdio::serve(
        dispatcher,
        tokio::io::stdin(),
        tokio::io::stdout(),
        options,
        CancellationToken::new(),
    )
    .await;
    host.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
