//! What `[shared] redis` adds to a call's admission: `Limits::admit` for one agent's rate (and
//! rate plus concurrency cap) kept in this process against the same kept in a real Redis on a
//! unix socket (switchboard-testkit). Both sides run on the same current-thread runtime, so
//! the difference is the round trip and the script. The rate is high enough never to refuse.

use std::collections::HashMap;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use switchboard::shared::RedisLimiter;
use switchboard_core::limits::{LimitSpec, Limits, Scope, WhenUnreachable};
use switchboard_testkit::redis::Redis;

fn limits(spec: LimitSpec) -> Limits {
    Limits::new(
        HashMap::from([(Scope::Agent("a".into()), spec)]),
        HashMap::new(),
    )
}

fn admission(c: &mut Criterion) {
    let redis = Redis::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let store = runtime.block_on(async {
        Arc::new(RedisLimiter::connect(&redis.url(), "bench").expect("limiter"))
    });
    let scopes = [Scope::Global, Scope::Agent("a".into())];
    let rate = LimitSpec {
        per_minute: Some(1e12),
        burst: Some(1_000_000),
        ..LimitSpec::default()
    };
    let capped = LimitSpec {
        max_concurrent: Some(1_000_000),
        ..rate
    };
    for (name, spec) in [("rate", rate), ("rate+cap", capped)] {
        let embedded = limits(spec);
        let shared = limits(spec).with_shared(store.clone(), WhenUnreachable::FailClosed, 3);
        c.bench_function(&format!("admit {name} embedded"), |b| {
            b.iter(|| {
                runtime
                    .block_on(embedded.admit(&scopes, None))
                    .expect("admitted")
            });
        });
        c.bench_function(&format!("admit {name} redis"), |b| {
            b.iter(|| {
                runtime
                    .block_on(shared.admit(&scopes, None))
                    .expect("admitted")
            });
        });
    }
}

criterion_group!(benches, admission);
criterion_main!(benches);
