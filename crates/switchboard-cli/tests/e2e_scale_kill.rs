//! A replica killed under load (issue 32), end to end with real processes: three
//! `switchboard serve --http` replicas on one PostgreSQL ledger and one key ring, behind a
//! real HAProxy that checks `/readyz`, each calling its own stdio echo server, all of which log
//! every call that reaches them to one file. The echo is declared to have side effects (not
//! read-only, not idempotent), so nothing may send it twice: no retry, no hedge, no failover. Clients load the deployment; one replica is
//! SIGKILLed in the middle. Every call is recorded as the client saw it — ok, failed (an
//! answer that says so) or unknown (the connection died with the call) — and afterwards:
//!
//! - every ok call has exactly one ledger row (by the call id its answer carried), once the
//!   dead replica's journal is replayed (`switchboard audit verify` replays it first);
//! - no call reached a server twice, and every ok call reached one once;
//! - the chain verifies end to end (`switchboard audit verify` against PostgreSQL);
//! - errors are confined to the seconds around the kill;
//! - a 2025-era session minted by the dead replica keeps working on the survivors.

mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::haproxy::Haproxy;
use support::*;
use switchboard_testkit::postgres::{DATABASE, Postgres};

const MODERN: &str = "2026-07-28";
/// Client threads loading the deployment.
const CLIENTS: usize = 4;
/// How long the load runs before the kill, and after it.
const BEFORE_KILL: Duration = Duration::from_millis(1500);
const AFTER_KILL: Duration = Duration::from_millis(2500);
/// Errors may come this long after the kill (HAProxy checks every 300 ms, down after 2).
const ERROR_WINDOW: Duration = Duration::from_millis(1500);

/// What a client saw of one call.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    /// Answered with its message; the gateway's call id.
    Ok(String),
    /// Answered, but not with a result (an HTTP error or a JSON-RPC error).
    Failed(String),
    /// No answer: the connection failed or died with the call.
    Unknown(String),
}

struct Record {
    message: String,
    sent: Instant,
    seen: Seen,
}

/// A 2026-07-28 `tools/call` of the fixture's echo (no session: any replica serves it).
fn echo(message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "fx__echo", "arguments": {"message": message},
        "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string()
}

/// One POST on a connection of its own: the status and body, or why there was none.
fn post(address: &str, session: Option<&str>, body: &str) -> Result<(u16, String), String> {
    let mut stream = TcpStream::connect(address).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .map_err(|e| e.to_string())?;
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\n\
         accept: application/json, text/event-stream\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n",
        body.len()
    );
    match session {
        Some(session) => head.push_str(&format!(
            "mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n"
        )),
        // The headers a 2026-07-28 client sends with a call.
        None => head.push_str(&format!(
            "mcp-protocol-version: {MODERN}\r\nmcp-method: tools/call\r\nmcp-name: fx__echo\r\n"
        )),
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body.as_bytes()))
        .map_err(|e| format!("write: {e}"))?;
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader
        .read_line(&mut status)
        .map_err(|e| format!("read: {e}"))?;
    let code = status
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status line: {status:?}"))?;
    let mut rest = String::new();
    reader
        .read_to_string(&mut rest)
        .map_err(|e| format!("read body: {e}"))?;
    Ok((code, rest))
}

/// The JSON-RPC answer in a body, plain JSON or the data of an SSE event.
fn answer(body: &str) -> Option<Value> {
    let json = body.split("\r\n\r\n").nth(1).unwrap_or(body);
    serde_json::from_str(json.trim()).ok().or_else(|| {
        json.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .find_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
    })
}

/// One call through the load balancer, as the client saw it.
fn call(address: &str, message: &str) -> Seen {
    match post(address, None, &echo(message)) {
        Err(why) => Seen::Unknown(why),
        Ok((status, body)) => {
            let Some(answer) = answer(&body).filter(|_| status == 200) else {
                return Seen::Failed(format!("HTTP {status}: {body}"));
            };
            let text = answer["result"]["content"][0]["text"].as_str();
            let id = answer["result"]["_meta"]["switchboard.dev/call"]["id"].as_str();
            match (text, id) {
                (Some(text), Some(id)) if text == message => Seen::Ok(id.to_owned()),
                _ => Seen::Failed(answer.to_string()),
            }
        }
    }
}

fn succeeds(output: &std::process::Output) -> String {
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{said}");
    said
}

/// Every call id in the ledger, with how many rows it has.
fn ledger_rows(postgres: &Postgres) -> HashMap<String, usize> {
    let ids = postgres
        .psql(DATABASE, "SELECT call_id FROM mcp_tool_invocations")
        .expect("read the ledger");
    let mut rows = HashMap::new();
    for id in ids.lines().map(str::trim).filter(|id| !id.is_empty()) {
        *rows.entry(id.to_owned()).or_default() += 1;
    }
    rows
}

/// How many times each message reached an echo server.
fn executions(log: &Path) -> HashMap<String, usize> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut counts = HashMap::new();
    for line in text.lines() {
        let arguments: Value = serde_json::from_str(line).expect("a line of arguments");
        if let Some(message) = arguments["message"].as_str() {
            *counts.entry(message.to_owned()).or_default() += 1;
        }
    }
    counts
}

