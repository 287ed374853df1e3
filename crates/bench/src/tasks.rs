//! Tasks (`bench tasks`): how long creating a gateway-run task takes, and what holding
//! finished tasks costs. A legacy HTTP session in front of the stdio echo fixture starts N
//! `echo` calls as tasks one after another (`params.task` with a short TTL), timing each
//! `tools/call` → `{task}` round trip; then the gateway's resident memory with those N
//! finished tasks held, and again once their TTL has passed and a request has swept them.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

use crate::http_client::HttpClient;
use crate::scenarios::Binaries;
use crate::targets::{self, rss_kb};

#[derive(Debug, Clone, Serialize)]
pub struct TaskFigures {
    pub tasks: usize,
    pub create_p50_us: f64,
    pub create_p90_us: f64,
    pub create_p99_us: f64,
    pub rss_before_kb: u64,
    pub rss_held_kb: u64,
    pub per_task_bytes: f64,
    pub rss_after_expiry_kb: u64,
    pub held_after_expiry: usize,
}

pub fn measure(bins: &Binaries, tasks: usize, ttl: Duration) -> anyhow::Result<TaskFigures> {
    let dir = tempfile::tempdir()?;
    // One caller holds all the tasks: raise the bounds above them (and the warm-up's).
    let upstream = format!(
        "{}\n\n[gateway.tasks]\nmax_per_caller = {}\nmax_per_agent = {}\nmax_tasks = {}\n",
        targets::stdio_upstream(bins),
        tasks + 100,
        tasks + 100,
        tasks + 100
    );
    let (process, url) = targets::switchboard_http(bins, dir.path(), &upstream)?;
    let mut client = HttpClient::connect(&url)?;
    client.initialize()?;
    let call = |client: &mut HttpClient, ttl_ms: u128| {
        client.request(
            "tools/call",
            json!({"name": "echo__echo", "arguments": {"message": "task"}, "task": {"ttl": ttl_ms as u64}}),
        )
    };
    // Warm-up: the first calls connect the upstream and fill caches.
    for _ in 0..50 {
        call(&mut client, ttl.as_millis())?;
    }
    std::thread::sleep(Duration::from_millis(300));
    let rss_before_kb = rss_kb(process.pid())?;
    let mut took = Vec::with_capacity(tasks);
    for _ in 0..tasks {
        let started = Instant::now();
        let created = call(&mut client, ttl.as_millis())?;
        took.push(started.elapsed().as_secs_f64() * 1e6);
        anyhow::ensure!(
            created.pointer("/task/taskId").is_some(),
            "tools/call with params.task did not create a task: {created}"
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    let rss_held_kb = rss_kb(process.pid())?;
    // Past the TTL, any task request sweeps the expired ones.
    std::thread::sleep(ttl + Duration::from_millis(1200));
    let held = client.request("tasks/list", json!({}))?;
    let held_after_expiry = held["tasks"].as_array().map_or(0, Vec::len);
    std::thread::sleep(Duration::from_millis(300));
    let rss_after_expiry_kb = rss_kb(process.pid())?;
    took.sort_by(f64::total_cmp);
    let quantile = |q: f64| took[((took.len() as f64 - 1.0) * q).round() as usize];
    Ok(TaskFigures {
        tasks,
        create_p50_us: quantile(0.5),
        create_p90_us: quantile(0.9),
        create_p99_us: quantile(0.99),
        rss_before_kb,
        rss_held_kb,
        per_task_bytes: (rss_held_kb.saturating_sub(rss_before_kb) * 1024) as f64
            / tasks.max(1) as f64,
        rss_after_expiry_kb,
        held_after_expiry,
    })
}

/// The figures as a table.
pub fn table(figures: &TaskFigures) -> String {
    format!(
        "| tasks | create p50 | p90 | p99 | RSS before | RSS with tasks held | per task | RSS after expiry | held after expiry |\n\
         |---|---|---|---|---|---|---|---|---|\n\
         | {} | {:.0} µs | {:.0} µs | {:.0} µs | {} KiB | {} KiB | {:.0} B | {} KiB | {} |\n",
        figures.tasks,
        figures.create_p50_us,
        figures.create_p90_us,
        figures.create_p99_us,
        figures.rss_before_kb,
        figures.rss_held_kb,
        figures.per_task_bytes,
        figures.rss_after_expiry_kb,
        figures.held_after_expiry,
    )
}
