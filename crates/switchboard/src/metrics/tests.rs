//! The gateway's call metrics from records: bounded labels (an unknown tool or agent is
//! `_unknown`, never the name sent), decisions by outcome, and the families as scraped.

use std::time::{Duration, SystemTime};

use switchboard_core::ServerId;
use switchboard_core::metrics::Exposition;
use switchboard_core::pipeline::{CallRecord, CallStatus};

use super::*;

fn record(name: &str, resolved: bool, agent: Option<&str>, status: CallStatus) -> CallRecord {
    CallRecord {
        call_id: "01TEST".to_owned(),
        name: name.to_owned(),
        target: resolved.then(|| (ServerId::new("fx"), "echo".to_owned())),
        agent: agent.map(str::to_owned),
        principal: None,
        session: None,
        tier: None,
        arguments: None,
        started: SystemTime::UNIX_EPOCH,
        duration: Duration::from_micros(300),
        status,
        cost: 0.0,
        approval: None,
        error: None,
        result_bytes: None,
        cached: false,
        trace_id: None,
    }
}

fn scraped(metrics: &GatewayMetrics) -> String {
    let mut out = Exposition::new();
    metrics.write(&mut out);
    out.finish()
}

#[test]
fn labels_are_bounded_by_the_catalog_and_the_config() {
    let metrics = GatewayMetrics::new(true);
    metrics.set_agents([&"qa".to_owned()]);
    metrics.record_call(&record("fx__echo", true, Some("qa"), CallStatus::Ok));
    metrics.record_call(&record("fx__echo", true, Some("qa"), CallStatus::Ok));
    // A name nothing resolved, from an agent the config does not define.
    metrics.record_call(&record(
        "evil\"tool\n{}",
        false,
        Some("mallory"),
        CallStatus::UnknownTool,
    ));
    metrics.record_call(&record("fx__echo", true, None, CallStatus::RateLimited));
    let text = scraped(&metrics);
    assert!(
        !text.contains("evil") && !text.contains("mallory"),
        "{text}"
    );
    let ok = r#"mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="fx__echo",error_type="",agent="qa",le="#;
    assert!(text.contains(&format!("{ok}\"0.00025\"}} 0\n")), "{text}");
    assert!(text.contains(&format!("{ok}\"0.0005\"}} 2\n")), "{text}");
    assert!(text.contains(
        r#"gen_ai_tool_name="_unknown",error_type="unknown_tool",agent="_unknown",le="+Inf"} 1"#
    ));
    assert!(text.contains(
        r#"gen_ai_tool_name="fx__echo",error_type="rate_limited",agent="",le="+Inf"} 1"#
    ));
    for (outcome, count) in [
        ("allowed", 2),
        ("denied", 0),
        ("unknown_tool", 1),
        ("invalid_arguments", 0),
        ("rate_limited", 1),
    ] {
        let line = format!("switchboard_policy_decisions_total{{outcome=\"{outcome}\"}} {count}\n");
        assert!(text.contains(&line), "{line} in {text}");
    }
    assert!(text.contains("switchboard_rate_limited_calls_total{agent=\"\"} 1\n"));
}

#[test]
fn an_agent_the_config_defines_after_a_reload_gets_its_own_series() {
    let metrics = GatewayMetrics::new(true);
    metrics.record_call(&record("fx__echo", true, Some("new"), CallStatus::Ok));
    metrics.set_agents([&"new".to_owned()]);
    metrics.record_call(&record("fx__echo", true, Some("new"), CallStatus::Ok));
    // Removed again: the series it has stays (bounded: the config once defined it).
    metrics.set_agents([]);
    metrics.record_call(&record("fx__echo", true, Some("new"), CallStatus::Ok));
    let text = scraped(&metrics);
    let count = |agent: &str| {
        format!(
            "mcp_server_operation_duration_seconds_count{{mcp_method_name=\"tools/call\",\
             gen_ai_tool_name=\"fx__echo\",error_type=\"\",agent=\"{agent}\"}}"
        )
    };
    assert!(
        text.contains(&format!("{} 1\n", count("_unknown"))),
        "{text}"
    );
    assert!(text.contains(&format!("{} 2\n", count("new"))), "{text}");
}

