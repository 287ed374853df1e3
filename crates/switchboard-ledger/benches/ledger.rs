//! The ledger's figures: the cost of `record` on the caller's side (target < 20 µs p50), the
//! writer thread's cost per row (a transaction of 128 rows, the size of a busy gateway's 5 ms
//! batch), rows recorded per second end to end (target ≥ 20,000/s), and the caller's cost with
//! several threads recording at once (the journal's contention: one file and lock per process
//! before issue 33, one per shard after).
//! Run: `cargo bench -p switchboard-ledger --bench ledger`.

#[path = "support/mod.rs"]
mod support;

use std::sync::{Arc, Barrier};
use std::time::Instant;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use support::entry;
use switchboard_ledger::{Ledger, store};

/// Rows per writer transaction in the writer benchmark.
const WRITER_BATCH: u64 = 128;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::open(&dir.path().join("bench.db")).expect("open");
    let mut i = 0u64;
    c.bench_function("ledger record (caller side)", |b| {
        b.iter(|| {
            i += 1;
            ledger.record_entry(entry(i));
        })
    });
    ledger.flush();
    // The writer's cost: what its thread spends per row, inserting one batch per transaction.
    let mut conn = store::open(&dir.path().join("writer.db")).expect("open");
    let mut next = 30_000_000u64;
    let mut group = c.benchmark_group("ledger writer");
    group.throughput(Throughput::Elements(WRITER_BATCH));
    group.bench_function("insert 128 rows in one transaction", |b| {
        b.iter_batched(
            || {
                next += WRITER_BATCH;
                (next - WRITER_BATCH..next).map(entry).collect::<Vec<_>>()
            },
            |rows| store::insert(&mut conn, &rows).expect("insert"),
            BatchSize::SmallInput,
        )
    });
    group.finish();
    // The caller's cost, call by call: p50 and p99 of record() over 20,000 sequential calls,
    // paced like a busy gateway (one call every 50 µs).
    let paced = Ledger::open(&dir.path().join("paced.db")).expect("open");
    let mut samples = Vec::with_capacity(20_000);
    for n in 0..20_000u64 {
        let row = entry(20_000_000 + n);
        let started = Instant::now();
        paced.record_entry(row);
        samples.push(started.elapsed().as_nanos() as f64 / 1000.0);
        let wait = Instant::now();
        while wait.elapsed().as_micros() < 50 {
            std::hint::spin_loop();
        }
    }
    paced.flush();
    samples.sort_by(f64::total_cmp);
    println!(
        "ledger record() on the caller's side: p50 {:.1} µs, p99 {:.1} µs (20,000 calls)",
        samples[samples.len() / 2],
        samples[samples.len() * 99 / 100]
    );
    let throughput = Ledger::open(&dir.path().join("throughput.db")).expect("open");
    let started = Instant::now();
    let rows = 100_000u64;
    for n in 0..rows {
        throughput.record_entry(entry(10_000_000 + n));
    }
    throughput.flush();
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "ledger throughput: {rows} rows recorded and committed in {seconds:.2} s = {:.0} rows/s",
        rows as f64 / seconds
    );
}

/// Rows each thread records in the threaded loop.
const ROWS_PER_THREAD: u64 = 20_000;

/// `threads` threads record [`ROWS_PER_THREAD`] rows each at once, as fast as they can, then one
/// flush: rows/s on the callers' side (until the last thread's last record) and end to end.
fn threaded(dir: &std::path::Path, threads: u64) {
    let ledger = Ledger::open(&dir.join(format!("threads-{threads}.db"))).expect("open");
    let start = Arc::new(Barrier::new(threads as usize + 1));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (ledger, start) = (ledger.clone(), start.clone());
            std::thread::spawn(move || {
                let base = 40_000_000 + t * 1_000_000;
                start.wait();
                for n in 0..ROWS_PER_THREAD {
                    ledger.record_entry(entry(base + n));
                }
            })
        })
        .collect();
    start.wait();
    let started = Instant::now();
    for worker in workers {
        worker.join().expect("worker");
    }
    let recorded = started.elapsed().as_secs_f64();
    ledger.flush();
    let committed = started.elapsed().as_secs_f64();
    let rows = (threads * ROWS_PER_THREAD) as f64;
    println!(
        "ledger threaded: {threads} threads x {ROWS_PER_THREAD} rows: recorded at {:.0} rows/s \
         ({:.2} µs per record per thread), committed at {:.0} rows/s",
        rows / recorded,
        recorded * 1e6 / ROWS_PER_THREAD as f64,
        rows / committed
    );
}

fn bench_threaded(_: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    let mut counts = vec![1, 2, 4, cores, 2 * cores];
    counts.sort_unstable();
    counts.dedup();
    for threads in counts {
        threaded(dir.path(), threads);
    }
}

criterion_group!(benches, bench, bench_threaded);
criterion_main!(benches);
