//! How long the console takes to answer its pages at scale: 1,000 tools (one fixture server
//! replaying a catalog of 1,000) and 100,000 ledger rows from the last day, two agents.
//! Each figure is a whole request over loopback (the client's share included, so it bounds
//! the server's time from above), against the target of 50 ms per page.
//!
//! `cargo bench -p switchboard-console --bench render` (needs `switchboard-fixture`: run
//! `cargo build --workspace --bins` or `--release` first).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use switchboard::Host;
use switchboard_console::{Console, ConsoleOptions};
use switchboard_core::config::{Config, GatewayEnvironment};
use switchboard_ledger::{Ledger, LedgerEntry};

const TOOLS: usize = 1_000;
const ROWS: usize = 100_000;
const TOKEN: &str = "bench-admin-token-bench-admin-token-bench-admin-token-0000000000";

/// The fixture binary of this build's profile, else of the other.
fn fixture() -> PathBuf {
    let exe = std::env::current_exe().expect("exe");
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).expect("dir");
    let candidates = [
        profile_dir.join("switchboard-fixture"),
        profile_dir.join("../debug/switchboard-fixture"),
        profile_dir.join("../release/switchboard-fixture"),
    ];
    candidates
        .into_iter()
        .find(|path| path.is_file())
        .expect("switchboard-fixture is missing: run `cargo build --workspace --bins` first")
}

fn rows(now_ms: i64) -> Vec<LedgerEntry> {
    let outcomes = [
        "ok",
        "ok",
        "ok",
        "ok",
        "tool_error",
        "denied",
        "rate_limited",
    ];
    (0..ROWS)
        .map(|i| LedgerEntry {
            call_id: format!("01BENCH{i:019}"),
            // Spread over the last 20 hours, oldest first (see `Setup::started_of`).
            started_ms: now_ms - 72_000_000 + (i as i64) * 720,
            agent: Some(if i % 3 == 0 { "npc" } else { "qa" }.to_owned()),
            subject: None,
            client_id: None,
            session: None,
            tier: None,
            exposed: format!("big__s_tool{}", i % TOOLS),
            server: Some("big".to_owned()),
            tool: Some(format!("s_tool{}", i % TOOLS)),
            args_digest: None,
            args_redacted: Some(std::sync::Arc::new(
                json!({"query": format!("question {i}")}),
            )),
            outcome: outcomes[i % outcomes.len()].to_owned(),
            error: (i % outcomes.len() == 4).then(|| "the tool failed".to_owned()),
            duration_us: 200 + (i as i64 * 7919) % 50_000,
            cost: 0.01,
            approval: None,
            result_bytes: Some(100),
            cached: false,
            trace_id: None,
        })
        .collect()
}

struct Setup {
    /// When the rows were made (they end 52 minutes before it).
    now_ms: i64,
    ledger: PathBuf,
    _dir: tempfile::TempDir,
    _host: Host,
    url: String,
    cookie: String,
}

impl Setup {
    /// The start time of the row with this id.
    fn started_of(&self, id: i64) -> i64 {
        self.now_ms - 72_000_000 + (id - 1) * 720
    }
}

