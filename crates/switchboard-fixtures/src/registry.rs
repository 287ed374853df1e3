//! `registry`: the MCP Registry's v0.1 read API on 127.0.0.1, over the `*.json` files of a
//! directory — each a `server.json`, or a registry entry `{"server": {...}, "_meta": {...}}`
//! whose official metadata (`status`, `isLatest`, …) is kept — re-read on every request, so a
//! test can add, change or withdraw servers while it runs. Files are taken in name order; a
//! file that is not JSON (half written, say) is skipped.
//!
//! Endpoints: `GET /v0.1/servers?search=&version=&limit=&cursor=` (case-insensitive substring
//! of name or description; `version=latest` keeps the latest entry of each name — the one
//! marked so, else the highest version; the cursor is an opaque index), `GET
//! /v0.1/servers/{name}/versions` and `/versions/{version|latest}` (the name URL-encoded), and
//! `GET /requests` → `{"count": N}`, the number of registry requests so far, for cache tests.
//! Same HTTP/1.1 code as `http-echo`; prints `listening on 127.0.0.1:PORT` once bound.

use std::cmp::Ordering;
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use serde_json::{Map, Value, json};

use crate::http::{listen, read_message, reply};

/// The key of the registry's own metadata in an entry's `_meta`.
const OFFICIAL: &str = "io.modelcontextprotocol.registry/official";
/// Timestamps of entries that do not give their own.
const EPOCH: &str = "2026-01-01T00:00:00Z";
const DEFAULT_LIMIT: usize = 30;
const MAX_LIMIT: usize = 100;

struct State {
    dir: PathBuf,
    requests: AtomicU64,
}

/// One server version as served.
struct Entry {
    server: Value,
    official: Map<String, Value>,
}

impl Entry {
    fn name(&self) -> &str {
        self.server["name"].as_str().unwrap_or("")
    }

    fn version(&self) -> &str {
        self.server["version"].as_str().unwrap_or("")
    }

    fn is_latest(&self) -> bool {
        self.official.get("isLatest") == Some(&Value::Bool(true))
    }

    fn to_json(&self) -> Value {
        json!({"server": self.server, "_meta": {OFFICIAL: self.official}})
    }
}

/// Serves until killed; returns an exit code when it cannot bind.
pub fn serve(dir: PathBuf, port: u16) -> i32 {
    if !dir.is_dir() {
        eprintln!(
            "switchboard-fixture registry: {} is not a directory",
            dir.display()
        );
        return 2;
    }
    let Some(listener) = listen("registry", port) else {
        return 2;
    };
    let state = Arc::new(State {
        dir,
        requests: AtomicU64::new(0),
    });
    for stream in listener.incoming().flatten() {
        let state = state.clone();
        std::thread::spawn(move || serve_connection(stream, &state));
    }
    0
}

fn serve_connection(stream: TcpStream, state: &State) {
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    while let Some(request) = read_message(&mut reader) {
        let response = answer(&request.start, state);
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

fn answer(target: &str, state: &State) -> String {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path == "/requests" {
        let count = state.requests.load(AtomicOrdering::SeqCst);
        return reply(200, &[], &json!({"count": count}).to_string());
    }
    state.requests.fetch_add(1, AtomicOrdering::SeqCst);
    let entries = load(&state.dir);
    let params: Vec<(String, String)> = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key, true), decode(value, true))
        })
        .collect();
    let param = |key: &str| {
        params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    if path == "/v0.1/servers" || path == "/v0.1/servers/" {
        return list(
            &entries,
            param("search"),
            param("version"),
            param("limit"),
            param("cursor"),
        );
    }
    let Some(rest) = path.strip_prefix("/v0.1/servers/") else {
        return not_found(&format!("no endpoint {path}"));
    };
    let Some(at) = rest.rfind("/versions") else {
        return not_found(&format!("no endpoint {path}"));
    };
    let name = decode(&rest[..at], false);
    let same_name = entries.iter().filter(|e| e.name() == name);
    match &rest[at..] {
        "/versions" | "/versions/" => {
            let servers: Vec<Value> = same_name.map(Entry::to_json).collect();
            if servers.is_empty() {
                return not_found(&format!("no server {name}"));
            }
            let body = json!({"servers": servers, "metadata": {"count": servers.len()}});
            reply(200, &[], &body.to_string())
        }
        tail => {
            let Some(version) = tail.strip_prefix("/versions/").map(|v| decode(v, false)) else {
                return not_found(&format!("no endpoint {path}"));
            };
            let found = if version == "latest" {
                same_name.into_iter().find(|e| e.is_latest())
            } else {
                same_name.into_iter().find(|e| e.version() == version)
            };
            match found {
                Some(entry) => reply(200, &[], &entry.to_json().to_string()),
                None => not_found(&format!("no server {name} version {version}")),
            }
        }
    }
}

