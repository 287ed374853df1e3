//! `switchboard-fixture registry` over real HTTP on 127.0.0.1: listing with search, latest
//! versions and cursor pages, look-ups by URL-encoded name and version, withdrawn entries kept
//! with their status, files re-read on every request, and the request counter.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

/// The fixture, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(dir: &Path) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard-fixture"))
        .args(["registry", "--dir"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the fixture");
    let stdout = child.stdout.take().expect("stdout");
    let running = Running(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the address");
    let address = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    (running, address)
}

/// `GET target` on a connection of its own: the status and the JSON body.
fn get(address: &str, target: &str) -> (u16, Value) {
    let mut stream = TcpStream::connect(address).expect("connect");
    write!(stream, "GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").expect("send");
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).expect("header");
        if line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().expect("length");
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("body");
    (status, serde_json::from_slice(&body).expect("JSON body"))
}

fn server(name: &str, version: &str, description: &str) -> Value {
    json!({"name": name, "version": version, "description": description,
           "packages": [{"registryType": "npm", "identifier": "x", "version": version,
                         "transport": {"type": "stdio"}}]})
}

fn write(dir: &Path, file: &str, value: &Value) {
    std::fs::write(dir.join(file), value.to_string()).expect("write");
}

fn names(body: &Value) -> Vec<String> {
    body["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .map(|e| {
            format!(
                "{}@{}",
                e["server"]["name"].as_str().unwrap_or(""),
                e["server"]["version"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn serves_the_v0_1_read_api_over_a_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "a1.json",
        &server("io.example/alpha", "1.0.0", "First"),
    );
    write(
        dir.path(),
        "a2.json",
        &server("io.example/alpha", "1.10.0", "First, newer"),
    );
    write(
        dir.path(),
        "b.json",
        &server("io.example/beta", "0.1.0", "Weather forecasts"),
    );
    write(
        dir.path(),
        "c.json",
        &json!({"server": server("io.example/gone", "1.0.0", "Withdrawn"),
                "_meta": {"io.modelcontextprotocol.registry/official": {"status": "deleted"}}}),
    );
    std::fs::write(dir.path().join("d.json"), "{ half written").expect("write");
    std::fs::write(dir.path().join("notes.txt"), "not a server").expect("write");
    let (_fixture, address) = start(dir.path());

    let (status, all) = get(&address, "/v0.1/servers");
    assert_eq!(status, 200);
    assert_eq!(
        names(&all),
        [
            "io.example/alpha@1.0.0",
            "io.example/alpha@1.10.0",
            "io.example/beta@0.1.0",
            "io.example/gone@1.0.0"
        ]
    );
    let official = &all["servers"][3]["_meta"]["io.modelcontextprotocol.registry/official"];
    assert_eq!(official["status"], "deleted");
    assert_eq!(official["isLatest"], true);
    assert_eq!(
        all["servers"][0]["_meta"]["io.modelcontextprotocol.registry/official"]["isLatest"],
        false
    );
    assert_eq!(
        all["servers"][1]["_meta"]["io.modelcontextprotocol.registry/official"]["status"],
        "active"
    );

    let (_, first) = get(&address, "/v0.1/servers?version=latest&limit=2");
    assert_eq!(
        names(&first),
        ["io.example/alpha@1.10.0", "io.example/beta@0.1.0"]
    );
    assert_eq!(first["metadata"], json!({"count": 2, "nextCursor": "2"}));
    let (_, second) = get(&address, "/v0.1/servers?version=latest&limit=2&cursor=2");
    assert_eq!(names(&second), ["io.example/gone@1.0.0"]);
    assert_eq!(second["metadata"], json!({"count": 1}));

    let (_, found) = get(&address, "/v0.1/servers?search=FORECAST&version=latest");
    assert_eq!(names(&found), ["io.example/beta@0.1.0"]);
    let (_, found) = get(
        &address,
        "/v0.1/servers?search=example%2Falpha&version=latest",
    );
    assert_eq!(names(&found), ["io.example/alpha@1.10.0"]);

    let (status, latest) = get(&address, "/v0.1/servers/io.example%2Falpha/versions/latest");
    assert_eq!(status, 200);
    assert_eq!(latest["server"]["version"], "1.10.0");
    let (_, older) = get(&address, "/v0.1/servers/io.example%2Falpha/versions/1.0.0");
    assert_eq!(older["server"]["description"], "First");
    let (_, versions) = get(&address, "/v0.1/servers/io.example%2Falpha/versions");
    assert_eq!(versions["metadata"]["count"], 2);
    let (status, missing) = get(&address, "/v0.1/servers/io.example%2Falpha/versions/9.9.9");
    assert_eq!(status, 404);
    assert!(
        missing["detail"]
            .as_str()
            .is_some_and(|d| d.contains("9.9.9"))
    );
    assert_eq!(get(&address, "/v0.1/servers?limit=0").0, 400);

    // Files are re-read: a new one shows at once.
    write(
        dir.path(),
        "e.json",
        &server("io.example/epsilon", "2.0.0", "New"),
    );
    let (_, found) = get(&address, "/v0.1/servers?search=epsilon");
    assert_eq!(names(&found), ["io.example/epsilon@2.0.0"]);

    let (_, requests) = get(&address, "/requests");
    assert_eq!(requests, json!({"count": 11}));
}
