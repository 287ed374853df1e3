//! `switchboard audit`: read the audit ledger — recent calls with filters, a JSONL export,
//! and `verify`, which walks the hash chain and names the first edited or deleted row. The
//! ledger is the SQLite file, or PostgreSQL when the config has `[storage] url`
//! ([`reader`]).

mod reader;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use switchboard_core::config::Config;
use switchboard_core::pipeline::{CHANGE_OUTCOMES, CallStatus};
use switchboard_ledger::{Filter, Ledger, LedgerEntry};

use reader::Reader;

use crate::output::{print_json, print_line};

#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    #[command(subcommand)]
    action: Option<Action>,
    #[command(flatten)]
    filter: FilterArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// The ledger file (default: gateway.ledger, else $XDG_DATA_HOME/switchboard/ledger.db;
    /// with [storage] url, the ledger on PostgreSQL unless this names a file).
    #[arg(long, global = true, value_name = "FILE")]
    ledger: Option<PathBuf>,
}

#[derive(Debug, Clone, clap::Args)]
struct FilterArgs {
    /// Only calls newer than this: 30m, 1h, 2d, or a Unix time in milliseconds.
    #[arg(long)]
    since: Option<String>,
    #[arg(long)]
    agent: Option<String>,
    /// Exposed tool name or glob: `*` any run of characters, `?` one (`files__*`).
    #[arg(long)]
    tool: Option<String>,
    /// ok, tool_error, unknown_tool, invalid_arguments, denied, rate_limited, timed_out,
    /// cancelled, upstream_down, upstream_error, input_required, unavailable; a change of
    /// the configuration: config_applied, config_refused, config_failed.
    #[arg(long)]
    outcome: Option<String>,
    /// Most rows (default 50, `export` all; 0 = all).
    #[arg(long)]
    limit: Option<usize>,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Every matching row as JSON lines, oldest first.
    Export {
        #[arg(long, default_value = "jsonl")]
        format: String,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Check the hash chain: exits 1 and names the row when one was edited or deleted.
    Verify,
}

/// The ledger file of a config (`--ledger`, else the library's rule:
/// [`switchboard::data_dir::ledger_path`]).
pub fn ledger_path(config: &Config, explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    match explicit {
        Some(path) => Ok(path.to_owned()),
        None => switchboard::data_dir::ledger_path(config)
            .context("no data directory: set XDG_DATA_HOME or HOME, or gateway.ledger"),
    }
}

/// Where latency stats are kept: `[latency] database`, else `latency.db` in the data
/// directory (`None` without one: stats then live in memory only).
pub fn latency_path(config: &Config) -> Option<PathBuf> {
    config
        .latency
        .database
        .clone()
        .or_else(|| Some(switchboard::data_dir::data_dir()?.join("latency.db")))
}

/// `[storage] url`, the shared PostgreSQL, when the config names one.
pub fn storage_url(config: &Config) -> Option<&str> {
    config.storage.url.as_ref().map(|url| url.expose())
}

/// Where a gateway on PostgreSQL journals its rows before they are appended there:
/// `postgres-ledger.journal-<pid>` (and its shards, `.journal-<pid>.<k>`, and their segments,
/// `.retired-<n>` and `.fresh-<n>`) beside where the SQLite ledger would be (never the SQLite
/// ledger's own journals, which opening that file would replay into it).
pub fn postgres_journal_base(config: &Config) -> anyhow::Result<PathBuf> {
    Ok(ledger_path(config, None)?.with_file_name("postgres-ledger"))
}

/// Opens the ledger for a running gateway or a CLI call, applying retention (on SQLite:
/// the PostgreSQL ledger is append-only).
pub fn open_ledger(config: &Config) -> anyhow::Result<Ledger> {
    if let Some(url) = storage_url(config) {
        if config.gateway.ledger_retention_days.is_some()
            || config.gateway.ledger_max_rows.is_some()
        {
            tracing::warn!(
                "gateway.ledger_retention_days and ledger_max_rows apply to the SQLite ledger only: \
                 the ledger on PostgreSQL is append-only and keeps every row"
            );
        }
        let base = postgres_journal_base(config)?;
        if let Some(dir) = base.parent() {
            std::fs::create_dir_all(dir).with_context(|| {
                format!("cannot create {} for the ledger's journal", dir.display())
            })?;
        }
        let ledger = Ledger::open_postgres(url, &base).map_err(anyhow::Error::msg)?;
        ledger.refuse_calls_while_unreachable(
            config.storage.ledger_unavailable
                == switchboard_core::config::LedgerUnavailable::Refuse,
        );
        return Ok(ledger);
    }
    let path = ledger_path(config, None)?;
    let cutoff = config.gateway.ledger_retention_days.map(|days| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        now - i64::try_from(days).unwrap_or(i64::MAX / 86_400_000) * 86_400_000
    });
    let max_rows = config
        .gateway
        .ledger_max_rows
        .map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    let (ledger, pruned) =
        Ledger::open_keeping(&path, cutoff, max_rows).map_err(anyhow::Error::msg)?;
    if pruned > 0 {
        tracing::info!(pruned, "ledger: retention removed old rows");
    }
    Ok(ledger)
}

