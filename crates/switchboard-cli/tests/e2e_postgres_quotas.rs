//! Issue 32, quotas across replicas: three real `switchboard serve` replicas (each its own
//! directory and journal, as on separate machines) on one PostgreSQL (`[storage] url`). Agent
//! `qa` has a cost quota of 60 per hour and every call costs 1: calls spread over the three
//! replicas are admitted up to 60 in all — plus at most what the others spent in the last
//! refresh interval or two, the stated tolerance — not 60 per replica, and then every replica
//! refuses with the usual quota error. With PostgreSQL stopped the replicas keep refusing
//! (they enforce with what they last read), and the database holds exactly what was admitted.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{HttpGateway, call_tool, fixture, quoted, run_bare, write_config};
use switchboard_testkit::postgres::{DATABASE, Postgres};

const QUOTA: usize = 60;

/// `count` replicas of agent `qa` (quota 60 an hour, each echo costs 1) on `postgres`.
fn replicas(root: &Path, postgres: &Postgres, count: usize) -> Vec<HttpGateway> {
    let configs: Vec<_> = (0..count)
        .map(|n| {
            let dir = root.join(format!("replica-{n}"));
            std::fs::create_dir_all(&dir).expect("replica dir");
            write_config(
                &dir,
                &format!(
                    "[gateway]\nledger = \"ledger.db\"\n\n[latency]\ndatabase = \"latency.db\"\n\n\
                     [manager]\ndatabase = \"manager.db\"\nregistries = []\n\n\
                     [storage]\nurl = {}\nledger_unavailable = \"journal\"\n\n\
                     [agents.qa]\nquota = {{ cost = {QUOTA}, window = \"1h\" }}\n\n\
                     [servers.fx]\ncommand = {}\nargs = [\"echo\"]\ncost = 1\n",
                    quoted(&postgres.url()),
                    quoted(&fixture())
                ),
            )
        })
        .collect();
    let migrated = run_bare(&configs[0], &["migrate"]);
    let said = String::from_utf8_lossy(&migrated.stdout).into_owned();
    assert!(migrated.status.success(), "{said}");
    assert!(
        said.contains("applied migration 5: quota spending"),
        "{said}"
    );
    configs
        .iter()
        .map(|config| HttpGateway::start(config, &["--agent", "qa"]))
        .collect()
}

/// An echo call: `None` when it ran, else the tool error's text.
async fn echo(url: &str, id: usize) -> Option<String> {
    call_tool(url, id, "fx__echo", json!({"message": "hi"}))
        .await
        .err()
}

fn assert_quota_refusal(text: &str) {
    assert!(
        text.contains("tool 'fx__echo' was not run: quota exceeded: ")
            && text.contains(&format!(
                "of {QUOTA}.00 used in the last 3600s; retry after"
            )),
        "the usual quota error: {text}"
    );
}

/// What PostgreSQL holds as spent by `qa`, all replicas together.
fn spent_in_postgres(postgres: &Postgres) -> f64 {
    postgres
        .psql(
            DATABASE,
            "SELECT coalesce(sum(cost), 0) FROM quota_spending WHERE agent = 'qa'",
        )
        .expect("the spending")
        .trim()
        .parse()
        .expect("a number")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_share_one_quota_on_postgres() {
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let dir = tempfile::tempdir().expect("tempdir");
    let gateways = replicas(dir.path(), &postgres, 3);
    let urls: Vec<String> = gateways.iter().map(|g| g.url.clone()).collect();

    // 150 calls, one every 50 ms (20 a second), round robin: each replica alone would admit
    // all 50 of its own (under 60), so more than 60 admitted in all would mean per replica.
    let pace = Duration::from_millis(50);
    let mut ticks = tokio::time::interval(pace);
    let mut admitted = vec![0usize; urls.len()];
    let mut refusals = Vec::new();
    let started = Instant::now();
    for i in 0..150 {
        ticks.tick().await;
        let replica = i % urls.len();
        match echo(&urls[replica], i).await {
            None => admitted[replica] += 1,
            Some(text) => refusals.push(text),
        }
    }
    let elapsed = started.elapsed();
    let total: usize = admitted.iter().sum();
    // The tolerance: what the other replicas spent in two refresh intervals (500 ms each),
    // plus one for the call in flight, at the rate the calls actually went.
    let rate = 150.0 / elapsed.as_secs_f64();
    let tolerance = (rate * 1.0).ceil() as usize + 1;
    eprintln!("admitted {total} ({admitted:?}) of 150 in {elapsed:?}; tolerance {tolerance}");
    assert!(
        (QUOTA..=QUOTA + tolerance).contains(&total),
        "admitted {total} ({admitted:?}) of 150 in {elapsed:?}: the quota is {QUOTA} + {tolerance}"
    );
    assert!(
        admitted.iter().all(|n| *n > 0),
        "every replica admitted some: {admitted:?}"
    );
    assert_eq!(total + refusals.len(), 150);
    for text in &refusals {
        assert_quota_refusal(text);
    }

    // Once the spending has travelled, every replica refuses, and PostgreSQL holds exactly
    // what was admitted (each call cost 1).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for (n, url) in urls.iter().enumerate() {
        let refused = echo(url, 1000 + n)
            .await
            .expect("refused: the quota is used up");
        assert_quota_refusal(&refused);
    }
    assert_eq!(spent_in_postgres(&postgres), total as f64);

    // PostgreSQL stopped: each replica keeps enforcing with its own spending and the others'
    // as last read, without waiting on the database.
    postgres.stop().expect("stop PostgreSQL");
    for (n, url) in urls.iter().enumerate() {
        let asked = Instant::now();
        let refused = echo(url, 2000 + n).await.expect("still refused");
        assert_quota_refusal(&refused);
        assert!(
            asked.elapsed() < Duration::from_secs(1),
            "answered without waiting on PostgreSQL: {:?}",
            asked.elapsed()
        );
    }
    postgres.resume().expect("resume PostgreSQL");
}
