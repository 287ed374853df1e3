//! Running figures of the ledger for the operator's console — per agent (calls, denials,
//! rate-limit refusals, cost), per server (last success, last failure and its error, calls
//! and failures), per tool (its last durations) — kept up to date by reading only the rows
//! written since the last look (a row id range), so a page costs the same with a thousand
//! rows or ten million. The first look reads back as far as the longest window asked for.
//!
//! Figures are counted per minute of start time, so a window's edge is exact to the minute.
//! The ledger's schema is not touched: an index for these would cost every call's row on
//! the writer.

use std::collections::{BTreeMap, HashMap, VecDeque};

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::LedgerError;

/// Durations kept per tool.
pub const TIMINGS_KEPT: usize = 200;

const MINUTE_MS: i64 = 60_000;

/// Outcomes that count as a failed call of a server.
const FAILED: [&str; 4] = ["tool_error", "timed_out", "upstream_down", "upstream_error"];
/// Outcomes of calls that reached a server (and were measured).
fn reached_server(outcome: &str) -> bool {
    outcome == "ok" || FAILED.contains(&outcome)
}

fn sql(error: rusqlite::Error) -> LedgerError {
    LedgerError::Database(error.to_string())
}

/// One agent's calls in a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct AgentTotals {
    pub calls: u64,
    pub denied: u64,
    pub rate_limited: u64,
    /// The cost charged, the unit of quotas.
    pub cost: f64,
}

impl AgentTotals {
    fn add(&mut self, other: &Self) {
        self.calls += other.calls;
        self.denied += other.denied;
        self.rate_limited += other.rate_limited;
        self.cost += other.cost;
    }
}

/// One server's calls as the ledger has them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerCalls {
    pub last_ok_ms: Option<i64>,
    pub last_error_ms: Option<i64>,
    pub last_error: Option<String>,
    /// Calls that reached it and those that failed, in the window asked for.
    pub calls: u64,
    pub failed: u64,
}

/// One call's start and duration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Timing {
    pub started_ms: i64,
    pub duration_us: i64,
    pub ok: bool,
}

#[derive(Default)]
struct Server {
    last_ok_ms: Option<i64>,
    last_error_ms: Option<i64>,
    last_error: Option<String>,
    /// Minute → (calls, failed).
    minutes: BTreeMap<i64, (u64, u64)>,
}

/// The columns of one row the figures count.
#[derive(Debug, Clone, PartialEq)]
pub struct TallyRow {
    pub id: i64,
    pub started_ms: i64,
    pub agent: Option<String>,
    pub server: Option<String>,
    pub exposed: String,
    pub outcome: String,
    pub error: Option<String>,
    pub duration_us: i64,
    pub cost: f64,
}

/// What [`Tally::plan`] says a refresh must read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TallyPlan {
    /// The window's start (ms since the epoch).
    pub horizon_ms: i64,
    /// Read the rows after this id; `None`: start over with the window's rows.
    pub after_id: Option<i64>,
}

/// The running figures. Not shared by itself: hold it behind a lock.
#[derive(Default)]
pub struct Tally {
    /// The last row read.
    last_id: i64,
    /// How far back the figures go (ms since the epoch); `None` before the first look.
    horizon_ms: Option<i64>,
    agents: HashMap<Option<String>, BTreeMap<i64, AgentTotals>>,
    servers: HashMap<String, Server>,
    tools: HashMap<String, VecDeque<Timing>>,
}

impl Tally {
    /// Reads the rows written since the last look, keeping figures for `keep_ms` back from
    /// `now_ms` (a longer `keep_ms` than before starts over from the ledger). Returns how
    /// many rows it read.
    pub fn refresh(
        &mut self,
        conn: &Connection,
        now_ms: i64,
        keep_ms: i64,
    ) -> Result<usize, LedgerError> {
        let horizon = now_ms - keep_ms;
        if self.horizon_ms.is_none_or(|known| known > horizon) {
            *self = Self::default();
            // The first row of the window, found on the index of start times.
            let first: Option<i64> = conn
                .query_row(
                    "SELECT id FROM mcp_tool_invocations WHERE started_ms >= ?1
                     ORDER BY started_ms LIMIT 1",
                    [horizon],
                    |row| row.get(0),
                )
                .optional()
                .map_err(sql)?;
            self.last_id = first.map_or(i64::MAX, |id| id - 1);
            if first.is_none() {
                // Nothing in the window yet: start after the last row there is.
                self.last_id = conn
                    .query_row(
                        "SELECT IFNULL(MAX(id), 0) FROM mcp_tool_invocations",
                        [],
                        |row| row.get(0),
                    )
                    .map_err(sql)?;
            }
        }
        self.horizon_ms = Some(horizon);
        let mut select = conn
            .prepare_cached(
                "SELECT id, started_ms, agent, server, exposed, outcome, error, duration_us, cost
                 FROM mcp_tool_invocations WHERE id > ?1 ORDER BY id",
            )
            .map_err(sql)?;
        let mut rows = select.query(params![self.last_id]).map_err(sql)?;
        let mut read = 0;
        while let Some(row) = rows.next().map_err(sql)? {
            read += 1;
            self.take(
                TallyRow {
                    id: row.get(0).map_err(sql)?,
                    started_ms: row.get(1).map_err(sql)?,
                    agent: row.get(2).map_err(sql)?,
                    server: row.get(3).map_err(sql)?,
                    exposed: row.get(4).map_err(sql)?,
                    outcome: row.get(5).map_err(sql)?,
                    error: row.get(6).map_err(sql)?,
                    duration_us: row.get(7).map_err(sql)?,
                    cost: row.get(8).map_err(sql)?,
                },
                horizon,
            );
        }
        self.forget_before(horizon);
        Ok(read)
    }