#[test]
fn other_requests_are_labelled_by_a_known_method_and_a_reserved_code() {
    let metrics = GatewayMetrics::new(true);
    let took = Duration::from_micros(50);
    metrics.record_request("tools/list", None, took, None);
    metrics.record_request("resources/read", None, took, Some(-32002));
    metrics.record_request("x/\"made up\"", None, took, Some(-32601));
    metrics.record_request("prompts/get", None, took, Some(42));
    let text = scraped(&metrics);
    assert!(!text.contains("made up"), "{text}");
    for (method, error) in [
        ("tools/list", ""),
        ("resources/read", "-32002"),
        ("_other", "-32601"),
        ("prompts/get", "_other"),
    ] {
        let line = format!(
            "mcp_server_operation_duration_seconds_count{{mcp_method_name=\"{method}\",\
             gen_ai_tool_name=\"\",error_type=\"{error}\",agent=\"\"}} 1\n"
        );
        assert!(text.contains(&line), "{line} in {text}");
    }
}

#[test]
fn attempts_upstream_are_labelled_with_server_and_outcome() {
    let metrics = GatewayMetrics::new(true);
    let ok = Ok(ToolOutcome::text("fine"));
    let failed = Ok(ToolOutcome::error("no"));
    let down = Err(UpstreamError::Unavailable {
        server: ServerId::new("fx"),
        reason: "gone".to_owned(),
    });
    metrics.record_attempt("fx", "echo", None, &ok, Duration::from_millis(2));
    metrics.record_attempt("fx", "echo", None, &failed, Duration::from_millis(2));
    metrics.record_attempt("fx", "echo", None, &down, Duration::from_secs(90));
    let text = scraped(&metrics);
    let prefix = r#"mcp_client_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="echo",error_type=""#;
    for error in ["", "tool_error", "upstream_down"] {
        let line = format!("{prefix}{error}\",agent=\"\",server=\"fx\"}} 1\n");
        assert!(text.contains(&line), "{line} in {text}");
    }
    assert!(text.contains(r#"error_type="upstream_down",agent="",server="fx",le="60"} 0"#));
}

#[test]
fn a_gateway_told_not_to_count_counts_nothing_and_still_scrapes() {
    let metrics = GatewayMetrics::new(false);
    metrics.record_call(&record("fx__echo", true, None, CallStatus::Ok));
    metrics.record_request("tools/list", None, Duration::from_micros(10), None);
    let text = scraped(&metrics);
    assert!(!text.contains("fx__echo"), "{text}");
    assert!(!text.contains("tools/list"), "{text}");
    assert!(
        text.contains("switchboard_policy_decisions_total{outcome=\"allowed\"} 0"),
        "{text}"
    );
}

/// On a runtime that runs idle work, a call is counted when its thread goes idle, or by a
/// scrape that comes first; never lost, never twice.
#[test]
fn on_a_runtime_with_the_idle_hook_calls_are_counted_when_the_thread_parks() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(switchboard_core::idle::on_thread_park)
        .build()
        .expect("a runtime");
    let metrics = GatewayMetrics::new(true);
    let count = |metrics: &GatewayMetrics| {
        let text = scraped(metrics);
        text.lines()
            .find_map(|line| {
                line.strip_prefix("switchboard_policy_decisions_total{outcome=\"allowed\"} ")
            })
            .map(str::to_owned)
            .unwrap_or_default()
    };
    runtime.block_on(async {
        // The first park tells the thread its runtime has the hook.
        tokio::time::sleep(Duration::from_millis(1)).await;
        metrics.record_call(&record("fx__echo", true, None, CallStatus::Ok));
        assert_eq!(count(&metrics), "0", "held until the thread parks");
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(count(&metrics), "1", "counted at the park");
        metrics.record_call(&record("fx__echo", true, None, CallStatus::Ok));
        metrics.catch_up();
        assert_eq!(
            count(&metrics),
            "2",
            "a scrape counts what the thread holds"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(count(&metrics), "2", "and the park finds nothing left");
    });
}
