//! Benchmarks of the two budgets issue 5 sets: recording one call (< 1 µs) and computing a
//! tier view over 1,000 tools (< 100 µs); plus the book's record (window + health + placement)
//! and a summary after a new sample (the lazy sort), for context.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use switchboard_budget::{
    EffectiveLatency, HealthState, LatencyBook, LatencyWindow, Placement, Sample, TierId, TierSet,
    TierView, ToolProfile,
};
use tokio::time::Instant;

fn record(c: &mut Criterion) {
    let mut window = LatencyWindow::new(100);
    for i in 0..100 {
        window.record(Sample::ok(Duration::from_millis(i)));
    }
    let mut i = 0u64;
    c.bench_function("window_record_one_sample", |b| {
        b.iter(|| {
            i = i.wrapping_add(7);
            window.record(black_box(Sample::ok(Duration::from_micros(i % 500_000))));
        })
    });

    c.bench_function("window_record_then_summary", |b| {
        b.iter(|| {
            i = i.wrapping_add(7);
            window.record(Sample::ok(Duration::from_micros(i % 500_000)));
            black_box(window.summary());
        })
    });

    let mut book = LatencyBook::default();
    let now = Instant::now();
    for tool in 0..1_000 {
        let name = format!("tool-{tool}");
        for call in 0..100 {
            book.record(&name, Sample::ok(Duration::from_millis(call)), now);
        }
    }
    c.bench_function("book_record_one_call", |b| {
        b.iter(|| {
            i = i.wrapping_add(7);
            black_box(book.record(
                "tool-500",
                Sample::ok(Duration::from_micros(i % 500_000)),
                now,
            ));
        })
    });
}

fn tier_view(c: &mut Criterion) {
    let tiers = TierSet::default();
    let profiles: Vec<ToolProfile> = (0..1_000)
        .map(|i| ToolProfile {
            name: format!("server{}__tool{i}", i % 17).into(),
            effective: EffectiveLatency::Unknown,
            placement: match i % 5 {
                0 => Placement::Unknown,
                4 => Placement::TooSlow,
                tier => Placement::Tier(TierId(tier - 1)),
            },
            health: if i % 11 == 0 {
                HealthState::Degraded
            } else {
                HealthState::Healthy
            },
        })
        .collect();
    c.bench_function("tier_view_1000_tools", |b| {
        b.iter(|| black_box(TierView::compute(black_box(&profiles), &tiers, TierId(1))))
    });
}

criterion_group!(benches, record, tier_view);
criterion_main!(benches);
