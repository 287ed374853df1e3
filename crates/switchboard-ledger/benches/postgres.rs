//! Rows per second the ledger appends to PostgreSQL (goal ≥ 20,000/s with batching), on a
//! PostgreSQL 15 of its own (`switchboard-testkit`: unix socket, fsync off — the figure is
//! the gateway's and the protocol's cost, not a disk's): one gateway's ledger, then two
//! recording at once onto the one chain. Prints one line per case.
//! Run: `cargo bench -p switchboard-ledger --bench postgres`.

#[path = "support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use support::entry;
use switchboard_ledger::{Ledger, postgres};
use switchboard_testkit::postgres::Postgres;

/// Rows each ledger records per case.
const ROWS: u64 = 100_000;

/// Records `ROWS` on each ledger at once and waits until all are in PostgreSQL.
fn record(ledgers: &[Ledger], first: u64) -> Duration {
    let started = Instant::now();
    std::thread::scope(|scope| {
        for (writer, ledger) in ledgers.iter().enumerate() {
            scope.spawn(move || {
                for i in 0..ROWS {
                    ledger.record_entry(entry(writer as u64 * 1_000_000_000 + first + i));
                }
                ledger.flush();
            });
        }
    });
    started.elapsed()
}

fn main() {
    let server = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let pool = postgres::pool(&server.url(), 1).expect("pool");
        let mut client = postgres::connect(&pool).await.expect("connect");
        postgres::migrate::migrate(&mut client)
            .await
            .expect("migrate");
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let open = |name: &str| {
        Ledger::open_postgres(&server.url(), &dir.path().join(name)).expect("open the ledger")
    };
    let one = open("one");
    // Warm up: connections made, statements prepared.
    record(std::slice::from_ref(&one), 10_000_000);
    let elapsed = record(std::slice::from_ref(&one), 0);
    println!(
        "postgres append, 1 gateway: {ROWS} rows in {elapsed:.2?} = {:.0} rows/s",
        ROWS as f64 / elapsed.as_secs_f64()
    );
    let two = open("two");
    let elapsed = record(&[one, two], 20_000_000);
    println!(
        "postgres append, 2 gateways at once onto one chain: {} rows in {elapsed:.2?} = {:.0} rows/s",
        2 * ROWS,
        (2 * ROWS) as f64 / elapsed.as_secs_f64()
    );
    runtime.block_on(async {
        let pool = postgres::pool(&server.url(), 1).expect("pool");
        let mut client = postgres::connect(&pool).await.expect("connect");
        let started = Instant::now();
        let report = postgres::verify(&mut client).await.expect("verify");
        let elapsed = started.elapsed();
        assert!(report.ok, "{report:?}");
        println!(
            "verify: {} rows, one chain, in {elapsed:.2?} = {:.0} rows/s",
            report.rows,
            report.rows as f64 / elapsed.as_secs_f64()
        );
    });
}
