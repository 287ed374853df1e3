//! Replicas sharing a key ring (issue 32), end to end with real processes: three
//! `switchboard serve --http` gateways with one `[shared] keys` ring, behind a loopback proxy
//! that sends every HTTP request to the next replica on a new connection, so neither
//! keep-alive nor affinity can hide a session that lives on one replica only. The official
//! Python SDK client drives both eras through it: a 2025-era session initialized on one
//! replica serves its calls on the others; a 2026-era call held for approval is answered
//! `input_required` on one replica and its retry lands on another. A key rotation keeps live
//! sessions; retiring the old key ends them on every replica; a session of one agent is refused for another.
//! SIGTERM during a slow call: the call completes, the drain begins at once, exit 0; a call
//! still running at the drain timeout is told why. Behind HAProxy checking `/readyz`, a
//! replica that drains away leaves its sessions working and no client error.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::haproxy::Haproxy;
use support::*;

/// One request the proxy passed on: which replica, and the JSON-RPC method (if a POST).
#[derive(Debug, Clone)]
struct Routed {
    replica: usize,
    rpc: Option<String>,
}

/// A loopback proxy that sends each request to the next replica in turn, one request per
/// connection on both sides (`Connection: close`), and records where each went.
struct RoundRobin {
    address: String,
    log: Arc<Mutex<Vec<Routed>>>,
    stop: Arc<AtomicBool>,
}

fn read_head(stream: &mut BufReader<TcpStream>) -> Option<(String, Vec<String>)> {
    let mut first = String::new();
    if stream.read_line(&mut first).ok()? == 0 {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        stream.read_line(&mut line).ok()?;
        let line = line.trim_end().to_owned();
        if line.is_empty() {
            break;
        }
        headers.push(line);
    }
    Some((first.trim_end().to_owned(), headers))
}

fn header_value<'h>(headers: &'h [String], name: &str) -> Option<&'h str> {
    headers.iter().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

impl RoundRobin {
    fn start(replicas: Vec<String>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let address = listener.local_addr().expect("address").to_string();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let next = Arc::new(AtomicUsize::new(0));
        let replicas = Arc::new(replicas);
        let (thread_log, thread_stop) = (log.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if thread_stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let (log, next, replicas) = (thread_log.clone(), next.clone(), replicas.clone());
                std::thread::spawn(move || {
                    let _ = Self::pass(client, &replicas, &next, &log);
                });
            }
        });
        Self { address, log, stop }
    }

    fn pass(
        client: TcpStream,
        replicas: &[String],
        next: &AtomicUsize,
        log: &Mutex<Vec<Routed>>,
    ) -> std::io::Result<()> {
        let mut reader = BufReader::new(client.try_clone()?);
        let Some((first, headers)) = read_head(&mut reader) else {
            return Ok(());
        };
        let length: usize = header_value(&headers, "content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        let rpc = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["method"].as_str().map(str::to_owned));
        let replica = next.fetch_add(1, Ordering::SeqCst) % replicas.len();
        if let Ok(mut log) = log.lock() {
            log.push(Routed { replica, rpc });
        }
        let mut upstream = TcpStream::connect(&replicas[replica])?;
        let mut head = format!("{first}\r\n");
        for line in &headers {
            let name = line.split(':').next().unwrap_or("").trim();
            if !name.eq_ignore_ascii_case("connection") && !name.eq_ignore_ascii_case("host") {
                head.push_str(line);
                head.push_str("\r\n");
            }
        }
        head.push_str(&format!(
            "host: {}\r\nconnection: close\r\n\r\n",
            replicas[replica]
        ));
        upstream.write_all(head.as_bytes())?;
        upstream.write_all(&body)?;
        let mut back = client;
        std::io::copy(&mut upstream, &mut back)?;
        back.shutdown(Shutdown::Both)
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    fn routed(&self) -> Vec<Routed> {
        self.log.lock().map(|log| log.clone()).unwrap_or_default()
    }

    fn clear(&self) {
        if let Ok(mut log) = self.log.lock() {
            log.clear();
        }
    }
}

impl Drop for RoundRobin {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(&self.address);
    }
}

/// `host:port` of a gateway's `http://host:port/mcp`.
/// One HTTP/1.1 request on a connection of its own: (status, headers, body as sent).
fn request(
    address: &str,
    method: &str,
    path: &str,
    session: Option<&str>,
    body: &str,
) -> (u16, Vec<String>, String) {
    match session {
        Some(session) => request_with(address, method, path, &[("mcp-session-id", session)], body),
        None => request_with(address, method, path, &[], body),
    }
}