    /// What a refresh from a store read elsewhere (PostgreSQL, asynchronously) must read:
    /// the rows after [`TallyPlan::after_id`], or with `None` the whole window from
    /// [`TallyPlan::horizon_ms`] (a first look, or a longer `keep_ms`).
    pub fn plan(&self, now_ms: i64, keep_ms: i64) -> TallyPlan {
        let horizon_ms = now_ms - keep_ms;
        let start_over = self.horizon_ms.is_none_or(|known| known > horizon_ms);
        TallyPlan {
            horizon_ms,
            after_id: (!start_over).then_some(self.last_id),
        }
    }

    /// Applies the rows read for `plan` (in id order), and `last_id`, the newest row id the
    /// store had (so an empty window starts after it). Rows already counted (a refresh that
    /// ran meanwhile) are skipped. Returns how many it counted.
    pub fn apply(&mut self, plan: &TallyPlan, rows: Vec<TallyRow>, last_id: i64) -> usize {
        if plan.after_id.is_none() {
            *self = Self::default();
        }
        self.horizon_ms = Some(plan.horizon_ms);
        let mut counted = 0;
        for row in rows {
            if row.id > self.last_id {
                counted += 1;
                self.take(row, plan.horizon_ms);
            }
        }
        self.last_id = self.last_id.max(last_id);
        self.forget_before(plan.horizon_ms);
        counted
    }

    /// Counts one row (later than the last one read).
    fn take(&mut self, row: TallyRow, horizon: i64) {
        self.last_id = row.id;
        let started = row.started_ms;
        let outcome = row.outcome;
        if started < horizon || outcome.starts_with("config_") {
            return;
        }
        let minute = started.div_euclid(MINUTE_MS);
        let totals = self
            .agents
            .entry(row.agent)
            .or_default()
            .entry(minute)
            .or_default();
        totals.add(&AgentTotals {
            calls: 1,
            denied: u64::from(outcome == "denied"),
            rate_limited: u64::from(outcome == "rate_limited"),
            cost: row.cost,
        });
        if !reached_server(&outcome) {
            return;
        }
        let failed = outcome != "ok";
        if let Some(server) = row.server {
            let server = self.servers.entry(server).or_default();
            let counts = server.minutes.entry(minute).or_default();
            counts.0 += 1;
            counts.1 += u64::from(failed);
            if failed {
                server.last_error_ms = server.last_error_ms.max(Some(started));
                server.last_error = row.error;
            } else {
                server.last_ok_ms = server.last_ok_ms.max(Some(started));
            }
        }
        let timings = self.tools.entry(row.exposed).or_default();
        if timings.len() == TIMINGS_KEPT {
            timings.pop_front();
        }
        timings.push_back(Timing {
            started_ms: started,
            duration_us: row.duration_us,
            ok: !failed,
        });
    }

    fn forget_before(&mut self, horizon: i64) {
        let first_minute = horizon.div_euclid(MINUTE_MS);
        for minutes in self.agents.values_mut() {
            *minutes = minutes.split_off(&first_minute);
        }
        for server in self.servers.values_mut() {
            server.minutes = server.minutes.split_off(&first_minute);
        }
    }

    /// `agent`'s calls (`None`: callers without an agent) that started at or after `since_ms`.
    pub fn agent(&self, agent: Option<&str>, since_ms: i64) -> AgentTotals {
        let mut totals = AgentTotals::default();
        if let Some(minutes) = self.agents.get(&agent.map(str::to_owned)) {
            for counts in minutes
                .range(since_ms.div_euclid(MINUTE_MS)..)
                .map(|(_, c)| c)
            {
                totals.add(counts);
            }
        }
        totals
    }

    /// `server`'s last success and failure, and its calls since `since_ms`.
    pub fn server(&self, server: &str, since_ms: i64) -> ServerCalls {
        let Some(known) = self.servers.get(server) else {
            return ServerCalls::default();
        };
        let (calls, failed) = known
            .minutes
            .range(since_ms.div_euclid(MINUTE_MS)..)
            .fold((0, 0), |(calls, failed), (_, (c, f))| {
                (calls + c, failed + f)
            });
        ServerCalls {
            last_ok_ms: known.last_ok_ms,
            last_error_ms: known.last_error_ms,
            last_error: known.last_error.clone(),
            calls,
            failed,
        }
    }

    /// The exposed tool's last calls that reached its server (at most [`TIMINGS_KEPT`]),
    /// oldest first.
    pub fn timings(&self, tool: &str) -> Vec<Timing> {
        self.tools
            .get(tool)
            .map(|timings| timings.iter().copied().collect())
            .unwrap_or_default()
    }
}
