//! Hand edit → list_changed: a legacy session (`initialize`, `notifications/initialized`)
//! keeps its notification stream open (`GET /mcp`), and the config file is rewritten the way
//! editors save — the new text to `FILE.tmp`, renamed over `FILE` — alternately adding a
//! stdio echo server `h{k}` and removing it again. Each edit is timed from the rename to
//! `notifications/tools/list_changed` on the stream; the gateway's file watcher waits for the
//! file to be quiet for 300 ms first, by design, so that much of the time is the debounce.
//! After each notification the session lists its tools: a listing that does not show the
//! edit yet is counted (stale), and so is any further notification of the same edit.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::{Value, json};

use super::sse::Stream;
use super::{Gateway, server_entry};
use crate::http_client::HttpClient;
use crate::report::{Percentiles, ScenarioResult};

/// The gateway's debounce of file events, in ms (part of every figure here).
const DEBOUNCE_MS: u64 = 300;

/// How long the stream must stay silent after an edit's notification before the next edit.
const QUIET: Duration = Duration::from_millis(500);

/// What the edits measured.
#[derive(Debug, Serialize)]
pub struct HandEdits {
    pub edits: usize,
    /// From the rename over the file to `notifications/tools/list_changed`.
    pub to_list_changed: Percentiles,
    /// The edits that added a server.
    pub adding: Percentiles,
    /// The edits that removed it.
    pub removing: Percentiles,
    /// The watcher's debounce, included in every figure.
    pub debounce_ms: u64,
    /// Listings right after the notification that did not show the edit yet (expected 0).
    pub stale_listings: usize,
    /// Notifications beyond the first of an edit.
    pub extra_notifications: usize,
}

/// `edits` hand edits of the config file, one at a time.
pub fn measure(gateway: &Gateway, edits: usize) -> anyhow::Result<HandEdits> {
    let mut session = gateway.client()?;
    let id = session
        .session()
        .context("the gateway opened no legacy session (no Mcp-Session-Id)")?
        .to_owned();
    let stream = Stream::open(&gateway.url, &id, gateway.timeout)?;
    // Earlier changes wrote the file too: let the watcher's reloads of them pass.
    drain(&stream, Duration::from_secs(1))?;
    let temp = gateway.config.with_extension("toml.tmp");
    let (mut all, mut adding, mut removing) = (Vec::new(), Vec::new(), Vec::new());
    let (mut stale, mut extra) = (0, 0);
    for i in 0..edits {
        let adds = i % 2 == 0;
        let name = format!("h{}", i / 2);
        let what = format!(
            "edit {} ({} {name})",
            i + 1,
            if adds { "adding" } else { "removing" }
        );
        let mut text = gateway.base.clone();
        if adds {
            text.push_str(&server_entry(&gateway.fixture, &name));
        }
        std::fs::write(&temp, text).with_context(|| format!("cannot write {}", temp.display()))?;
        let renamed = Instant::now();
        std::fs::rename(&temp, &gateway.config).with_context(|| {
            format!(
                "cannot rename {} over {}",
                temp.display(),
                gateway.config.display()
            )
        })?;
        let arrived = list_changed(&stream, gateway.timeout).with_context(|| what.clone())?;
        let took = arrived.saturating_duration_since(renamed);
        all.push(took);
        if adds { &mut adding } else { &mut removing }.push(took);
        let tool = format!("{name}__echo");
        if !listing_shows(&mut session, &tool, adds)? {
            stale += 1;
            wait_listing(&mut session, &tool, adds, gateway.timeout)
                .with_context(|| what.clone())?;
        }
        extra += drain(&stream, QUIET)?;
    }
    Ok(HandEdits {
        edits,
        to_list_changed: Percentiles::of(&mut all),
        adding: Percentiles::of(&mut adding),
        removing: Percentiles::of(&mut removing),
        debounce_ms: DEBOUNCE_MS,
        stale_listings: stale,
        extra_notifications: extra,
    })
}

fn is_list_changed(message: &Value) -> bool {
    message.get("method") == Some(&json!("notifications/tools/list_changed"))
}

/// When the next `notifications/tools/list_changed` arrived; none within `limit` is an error.
fn list_changed(stream: &Stream, limit: Duration) -> anyhow::Result<Instant> {
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match stream.next(left)? {
            Some((at, message)) if is_list_changed(&message) => return Ok(at),
            Some(_) => {}
            None => bail!("no notifications/tools/list_changed within {limit:?}"),
        }
    }
}

/// Reads the stream until it has been silent for `quiet`; the tools/list_changed seen.
fn drain(stream: &Stream, quiet: Duration) -> anyhow::Result<usize> {
    let mut seen = 0;
    while let Some((_, message)) = stream.next(quiet)? {
        seen += usize::from(is_list_changed(&message));
    }
    Ok(seen)
}

/// Whether the session's `tools/list` has `tool` (`present`) or lacks it (`!present`).
fn listing_shows(session: &mut HttpClient, tool: &str, present: bool) -> anyhow::Result<bool> {
    let listed = session
        .request("tools/list", json!({}))
        .context("tools/list")?;
    let has = listed
        .get("tools")
        .and_then(Value::as_array)
        .context("tools/list answered no tools")?
        .iter()
        .any(|t| t.get("name") == Some(&json!(tool)));
    Ok(has == present)
}

/// Lists until the listing shows the edit.
fn wait_listing(
    session: &mut HttpClient,
    tool: &str,
    present: bool,
    limit: Duration,
) -> anyhow::Result<()> {
    let started = Instant::now();
    while !listing_shows(session, tool, present)? {
        if started.elapsed() > limit {
            bail!(
                "the listing still {} {tool} {limit:?} after the notification",
                if present { "lacks" } else { "has" }
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

impl HandEdits {
    /// The printed table.
    pub fn table(&self) -> ScenarioResult {
        ScenarioResult {
            scenario: format!(
                "live: hand edit of the config file (write FILE.tmp, rename over FILE) → notifications/tools/list_changed ({} edits)",
                self.edits
            ),
            rows: vec![
                (
                    "hand edit → list_changed".to_owned(),
                    self.to_list_changed.clone(),
                ),
                ("  adding a server".to_owned(), self.adding.clone()),
                ("  removing it".to_owned(), self.removing.clone()),
            ],
            notes: vec![
                format!(
                    "includes the watcher's {} ms debounce (it waits for the file to go quiet) by design; target < 1 s",
                    self.debounce_ms
                ),
                format!(
                    "listings not yet showing the edit at the notification: {}; notifications beyond one per edit: {}",
                    self.stale_listings, self.extra_notifications
                ),
            ],
        }
    }
}