#[test]
fn a_replica_killed_under_load_loses_no_answered_call_and_runs_none_twice() {
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let dir = tempfile::tempdir().expect("tempdir");
    let ring = dir.path().join("keys.json");
    let keys = std::process::Command::new(switchboard())
        .args(["keys", "create"])
        .arg(&ring)
        .output()
        .expect("run switchboard keys");
    succeeds(&keys);
    let log = dir.path().join("arguments.log");
    let ledger = dir.path().join("gateway.ledger");
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\nledger = {}\n\n[storage]\nurl = {}\n\n[shared]\nkeys = \"keys.json\"\n\n\
             [servers.fx]\ncommand = {}\nargs = [\"echo\"]\nenv = {{ FIXTURE_ARGUMENTS_LOG = {} }}\n\n\
             [servers.fx.tools.echo]\nread_only = false\nidempotent = false\n",
            quoted(&ledger.display().to_string()),
            quoted(&postgres.url()),
            quoted(&fixture()),
            quoted(&log.display().to_string()),
        ),
    );
    succeeds(&run_bare(&config, &["migrate"]));
    let mut replicas: Vec<HttpGateway> = (0..3)
        .map(|_| HttpGateway::start(&config, &["--drain-timeout", "5"]))
        .collect();
    let authorities: Vec<String> = replicas.iter().map(|r| r.authority()).collect();
    let haproxy = Haproxy::start(dir.path(), &authorities);
    // A 2025-era session minted by the replica that will die.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "e2e", "version": "1"}}});
    let mut stream = TcpStream::connect(&authorities[0]).expect("connect to replica 0");
    let body = init.to_string();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nhost: {}\r\nconnection: close\r\naccept: application/json, text/event-stream\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        authorities[0],
        body.len()
    )
    .expect("send initialize");
    let mut head = String::new();
    stream
        .read_to_string(&mut head)
        .expect("initialize answered");
    let orphan = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .expect("a session id");

    // The load: each client calls back to back with messages of its own.
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let address = haproxy.address.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut records = Vec::new();
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    let message = format!("c{client}-{n}");
                    n += 1;
                    let sent = Instant::now();
                    let seen = call(&address, &message);
                    records.push(Record {
                        message,
                        sent,
                        seen,
                    });
                }
                records
            })
        })
        .collect();
    std::thread::sleep(BEFORE_KILL);
    let killed_at = Instant::now();
    replicas[0].child.kill().expect("SIGKILL replica 0");
    let _ = replicas[0].child.wait();
    std::thread::sleep(AFTER_KILL);
    stop.store(true, Ordering::SeqCst);
    let records: Vec<Record> = clients
        .into_iter()
        .flat_map(|client| client.join().expect("a client"))
        .collect();

    let ok: Vec<(&str, &str)> = records
        .iter()
        .filter_map(|r| match &r.seen {
            Seen::Ok(id) => Some((r.message.as_str(), id.as_str())),
            _ => None,
        })
        .collect();
    let not_ok: Vec<&Record> = records
        .iter()
        .filter(|r| !matches!(r.seen, Seen::Ok(_)))
        .collect();
    assert!(
        ok.len() > 100,
        "the load ran: {} ok of {}; the first: {:?}",
        ok.len(),
        records.len(),
        records.first().map(|r| &r.seen)
    );
    // Errors only around the kill: none before it, none once HAProxy has moved on.
    for record in &not_ok {
        let since_kill = record.sent.checked_duration_since(killed_at);
        assert!(
            since_kill.is_some_and(|after| after < ERROR_WINDOW)
                || killed_at.duration_since(record.sent) < Duration::from_millis(200),
            "an error {:?} after the start, the kill at {:?}: {:?}",
            record.sent.duration_since(started),
            killed_at.duration_since(started),
            record.seen
        );
    }
    let late_ok = records
        .iter()
        .filter(|r| r.sent > killed_at + ERROR_WINDOW && matches!(r.seen, Seen::Ok(_)))
        .count();
    assert!(late_ok > 20, "the survivors carried the load: {late_ok} ok");

    // The sealed session of the dead replica works on the survivors.
    for _ in 0..3 {
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
        let (status, body) = post(&haproxy.address, Some(&orphan), &list).expect("an answer");
        assert_eq!(status, 200, "the survivors serve its session: {body}");
        assert!(body.contains("fx__echo"), "{body}");
    }

    // `audit verify` replays the dead replica's journal, then walks the chain.
    let verified = succeeds(&run_bare(&config, &["audit", "verify"]));
    assert!(verified.contains("intact"), "{verified}");
    let rows = ledger_rows(&postgres);
    for (message, id) in &ok {
        assert_eq!(
            rows.get(*id),
            Some(&1),
            "the ok call {message} ({id}) has one ledger row"
        );
    }
    // No call reached a server twice; every ok call reached one once.
    let executed = executions(&log);
    for (message, count) in &executed {
        assert!(*count <= 1, "{message} ran {count} times");
    }
    for (message, _) in &ok {
        assert_eq!(executed.get(*message), Some(&1), "{message} ran once");
    }
    eprintln!(
        "{} calls: {} ok, {} failed or unknown around the kill, {} executions, {} ledger rows",
        records.len(),
        ok.len(),
        not_ok.len(),
        executed.values().sum::<usize>(),
        rows.len()
    );
}
