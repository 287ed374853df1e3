//! `/metrics` on the admin endpoint of a real `switchboard serve`, after a known sequence of
//! calls to a fixture server (ok, a cache hit, a tool error, one denied by an operator, an
//! unknown tool, one over a rate limit): exact counts, bucket placement, bounded labels, the admin token, and
//! `promtool check metrics` on the scraped text (Debian's `prometheus` package;
//! scripts/install-test-deps.sh installs it).

mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

const MODERN: &str = "2026-07-28";

fn call(name: &str, arguments: Value) -> Value {
    request("tools/call", json!({"name": name, "arguments": arguments}))
}

/// A 2026-07-28 request of `method` with `params` and the envelope's `_meta`.
fn request(method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}});
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// The admin endpoint's URL and token, once the gateway has written its admin file.
fn admin(path: &std::path::Path) -> (String, String) {
    let file: Value = wait_for(Duration::from_secs(10), || {
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
    })
    .expect("the gateway writes its admin file");
    let field = |key: &str| file[key].as_str().expect("admin file field").to_owned();
    (field("url"), field("token"))
}

/// The value of the sample written exactly as `series` (name and labels), if there is one.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|value| value.parse().expect("a number"))
}

fn expect(text: &str, series: &str, value: f64) {
    assert_eq!(sample(text, series), Some(value), "{series} in:\n{text}");
}