fn parse_since(text: &str) -> anyhow::Result<i64> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    let duration = switchboard_core::config::parse_duration(text)
        .or_else(|| {
            // Days, whole or not (1.5d); past what a duration holds is no duration.
            text.strip_suffix('d')
                .and_then(|d| d.trim().parse::<f64>().ok())
                .filter(|d| d.is_finite() && *d >= 0.0)
                .and_then(|d| std::time::Duration::try_from_secs_f64(d * 86_400.0).ok())
        })
        .ok_or_else(|| {
            crate::usage::usage(format!(
                "--since '{text}': use e.g. 30m, 1h, 2d or milliseconds since the epoch"
            ))
        })?;
    Ok(now.saturating_sub(i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)))
}

/// Every outcome a ledger row may have: a call's status, or `config_` and a change's.
fn known_outcomes() -> Vec<String> {
    CallStatus::ALL
        .iter()
        .map(|status| status.as_str().to_owned())
        .chain(
            CHANGE_OUTCOMES
                .iter()
                .map(|outcome| format!("config_{outcome}")),
        )
        .collect()
}

/// `--outcome`, refused unless a row could have it (a typo would list nothing, exit 0).
fn check_outcome(outcome: &str) -> anyhow::Result<()> {
    let known = known_outcomes();
    if known.iter().any(|name| name == outcome) {
        return Ok(());
    }
    Err(crate::usage::usage(format!(
        "--outcome '{outcome}' is not an outcome; use one of: {}",
        known.join(", ")
    )))
}

/// What other globs give a meaning — `[a-z]` classes, `{a,b}` alternatives — and `--tool`'s
/// does not (its wildcards are `*` and `?`, [`switchboard_core::agent::glob_match`]); no
/// exposed name holds one either, so taken literally they would list nothing, exit 0.
const NOT_IN_THE_GLOB: [char; 4] = ['[', ']', '{', '}'];

/// `--tool`, refused when it holds a character of [`NOT_IN_THE_GLOB`].
fn check_tool_glob(glob: &str) -> anyhow::Result<()> {
    let Some(stray) = glob.chars().find(|c| NOT_IN_THE_GLOB.contains(c)) else {
        return Ok(());
    };
    Err(crate::usage::usage(format!(
        "--tool '{glob}': '{stray}' is not part of the glob, whose wildcards are * (any run of \
         characters) and ? (one character); exposed names hold only A-Z a-z 0-9 _ . - \
         (e.g. --tool 'files__*')"
    )))
}

fn filter(args: &FilterArgs) -> anyhow::Result<Filter> {
    Ok(Filter {
        since_ms: args.since.as_deref().map(parse_since).transpose()?,
        agent: args.agent.clone(),
        tool: args.tool.clone(),
        outcome: args.outcome.clone(),
        limit: args.limit.unwrap_or(50),
    })
}

