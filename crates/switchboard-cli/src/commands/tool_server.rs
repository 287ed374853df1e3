//! `switchboard tool-server NAME`: one built-in provider as a standalone MCP server over
//! stdio, so other MCP hosts can use Switchboard's built-in tools.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use switchboard::{Host, HostOptions, ServerPlan};
use switchboard_core::ServerId;
use switchboard_core::config::{BuiltinSettings, RootConfig};
use switchboard_mcp::front::stdio::{self, StdioOptions};
use switchboard_mcp::front::{Dispatcher, ServerIdentity};
use switchboard_mcp::upstream::{Endpoint, EraChoice, UpstreamSpec};
use tokio_util::sync::CancellationToken;

#[derive(Debug, clap::Args)]
pub struct ToolServerArgs {
    /// The built-in provider to serve: clock, dice, files or memory.
    name: String,
    /// files: a directory it may read and write (repeatable; default: the working directory).
    #[arg(long = "root", value_name = "DIR")]
    roots: Vec<PathBuf>,
    /// files: a directory it may only read (repeatable).
    #[arg(long = "read-only-root", value_name = "DIR")]
    read_only_roots: Vec<PathBuf>,
    /// files: the largest file read, in bytes.
    #[arg(long, value_name = "BYTES")]
    max_read_bytes: Option<u64>,
    /// files: the largest file written, in bytes.
    #[arg(long, value_name = "BYTES")]
    max_write_bytes: Option<u64>,
    /// dice: the directory of random tables (*.toml, *.csv).
    #[arg(long, value_name = "DIR")]
    tables_dir: Option<PathBuf>,
    /// dice: a fixed seed, for reproducible rolls.
    #[arg(long)]
    seed: Option<u64>,
    /// memory: the SQLite file (default: under the user data directory).
    #[arg(long, value_name = "FILE")]
    database: Option<PathBuf>,
}

impl ToolServerArgs {
    fn settings(&self) -> BuiltinSettings {
        let root = |read_only: bool| {
            move |path: &PathBuf| RootConfig {
                path: path.clone(),
                read_only,
            }
        };
        BuiltinSettings {
            roots: self
                .roots
                .iter()
                .map(root(false))
                .chain(self.read_only_roots.iter().map(root(true)))
                .collect(),
            max_read_bytes: self.max_read_bytes,
            max_write_bytes: self.max_write_bytes,
            tables_dir: self.tables_dir.clone(),
            seed: self.seed,
            database: self.database.clone(),
            ..BuiltinSettings::default()
        }
    }
}

pub async fn run(args: ToolServerArgs) -> anyhow::Result<ExitCode> {
    let provider = switchboard_tools::builtin(&args.name, &args.settings())?;
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
        category: String::new(),
        fingerprint: String::new(),
        pinned: false,
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
        crate::process_stdio::stdin(),
        crate::process_stdio::stdout(),
        options,
        CancellationToken::new(),
    )
    .await;
    host.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
