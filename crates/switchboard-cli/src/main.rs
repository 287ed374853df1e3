//! `switchboard`: the operator's command line and the gateway's entry point.
//!
//! Exit codes: 0 success; 1 failure (invalid config, a tool call that failed or returned
//! `isError`, a server that could not be reached); 2 usage error. Errors go to stderr as one
//! line plus hints; a closed stdout (broken pipe) ends the program quietly with 0, and a closed
//! stderr is written to with `output::note!`, never `eprintln!`, so it keeps the exit code.

mod admin;
mod commands;
mod failure;
mod logging;
mod output;
mod process_stdio;
mod usage;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

/// Switchboard: one governed, latency-aware MCP endpoint in front of all your MCP servers.
#[derive(Debug, Parser)]
#[command(name = "switchboard", version, about, propagate_version = true)]
struct Cli {
    /// Config file (TOML, or the mcpServers / servers JSON forms). Default: $SWITCHBOARD_CONFIG,
    /// ./switchboard.toml, the user config dir, else the built-in default.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Log filter for stderr (e.g. "info", "switchboard=debug"); also $SWITCHBOARD_LOG.
    #[arg(long, global = true, value_name = "FILTER")]
    log: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the gateway: an MCP server over stdio (default) or Streamable HTTP.
    Serve(commands::serve::ServeArgs),
    /// List the tools the gateway would expose.
    Tools(commands::tools::ToolsArgs),
    /// Call one tool through the pipeline and print its result.
    Call(commands::call::CallArgs),
    /// Show each server's state, era, tool count and last error.
    Status(commands::status::StatusArgs),
    /// Work with config files.
    #[command(subcommand)]
    Config(commands::config::ConfigCommand),
    /// Serve one built-in tool provider (not the manager) as a standalone MCP server over
    /// stdio; its flags are the built-in's settings.
    ToolServer(Box<commands::tool_server::ToolServerArgs>),
    /// The rules built-in's index: import the D&D 5e SRD, reindex the rules directories.
    Rules(commands::rules::RulesArgs),
    /// Add, remove, enable, disable, restart or test servers of the running gateway (or,
    /// with --offline, of the config file).
    Servers(Box<commands::servers::ServersArgs>),
    /// Make the running gateway read its config file again (as SIGHUP does).
    Reload(commands::servers::ReloadArgs),
    /// Answer calls waiting for an operator's approval on the running gateway.
    Approvals(commands::approvals::ApprovalsArgs),
    /// Open the running gateway's web console: prints its URL with a one-time sign-in link.
    Console(commands::console::ConsoleArgs),
    /// Manage agents' HTTP bearer tokens.
    Token(commands::token::TokenArgs),
    /// Manage the key ring that replicas share to seal session ids and requestState.
    Keys(commands::keys::KeysArgs),
    /// Change the latency tier of a session or an agent on the running gateway.
    Tier(commands::tier::TierArgs),
    /// Read the audit ledger: recent calls, export, verify the hash chain.
    Audit(commands::audit::AuditArgs),
    /// Create or upgrade the PostgreSQL schema of [storage] url (prints what it applied).
    Migrate(commands::migrate::MigrateArgs),
    /// Measure read-only and idempotent tools by calling them (never a destructive one).
    Calibrate(commands::calibrate::CalibrateArgs),
    /// Find MCP servers in the configured registries and catalogs ([manager]).
    SearchServers(commands::manager::SearchArgs),
    /// Install a server from a registry: look it up, install it, vet it, add it.
    Install(commands::manager::InstallArgs),
    /// The server manager's operations: list, show, cancel, give input.
    Operations(commands::manager::operations::OperationsArgs),
}

/// The gateway allocates and frees many small JSON values on every call; mimalloc serves them
/// with a fraction of glibc malloc's instructions (docs/bench/history.md, "The allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Parses the command line, exiting with a usage error (2) when it is wrong.
///
/// A command's own options (`audit --since`, `tools --format`) do not reach its subcommands,
/// so they are refused beside one, as clap's `args_conflicts_with_subcommands` would. That
/// setting is not used because it counts global options too: it refused
/// `audit --config F verify`. Global options (`--config`, `--log`, and a command's own
/// globals such as `audit --ledger`) go before or after any subcommand.
fn parse_cli() -> Cli {
    let mut command = Cli::command();
    let matches = command.get_matches_mut();
    if let Err(error) = refuse_options_beside_subcommands(&mut command, &matches) {
        error.exit();
    }
    Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit())
}