/// Like [`request`], with headers of its own.
fn request_with(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<String>, String) {
    let mut stream = TcpStream::connect(address).expect("connect");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\naccept: application/json, text/event-stream\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("write");
    stream.write_all(body.as_bytes()).expect("write body");
    let mut reader = BufReader::new(stream);
    let (status, headers) = read_head(&mut reader).expect("a response");
    let mut rest = String::new();
    let _ = reader.read_to_string(&mut rest);
    let code = status
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, headers, rest)
}

/// `/readyz`'s status on a new connection, or `None` when none is accepted or answered.
fn readiness(address: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(address).ok()?;
    stream
        .write_all(
            format!("GET /readyz HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\n\r\n")
                .as_bytes(),
        )
        .ok()?;
    let (status, _) = read_head(&mut BufReader::new(stream))?;
    status.split(' ').nth(1)?.parse().ok()
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

fn initialize(address: &str, path: &str) -> String {
    let (status, headers, body) = request(address, "POST", path, None, INIT);
    assert_eq!(status, 200, "{body}");
    header_value(&headers, "mcp-session-id")
        .expect("a session id")
        .to_owned()
}

fn keys(ring: &Path, args: &[&str]) {
    let output = std::process::Command::new(switchboard())
        .arg("keys")
        .args(args)
        .arg(ring)
        .output()
        .expect("run switchboard keys");
    assert!(
        output.status.success(),
        "keys {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Three gateways sharing `keys.json` (agent `qa` needs approval for destructive tools).
fn replicas(dir: &Path) -> (Vec<HttpGateway>, std::path::PathBuf) {
    let ring = dir.join("keys.json");
    keys(&ring, &["create"]);
    let config = write_config(
        dir,
        &format!(
            "[shared]\nkeys = \"keys.json\"\n\n[gateway]\napproval_timeout = \"30s\"\n\n[agents.qa]\napproval = \"destructive\"\n\n[agents.dev]\n\n[servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&fixture())
        ),
    );
    let gateways = (0..3)
        .map(|_| HttpGateway::start(&config, &["--drain-timeout", "10"]))
        .collect();
    (gateways, ring)
}

fn routed_to(proxy: &RoundRobin, rpc: &str) -> Vec<usize> {
    proxy
        .routed()
        .iter()
        .filter(|r| r.rpc.as_deref() == Some(rpc))
        .map(|r| r.replica)
        .collect()
}

#[test]
fn every_request_of_a_flow_lands_on_another_replica_in_both_eras() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (gateways, _ring) = replicas(dir.path());
    let proxy = RoundRobin::start(gateways.iter().map(|g| g.authority()).collect());

    // 2025 era: initialize on one replica, the list and the calls on the others.
    let url = proxy.url("/mcp/agents/qa");
    let calls = python_client(&[
        "--era",
        "legacy",
        "--http",
        &url,
        "calls",
        r#"[["fx__echo", {"message": "one"}], ["fx__echo", {"message": "two"}], ["fx__echo", {"message": "three"}]]"#,
    ]);
    let texts: Vec<&str> = calls
        .as_array()
        .expect("an array")
        .iter()
        .map(|r| r["content"][0]["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(texts, ["one", "two", "three"], "{calls}");
    let initialized = routed_to(&proxy, "initialize");
    let called = routed_to(&proxy, "tools/call");
    assert_eq!(initialized.len(), 1, "{:?}", proxy.routed());
    assert_eq!(called.len(), 3);
    // The SDK's own requests (notifications, its GET stream) go round too, so which replica
    // serves which call varies; what must hold is that calls were served by replicas that
    // never saw the initialize.
    let elsewhere = called.iter().filter(|r| **r != initialized[0]).count();
    assert!(elsewhere >= 1, "{:?}", proxy.routed());
    let mut replicas_used = called.clone();
    replicas_used.sort_unstable();
    replicas_used.dedup();
    assert!(replicas_used.len() >= 2, "{:?}", proxy.routed());

    // 2026 era: the approval's input_required on one replica, its retry on the next.
    proxy.clear();
    let approved = python_client(&[
        "--era",
        "modern",
        "--http",
        &url,
        "--elicit",
        "accept",
        "call",
        "fx__add",
        r#"{"a": 2, "b": 3}"#,
    ]);
    assert_eq!(approved["content"][0]["text"], "5", "{approved}");
    let rounds = routed_to(&proxy, "tools/call");
    assert_eq!(rounds.len(), 2, "asked, then retried: {:?}", proxy.routed());
    assert_ne!(rounds[0], rounds[1], "the retry landed on another replica");
}

#[test]
fn a_rotation_keeps_live_sessions_and_a_session_stays_with_its_agent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (gateways, ring) = replicas(dir.path());
    let proxy = RoundRobin::start(gateways.iter().map(|g| g.authority()).collect());
    let address = proxy.address.clone();
    let session = initialize(&address, "/mcp/agents/qa");

    // Another agent's endpoint refuses it on every replica.
    for _ in 0..3 {
        let (status, _, body) = request(&address, "POST", "/mcp/agents/dev", Some(&session), LIST);
        assert_eq!(status, 404, "{body}");
        assert!(body.contains("issued to another agent"), "{body}");
    }

    keys(&ring, &["rotate", "--grace", "0"]);
    let newest = newest_key(&ring);
    // Every replica reads the ring again within its recheck (500 ms): wait until three
    // initializes in a row (one per replica) are sealed with the new key.
    let fresh = wait_for(Duration::from_secs(5), || {
        let ids: Vec<String> = (0..3)
            .map(|_| initialize(&address, "/mcp/agents/qa"))
            .collect();
        ids.iter()
            .all(|id| sealed_with(id) == newest)
            .then(|| ids[0].clone())
    })
    .expect("every replica seals with the new key");
    for id in [&session, &fresh] {
        for _ in 0..3 {
            let (status, _, body) = request(&address, "POST", "/mcp/agents/qa", Some(id), LIST);
            assert_eq!(status, 200, "after the rotation: {body}");
            assert!(body.contains("fx__echo"), "{body}");
        }
    }

    // Retiring the old key ends what it sealed on every replica, those holding it included.
    keys(&ring, &["retire", "--keep", "1"]);
    let refusals = wait_for(Duration::from_secs(5), || {
        let answers: Vec<(u16, Vec<String>, String)> = (0..3)
            .map(|_| request(&address, "POST", "/mcp/agents/qa", Some(&session), LIST))
            .collect();
        answers
            .iter()
            .all(|(status, _, _)| *status == 404)
            .then(|| {
                answers
                    .into_iter()
                    .map(|(_, _, body)| body)
                    .collect::<Vec<_>>()
            })
    })
    .expect("every replica refuses the retired key's session");
    assert!(
        refusals.iter().all(|b| b.contains("does not hold")),
        "{refusals:?}"
    );
    for _ in 0..3 {
        let (status, _, body) = request(&address, "POST", "/mcp/agents/qa", Some(&fresh), LIST);
        assert_eq!(status, 200, "the new key still seals: {body}");
    }
}

#[test]
fn a_rotated_key_opens_at_once_and_seals_after_its_grace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ring = dir.path().join("keys.json");
    keys(&ring, &["create"]);
    keys(&ring, &["rotate"]);
    let output = std::process::Command::new(switchboard())
        .args(["keys", "list", "--json"])
        .arg(&ring)
        .output()
        .expect("keys list");
    let text = String::from_utf8_lossy(&output.stdout);
    let listed: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect();
    assert_eq!(listed.len(), 2, "{text}");
    assert_eq!(
        listed[0]["seals"], true,
        "the old key seals until then: {text}"
    );
    assert_eq!(listed[1]["seals"], false, "{text}");
    let left = listed[1]["seals_in_seconds"]
        .as_u64()
        .expect("seconds left");
    assert!((100..=120).contains(&left), "{text}");
}

/// Regression: `keys retire --keep 1` in a rotation's grace removed the key that sealed, so
/// the new one sealed before every replica had read it. `--keep` keeps it, saying why, and
/// retiring it by id is refused.
#[test]
fn retiring_in_a_grace_keeps_the_key_that_seals() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ring = dir.path().join("keys.json");
    keys(&ring, &["create"]);
    let sealing = newest_key(&ring);
    keys(&ring, &["rotate"]);
    // `keys ACTION FILE ARGS...`
    let run = |action: &str, args: &[&str]| {
        std::process::Command::new(switchboard())
            .args(["keys", action])
            .arg(&ring)
            .args(args)
            .output()
            .expect("run switchboard keys")
    };
    let kept = run("retire", &["--keep", "1"]);
    let stderr = String::from_utf8_lossy(&kept.stderr);
    assert!(kept.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("kept {sealing}")) && stderr.contains("seals now"),
        "{stderr}"
    );
    let listed = String::from_utf8_lossy(&run("list", &[]).stdout).into_owned();
    assert!(listed.contains(&sealing), "{listed}");
    let refused = run("retire", &[&sealing]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot be retired yet"), "{stderr}");
}

/// The id of the ring's newest key (`switchboard keys list --json`).
fn newest_key(ring: &Path) -> String {
    let output = std::process::Command::new(switchboard())
        .args(["keys", "list", "--json"])
        .arg(ring)
        .output()
        .expect("keys list");
    let text = String::from_utf8_lossy(&output.stdout);
    let last: serde_json::Value =
        serde_json::from_str(text.lines().last().expect("a key")).expect("json");
    assert_eq!(last["seals"], true, "{text}");
    last["id"].as_str().expect("id").to_owned()
}

/// The id of the key a sealed value names (bytes 1 to 4 of the blob).
fn sealed_with(blob: &str) -> String {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(blob)
        .expect("base64url");
    bytes[1..5].iter().map(|b| format!("{b:02x}")).collect()
}

/// One gateway with the fixture's `fx`, draining for `drain_timeout` seconds on SIGTERM.
fn one_gateway(dir: &Path, drain_timeout: &str) -> (HttpGateway, std::path::PathBuf) {
    let config = write_config(
        dir,
        &format!(
            "[servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&fixture())
        ),
    );
    let gateway = HttpGateway::start(&config, &["--drain-timeout", drain_timeout]);
    (gateway, config)
}

#[test]
fn sigterm_lets_a_slow_call_finish_and_drains() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut gateway, _config) = one_gateway(dir.path(), "10");
    let address = gateway.authority();
    let ready = wait_for(Duration::from_secs(10), || {
        (readiness(&address) == Some(200)).then_some(())
    });
    assert!(ready.is_some(), "ready once the catalog is built");
    assert_eq!(request(&address, "GET", "/livez", None, "").0, 200);
    let session = initialize(&address, "/mcp");
    // A GET stream of the session, to see the drain begin.
    let mut stream = TcpStream::connect(&address).expect("connect");
    stream
        .write_all(
            format!(
                "GET /mcp HTTP/1.1\r\nhost: {address}\r\naccept: text/event-stream\r\nmcp-session-id: {session}\r\n\r\n"
            )
            .as_bytes(),
        )
        .expect("GET");
    let slow_address = address.clone();
    let slow_session = session.clone();
    let slow = std::thread::spawn(move || {
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fx__sleep","arguments":{"ms":1500}}}"#;
        let started = Instant::now();
        let answer = request(&slow_address, "POST", "/mcp", Some(&slow_session), body);
        (answer, started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(400));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(gateway.child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let signalled = Instant::now();
    // The drain begins at once: the GET stream ends with a retry hint.
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut streamed = String::new();
    let _ = stream.read_to_string(&mut streamed);
    assert!(streamed.contains("retry: 1000"), "{streamed}");
    assert!(
        signalled.elapsed() < Duration::from_secs(1),
        "the stream closed at once, not after the call: {:?}",
        signalled.elapsed()
    );
    // Not ready any more: a new connection is refused, or answered 503.
    let after = readiness(&address);
    assert!(after.is_none_or(|status| status == 503), "{after:?}");
    let ((status, _, body), took) = slow.join().expect("the slow call");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("slept 1500 ms"), "{body}");
    assert!(took >= Duration::from_millis(1400), "{took:?}");
    let exit = wait_for(Duration::from_secs(10), || {
        gateway.child.try_wait().ok().flatten()
    })
    .expect("the gateway exits once the call is answered");
    assert!(exit.success(), "exit 0 after the drain: {exit:?}");
}

#[test]
fn a_call_still_running_at_the_drain_timeout_is_told_the_gateway_is_shutting_down() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut gateway, config) = one_gateway(dir.path(), "1");
    let address = gateway.authority();
    let session = initialize(&address, "/mcp");
    let ours = session.clone();
    let started_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis();
    let legacy_address = address.clone();
    let slow = std::thread::spawn(move || {
        let body = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"fx__sleep","arguments":{"ms":20000}}}"#;
        request(&legacy_address, "POST", "/mcp", Some(&session), body)
    });
    // A 2026-era call too: answered as plain JSON, not on a session's stream.
    let modern = std::thread::spawn(move || {
        let body = r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"fx__sleep","arguments":{"ms":20001},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let headers = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "fx__sleep"),
        ];
        request_with(&address, "POST", "/mcp", &headers, body)
    });
    std::thread::sleep(Duration::from_millis(400));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(gateway.child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let signalled = Instant::now();
    let (status, _, body) = slow.join().expect("the slow call");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("the gateway is shutting down"), "{body}");
    assert!(body.contains("\"id\":9"), "{body}");
    let (status, _, body) = modern.join().expect("the modern call");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("the gateway is shutting down"), "{body}");
    assert!(body.contains("\"id\":10"), "{body}");
    let exit = wait_for(Duration::from_secs(10), || {
        gateway.child.try_wait().ok().flatten()
    })
    .expect("the gateway exits after the drain timeout");
    assert!(exit.success(), "exit 0: {exit:?}");
    assert!(
        signalled.elapsed() < Duration::from_secs(6),
        "the drain timeout bounds the exit: {:?}",
        signalled.elapsed()
    );
    // The call cut off is still recorded, once, as cancelled.
    let rows = audit_rows(&config);
    let recorded: Vec<&serde_json::Value> = rows
        .as_array()
        .expect("rows")
        .iter()
        .filter(|row| row["session"] == ours.as_str())
        .collect();
    assert_eq!(recorded.len(), 1, "{rows:#}");
    assert_eq!(recorded[0]["outcome"], "cancelled");
    let modern_rows = rows
        .as_array()
        .expect("rows")
        .iter()
        .filter(|row| {
            row["args_redacted"]["ms"] == 20001
                && row["started_ms"]
                    .as_u64()
                    .is_some_and(|ms| u128::from(ms) >= started_ms)
        })
        .count();
    assert_eq!(modern_rows, 1, "{rows:#}");
}