fn list(
    entries: &[Entry],
    search: Option<&str>,
    version: Option<&str>,
    limit: Option<&str>,
    cursor: Option<&str>,
) -> String {
    let limit = match limit.map(str::parse::<usize>) {
        None => DEFAULT_LIMIT,
        Some(Ok(limit)) if (1..=MAX_LIMIT).contains(&limit) => limit,
        Some(_) => return bad_request("limit must be a number from 1 to 100"),
    };
    let start = match cursor.filter(|c| !c.is_empty()).map(str::parse::<usize>) {
        None => 0,
        Some(Ok(start)) => start,
        Some(Err(_)) => return bad_request("invalid cursor"),
    };
    let needle = search.unwrap_or("").to_lowercase();
    let matching: Vec<&Entry> = entries
        .iter()
        .filter(|e| {
            needle.is_empty()
                || e.name().to_lowercase().contains(&needle)
                || e.server["description"]
                    .as_str()
                    .is_some_and(|d| d.to_lowercase().contains(&needle))
        })
        .filter(|e| match version {
            Some("latest") => e.is_latest(),
            Some(version) if !version.is_empty() => e.version() == version,
            _ => true,
        })
        .collect();
    let end = start.saturating_add(limit).min(matching.len());
    let page: Vec<Value> = matching
        .get(start..end)
        .unwrap_or_default()
        .iter()
        .map(|e| e.to_json())
        .collect();
    let mut metadata = json!({"count": page.len()});
    if end < matching.len() {
        metadata["nextCursor"] = json!(end.to_string());
    }
    reply(
        200,
        &[],
        &json!({"servers": page, "metadata": metadata}).to_string(),
    )
}

/// The entries of `dir`'s `*.json` files in name order, each with its official metadata
/// completed (status `active`, timestamps, `isLatest` unless the file says).
fn load(dir: &Path) -> Vec<Entry> {
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(read) => read
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect(),
        Err(error) => {
            eprintln!("switchboard-fixture registry: {}: {error}", dir.display());
            return Vec::new();
        }
    };
    paths.sort();
    let mut entries: Vec<Entry> = Vec::new();
    let mut explicit_latest = Vec::new();
    for path in paths {
        let Some(value) = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        else {
            eprintln!("switchboard-fixture registry: skipping {}", path.display());
            continue;
        };
        let (server, official) = match value.get("server") {
            Some(server) if server.is_object() => (
                server.clone(),
                value
                    .pointer(&format!("/_meta/{}", OFFICIAL.replace('/', "~1")))
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
            ),
            _ => (value, Map::new()),
        };
        explicit_latest.push(official.contains_key("isLatest"));
        entries.push(Entry { server, official });
    }
    let latest: Vec<bool> = (0..entries.len())
        .map(|i| {
            !entries.iter().enumerate().any(|(j, other)| {
                j != i
                    && other.name() == entries[i].name()
                    && match compare(other.version(), entries[i].version()) {
                        Ordering::Greater => true,
                        Ordering::Equal => j > i,
                        Ordering::Less => false,
                    }
            })
        })
        .collect();
    for ((entry, is_latest), explicit) in entries.iter_mut().zip(latest).zip(explicit_latest) {
        let official = &mut entry.official;
        official.entry("status").or_insert_with(|| json!("active"));
        official
            .entry("publishedAt")
            .or_insert_with(|| json!(EPOCH));
        official.entry("updatedAt").or_insert_with(|| json!(EPOCH));
        if !explicit {
            official.insert("isLatest".into(), json!(is_latest));
        }
    }
    entries
}

/// Version order: dot-separated numbers compared as numbers, anything else as text.
fn compare(a: &str, b: &str) -> Ordering {
    let mut parts_a = a.split(['.', '-', '+']);
    let mut parts_b = b.split(['.', '-', '+']);
    loop {
        let order = match (parts_a.next(), parts_b.next()) {
            (None, None) => return Ordering::Equal,
            (Some(_), None) => Ordering::Greater,
            (None, Some(_)) => Ordering::Less,
            (Some(x), Some(y)) => match (x.parse::<u64>(), y.parse::<u64>()) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                _ => x.cmp(y),
            },
        };
        if order != Ordering::Equal {
            return order;
        }
    }
}

/// Percent-decoding of a path segment or (`query`) a query's key or value, where `+` is a
/// space.
fn decode(text: &str, query: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                if let Some(byte) = text
                    .get(i + 1..i + 3)
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                {
                    out.push(byte);
                    i += 3;
                    continue;
                }
                out.push(b'%');
            }
            b'+' if query => out.push(b' '),
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn not_found(detail: &str) -> String {
    let body = json!({"title": "Not Found", "status": 404, "detail": detail});
    reply(404, &[], &body.to_string())
}

fn bad_request(detail: &str) -> String {
    let body = json!({"title": "Bad Request", "status": 400, "detail": detail});
    reply(400, &[], &body.to_string())
}
