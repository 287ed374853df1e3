//! The JSON-RPC loop: one reader thread, a thread per tool call (so slow calls run
//! concurrently), one lock around stdout.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::Era;
use crate::tools::{Call, Toolset};

pub struct Options {
    pub name: String,
    pub era: Era,
    pub toolset: Toolset,
    pub page_size: usize,
    pub crash_after: Option<usize>,
}

impl Options {
    pub fn new(name: String, era: Era, toolset: Toolset) -> Self {
        Self {
            name,
            era,
            toolset,
            page_size: usize::MAX,
            crash_after: None,
        }
    }
}

/// Where answers and notifications go.
#[derive(Clone)]
pub struct Out(Arc<Mutex<std::io::Stdout>>);

impl Out {
    pub fn stdout() -> Self {
        Self(Arc::new(Mutex::new(std::io::stdout())))
    }

    pub fn send(&self, message: &Value) {
        // One write per message: formatting straight into stdout's line buffer would cost a
        // system call per kilobyte of a large listing.
        let mut line = message.to_string();
        line.push('\n');
        if let Ok(mut out) = self.0.lock() {
            let _ = out.write_all(line.as_bytes());
            let _ = out.flush();
        }
    }

    pub fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }
}

fn answer(out: &Out, id: &Value, result: Result<Value, (i64, String)>) {
    let message = match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        }
    };
    out.send(&message);
}

/// What is left to do once a call has run: answer it (unless it was cancelled) and count it.
struct Finish {
    id: Value,
    out: Out,
    running: Arc<Mutex<HashMap<String, Arc<AtomicBool>>>>,
    answered: Arc<AtomicUsize>,
    crash_after: Option<usize>,
}

impl Finish {
    fn run(self, call: &Call) {
        let result = call.run();
        let was_cancelled = call.cancelled.load(Ordering::SeqCst);
        let id = self.id;
        if let Ok(mut map) = self.running.lock() {
            map.remove(&id.to_string());
        }
        if was_cancelled {
            if let Ok(path) = std::env::var("FIXTURE_CANCEL_LOG")
                && let Ok(mut file) = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
            {
                let _ = writeln!(file, "cancelled {id}");
            }
            return;
        }
        answer(&self.out, &id, result);
        let count = self.answered.fetch_add(1, Ordering::SeqCst) + 1;
        if self.crash_after.is_some_and(|limit| count >= limit) {
            eprintln!("switchboard-fixture: crashing after {count} calls, as asked");
            std::process::exit(4);
        }
    }
}

/// Serves stdin/stdout until stdin closes; returns the exit code.
pub fn serve(options: Options) -> i32 {
    let out = Out::stdout();
    let Options {
        name,
        era,
        toolset,
        page_size,
        crash_after,
    } = options;
    let toolset = Arc::new(toolset);
    let running: Arc<Mutex<HashMap<String, Arc<AtomicBool>>>> = Arc::default();
    let answered = Arc::new(AtomicUsize::new(0));
    let stdin = std::io::stdin();
    let mut line = String::new();
    let mut reader = stdin.lock();
    let mut calls: Vec<std::thread::JoinHandle<()>> = Vec::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => {
                // Input is over: let calls in flight answer before exiting.
                for call in calls {
                    let _ = call.join();
                }
                return 0;
            }
            Ok(_) => {}
        }
        calls.retain(|call| !call.is_finished());
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            out.send(&json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}}));
            continue;
        };
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let Some(id) = message.get("id").cloned() else {
            if method == "notifications/cancelled" {
                let key = params
                    .get("requestId")
                    .map(Value::to_string)
                    .unwrap_or_default();
                if let Some(flag) = running.lock().ok().and_then(|map| map.get(&key).cloned()) {
                    flag.store(true, Ordering::SeqCst);
                }
            }
            continue;
        };
        let result = match method {
            "initialize" if era != Era::Modern => Ok(initialize(&name, &params)),
            "server/discover" if era != Era::Legacy => Ok(discover(&name)),
            "ping" => Ok(json!({})),
            "tools/list" => toolset.list(params.get("cursor").and_then(Value::as_str), page_size),
            "tools/call" => {
                log_call(&params);
                let cancelled = Arc::new(AtomicBool::new(false));
                if let Ok(mut map) = running.lock() {
                    map.insert(id.to_string(), cancelled.clone());
                }
                let call = Call {
                    params,
                    cancelled,
                    out: out.clone(),
                    toolset: toolset.clone(),
                };
                let finish = Finish {
                    id,
                    out: out.clone(),
                    running: running.clone(),
                    answered: answered.clone(),
                    crash_after,
                };
                // A call that answers at once is answered on this thread; one that waits
                // (sleep, progress, latency tools) gets its own, so it can be cancelled and
                // others can run meanwhile. A thread per call would cost more than the call.
                if call.is_instant() {
                    finish.run(&call);
                } else {
                    calls.push(std::thread::spawn(move || finish.run(&call)));
                }
                continue;
            }
            other => Err((-32601, format!("Method not found: {other}"))),
        };
        answer(&out, &id, result);
    }
}

pub(crate) fn initialize(name: &str, params: &Value) -> Value {
    const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
    let requested = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = if VERSIONS.contains(&requested) {
        requested
    } else {
        VERSIONS[0]
    };
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": true}},
        "serverInfo": {"name": name, "version": "1.0.0"},
    })
}

fn discover(name: &str) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {"listChanged": true}},
        "ttlMs": 0,
        "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": name, "version": "1.0.0"}},
    })
}

/// Appends `call NAME` to `$FIXTURE_CALL_LOG`, the call's arguments as one JSON line to
/// `$FIXTURE_ARGUMENTS_LOG` and its `_meta` to `$FIXTURE_META_LOG`, when set, so tests can
/// count what reached the server (several servers may share a file: a line is one append),
/// which call it was, and the trace context it came with.
fn log_call(params: &Value) {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    append_line("FIXTURE_CALL_LOG", &format!("call {name}"));
    let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
    append_line("FIXTURE_ARGUMENTS_LOG", &arguments.to_string());
    let meta = params.get("_meta").cloned().unwrap_or(Value::Null);
    append_line("FIXTURE_META_LOG", &meta.to_string());
}

fn append_line(variable: &str, line: &str) {
    let Ok(path) = std::env::var(variable) else {
        return;
    };
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        // One write, so lines of servers sharing the file never interleave.
        let _ = file.write_all(format!("{line}\n").as_bytes());
    }
}
