//! Resident memory of the gateway (VmRSS from /proc): with 10 idle upstreams, and per open
//! HTTP session (1,000 sessions opened with `initialize`, their connections closed, as a
//! client that goes away without `DELETE` would leave them).

use std::time::Duration;

use serde::Serialize;

use crate::http_client::HttpClient;
use crate::scenarios::{self, Binaries};
use crate::targets::{self, rss_kb};
use switchboard_fixtures::client::StdioClient;

#[derive(Debug, Clone, Serialize)]
pub struct Memory {
    pub idle_upstreams: usize,
    pub rss_with_idle_upstreams_kb: u64,
    pub sessions: usize,
    pub rss_before_sessions_kb: u64,
    pub rss_after_sessions_kb: u64,
    pub per_session_bytes: f64,
}

pub fn measure(bins: &Binaries, idle_upstreams: usize, sessions: usize) -> anyhow::Result<Memory> {
    let dir = tempfile::tempdir()?;
    let mut command = scenarios::gateway_over_fixtures(bins, dir.path(), idle_upstreams)?;
    let mut gateway = StdioClient::spawn(&mut command)?;
    gateway.initialize()?;
    gateway.request("tools/list", serde_json::json!({}))?;
    std::thread::sleep(Duration::from_millis(500));
    let rss_with_idle_upstreams_kb = rss_kb(gateway.pid())?;
    drop(gateway);

    let (process, url) =
        targets::switchboard_http(bins, dir.path(), &targets::stdio_upstream(bins))?;
    let open = |count: usize| -> anyhow::Result<()> {
        for _ in 0..count {
            let mut client = HttpClient::connect(&url)?;
            client.initialize()?;
        }
        Ok(())
    };
    open(10)?;
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_kb(process.pid())?;
    open(sessions)?;
    std::thread::sleep(Duration::from_millis(300));
    let after = rss_kb(process.pid())?;
    Ok(Memory {
        idle_upstreams,
        rss_with_idle_upstreams_kb,
        sessions,
        rss_before_sessions_kb: before,
        rss_after_sessions_kb: after,
        per_session_bytes: (after.saturating_sub(before) * 1024) as f64 / sessions.max(1) as f64,
    })
}
