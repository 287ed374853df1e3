//! The latency budget inside the Host, on paused time, with an in-process provider whose
//! tools have programmable latency: tiers follow measured drift with hysteresis and without
//! flapping, each change is announced, hedging cuts a bimodal tail within its extra-load
//! budget, probes at connect never touch a destructive tool, parallel calls cost their
//! slowest call, and a degraded tool that may not be probed recovers when nothing calls it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard::{Host, HostOptions, ServerPlan};
use switchboard_core::config::LatencyConfig;
use switchboard_core::tier::Tier;
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{
    CallContext, Caller, ServerId, ToolAnnotations, ToolDefinition, ToolOutcome,
};
use switchboard_mcp::front::Backend;
use switchboard_mcp::upstream::{Endpoint, EraChoice, UpstreamSpec};
use tokio::time::Instant;

/// `work` (read-only) takes `work_ms`; `search` (idempotent) takes 10 ms except every
/// `slow_every`-th call, 2 s; `write` (destructive) takes 5 ms; `ticket` (neither read-only nor
/// idempotent, so never probed; bounded at 100 ms) takes 5 ms, or hangs while `ticket_hangs`;
/// `stuck` (read-only, so probed) takes 5 ms, or a minute while `stuck_hangs`. Counts what it
/// runs.
#[derive(Default)]
struct Lab {
    work_ms: AtomicU64,
    slow_every: AtomicUsize,
    search_calls: AtomicUsize,
    write_calls: AtomicUsize,
    work_calls: AtomicUsize,
    ticket_hangs: std::sync::atomic::AtomicBool,
    ticket_calls: AtomicUsize,
    stuck_hangs: std::sync::atomic::AtomicBool,
}

fn annotated(name: &str, annotations: Value) -> ToolDefinition {
    let mut tool = ToolDefinition::new(name, format!("The {name} tool"), json!({"type": "object"}));
    tool.annotations = serde_json::from_value::<ToolAnnotations>(annotations).ok();
    tool
}

impl ToolProvider for Lab {
    fn name(&self) -> &str {
        "lab"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        vec![
            annotated("work", json!({"readOnlyHint": true})),
            {
                // Its author bounds it at 5 s, so its slow mode is not cut by a deadline.
                let mut search = annotated(
                    "search",
                    json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true}),
                );
                search.meta = Some(Map::from_iter([(
                    "switchboard.dev/latency".to_owned(),
                    json!({"max_duration_ms": 5000, "idempotent": true}),
                )]));
                search
            },
            annotated(
                "write",
                json!({"readOnlyHint": false, "destructiveHint": true}),
            ),
            {
                let mut ticket = annotated(
                    "ticket",
                    json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false}),
                );
                ticket.meta = Some(Map::from_iter([(
                    "switchboard.dev/latency".to_owned(),
                    json!({"estimated_duration_ms": 5, "max_duration_ms": 100}),
                )]));
                ticket
            },
            annotated("stuck", json!({"readOnlyHint": true})),
        ]
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        _arguments: Map<String, Value>,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            let delay = match tool {
                "work" => {
                    self.work_calls.fetch_add(1, Ordering::SeqCst);
                    self.work_ms.load(Ordering::SeqCst)
                }
                "search" => {
                    let call = self.search_calls.fetch_add(1, Ordering::SeqCst) + 1;
                    let every = self.slow_every.load(Ordering::SeqCst).max(1);
                    if call.is_multiple_of(every) {
                        2_000
                    } else {
                        10
                    }
                }
                "stuck" if self.stuck_hangs.load(Ordering::SeqCst) => 60_000,
                "stuck" => 5,
                "ticket" => {
                    self.ticket_calls.fetch_add(1, Ordering::SeqCst);
                    if self.ticket_hangs.load(Ordering::SeqCst) {
                        60_000
                    } else {
                        5
                    }
                }
                _ => {
                    self.write_calls.fetch_add(1, Ordering::SeqCst);
                    5
                }
            };
            tokio::time::sleep(Duration::from_millis(delay)).await;
            Ok(ToolOutcome::text(tool))
        })
    }
}

fn tiers() -> Vec<Tier> {
    [("fast", 500), ("standard", 1_500), ("deep", 4_000)]
        .into_iter()
        .map(|(name, ms)| Tier {
            name: name.to_owned(),
            ceiling: Duration::from_millis(ms),
        })
        .collect()
}

