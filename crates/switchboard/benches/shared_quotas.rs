//! What `[storage] url` adds to quotas: the check on a call's path with the other replicas'
//! spending held in memory (one agent, 2 other replicas × 60 buckets = 120 pieces) against
//! the same quota kept by one process, and the background exchange — send 10 agents'
//! spending, read the others' rows (10 agents × 2 replicas × 60 buckets) — against a real
//! PostgreSQL on a unix socket (switchboard-testkit), which runs every 500 ms per replica.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use switchboard::quotas::QuotaStore;
use switchboard_core::limits::{Limits, Quota, SharedSpending, Spent, Taken, Unsent};
use switchboard_testkit::postgres::{DATABASE, Postgres};
use tokio::time::Instant;

const WINDOW: Duration = Duration::from_secs(3600);

fn quota_limits() -> Limits {
    Limits::new(
        HashMap::new(),
        HashMap::from([("a".to_owned(), Quota::new(1e12, WINDOW))]),
    )
}

fn check(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let embedded = quota_limits();
    let spending = Arc::new(SharedSpending::new());
    let now = Instant::now();
    let pieces = (0..120u64)
        .map(|n| Spent {
            leaves: now + WINDOW + Duration::from_secs(n * 60),
            cost: 1.0,
        })
        .collect();
    spending.replace_others(HashMap::from([("a".to_owned(), pieces)]));
    let shared = quota_limits().with_shared_spending(spending);
    c.bench_function("quota check embedded", |b| {
        b.iter(|| {
            runtime
                .block_on(embedded.admit(&[], Some("a")))
                .expect("admitted")
        });
    });
    c.bench_function("quota check shared (120 pieces)", |b| {
        b.iter(|| {
            runtime
                .block_on(shared.admit(&[], Some("a")))
                .expect("admitted")
        });
    });
}

fn exchange(c: &mut Criterion) {
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime
        .block_on(switchboard_ledger::postgres::migrate::migrate_url(
            &postgres.url(),
        ))
        .expect("migrate");
    postgres
        .psql(
            DATABASE,
            "INSERT INTO quota_spending (agent, replica, start_ms, expires_ms, cost) \
             SELECT 'agent-' || a, 'other-' || r, now_ms - b * 60000, now_ms + 3600000 - b * 60000, 1 \
             FROM generate_series(1, 10) a, generate_series(1, 2) r, generate_series(1, 59) b, \
             (SELECT (extract(epoch FROM now()) * 1000)::bigint AS now_ms) clock",
        )
        .expect("the other replicas' rows");
    let store = QuotaStore::new(&postgres.url(), "bench:1".to_owned()).expect("store");
    let unsent: Vec<Unsent> = (1..=10)
        .map(|a| Unsent {
            agent: format!("agent-{a}"),
            window: WINDOW,
            cost: 0.5,
        })
        .collect();
    // Each send numbered above the last, as a replica's are: every one is applied.
    let mut number = 0;
    let mut numbered = |unsent: &[Unsent]| {
        number += 1;
        Taken {
            number,
            unsent: unsent.to_vec(),
        }
    };
    c.bench_function("quota exchange (10 agents, 1,180 rows read)", |b| {
        b.iter(|| {
            let sent = numbered(&unsent);
            runtime.block_on(store.exchange(&sent)).expect("exchanged")
        });
    });
    c.bench_function("quota exchange, nothing to send", |b| {
        b.iter(|| {
            let sent = numbered(&[]);
            runtime.block_on(store.exchange(&sent)).expect("exchanged")
        });
    });
}

criterion_group!(benches, check, exchange);
criterion_main!(benches);