/// The check `parse_cli` describes, down the chain of subcommands `matches` holds.
fn refuse_options_beside_subcommands(
    command: &mut clap::Command,
    matches: &ArgMatches,
) -> Result<(), clap::Error> {
    let Some((name, sub_matches)) = matches.subcommand() else {
        return Ok(());
    };
    let given = matches.ids().find_map(|id| {
        let arg = command.get_arguments().find(|arg| arg.get_id() == id)?;
        let typed = matches.value_source(id.as_str()) == Some(ValueSource::CommandLine);
        (typed && !arg.is_global_set()).then(|| match arg.get_long() {
            Some(long) => format!("--{long}"),
            None => arg.get_id().to_string(),
        })
    });
    if let Some(option) = given {
        let message = format!(
            "the subcommand '{name}' cannot be used with '{option}' (an option of '{}' without a subcommand)",
            command.get_bin_name().unwrap_or(command.get_name())
        );
        return Err(command.error(clap::error::ErrorKind::ArgumentConflict, message));
    }
    match command.find_subcommand_mut(name) {
        Some(subcommand) => refuse_options_beside_subcommands(subcommand, sub_matches),
        None => Ok(()),
    }
}

fn main() -> ExitCode {
    if commands::sandbox_exec::requested() {
        return commands::sandbox_exec::run();
    }
    let cli = parse_cli();
    let default_level = if matches!(cli.command, Command::Serve(_) | Command::ToolServer(_)) {
        "info"
    } else {
        "warn"
    };
    logging::init(cli.log.as_deref(), default_level);
    // A stdio gateway serves one client: one thread keeps every handoff of a call (front
    // reader → request task → upstream writer and reader → front writer) on the same thread,
    // with no cross-thread wakeups; blocking work (SQLite, hooks) runs on the blocking pool
    // either way. An HTTP gateway gets a thread per core, except on two cores or fewer
    // (`ServeArgs::runtime_threads`), where one thread measured faster.
    let threads = match &cli.command {
        Command::Serve(args) => Some(args.runtime_threads()),
        _ => None,
    };
    let mut builder = match threads {
        Some(1) => tokio::runtime::Builder::new_current_thread(),
        Some(threads) => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(threads);
            builder
        }
        None => tokio::runtime::Builder::new_multi_thread(),
    };
    // Bookkeeping that need not precede an answer (a call's metrics) runs when a thread
    // goes idle.
    builder.on_thread_park(switchboard_core::idle::on_thread_park);
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            crate::output::note!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Serve(args) => commands::serve::run(cli.config.as_deref(), args).await,
            Command::Tools(args) => commands::tools::run(cli.config.as_deref(), args).await,
            Command::Call(args) => commands::call::run(cli.config.as_deref(), args).await,
            Command::Status(args) => commands::status::run(cli.config.as_deref(), args).await,
            Command::Config(command) => commands::config::run(cli.config.as_deref(), command),
            Command::ToolServer(args) => commands::tool_server::run(*args).await,
            Command::Rules(args) => commands::rules::run(cli.config.as_deref(), args),
            Command::Approvals(args) => commands::approvals::run(cli.config.as_deref(), args).await,
            Command::Console(args) => commands::console::run(cli.config.as_deref(), args).await,
            Command::Servers(args) => commands::servers::run(cli.config.as_deref(), *args).await,
            Command::Reload(args) => commands::servers::reload(cli.config.as_deref(), args).await,
            Command::Token(args) => commands::token::run(cli.config.as_deref(), args).await,
            Command::Keys(args) => commands::keys::run(args),
            Command::Tier(args) => commands::tier::run(cli.config.as_deref(), args).await,
            Command::Audit(args) => commands::audit::run(cli.config.as_deref(), args).await,
            Command::Migrate(args) => commands::migrate::run(cli.config.as_deref(), args).await,
            Command::Calibrate(args) => commands::calibrate::run(cli.config.as_deref(), args).await,
            Command::SearchServers(args) => {
                commands::manager::search(cli.config.as_deref(), args).await
            }
            Command::Install(args) => commands::manager::install(cli.config.as_deref(), args).await,
            Command::Operations(args) => {
                commands::manager::operations::run(cli.config.as_deref(), args).await
            }
        }
    });
    // Don't wait for stray blocking tasks (stdin readers) at exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    switchboard_mcp::upstream::reaper::finish();
    // The last log lines (a shutdown's) reach stderr before the process ends.
    logging::flush();
    match result {
        Ok(code) => code,
        Err(error) => {
            if output::is_broken_pipe(&error) {
                return ExitCode::SUCCESS;
            }
            // Said when the signal came; the command has closed since.
            if let Some(stopped) = error.downcast_ref::<commands::stop_signals::Interrupted>() {
                return ExitCode::from(stopped.exit_status());
            }
            // Not `eprintln!`, which panics when stderr is gone.
            let _ = writeln!(std::io::stderr(), "error: {}", failure::describe(&error));
            if usage::is_usage(&error) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