fn start(lab: Arc<Lab>, latency: LatencyConfig) -> Host {
    let plan = ServerPlan {
        spec: UpstreamSpec {
            id: ServerId::new("lab"),
            endpoint: Endpoint::InProcess(lab),
            era: EraChoice::Auto,
            connect_timeout: Duration::from_secs(1),
            discover_timeout: Duration::from_secs(1),
            max_message_bytes: 1 << 20,
            instances: std::num::NonZeroU8::MIN,
        },
        prefix: "lab".to_owned(),
        overrides: BTreeMap::new(),
        call_timeout: Duration::from_secs(10),
        category: String::new(),
        fingerprint: String::new(),
        pinned: false,
    };
    let options = HostOptions {
        tiers: tiers(),
        latency,
        ..HostOptions::default()
    };
    Host::start(vec![plan], options)
}

fn visible_in(host: &Host, tier: &str) -> Vec<String> {
    host.visible_for(&Caller::new(None, Some("s1".into())).with_tier(Some(tier.into())))
        .iter()
        .map(|entry| entry.exposed.clone())
        .collect()
}

async fn call(host: &Host, tool: &str) -> Duration {
    let started = Instant::now();
    let answer = host
        .call(&CallContext::default(), tool, Map::new())
        .await
        .expect("call");
    assert!(!answer.is_error, "{answer:?}");
    started.elapsed()
}