/// Runs `promtool check metrics` on `text`; a missing promtool fails the test, saying how to
/// install it.
fn promtool_check(text: &str) {
    let mut child = match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => panic!(
            "promtool is not installed: run scripts/install-test-deps.sh \
             (Debian/Ubuntu: apt-get install --no-install-recommends prometheus)"
        ),
        Err(error) => panic!("cannot run promtool: {error}"),
    };
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write to promtool");
    let output = child.wait_with_output().expect("promtool");
    assert!(
        output.status.success(),
        "promtool check metrics failed:\n{}{}\non:\n{text}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn metrics_count_a_known_sequence_of_calls_and_pass_promtool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("ledger.db").display().to_string();
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\nledger = {}\napproval_timeout = \"30s\"\n\n[agents.qa]\n\n\
             [servers.fx]\ncommand = {}\nargs = [\"echo\"]\n\n\
             [servers.fx.tools.echo]\ncacheable_seconds = 60\n\n\
             [servers.fx.tools.add]\napproval = \"always\"\n\n\
             [servers.fx.tools.pid]\nlimits = {{ per_minute = 1, burst = 1 }}\n",
            quoted(&ledger),
            quoted(&fixture())
        ),
    );
    let admin_file = dir.path().join("admin.json");
    let admin_arg = admin_file.display().to_string();
    let gateway = HttpGateway::start(&config, &["--agent", "qa", "--admin-file", &admin_arg]);
    let (admin_url, token) = admin(&admin_file);
    let metrics_url = format!("{admin_url}/metrics");

    let (status, _, _) = get(&metrics_url, None, "content-type").await;
    assert_eq!(status, 401, "/metrics needs the admin token");
    let (status, _, _) = get(&metrics_url, Some("not-the-token"), "content-type").await;
    assert_eq!(status, 401);

    let (status, body, _) = post(&gateway.url, None, request("tools/list", json!({}))).await;
    assert_eq!(status, 200, "{body}");
    // A method nobody defined: `_other`, answered -32601.
    let (_, body, _) = post(&gateway.url, None, request("made/up", json!({}))).await;
    assert!(body.contains("-32601"), "{body}");
    // The second "a" is answered from the result cache: it never goes upstream.
    for message in ["a", "b", "c", "a"] {
        let (status, body, _) = post(
            &gateway.url,
            None,
            call("fx__echo", json!({"message": message})),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert!(
            body.contains("\"isError\":false") || !body.contains("isError"),
            "{body}"
        );
    }
    let (_, body, _) = post(&gateway.url, None, call("fx__sleep", json!({"ms": 120}))).await;
    assert!(body.contains("slept 120 ms"), "{body}");
    let (_, body, _) = post(
        &gateway.url,
        None,
        call("fx__fail", json!({"message": "no"})),
    )
    .await;
    assert!(body.contains("\"isError\":true"), "{body}");
    // A name no catalog has: counted as `_unknown`, never under the name sent.
    let (_, body, _) = post(&gateway.url, None, call("fx__no_such_tool\"x", json!({}))).await;
    assert!(body.contains("\"error\""), "{body}");
    let (_, body, _) = post(&gateway.url, None, call("fx__pid", json!({}))).await;
    assert!(!body.contains("rate limited"), "{body}");
    let (_, body, _) = post(&gateway.url, None, call("fx__pid", json!({}))).await;
    assert!(body.contains("rate limited"), "{body}");

    // A call waiting for an operator shows as pending; the operator denies it.
    let url = gateway.url.clone();
    let waiting =
        tokio::spawn(
            async move { post(&url, None, call("fx__add", json!({"a": 1, "b": 2}))).await },
        );
    let mut id = None;
    for _ in 0..250 {
        let (_, body, _) = get(
            &format!("{admin_url}/approvals"),
            Some(&token),
            "content-type",
        )
        .await;
        let listed: Value = serde_json::from_str(&body).expect("json");
        if let Some(found) = listed["approvals"][0]["id"].as_str() {
            id = Some(found.to_owned());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let id = id.expect("the call waits for an operator");
    let (_, text, _) = get(&metrics_url, Some(&token), "content-type").await;
    expect(&text, "switchboard_approvals_pending", 1.0);
    let answered = http_client()
        .post(format!("{admin_url}/approvals/{id}"))
        .bearer_auth(&token)
        .json(&json!({"approve": false, "reason": "not now"}))
        .send()
        .await
        .expect("answer");
    assert_eq!(answered.status().as_u16(), 200);
    let (_, body, _) = waiting.await.expect("the waiting call");
    assert!(body.contains("denied by operator"), "{body}");

    let (status, text, content_type) = get(&metrics_url, Some(&token), "content-type").await;
    assert_eq!(status, 200);
    assert_eq!(
        content_type.as_deref(),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert!(!text.contains("made/up"), "{text}");
    let other = |method: &str, error: &str| {
        format!(
            "mcp_server_operation_duration_seconds_count{{mcp_method_name=\"{method}\",gen_ai_tool_name=\"\",error_type=\"{error}\",agent=\"qa\"}}"
        )
    };
    expect(&text, &other("tools/list", ""), 1.0);
    expect(&text, &other("_other", "-32601"), 1.0);
    assert!(
        !text.contains("no_such_tool"),
        "the raw name never becomes a label:\n{text}"
    );

    let server = |tool: &str, error: &str, suffix: &str| {
        format!(
            "mcp_server_operation_duration_seconds{suffix}{{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"{tool}\",error_type=\"{error}\",agent=\"qa\""
        )
    };
    let count = |series: String| format!("{series}}}");
    expect(&text, &count(server("fx__echo", "", "_count")), 4.0);
    expect(&text, &count(server("fx__sleep", "", "_count")), 1.0);
    expect(
        &text,
        &count(server("fx__fail", "tool_error", "_count")),
        1.0,
    );
    expect(
        &text,
        &count(server("_unknown", "unknown_tool", "_count")),
        1.0,
    );
    expect(&text, &count(server("fx__pid", "", "_count")), 1.0);
    expect(
        &text,
        &count(server("fx__pid", "rate_limited", "_count")),
        1.0,
    );
    expect(&text, &count(server("fx__add", "denied", "_count")), 1.0);
    // Bucket placement: the 120 ms sleep is above every bucket to 0.1 s and in the one of 60 s.
    let bucket = |le: &str| format!("{},le=\"{le}\"}}", server("fx__sleep", "", "_bucket"));
    expect(&text, &bucket("0.1"), 0.0);
    expect(&text, &bucket("60"), 1.0);
    expect(&text, &bucket("+Inf"), 1.0);
    // A refused call never reached the server: its whole path is under a second.
    let refused = format!(
        "{},le=\"1\"}}",
        server("_unknown", "unknown_tool", "_bucket")
    );
    expect(&text, &refused, 1.0);

    let client_series = |tool: &str, error: &str| {
        format!(
            "mcp_client_operation_duration_seconds_count{{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"{tool}\",error_type=\"{error}\",agent=\"qa\",server=\"fx\"}}"
        )
    };
    expect(&text, &client_series("echo", ""), 3.0);
    expect(&text, &client_series("sleep", ""), 1.0);
    expect(&text, &client_series("fail", "tool_error"), 1.0);
    expect(&text, &client_series("pid", ""), 1.0);
    assert!(
        !text.contains("gen_ai_tool_name=\"add\""),
        "a denied call never went upstream:\n{text}"
    );
    let sleep_upstream = "mcp_client_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"sleep\",error_type=\"\",agent=\"qa\",server=\"fx\",le=\"0.1\"}";
    expect(&text, sleep_upstream, 0.0);

    for (outcome, value) in [
        ("allowed", 7.0),
        ("denied", 1.0),
        ("unknown_tool", 1.0),
        ("invalid_arguments", 0.0),
        ("rate_limited", 1.0),
    ] {
        let series = format!("switchboard_policy_decisions_total{{outcome=\"{outcome}\"}}");
        expect(&text, &series, value);
    }
    expect(
        &text,
        "switchboard_rate_limited_calls_total{agent=\"qa\"}",
        1.0,
    );
    expect(&text, "switchboard_approvals_pending", 0.0);
    expect(
        &text,
        "switchboard_approval_wait_seconds_count{decision=\"denied\"}",
        1.0,
    );
    expect(
        &text,
        "switchboard_approval_wait_seconds_count{decision=\"approved\"}",
        0.0,
    );
    expect(&text, "switchboard_upstream_up{server=\"fx\"}", 1.0);
    for tier in ["fast", "standard", "deep"] {
        let series = format!("switchboard_tier_tools{{tier=\"{tier}\"}}");
        assert!(sample(&text, &series).is_some(), "{series} in:\n{text}");
    }
    expect(&text, "switchboard_cache_hits_total", 1.0);
    expect(&text, "switchboard_cache_misses_total", 3.0);
    // Every call reached the ledger's journal: 10 rows appended.
    expect(&text, "switchboard_ledger_append_seconds_count", 10.0);
    assert!(
        sample(&text, "switchboard_ledger_queue_depth").is_some(),
        "{text}"
    );

    promtool_check(&text);
}