/// The widths of the listing's outcome and tool columns: the longest in the rows shown.
#[derive(Debug, Clone, Copy)]
struct Columns {
    outcome: usize,
    tool: usize,
}

impl Columns {
    fn of(rows: &[LedgerEntry]) -> Self {
        let widest = |width: fn(&LedgerEntry) -> usize| rows.iter().map(width).max().unwrap_or(0);
        Self {
            outcome: widest(|row| row.outcome.chars().count()),
            tool: widest(|row| row.exposed.chars().count()),
        }
    }
}

fn line(entry: &LedgerEntry, columns: Columns) -> String {
    format!(
        "{}  {:<outcome$}  {:<tool$}  agent={} {:>8.1} ms{}{}",
        entry.call_id,
        entry.outcome,
        entry.exposed,
        entry.agent.as_deref().unwrap_or("-"),
        entry.duration_us as f64 / 1000.0,
        entry
            .approval
            .as_ref()
            .map_or(String::new(), |a| format!("  [{a}]")),
        entry.error.as_ref().map_or(String::new(), |e| format!(
            "  {}",
            e.lines().next().unwrap_or("")
        )),
        outcome = columns.outcome,
        tool = columns.tool,
    )
}

pub async fn run(config: Option<&Path>, args: AuditArgs) -> anyhow::Result<ExitCode> {
    // Usage first: before the ledger is looked for.
    if let Some(Action::Export { format, .. }) = &args.action
        && format != "jsonl"
    {
        return Err(crate::usage::usage(format!(
            "export format '{format}' is not known (use jsonl)"
        )));
    }
    let export_filter = match &args.action {
        Some(Action::Export { filter, .. }) => Some(filter),
        _ => None,
    };
    for filter in [&args.filter, export_filter.unwrap_or(&args.filter)] {
        if let Some(outcome) = filter.outcome.as_deref() {
            check_outcome(outcome)?;
        }
        if let Some(glob) = filter.tool.as_deref() {
            check_tool_glob(glob)?;
        }
    }
    let config = super::load_config(config)?;
    // `--ledger FILE` names a SQLite file, and wins over `[storage] url`.
    let mut reader = match storage_url(&config).filter(|_| args.ledger.is_none()) {
        Some(url) => Reader::postgres(url, &postgres_journal_base(&config)?).await?,
        None => Reader::sqlite(&ledger_path(&config, args.ledger.as_deref())?)?,
    };
    match args.action {
        Some(Action::Verify) => {
            let report = reader.verify().await?;
            match &report.problem {
                None => print_line(&format!(
                    "ledger {} is intact: {} rows, chain verified",
                    reader.name(),
                    report.rows
                ))?,
                Some((id, what)) => {
                    print_line(&format!("ledger {}: row {id}: {what}", reader.name()))?;
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
        Some(Action::Export {
            format,
            filter: filter_args,
        }) => {
            debug_assert_eq!(format, "jsonl", "checked above");
            // Every row unless --limit says otherwise (its default is the listing's).
            let limit = filter_args.limit.unwrap_or(0);
            let mut rows = reader
                .query(&Filter {
                    limit,
                    ..filter(&filter_args)?
                })
                .await?;
            rows.reverse();
            for row in rows {
                print_line(&serde_json::to_string(&row)?)?;
            }
        }
        None => {
            let rows = reader.query(&filter(&args.filter)?).await?;
            if args.json {
                print_json(&rows)?;
            } else {
                let columns = Columns::of(&rows);
                for row in &rows {
                    print_line(&line(row, columns))?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Days whole or not; a number of days past what a duration holds is refused, not
    /// wrapped.
    #[test]
    fn since_takes_days_and_refuses_what_overflows() {
        let now = parse_since("0d").expect("now");
        let day_and_a_half = parse_since("1.5d").expect("1.5d");
        assert!((now - day_and_a_half - 129_600_000).abs() < 5_000);
        assert!(parse_since("300000000000000000000d").is_err());
        assert!(parse_since("-1d").is_err());
        assert_eq!(
            parse_since("1700000000000").expect("epoch ms"),
            1_700_000_000_000
        );
    }
}