#[tokio::test(start_paused = true)]
async fn a_drifting_tool_leaves_fast_and_returns_with_hysteresis_without_flapping() {
    let lab = Arc::new(Lab::default());
    let host = start(lab.clone(), LatencyConfig::default());
    host.ready().await;
    let session = Caller::new(None, Some("s1".into())).with_tier(Some("fast".into()));
    let mut listing = host.listing_version(&session);
    // A second session lists in "deep", where work is visible whatever happens below.
    let deep = Caller::new(None, Some("s2".into())).with_tier(Some("deep".into()));
    let mut deep_listing = host.listing_version(&deep);
    host.list_tools(&session).await;
    host.list_tools(&deep).await;
    listing.borrow_and_update();
    deep_listing.borrow_and_update();

    // Nothing declared: unknown latency is kept out of "fast" until measured.
    assert!(!visible_in(&host, "fast").contains(&"lab__work".to_owned()));
    lab.work_ms.store(100, Ordering::SeqCst);
    for _ in 0..20 {
        call(&host, "lab__work").await;
    }
    assert!(visible_in(&host, "fast").contains(&"lab__work".to_owned()));
    assert!(
        listing.has_changed().unwrap_or(false),
        "entering fast was not announced"
    );
    listing.borrow_and_update();

    // Drift to 900 ms: p90 of the last 100 calls crosses 500 ms once 11 of them are slow.
    lab.work_ms.store(900, Ordering::SeqCst);
    tokio::time::advance(Duration::from_secs(31)).await;
    let mut slow_calls = 0;
    while visible_in(&host, "fast").contains(&"lab__work".to_owned()) {
        call(&host, "lab__work").await;
        slow_calls += 1;
        assert!(slow_calls <= 25, "still fast after {slow_calls} slow calls");
    }
    assert!(
        slow_calls >= 3,
        "one slow call must not re-tier a tool ({slow_calls})"
    );
    assert!(visible_in(&host, "standard").contains(&"lab__work".to_owned()));
    assert!(
        listing.has_changed().unwrap_or(false),
        "leaving fast was not announced"
    );
    listing.borrow_and_update();
    // Not callable there any more: visible = callable.
    let refused = host
        .call(
            &CallContext {
                tier: Some("fast".into()),
                ..CallContext::default()
            },
            "lab__work",
            Map::new(),
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");

    // Recovery: back at 100 ms, it returns only once p90 is 10% under the ceiling — when the
    // slow calls have left the window — and never sooner than the listing interval.
    lab.work_ms.store(100, Ordering::SeqCst);
    let mut fast_calls = 0;
    while !visible_in(&host, "fast").contains(&"lab__work".to_owned()) {
        call(&host, "lab__work").await;
        fast_calls += 1;
        assert!(fast_calls <= 400, "never came back");
        if fast_calls % 50 == 0 {
            tokio::time::advance(Duration::from_secs(1)).await;
        }
    }
    assert!(
        fast_calls >= 80,
        "came back after {fast_calls} fast calls: no hysteresis"
    );

    // Noise around the ceiling (480/520 ms alternating) changes the listing rarely.
    let mut changes = 0;
    listing.borrow_and_update();
    for round in 0..200u64 {
        lab.work_ms
            .store(if round % 2 == 0 { 480 } else { 520 }, Ordering::SeqCst);
        call(&host, "lab__work").await;
        if listing.has_changed().unwrap_or(false) {
            changes += 1;
            listing.borrow_and_update();
        }
    }
    assert!(
        changes <= 2,
        "the listing flapped {changes} times under noise"
    );
    assert!(
        !deep_listing.has_changed().unwrap_or(true),
        "a session listing in deep heard changes that only concern fast"
    );
}

/// The callers' p99 over the calls, the calls, the requests the lab served, and the p99 the
/// latency book recorded (its window holds the last 100 calls).
async fn p99_of_search(hedging: bool) -> (Duration, usize, usize, f64) {
    let lab = Arc::new(Lab::default());
    lab.slow_every.store(25, Ordering::SeqCst);
    let host = start(
        lab.clone(),
        LatencyConfig {
            hedging,
            ..LatencyConfig::default()
        },
    );
    host.ready().await;
    let calls = 400;
    let mut latencies = Vec::with_capacity(calls);
    for _ in 0..calls {
        latencies.push(call(&host, "lab__search").await);
    }
    let recorded = host
        .latency_report()
        .into_iter()
        .find(|row| row.tool == "lab__search")
        .and_then(|row| row.p99_ms)
        .expect("search measured");
    latencies.sort();
    let p99 = latencies[calls * 99 / 100];
    (
        p99,
        calls,
        lab.search_calls.load(Ordering::SeqCst),
        recorded,
    )
}

#[tokio::test(start_paused = true)]
async fn hedging_cuts_the_tail_of_a_bimodal_idempotent_tool_within_five_percent() {
    let (unhedged, _, _, _) = p99_of_search(false).await;
    let (hedged, calls, requests, recorded) = p99_of_search(true).await;
    assert!(unhedged >= Duration::from_secs(2), "{unhedged:?}");
    assert!(
        hedged * 5 <= unhedged,
        "p99 {hedged:?} hedged vs {unhedged:?}: less than a 5× cut"
    );
    let extra = requests - calls;
    assert!(
        extra * 100 <= calls * 5 + 100,
        "{extra} extra requests for {calls} calls"
    );
    assert!(extra > 0, "nothing was hedged");
    // The book keeps what the callers waited (the hedge's delay included), not the hedge's
    // own quick answer: the tail the hedge cut still reaches placement.
    let hedged_ms = hedged.as_secs_f64() * 1000.0;
    assert!(
        recorded + 0.5 >= hedged_ms,
        "the book's p99 {recorded} ms is under the callers' {hedged_ms} ms"
    );
}

#[tokio::test(start_paused = true)]
async fn probes_at_connect_measure_safe_tools_and_never_a_destructive_one() {
    let lab = Arc::new(Lab::default());
    lab.work_ms.store(30, Ordering::SeqCst);
    lab.slow_every.store(1_000, Ordering::SeqCst);
    let host = start(
        lab.clone(),
        LatencyConfig {
            probe_on_connect: true,
            probe_calls: 3,
            ..LatencyConfig::default()
        },
    );
    host.ready().await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let stats = host.latency_report();
    let samples = |tool: &str| {
        stats
            .iter()
            .find(|row| row.tool == tool)
            .map_or(0, |row| row.samples)
    };
    assert_eq!(samples("lab__work"), 3);
    assert_eq!(samples("lab__search"), 3);
    assert_eq!(samples("lab__write"), 0);
    assert_eq!(
        lab.write_calls.load(Ordering::SeqCst),
        0,
        "a destructive tool was probed"
    );
    assert_eq!(
        lab.work_calls.load(Ordering::SeqCst),
        3,
        "probed once per call, no more"
    );
}

#[tokio::test(start_paused = true)]
async fn parallel_calls_cost_their_slowest_call() {
    let lab = Arc::new(Lab::default());
    lab.work_ms.store(300, Ordering::SeqCst);
    lab.slow_every.store(1_000, Ordering::SeqCst);
    let host = start(lab.clone(), LatencyConfig::default());
    host.ready().await;
    let started = Instant::now();
    let answers = host
        .call_all(
            &CallContext::default(),
            vec![
                ("lab__work".into(), Map::new()),
                ("lab__search".into(), Map::new()),
                ("lab__work".into(), Map::new()),
            ],
        )
        .await;
    let elapsed = started.elapsed();
    assert_eq!(answers.len(), 3);
    assert_eq!(
        answers
            .iter()
            .map(|a| a.as_ref().map(|o| o.text_content()).unwrap_or_default())
            .collect::<Vec<_>>(),
        ["work", "search", "work"]
    );
    assert!(
        elapsed < Duration::from_millis(400),
        "ran one after another: {elapsed:?}"
    );

    for _ in 0..20 {
        call(&host, "lab__work").await;
        call(&host, "lab__search").await;
    }
    // 300 ms + 10 ms in parallel is 300 ms: fits fast (500 ms), though the sum would too;
    // with work at 300 ms and search slow it would not.
    assert!(host.batch_fits(&["lab__work", "lab__search"], "fast"));
    assert!(!host.batch_fits(&["lab__work", "lab__nothing"], "fast"));
    assert!(!host.batch_fits(&["lab__work"], "no-such-tier"));
    let prediction = host.predict("lab__work").expect("known tool");
    assert!(
        !prediction.mask,
        "300 ms is under the 700 ms masking threshold"
    );
}

/// Calls `lab__work` `calls` times at `work_ms`, each ended in real time.
async fn measure_work(host: &Host, lab: &Lab, work_ms: u64, calls: usize) {
    lab.work_ms.store(work_ms, Ordering::SeqCst);
    for _ in 0..calls {
        call(host, "lab__work").await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_hidden_tool_nobody_calls_is_rechecked_and_returns_when_it_is_fast_again() {
    let lab = Arc::new(Lab::default());
    let host = start(lab.clone(), LatencyConfig::default());
    host.ready().await;
    // A slow spell: 100 calls at 900 ms place it in standard, hidden from fast.
    measure_work(&host, &lab, 900, 100).await;
    assert!(!visible_in(&host, "fast").contains(&"lab__work".to_owned()));
    // It is fast again, but only fast-tier agents are left and they cannot see it: no calls.
    lab.work_ms.store(100, Ordering::SeqCst);
    let before = lab.work_calls.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(
        lab.work_calls.load(Ordering::SeqCst),
        before,
        "probed before the quiet spell lasted recheck_after"
    );
    let mut waited = 30;
    while !visible_in(&host, "fast").contains(&"lab__work".to_owned()) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        waited += 1;
        assert!(
            waited <= 180,
            "still hidden after {waited} s without a call"
        );
    }
    let probes = lab.work_calls.load(Ordering::SeqCst) - before;
    assert_eq!(probes, 20, "one probe, then a burst of min_samples in all");
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_stays_slow_costs_one_probe_per_doubling_interval() {
    let lab = Arc::new(Lab::default());
    let host = start(lab.clone(), LatencyConfig::default());
    host.ready().await;
    measure_work(&host, &lab, 900, 100).await;
    let before = lab.work_calls.load(Ordering::SeqCst);
    // Quiet for 16 minutes: rechecks at about 1, 3, 7 and 15 minutes, one probe each.
    tokio::time::sleep(Duration::from_secs(16 * 60)).await;
    let probes = lab.work_calls.load(Ordering::SeqCst) - before;
    assert_eq!(probes, 4, "{probes} probes of a tool that stayed slow");
    assert!(!visible_in(&host, "fast").contains(&"lab__work".to_owned()));
    // A destructive tool is never probed, however long it stays hidden.
    assert_eq!(lab.write_calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn rechecks_can_be_switched_off() {
    let lab = Arc::new(Lab::default());
    let host = start(
        lab.clone(),
        LatencyConfig {
            recheck_after: Duration::ZERO,
            ..LatencyConfig::default()
        },
    );
    host.ready().await;
    measure_work(&host, &lab, 900, 100).await;
    let before = lab.work_calls.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(lab.work_calls.load(Ordering::SeqCst), before);
}

#[tokio::test(start_paused = true)]
async fn a_degraded_tool_that_may_not_be_probed_recovers_when_nothing_calls_it() {
    let lab = Arc::new(Lab::default());
    let host = start(lab.clone(), LatencyConfig::default());
    host.ready().await;
    let ticket = "lab__ticket".to_owned();
    assert!(visible_in(&host, "fast").contains(&ticket), "declared 5 ms");
    // A bad spell: every call hangs past its 100 ms bound, and it is demoted a tier.
    lab.ticket_hangs.store(true, Ordering::SeqCst);
    for _ in 0..10 {
        let answer = host
            .call(&CallContext::default(), &ticket, Map::new())
            .await
            .expect("call");
        assert!(answer.is_error, "cut at its bound: {answer:?}");
    }
    assert!(!visible_in(&host, "fast").contains(&ticket), "degraded");
    assert!(visible_in(&host, "standard").contains(&ticket));
    // Fast-tier callers no longer see it and it may not be probed: nothing calls it. After
    // recover_after (60 s) of that it gets another chance.
    lab.ticket_hangs.store(false, Ordering::SeqCst);
    let before = lab.ticket_calls.load(Ordering::SeqCst);
    let mut waited = 0;
    while !visible_in(&host, "fast").contains(&ticket) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        waited += 1;
        assert!(
            waited <= 70,
            "still demoted after {waited} s without a call"
        );
    }
    assert!(
        waited >= 55,
        "promoted after {waited} s, before recover_after"
    );
    assert_eq!(
        lab.ticket_calls.load(Ordering::SeqCst),
        before,
        "a tool that is not idempotent is never probed"
    );
    assert!(!lab.ticket_hangs.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn a_hanging_degraded_tool_does_not_hold_back_the_housekeeping() {
    let lab = Arc::new(Lab::default());
    let host = start(lab.clone(), LatencyConfig::default());
    host.ready().await;
    let context = CallContext::default();
    // `stuck` hangs: its calls are cut at the call timeout (10 s) and it is degraded; from
    // then on every background probe of it waits those 10 s.
    lab.stuck_hangs.store(true, Ordering::SeqCst);
    for _ in 0..10 {
        let answer = host.call(&context, "lab__stuck", Map::new()).await;
        assert!(answer.expect("call").is_error);
    }
    // `ticket` degraded too (once a listing change may be announced again); its promotion
    // after recover_after (60 s) without a call is the housekeeping's, which the probes of
    // `stuck` must not delay.
    tokio::time::sleep(Duration::from_secs(31)).await;
    lab.ticket_hangs.store(true, Ordering::SeqCst);
    for _ in 0..10 {
        let answer = host.call(&context, "lab__ticket", Map::new()).await;
        assert!(answer.expect("call").is_error);
    }
    let ticket = "lab__ticket".to_owned();
    assert!(!visible_in(&host, "fast").contains(&ticket), "degraded");
    let mut waited = 0;
    while !visible_in(&host, "fast").contains(&ticket) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        waited += 1;
        assert!(
            waited <= 63,
            "promoted only after {waited} s: the housekeeping waited on probes"
        );
    }
}

/// A Host built without tiers (an embedder's `HostOptions::default()`) places its calls in
/// the default tiers, so a request naming one of them (the HTTP front's `/mcp/tiers/fast`) is
/// served, and an unknown one is refused naming those defaults (it named none, and refused
/// `fast` too).
#[tokio::test]
async fn a_host_without_configured_tiers_takes_the_default_ones() {
    let host = Host::start(Vec::new(), HostOptions::default());
    for tier in ["fast", "Standard", "deep"] {
        assert_eq!(host.unknown_tier(tier), None, "{tier}");
    }
    let refused = host.unknown_tier("nosuch").unwrap_or_default();
    assert!(
        refused.contains("nosuch") && refused.contains("fast, standard, deep"),
        "{refused}"
    );
}

/// Once every server has settled, a call's start-up wait is over: later calls neither wait
/// nor rebuild the catalog (each call rebuilt it, for a library that calls but never lists).
#[tokio::test]
async fn calls_after_start_up_rebuild_nothing() {
    let host = Host::start(Vec::new(), HostOptions::default());
    let context = switchboard_core::CallContext::default();
    let _ = host.call(&context, "nosuch", Map::new()).await;
    let settled = host.catalog();
    for _ in 0..3 {
        let _ = host.call(&context, "nosuch", Map::new()).await;
    }
    assert!(
        Arc::ptr_eq(&settled, &host.catalog()),
        "a call after start-up rebuilt the catalog"
    );
}