/// HAProxy in front of replicas, checking `/readyz`; killed when dropped.
#[test]
fn behind_haproxy_a_replica_that_drains_leaves_no_client_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut gateways, _ring) = replicas(dir.path());
    let authorities: Vec<String> = gateways.iter().map(|g| g.authority()).collect();
    let haproxy = Haproxy::start(dir.path(), &authorities);
    let url = format!("http://{}/mcp/agents/qa", haproxy.address);
    let flow = |url: &str| {
        python_client(&[
            "--era",
            "legacy",
            "--http",
            url,
            "calls",
            r#"[["fx__echo", {"message": "a"}], ["fx__echo", {"message": "b"}], ["fx__echo", {"message": "c"}]]"#,
        ])
    };
    let before = flow(&url);
    assert_eq!(before[2]["content"][0]["text"], "c", "{before}");
    // A session minted by the replica about to go.
    let orphan = initialize(&authorities[0], "/mcp/agents/qa");
    // One replica goes away the way a rolling update takes it: SIGTERM, drain, exit 0.
    let exit = gateways[0].terminate();
    assert!(exit.success(), "{exit:?}");
    for _ in 0..3 {
        let (status, _, body) = request(
            &haproxy.address,
            "POST",
            "/mcp/agents/qa",
            Some(&orphan),
            LIST,
        );
        assert_eq!(status, 200, "the survivors serve its session: {body}");
    }
    for round in 0..3 {
        let after = flow(&url);
        assert_eq!(
            after[2]["content"][0]["text"], "c",
            "round {round}: {after}"
        );
        let modern = python_client(&[
            "--era",
            "modern",
            "--http",
            &url,
            "call",
            "fx__echo",
            r#"{"message": "m"}"#,
        ]);
        assert_eq!(modern["content"][0]["text"], "m", "round {round}: {modern}");
    }
}

#[test]
fn a_key_ring_others_may_read_fails_config_check_and_start() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let ring = dir.path().join("keys.json");
    keys(&ring, &["create"]);
    let config = write_config(dir.path(), "[shared]\nkeys = \"keys.json\"\n");
    let check = || {
        std::process::Command::new(switchboard())
            .args(["config", "check"])
            .arg(&config)
            .output()
            .expect("config check")
    };
    assert!(check().status.success());
    std::fs::set_permissions(&ring, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let refused = check();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        said.contains("[shared] keys: key ring") && said.contains("mode 644"),
        "{said}"
    );
    let serve = std::process::Command::new(switchboard())
        .arg("--config")
        .arg(&config)
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("serve");
    let said = String::from_utf8_lossy(&serve.stderr);
    assert!(!serve.status.success());
    assert!(said.contains("chmod 600"), "{said}");
}