async fn set_up() -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("catalog.json");
    let tools: Vec<_> = (0..TOOLS)
        .map(|i| json!({"server": "s", "name": format!("tool{i}"), "description": format!("Tool number {i}."), "inputSchema": {"type": "object"}}))
        .collect();
    std::fs::write(&catalog, json!({"tools": tools}).to_string()).expect("catalog");
    let ledger_path = dir.path().join("ledger.db");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    let mut conn = switchboard_ledger::store::open(&ledger_path).expect("ledger");
    for chunk in rows(now).chunks(10_000) {
        switchboard_ledger::store::insert(&mut conn, chunk).expect("rows");
    }
    drop(conn);
    let config_path = dir.path().join("switchboard.toml");
    std::fs::write(
        &config_path,
        format!(
            "[agents.qa]\napproval = \"never\"\n\n[agents.npc]\nallow = [\"big__s_tool1*\"]\n\n\
             [servers.big]\ncommand = {}\nargs = [\"replay\", \"--catalog\", {}]\n",
            serde_json::to_string(&fixture().display().to_string()).expect("path"),
            serde_json::to_string(&catalog.display().to_string()).expect("path"),
        ),
    )
    .expect("config");
    let config = Config::load(&config_path, &GatewayEnvironment::new()).expect("config");
    let ledger = Ledger::open(&ledger_path).expect("ledger");
    let host = Host::from_config_with(
        &config,
        switchboard::HostOptions {
            recorder: Arc::new(ledger.clone()),
            ..switchboard::HostOptions::default()
        },
    )
    .expect("host");
    host.ready().await;
    assert_eq!(host.catalog().entries().len(), TOOLS, "every tool listed");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let console = Console::new(ConsoleOptions {
        host: host.clone(),
        admin_token: TOKEN.to_owned(),
        ledger: Some(ledger_path),
        postgres: None,
        token_file: None,
        shared_tokens: None,
        listen: addr,
        trace_url: None,
    });
    let code = console.mint_code("bench");
    let router = console.router();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let url = format!("http://{addr}");
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let signed_in = client
        .get(format!("{url}/console/sign-in/{code}"))
        .send()
        .await
        .expect("sign in");
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("pair")
        .to_owned();
    Setup {
        now_ms: now,
        ledger: ledger.path().to_owned(),
        _dir: dir,
        _host: host,
        url,
        cookie,
    }
}

fn pages(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let setup = runtime.block_on(set_up());
    let client = reqwest::Client::new();
    let fetch = |path: &str| {
        let request = client
            .get(format!("{}{path}", setup.url))
            .header("cookie", &setup.cookie);
        async move {
            let answer = request.send().await.expect("GET");
            assert_eq!(answer.status(), 200);
            answer.bytes().await.expect("body").len()
        }
    };
    let mut group = c.benchmark_group("console (1,000 tools, 100,000 ledger rows)");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(4));
    let paths = [
        "/console/approvals".to_owned(),
        "/console/tools".to_owned(),
        "/console/tools?sort=p99&dir=desc&q=tool1".to_owned(),
        "/console/tools/big__s_tool7".to_owned(),
        "/console/audit".to_owned(),
        // The page after row 50,000 (its start time and id, as the "Older" link has them).
        format!("/console/audit?before={}-50000", setup.started_of(50_000)),
        "/console/audit?agent=npc&outcome=denied".to_owned(),
        "/console/audit?tool=big__s_tool7".to_owned(),
        "/console/servers".to_owned(),
        "/console/agents".to_owned(),
    ];
    for path in &paths {
        let path = path.as_str();
        let bytes = runtime.block_on(fetch(path));
        assert!(bytes > 500, "{path} rendered");
        group.bench_function(path, |b| b.iter(|| runtime.block_on(fetch(path))));
    }
    group.finish();

    // What a console's first look at the ledger costs (done in the background when the
    // console starts, so no page waits for it), and a later look with nothing new.
    let conn = rusqlite::Connection::open(&setup.ledger).expect("ledger");
    let mut group = c.benchmark_group("tally of 100,000 ledger rows");
    group.sample_size(10);
    group.bench_function("first read", |b| {
        b.iter(|| {
            let mut tally = switchboard_ledger::tally::Tally::default();
            tally
                .refresh(&conn, setup.now_ms, 86_400_000)
                .expect("read")
        })
    });
    let mut tally = switchboard_ledger::tally::Tally::default();
    tally
        .refresh(&conn, setup.now_ms, 86_400_000)
        .expect("read");
    group.bench_function("nothing new", |b| {
        b.iter(|| {
            tally
                .refresh(&conn, setup.now_ms, 86_400_000)
                .expect("read")
        })
    });
    group.finish();
}

criterion_group!(benches, pages);
criterion_main!(benches);
