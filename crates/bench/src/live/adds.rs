//! add → callable: a stdio echo server `n{i}` added through the admin endpoint (`POST
//! /changes` with the admin file's token, so no CLI process start is counted), then
//! `n{i}__echo` called at once through `/mcp` on a session opened before the add — timed from
//! sending the add to the first answered call. Beside it, the new server's own start,
//! handshake and listing (`connect_ms` of the change report): what the gateway adds is the
//! difference. Each server is removed after its round, the remove timed on its own. A few
//! rounds go through `switchboard servers add --json` too, its own process start included.

use std::time::Instant;

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::Value;

use super::{Gateway, admin, first_answer, from_ms};
use crate::report::{Percentiles, ScenarioResult};

/// What the adds measured.
#[derive(Debug, Serialize)]
pub struct AddToCallable {
    pub rounds: usize,
    /// From sending the add to the first answered call of the new server's echo.
    pub add_to_callable: Percentiles,
    /// From sending the add to its answer (the change report).
    pub add_answered: Percentiles,
    /// The new server's own start, handshake and listing (`connect_ms`).
    pub server_start: Percentiles,
    /// add → callable p50 − server start p50, in ms: what the gateway adds.
    pub added_by_gateway_p50_ms: f64,
    /// From sending the remove to its answer.
    pub remove_answered: Percentiles,
    /// Calls answered "unknown tool" after the add had answered (expected: none).
    pub unknown_tool_answers: usize,
    /// The same through the CLI, when rounds were asked for.
    pub cli: Option<CliRounds>,
}

/// add → callable through `switchboard servers add --admin-file ADMIN --json -- ...`.
#[derive(Debug, Serialize)]
pub struct CliRounds {
    pub rounds: usize,
    /// From starting the CLI to the first answered call.
    pub add_to_callable: Percentiles,
    pub server_start: Percentiles,
    pub unknown_tool_answers: usize,
}

/// `rounds` adds through the admin endpoint, then `cli_rounds` through the CLI.
pub fn measure(
    gateway: &Gateway,
    rounds: usize,
    cli_rounds: usize,
) -> anyhow::Result<AddToCallable> {
    let mut caller = gateway.client()?;
    let (mut totals, mut answered, mut starts, mut removes) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut unknown = 0;
    for i in 0..rounds {
        let name = format!("n{i}");
        let sent = Instant::now();
        let outcome = gateway
            .admin
            .add_stdio(&name, &gateway.fixture, &["echo"])?;
        answered.push(sent.elapsed());
        starts.push(from_ms(admin::connect_ms(&outcome)?));
        let (at, refused) =
            first_answer(&mut caller, &format!("{name}__echo"), sent, gateway.timeout)?;
        totals.push(at.duration_since(sent));
        unknown += refused;
        let removing = Instant::now();
        gateway.admin.remove(&name)?;
        removes.push(removing.elapsed());
    }
    let cli = (cli_rounds > 0)
        .then(|| through_cli(gateway, &mut caller, cli_rounds))
        .transpose()?;
    let add_to_callable = Percentiles::of(&mut totals);
    let server_start = Percentiles::of(&mut starts);
    Ok(AddToCallable {
        rounds,
        added_by_gateway_p50_ms: (add_to_callable.p50_us - server_start.p50_us) / 1000.0,
        add_to_callable,
        add_answered: Percentiles::of(&mut answered),
        server_start,
        remove_answered: Percentiles::of(&mut removes),
        unknown_tool_answers: unknown,
        cli,
    })
}

/// `rounds` adds of `c{j}` through the CLI, each removed through the admin endpoint after.
fn through_cli(
    gateway: &Gateway,
    caller: &mut crate::http_client::HttpClient,
    rounds: usize,
) -> anyhow::Result<CliRounds> {
    let admin_file = gateway.admin_file.display().to_string();
    let (mut totals, mut starts) = (Vec::new(), Vec::new());
    let mut unknown = 0;
    for j in 0..rounds {
        let name = format!("c{j}");
        let args = [
            "servers",
            "add",
            &name,
            "--admin-file",
            &admin_file,
            "--json",
            "--",
            &gateway.fixture,
            "echo",
        ];
        let sent = Instant::now();
        let output = gateway
            .cli(&args)
            .output()
            .with_context(|| format!("cannot run {}", gateway.switchboard.display()))?;
        if !output.status.success() {
            bail!(
                "switchboard servers add {name} failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        let report: Value = serde_json::from_slice(&output.stdout).with_context(|| {
            format!(
                "switchboard servers add {name} --json printed no JSON: {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })?;
        let outcome = admin::outcome(&report, &name)
            .with_context(|| format!("switchboard servers add {name}"))?;
        let (at, refused) = first_answer(caller, &format!("{name}__echo"), sent, gateway.timeout)?;
        totals.push(at.duration_since(sent));
        starts.push(from_ms(admin::connect_ms(&outcome)?));
        unknown += refused;
        gateway.admin.remove(&name)?;
    }
    Ok(CliRounds {
        rounds,
        add_to_callable: Percentiles::of(&mut totals),
        server_start: Percentiles::of(&mut starts),
        unknown_tool_answers: unknown,
    })
}

impl AddToCallable {
    /// The printed table.
    pub fn table(&self) -> ScenarioResult {
        let mut rows = vec![
            (
                "add → callable (admin endpoint)".to_owned(),
                self.add_to_callable.clone(),
            ),
            ("  add answered".to_owned(), self.add_answered.clone()),
            (
                "  server's own start (connect_ms)".to_owned(),
                self.server_start.clone(),
            ),
            ("remove answered".to_owned(), self.remove_answered.clone()),
        ];
        let mut notes = vec![
            format!(
                "added by the gateway at p50: {:.1} ms (add → callable p50 {:.1} ms − server start p50 {:.1} ms); target < 150 ms",
                self.added_by_gateway_p50_ms,
                self.add_to_callable.p50_us / 1000.0,
                self.server_start.p50_us / 1000.0
            ),
            format!(
                "calls answered \"unknown tool\" after the add answered: {}",
                self.unknown_tool_answers
            ),
        ];
        if let Some(cli) = &self.cli {
            rows.push((
                "add → callable (CLI)".to_owned(),
                cli.add_to_callable.clone(),
            ));
            rows.push((
                "  server's own start (connect_ms)".to_owned(),
                cli.server_start.clone(),
            ));
            notes.push(format!(
                "CLI rounds: `switchboard servers add NAME --admin-file ADMIN --json -- ...`, its own process start included; {} \"unknown tool\" answers",
                cli.unknown_tool_answers
            ));
        }
        ScenarioResult {
            scenario: format!(
                "live: add a stdio echo server → its first answered call ({} rounds, then removed)",
                self.rounds
            ),
            rows,
            notes,
        }
    }
}
