//! The latency budget's hot paths inside the Host: recording one call's latency (lock, window,
//! health, placement) and a caller's tier view over 1,000 tools (the filter every listing and
//! call runs), plus republishing placements for 1,000 tools.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use switchboard::latency::LatencyBudget;
use switchboard_budget::{Sample, TierSet};
use switchboard_core::catalog::{ListedTool, NamingRules, ServerSlice};
use switchboard_core::clock::SystemClock;
use switchboard_core::config::LatencyConfig;
use switchboard_core::{Catalog, ServerId, ToolDefinition};

const TOOLS: usize = 1_000;

fn catalog() -> Catalog {
    let tools: Vec<ListedTool> = (0..TOOLS)
        .map(|i| {
            let mut definition =
                ToolDefinition::new(format!("tool_{i:04}"), "t", json!({"type": "object"}));
            definition.meta = Some(serde_json::Map::from_iter([(
                "switchboard.dev/latency".to_owned(),
                json!({"estimated_duration_ms": (i % 40) * 100, "max_duration_ms": (i % 40) * 150}),
            )]));
            ListedTool::compile(definition)
        })
        .collect();
    let slice = ServerSlice {
        held: Default::default(),
        server: ServerId::new("bench"),
        prefix: "bench".into(),
        tools: Arc::from(tools),
        overrides: BTreeMap::new(),
        call_timeout: Duration::from_secs(30),
        category: String::new(),
    };
    Catalog::build(&[slice], &NamingRules::default())
}

fn budget(catalog: &Catalog) -> Arc<LatencyBudget> {
    let budget = LatencyBudget::new(
        LatencyConfig::default(),
        TierSet::default(),
        HashMap::new(),
        Arc::new(SystemClock),
        None,
    );
    budget.refresh(catalog, &HashMap::new());
    budget
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = runtime.enter();
    let catalog = catalog();
    let budget = budget(&catalog);
    // Fill every window so placements are measured, not declared.
    for i in 0..TOOLS {
        for _ in 0..100 {
            budget.record(
                &format!("bench:tool_{i:04}"),
                Sample::ok(Duration::from_millis((i % 40) as u64 * 100)),
            );
        }
    }
    let mut i = 0usize;
    c.bench_function("record one call's latency (1,000 tools held)", |b| {
        b.iter(|| {
            i = (i + 1) % TOOLS;
            budget.record(
                "bench:tool_0007",
                Sample::ok(Duration::from_millis(700 + (i % 3) as u64)),
            );
        })
    });
    c.bench_function("tier view over 1,000 tools (standard)", |b| {
        b.iter(|| budget.visible_in(&catalog, "standard").len())
    });
    c.bench_function("republish placements of 1,000 tools", |b| {
        b.iter(|| budget.refresh_placements())
    });
}

criterion_group!(latency, benches);
criterion_main!(latency);
